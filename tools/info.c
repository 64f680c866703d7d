/* SPDX-License-Identifier: BSD-3-Clause */
/* gmpi-info: one line per rank -- host, local rank, backend, device -- and the versions of
 * gmpi, MPI and NCCL, plus the library's own device memory. Run it under mpiexec. */
#include <gmpi.h>
#include <gmpi_version.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: mpiexec -n N gmpi-info\n"
    "  One line per rank (host, local rank, backend, device, gmpi's own device memory), the\n"
    "  versions of gmpi, MPI and NCCL, and why the backend was chosen. Reads the GMPI_*\n"
    "  variables as any gmpi program does (GMPI_BACKEND=auto|cpu|cuda, GMPI_VISIBLE_DEVICES).\n"
    "  --version: gmpi-info's and the libraries' versions, without starting MPI's job.\n";

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--version") || !strcmp(argv[i], "-V")) {
      const char *g, *m, *n;
      gmpi_versions(&g, &m, &n);
      printf("gmpi-info %s\n%s | %s | NCCL %s\n", GMPI_VERSION_STRING, g, m, n);
      return 0;
    }
    int help = !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
    fprintf(help ? stdout : stderr, "%s%s%s", help ? "" : "gmpi-info: unknown argument '",
            help ? "" : argv[i], help ? usage : "'\n");
    if (!help) fputs(usage, stderr);
    return help ? 0 : 2;
  }
  int provided, world_rank;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  gmpi_comm_t comm = NULL;
  if (gmpi_init(MPI_COMM_WORLD, &comm) != GMPI_SUCCESS) {
    fprintf(stderr, "[rank %d] gmpi_init failed: %s\n", world_rank, gmpi_last_error());
    MPI_Finalize();
    return 1;
  }
  int rank, size, device;
  gmpi_backend_t backend;
  size_t lib = 0, user = 0;
  const char *g, *m, *n, *why = "";
  char host[MPI_MAX_PROCESSOR_NAME];
  int hlen;
  MPI_Get_processor_name(host, &hlen);
  gmpi_comm_rank(comm, &rank);
  gmpi_comm_size(comm, &size);
  gmpi_comm_backend(comm, &backend);
  gmpi_comm_device(comm, &device);
  gmpi_comm_mem_usage(comm, &lib, &user);
  gmpi_comm_backend_reason(comm, &why);
  gmpi_versions(&g, &m, &n);
  /* Local rank as MPI sees it, for the table. */
  MPI_Comm node;
  int local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  if (rank == 0)
    printf("%s | %s | NCCL %s\n%-5s %-20s %-6s %-8s %-7s %s\n", g, m, n, "rank", "host", "local",
           "backend", "device", "gmpi's own device memory (MiB)");
  if (rank == 0) printf("backend chosen (rank 0): %s\n", why);
  for (int r = 0; r < size; r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (r == rank)
      printf("%-5d %-20s %-6d %-8s %-7d %.1f\n", rank, host, local, gmpi_backend_name(backend),
             device, (double)lib / (1 << 20));
    fflush(stdout);
  }
  gmpi_finalize(&comm);
  MPI_Finalize();
  return 0;
}
