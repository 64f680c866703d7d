/* SPDX-License-Identifier: BSD-3-Clause */
/* Rank and size as MPI has them, backend and device, versions, barrier once and many times,
 * a second gmpi comm on the same MPI comm, and gmpi_mem_alloc/copy. */
#include "test_util.h"

int main(int argc, char **argv) {
  gmpi_comm_t comm = t_init(&argc, &argv);
  int rank = -1, size = -1, mpi_rank, mpi_size, device = -7;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
  T_OK(gmpi_comm_rank(comm, &rank));
  T_OK(gmpi_comm_size(comm, &size));
  T_EQ_INT(rank, mpi_rank);
  T_EQ_INT(size, mpi_size);

  gmpi_backend_t backend;
  T_OK(gmpi_comm_backend(comm, &backend));
  T_OK(gmpi_comm_device(comm, &device));
  if (backend == GMPI_BACKEND_CPU) {
    T_EQ_INT(device, -1);
    void *h = NULL;
    T_STATUS(gmpi_comm_nccl(comm, &h), GMPI_ERR_UNSUPPORTED);
    T_STATUS(gmpi_comm_set_stream(comm, NULL), GMPI_ERR_UNSUPPORTED);
  } else {
    T_TRUE(device >= 0);
  }

  const char *g = NULL, *m = NULL, *n = NULL;
  T_OK(gmpi_versions(&g, &m, &n));
  T_TRUE(g && strstr(g, GMPI_VERSION_STRING));
  T_TRUE(m && m[0]);
  T_TRUE(n && n[0]);

  /* The MPI comm gmpi uses is a duplicate, never the user's. */
  MPI_Comm inner;
  int cmp = MPI_IDENT;
  T_OK(gmpi_comm_mpi(comm, &inner));
  MPI_Comm_compare(inner, MPI_COMM_WORLD, &cmp);
  T_EQ_INT(cmp, MPI_CONGRUENT);

  T_OK(gmpi_barrier(comm));
  for (int i = 0; i < 1000; i++)
    T_OK(gmpi_barrier(comm));

  /* A second comm over the same ranks works independently and is finalized on its own. */
  gmpi_comm_t second = NULL;
  T_OK(gmpi_init(MPI_COMM_WORLD, &second));
  int sum = 0, one = 1, *d = NULL;
  T_OK(gmpi_mem_alloc(second, sizeof(int), (void **)&d));
  T_OK(gmpi_mem_copy(second, d, &one, sizeof(int)));
  T_OK(gmpi_allreduce(d, d, 1, GMPI_INT32, GMPI_SUM, second));
  T_OK(gmpi_mem_copy(second, &sum, d, sizeof(int)));
  T_EQ_INT(sum, size);
  size_t lib = 1, user = 0;
  T_OK(gmpi_comm_mem_usage(second, &lib, &user));
  T_TRUE(user >= sizeof(int));
  T_OK(gmpi_mem_free(second, d));
  T_OK(gmpi_finalize(&second));
  T_EQ_PTR(second, NULL);
  T_OK(gmpi_finalize(&second)); /* NULL-safe */
  T_OK(gmpi_barrier(comm));
  return t_finish("basic");
}
