/* SPDX-License-Identifier: BSD-3-Clause */
/* plan_compile: how gmpi_plan_end (collective compilation: gather every rank's steps, compare
 * collectives, match point to point, simulate the groups) grows with the plan's length. For
 * n = 1,000 .. 100,000 it records n small allreduces, then n round trips with the partner rank
 * (irecv + isend + waitall), compiles each, replays once and checks the values, and prints
 * milliseconds per compile and per 1,000 steps.
 *   mpirun -n 2 plan_compile [max_n]
 * A measurement tool, not a test: it exits non-zero on a failed call or a wrong value only. */
#include <gmpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(int rank, const char *what) {
  fprintf(stderr, "[rank %d] plan_compile: %s: %s\n", rank, what, gmpi_last_error());
  return 1;
}

/* Record n operations of one kind; compile; replay once; *ms = compile time (slowest rank). */
static int one(gmpi_comm_t comm, int rank, int size, int round_trips, int n, double *ms) {
  float x = (float)(rank + 1), y = 0, got = 0;
  int peer = rank ^ 1;
  if (peer >= size) peer = rank; /* odd size: the last rank talks to itself */
  if (gmpi_plan_begin(comm) != GMPI_SUCCESS) return fail(rank, "gmpi_plan_begin");
  for (int i = 0; i < n; i++) {
    gmpi_status_t st;
    if (!round_trips) {
      st = gmpi_allreduce(&x, &y, 1, GMPI_FLOAT32, GMPI_SUM, comm);
    } else {
      gmpi_request_t r[2];
      st = gmpi_irecv(&got, 1, GMPI_FLOAT32, peer, 1, comm, &r[0]);
      if (st == GMPI_SUCCESS) st = gmpi_isend(&x, 1, GMPI_FLOAT32, peer, 1, comm, &r[1]);
      if (st == GMPI_SUCCESS) st = gmpi_waitall(2, r, NULL);
    }
    if (st != GMPI_SUCCESS) return fail(rank, "recording");
  }
  gmpi_plan_t plan = NULL;
  double t0 = now();
  if (gmpi_plan_end(comm, &plan) != GMPI_SUCCESS) return fail(rank, "gmpi_plan_end");
  double t = (now() - t0) * 1e3;
  MPI_Allreduce(&t, ms, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (gmpi_plan_run(plan) != GMPI_SUCCESS) return fail(rank, "gmpi_plan_run");
  int wrong = round_trips ? got != (float)(peer + 1) : y != (float)(size * (size + 1)) / 2;
  gmpi_plan_free(&plan);
  if (wrong) fprintf(stderr, "[rank %d] plan_compile: wrong value after the replay\n", rank);
  return wrong;
}

int main(int argc, char **argv) {
  int provided, rank, size, bad = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int max_n = argc > 1 ? atoi(argv[1]) : 100000;
  gmpi_comm_t comm;
  if (gmpi_init(MPI_COMM_WORLD, &comm) != GMPI_SUCCESS) return fail(rank, "gmpi_init");
  if (rank == 0)
    printf("# plan_compile: %d ranks\n# %-12s %9s %12s %14s\n", size, "steps", "n", "compile ms",
           "ms per 1000");
  for (int round_trips = 0; round_trips < 2 && !bad; round_trips++)
    for (int n = 1000; n <= max_n && !bad; n *= 10) {
      double ms = 0;
      bad |= one(comm, rank, size, round_trips, n, &ms);
      if (rank == 0 && !bad)
        printf("  %-12s %9d %12.1f %14.3f\n", round_trips ? "round trips" : "allreduces", n, ms,
               ms / n * 1000);
    }
  gmpi_finalize(&comm);
  MPI_Finalize();
  return bad;
}
