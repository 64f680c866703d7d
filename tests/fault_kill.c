/* SPDX-License-Identifier: BSD-3-Clause */
/* Fault suite: the last rank dies in the middle of a collective stream. The job must end --
 * non-zero, no hang -- which tests/expect_failure.sh checks around mpiexec. */
#include <signal.h>
#include <unistd.h>

#include "test_util.h"

int main(int argc, char **argv) {
  gmpi_comm_t comm = t_init(&argc, &argv);
  int rank, size;
  gmpi_comm_rank(comm, &rank);
  gmpi_comm_size(comm, &size);
  float *x = t_alloc(1 << 20);
  for (int i = 0; i < 1000; i++) {
    if (rank == size - 1 && i == 10) raise(SIGKILL); /* gone, mid-stream */
    gmpi_status_t st = gmpi_allreduce(x, x, 1 << 18, GMPI_FLOAT32, GMPI_SUM, comm);
    if (st != GMPI_SUCCESS) {
      fprintf(stderr, "[rank %d] allreduce %d failed as expected: %s\n", rank, i,
              gmpi_last_error());
      gmpi_finalize(&comm);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }
  return t_finish("fault: killed rank"); /* not reached on a correct run */
}
