/* SPDX-License-Identifier: BSD-3-Clause */
/* A 1-D halo exchange with an allreduce of the residual, recorded once as a plan and replayed:
 * the shape of a stencil solver's step. Buffers come from gmpi_mem_alloc, so they live on the
 * GPU with the cuda backend and in host memory with the cpu backend.
 *   mpiexec -n 4 ./halo */
#include <gmpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 4096 /* interior points per rank */

int main(int argc, char **argv) {
  gmpi_comm_t comm;
  if (gmpi_init(MPI_COMM_WORLD, &comm) != GMPI_SUCCESS) {
    fprintf(stderr, "gmpi_init: %s\n", gmpi_last_error());
    return 1;
  }
  (void)argc, (void)argv;
  int rank, size;
  gmpi_comm_rank(comm, &rank);
  gmpi_comm_size(comm, &size);
  int left = (rank + size - 1) % size, right = (rank + 1) % size;

  double *u, *res; /* u[0] and u[N+1] are the halo cells */
  gmpi_mem_alloc(comm, (N + 2) * sizeof(double), (void **)&u);
  gmpi_mem_alloc(comm, sizeof(double), (void **)&res);
  double *h = calloc(N + 2, sizeof(double));
  for (int i = 1; i <= N; i++)
    h[i] = rank;
  gmpi_mem_copy(comm, u, h, (N + 2) * sizeof(double));

  gmpi_plan_t step;
  gmpi_request_t r[4];
  gmpi_plan_begin(comm);
  gmpi_irecv(&u[0], 1, GMPI_FLOAT64, left, 0, comm, &r[0]);
  gmpi_irecv(&u[N + 1], 1, GMPI_FLOAT64, right, 1, comm, &r[1]);
  gmpi_isend(&u[N], 1, GMPI_FLOAT64, right, 0, comm, &r[2]);
  gmpi_isend(&u[1], 1, GMPI_FLOAT64, left, 1, comm, &r[3]);
  gmpi_waitall(4, r, NULL);
  gmpi_allreduce(&u[1], res, 1, GMPI_FLOAT64, GMPI_SUM, comm);
  gmpi_status_t st = gmpi_plan_end(comm, &step);
  if (st != GMPI_SUCCESS) {
    fprintf(stderr, "gmpi_plan_end: %s\n", gmpi_last_error());
    return 1;
  }
  for (int it = 0; it < 10; it++)
    gmpi_plan_run(step);

  double halo[2], sum;
  gmpi_mem_copy(comm, &halo[0], &u[0], sizeof(double));
  gmpi_mem_copy(comm, &halo[1], &u[N + 1], sizeof(double));
  gmpi_mem_copy(comm, &sum, res, sizeof(double));
  int ok = halo[0] == left && halo[1] == right && sum == size * (size - 1) / 2.0;
  printf("rank %d: halo from %g and %g, sum of first cells %g: %s\n", rank, halo[0], halo[1], sum,
         ok ? "ok" : "WRONG");
  if (rank == 0) gmpi_plan_dump(step, stdout);
  gmpi_plan_free(&step);
  gmpi_mem_free(comm, u);
  gmpi_mem_free(comm, res);
  free(h);
  gmpi_finalize(&comm); /* gmpi started MPI, so gmpi finalizes it */
  return ok ? 0 : 1;
}
