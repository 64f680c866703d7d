/* SPDX-License-Identifier: BSD-3-Clause */
/* comm_churn: what making a communicator costs -- 50 rounds of MPI_Comm_dup, one allreduce on
 * the new comm, MPI_Comm_free; prints microseconds per round on rank 0. A plain MPI program:
 * run it with and without the drop-in layer (docs/performance.md, "Drop-in layer"). */
#include <mpi.h>
#include <stdio.h>
int main(int c, char **v) {
  MPI_Init(&c, &v);
  int r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  double t0 = MPI_Wtime();
  for (int i = 0; i < 50; i++) {
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    int x = 1, y;
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, d);
    MPI_Comm_free(&d);
  }
  double t = (MPI_Wtime() - t0) / 50;
  if (!r) printf("dup+allreduce+free: %.1f us per comm\n", t * 1e6);
  MPI_Finalize();
}
