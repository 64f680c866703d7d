/* SPDX-License-Identifier: BSD-3-Clause */
/* Under GMPI_INTERPOSE=all a nonblocking host message to or from another rank is MPI's own
 * request on gmpi's communicator, handed to the program as it is; the program's wait for it is
 * still bounded by GMPI_TIMEOUT (2 s, as ctest runs it), as a wait on gmpi's request would be. A
 * receive nobody sends, waited for by MPI_Wait, MPI_Waitall and MPI_Waitany, returns an error
 * within a few timeouts instead of hanging; cancelled, it completes cancelled, and the next
 * messages still arrive whole. Under MPI alone such a wait never ends: the test skips (77)
 * unless the layer takes host buffers (GMPI_INTERPOSE=all).
 * With the argument `blocking`: a blocking MPI_Recv nobody sends, which the layer runs as MPI's
 * own call on the wire inside gmpi's watch: under GMPI_TIMEOUT_ACTION=end the watchdog ends the
 * job naming it (ctest expects the failure and the words). With `collective`: rank 0 enters an
 * MPI_Allreduce the others never join (they wait in such a receive): the same end. */
#include <time.h>

#include "dropin_util.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A receive from the next rank with a tag nobody sends: the wait ends with an error. */
static void unmatched(int how) {
  int x = -1, index = -2;
  MPI_Request q;
  MPI_Status st;
  D_MPI(MPI_Irecv(&x, 1, MPI_INT, d_next(), 77, MPI_COMM_WORLD, &q));
  double t0 = now();
  int rc = how == 0   ? MPI_Wait(&q, &st)
           : how == 1 ? MPI_Waitall(1, &q, &st)
                      : MPI_Waitany(1, &q, &index, &st);
  double took = now() - t0;
  if (rc == MPI_SUCCESS) D_FAIL("wait %d on a receive nobody sends returned MPI_SUCCESS", how);
  if (took > 30.0) D_FAIL("wait %d took %.1f s, GMPI_TIMEOUT is 2 s", how, took);
  D_TRUE(q != MPI_REQUEST_NULL); /* still the program's, to cancel */
  D_MPI(MPI_Cancel(&q));
  D_MPI(MPI_Wait(&q, &st));
  int cancelled = 0;
  D_MPI(MPI_Test_cancelled(&st, &cancelled));
  D_TRUE(cancelled);
  D_EQ_INT(x, -1);
}

/* A ring of Isend/Irecv after the failed waits: values and statuses. */
static void ring(void) {
  int out = 100 + d_rank(), in = -1;
  MPI_Request q[2];
  MPI_Status st[2];
  D_MPI(MPI_Irecv(&in, 1, MPI_INT, d_prev(), 5, MPI_COMM_WORLD, &q[0]));
  D_MPI(MPI_Isend(&out, 1, MPI_INT, d_next(), 5, MPI_COMM_WORLD, &q[1]));
  D_MPI(MPI_Waitall(2, q, st));
  D_EQ_INT(in, 100 + d_prev());
  D_STATUS(&st[0], MPI_INT, d_prev(), 5, 1);
}

int main(int argc, char **argv) {
  d_init(&argc, &argv, "dropin_wait_bound", D_SCOPE_P2P);
  const char *mode = getenv("GMPI_INTERPOSE");
  if (!mode || strcmp(mode, "all") || d_size() < 2)
    return d_skip("only the layer under GMPI_INTERPOSE=all bounds a wait on a host receive, and "
                  "it needs another rank");
  if (argc > 1 && !strcmp(argv[1], "collective")) {
    int x = 1, sum = 0; /* once on every rank: the layer's fast path knows MPI_SUM from then */
    D_MPI(MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    D_EQ_INT(sum, d_size());
  }
  if (argc > 1 && !strcmp(argv[1], "collective") && d_rank() == 0) {
    int x = 1, sum = 0;
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    D_FAIL("an allreduce only rank 0 entered returned (sum = %d)", sum);
    return d_finish();
  }
  if (argc > 1) { /* blocking, and collective's other ranks */
    int x = -1;
    MPI_Recv(&x, 1, MPI_INT, d_next(), 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    D_FAIL("a blocking receive nobody sends returned (x = %d)", x);
    return d_finish();
  }
  for (int how = 0; how < 3; how++)
    unmatched(how);
  D_MPI(MPI_Barrier(MPI_COMM_WORLD));
  ring();
  return d_finish();
}
