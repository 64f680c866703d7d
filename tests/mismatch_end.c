/* SPDX-License-Identifier: BSD-3-Clause */
/* A collective that cannot complete ends within GMPI_TIMEOUT: rank 0 calls gmpi_allreduce, the
 * others gmpi_reduce of the same count (buffers where the backend moves data). By default on
 * host buffers the watchdog ends the job naming the call; on device buffers (cuda) the wait
 * returns GMPI_ERR_TIMEOUT and this program ends the job itself. Either way the job must end,
 * non-zero, well within the limit tests/expect_failure.sh gives it; it must not complete. */
#include "test_util.h"

int main(int argc, char **argv) {
  gmpi_comm_t comm = t_init(&argc, &argv);
  int rank;
  gmpi_comm_rank(comm, &rank);
  size_t n = 1 << 16;
  float *x = t_alloc(n * sizeof(float)), *y = t_alloc(n * sizeof(float));
  gmpi_status_t st = rank == 0 ? gmpi_allreduce(x, y, n, GMPI_FLOAT32, GMPI_SUM, comm)
                               : gmpi_reduce(x, y, n, GMPI_FLOAT32, GMPI_SUM, 0, comm);
  if (st != GMPI_SUCCESS) {
    fprintf(stderr, "[rank %d] the mismatched collective ended: %s\n", rank, gmpi_last_error());
    gmpi_finalize(&comm);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  fprintf(stderr, "[rank %d] the mismatched collective completed: not detected\n", rank);
  return t_finish("mismatch ends the job"); /* exit 0: expect_failure reports the miss */
}
