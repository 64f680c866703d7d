/* SPDX-License-Identifier: BSD-3-Clause */
/* Error classes of wrong arguments, as a plain MPI program: what Open MPI returns for a bad
 * rank, root, tag or buffer (MPI_ERR_RANK, _ROOT, _TAG, _BUFFER) the layer returns too, not
 * MPI_ERR_ARG for all of them. Errors return (MPI_ERRORS_RETURN); every rank checks each. */
#include <mpi.h>
#include <stdio.h>

static int rank, size, failures;

static void expect_class(const char *what, int rc, int want) {
  int got = -1;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &got);
  if (got == want) return;
  failures++;
  fprintf(stderr, "[rank %d] FAIL %s: error class %d, expected %d\n", rank, what, got, want);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int buf[4] = {0};
  expect_class("send to rank size + 5", MPI_Send(buf, 4, MPI_INT, size + 5, 0, MPI_COMM_WORLD),
               MPI_ERR_RANK);
  expect_class("send with tag -5", MPI_Send(buf, 4, MPI_INT, rank, -5, MPI_COMM_WORLD),
               MPI_ERR_TAG);
  expect_class("receive from rank size + 3",
               MPI_Recv(buf, 4, MPI_INT, size + 3, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
               MPI_ERR_RANK);
  expect_class("send of 4 ints from NULL", MPI_Send(NULL, 4, MPI_INT, rank, 0, MPI_COMM_WORLD),
               MPI_ERR_BUFFER);
  expect_class("bcast from root size", MPI_Bcast(buf, 4, MPI_INT, size, MPI_COMM_WORLD),
               MPI_ERR_ROOT);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("dropin_errors: %s (%d failed checks)\n", total ? "FAIL" : "PASS", total);
  MPI_Finalize();
  return total ? 1 : 0;
}
