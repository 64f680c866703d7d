/* SPDX-License-Identifier: BSD-3-Clause */
/* comm_churn: what communicators cost, and how that grows with how many are alive. A plain MPI
 * program: run it with and without the drop-in layer (docs/performance.md, "Drop-in layer").
 *
 *   comm_churn [LIVE]
 *
 * With LIVE communicators (MPI_Comm_dup of MPI_COMM_WORLD, default 0) alive throughout, rank 0
 * prints microseconds per:
 *   round      50 rounds of MPI_Comm_dup, one allreduce on the new comm, MPI_Comm_free;
 *   call       an 8-byte allreduce on each live comm in turn, 10 passes (a call on a comm other
 *              than the last one used: what finding a comm costs among LIVE);
 *   pingpong   half a round trip of 8 bytes between ranks 0 and 1 on MPI_COMM_WORLD, 2,000
 *              round trips (what a wait costs while LIVE other comms exist: a layer whose waits
 *              drive every comm's engine pays for each);
 *   free       freeing the LIVE comms, oldest first (MPICH's too_many_comms frees thousands).
 * Each allreduce's sum and each ping-pong's value are checked; a wrong one exits 1. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int size;

static int allreduce_checked(MPI_Comm comm) {
  int x = 1, y = 0;
  MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, comm);
  if (y == size) return 0;
  fprintf(stderr, "comm_churn: allreduce gave %d, want %d\n", y, size);
  return 1;
}

/* Half a round trip in seconds; *wrong set when a value came back changed. */
static double pingpong(int r, int *wrong) {
  enum { TRIPS = 2000 };
  double t = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  if (r > 1) return 0;
  t = MPI_Wtime();
  for (long i = 0; i < TRIPS; i++) {
    long v = i;
    if (r == 0) {
      MPI_Send(&v, 1, MPI_LONG, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(&v, 1, MPI_LONG, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&v, 1, MPI_LONG, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&v, 1, MPI_LONG, 0, 0, MPI_COMM_WORLD);
    }
    if (v != i) {
      fprintf(stderr, "comm_churn: ping-pong %ld came back as %ld\n", i, v);
      *wrong = 1;
    }
  }
  return (MPI_Wtime() - t) / (2.0 * TRIPS);
}

int main(int c, char **v) {
  MPI_Init(&c, &v);
  int r, live = c > 1 ? atoi(v[1]) : 0, wrong = 0, made = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* a refused dup stops the making */
  MPI_Comm *comms = malloc(sizeof(MPI_Comm) * (size_t)(live > 0 ? live : 1));
  for (; made < live; made++)
    if (MPI_Comm_dup(MPI_COMM_WORLD, &comms[made]) != MPI_SUCCESS) break;
  double t0 = MPI_Wtime();
  for (int i = 0; i < 50; i++) {
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    wrong |= allreduce_checked(d);
    MPI_Comm_free(&d);
  }
  double round = (MPI_Wtime() - t0) / 50, t1 = MPI_Wtime();
  for (int pass = 0; pass < 10; pass++)
    for (int i = 0; i < made; i++)
      wrong |= allreduce_checked(comms[i]);
  double call = made ? (MPI_Wtime() - t1) / (10.0 * made) : 0;
  double half_trip = size > 1 ? pingpong(r, &wrong) : 0, t2 = MPI_Wtime();
  for (int i = 0; i < made; i++)
    MPI_Comm_free(&comms[i]);
  double freed = made ? (MPI_Wtime() - t2) / made : 0;
  if (!r)
    printf("live %d: dup+allreduce+free %.1f us per round; allreduce %.2f us per call; "
           "pingpong %.2f us; free %.1f us per comm\n",
           made, round * 1e6, call * 1e6, half_trip * 1e6, freed * 1e6);
  free(comms);
  int any = 0;
  MPI_Allreduce(&wrong, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
