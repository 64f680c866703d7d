/* SPDX-License-Identifier: BSD-3-Clause */
/* "Other comms are unaffected": once MPI_COMM_WORLD has failed under the layer (every rank's
 * receive from its neighbour times out: GMPI_TIMEOUT), calls on a duplicate made before still
 * work, those the layer copies or stages through host memory (device buffers of
 * Sendrecv_replace, a user-defined op, a buffered send, a derived type) included, and move the
 * right values on every rank, while a nonblocking send on MPI_COMM_WORLD is refused. Only the layer
 * fails a comm on a timeout (under GMPI_TIMEOUT_ACTION=status for host memory, as ctest runs it):
 * under MPI alone the test skips (77). */
#include "dropin_util.h"

static void add_ints(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  for (int i = 0; i < *len; i++)
    ((int *)inout)[i] += ((const int *)in)[i];
}

/* Every rank's receive from its neighbour, which sends nothing: the layer ends it after
 * GMPI_TIMEOUT with an error and MPI_COMM_WORLD's twin is failed from then on. The buffer is
 * of the test's memory kind, so that the layer takes the call (device memory, or any under
 * GMPI_INTERPOSE=all); 0 when it would not (MPI alone would wait forever). */
static int fail_world(void) {
  const char *mode = getenv("GMPI_INTERPOSE");
  int *x = mem_alloc(sizeof(int));
  int taken = mode && (!strcmp(mode, "all") || d_is_device(x));
  if (taken)
    D_TRUE(MPI_Recv(x, 1, MPI_INT, d_next(), 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS);
  mem_free(x);
  return taken;
}

static void ring_calls(MPI_Comm dup) {
  int rank = d_rank(), size = d_size(), prev = d_prev(), next = d_next();
  int host[4], got[4];
  int *a = mem_alloc(4 * sizeof(int)), *b = mem_alloc(4 * sizeof(int));
  for (int i = 0; i < 4; i++)
    host[i] = 10 * rank + i;
  mem_put(a, host, sizeof(host));
  mem_set(b, 0xff, sizeof(host));
  D_MPI(MPI_Sendrecv(a, 4, MPI_INT, next, 1, b, 4, MPI_INT, prev, 1, dup, MPI_STATUS_IGNORE));
  mem_get(got, b, sizeof(got));
  for (int i = 0; i < 4; i++)
    D_EQ_INT(got[i], 10 * prev + i);
  /* Sendrecv_replace keeps its copy in memory of the buffer's kind (device: gmpi_mem_alloc) */
  D_MPI(MPI_Sendrecv_replace(a, 4, MPI_INT, next, 2, prev, 2, dup, MPI_STATUS_IGNORE));
  mem_get(got, a, sizeof(got));
  for (int i = 0; i < 4; i++)
    D_EQ_INT(got[i], 10 * prev + i);
  /* a user-defined op: staged through host memory on device buffers */
  MPI_Op op;
  D_MPI(MPI_Op_create(add_ints, 1, &op));
  mem_put(a, host, sizeof(host));
  D_MPI(MPI_Allreduce(a, b, 4, MPI_INT, op, dup));
  mem_get(got, b, sizeof(got));
  for (int i = 0; i < 4; i++)
    D_EQ_INT(got[i], 10 * size * (size - 1) / 2 + size * i);
  D_MPI(MPI_Op_free(&op));
  /* a buffered send: the layer copies the data at once (through dup's twin) */
  int room = 4 * (int)sizeof(int) + MPI_BSEND_OVERHEAD, detached = 0;
  void *bsend = host_alloc((size_t)room), *back = NULL;
  D_MPI(MPI_Buffer_attach(bsend, room));
  mem_put(a, host, sizeof(host));
  D_MPI(MPI_Bsend(a, 4, MPI_INT, next, 4, dup));
  mem_set(b, 0, sizeof(host));
  D_MPI(MPI_Recv(b, 4, MPI_INT, prev, 4, dup, MPI_STATUS_IGNORE));
  mem_get(got, b, sizeof(got));
  for (int i = 0; i < 4; i++)
    D_EQ_INT(got[i], 10 * prev + i);
  D_MPI(MPI_Buffer_detach(&back, &detached));
  free(bsend);
  /* a derived type: every other int of a, packed by the layer */
  MPI_Datatype evens;
  D_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &evens));
  D_MPI(MPI_Type_commit(&evens));
  mem_set(b, 0, sizeof(host));
  D_MPI(MPI_Sendrecv(a, 1, evens, next, 3, b, 2, MPI_INT, prev, 3, dup, MPI_STATUS_IGNORE));
  mem_get(got, b, 2 * sizeof(int));
  D_EQ_INT(got[0], 10 * prev);
  D_EQ_INT(got[1], 10 * prev + 2);
  D_MPI(MPI_Type_free(&evens));
  mem_free(a);
  mem_free(b);
}

int main(int argc, char **argv) {
  d_init(&argc, &argv, "dropin_world_failed", D_SCOPE_COLL);
  MPI_Comm dup;
  D_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  if (!fail_world())
    return d_skip("only the layer (GMPI_INTERPOSE=all, or device memory) fails MPI_COMM_WORLD on "
                  "a timeout");
  /* a nonblocking message on the failed comm is refused too (under GMPI_INTERPOSE=all it could
   * have gone round gmpi, as MPI's own request on the twin's communicator) */
  int *x = mem_alloc(sizeof(int));
  MPI_Request q = MPI_REQUEST_NULL;
  D_TRUE(MPI_Isend(x, 1, MPI_INT, d_next(), 98, MPI_COMM_WORLD, &q) != MPI_SUCCESS);
  D_TRUE(q == MPI_REQUEST_NULL);
  mem_free(x);
  ring_calls(dup);
  return d_finish_on(dup); /* MPI_COMM_WORLD is unusable now */
}
