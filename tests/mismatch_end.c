/* SPDX-License-Identifier: BSD-3-Clause */
/* A wait that cannot complete ends within GMPI_TIMEOUT. Default: a mismatched collective --
 * rank 0 calls gmpi_allreduce, the others gmpi_reduce of the same count (buffers where the
 * backend moves data). Argument "recv": every rank receives host memory from its neighbour,
 * which never sends. By default on host buffers the watchdog ends the job naming the MPI call
 * (the collective, MPI_Recv); where the wait is polled instead (device buffers on cuda, a comm
 * with engines) it returns GMPI_ERR_TIMEOUT and this program ends the job itself. Either way
 * the job must end, non-zero, well within the limit tests/expect_failure.sh gives it; it must
 * not complete. */
#include <string.h>

#include "test_util.h"

static gmpi_status_t unmatched_recv(gmpi_comm_t comm, int rank, int size) {
  int from = (rank + 1) % size, got = 0;
  if (size == 1) return GMPI_ERR_INVALID_ARG; /* a self message is gmpi's own: not this case */
  return gmpi_recv(&got, 1, GMPI_INT32, from, 7, comm, NULL);
}

int main(int argc, char **argv) {
  gmpi_comm_t comm = t_init(&argc, &argv);
  int rank, size;
  gmpi_comm_rank(comm, &rank);
  gmpi_comm_size(comm, &size);
  int recv = argc > 1 && strcmp(argv[1], "recv") == 0;
  size_t n = 1 << 16;
  float *x = t_alloc(n * sizeof(float)), *y = t_alloc(n * sizeof(float));
  gmpi_status_t st = recv        ? unmatched_recv(comm, rank, size)
                     : rank == 0 ? gmpi_allreduce(x, y, n, GMPI_FLOAT32, GMPI_SUM, comm)
                                 : gmpi_reduce(x, y, n, GMPI_FLOAT32, GMPI_SUM, 0, comm);
  const char *what = recv ? "unmatched receive" : "mismatched collective";
  if (st != GMPI_SUCCESS) {
    fprintf(stderr, "[rank %d] the %s ended: %s\n", rank, what, gmpi_last_error());
    gmpi_finalize(&comm);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  fprintf(stderr, "[rank %d] the %s completed: not detected\n", rank, what);
  return t_finish(
      "a wait that cannot complete ends the job"); /* exit 0: expect_failure reports the miss */
}
