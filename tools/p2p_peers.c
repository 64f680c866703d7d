/* SPDX-License-Identifier: BSD-3-Clause */
/* p2p_peers: how device point to point grows with peers. Each rank exchanges rendezvous
 * messages (1 MiB, above the eager limit) with one new peer per step (partner rank ^ step),
 * and reports after each step: the first message's time with the new peer (connection set-up
 * included), a later message's time, gmpi's device memory (gmpi_comm_mem_usage: scratch and
 * what NCCL took for p2p links), and the device's free memory lost since the start, divided by
 * the ranks on the device (ranks sharing one GPU see the whole device's drop).
 *   mpirun -n 4 [launcher] p2p_peers          (GMPI_DEVICE_P2P=auto or nccl)
 * A measurement tool, not a test: it checks the values it receives and exits non-zero on a
 * wrong one, but it has no pass/fail threshold. */
#include <cuda_runtime.h>
#include <gmpi.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BYTES ((size_t)1 << 20)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what) {
  fprintf(stderr, "p2p_peers: %s: %s\n", what, gmpi_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* One exchange with partner; returns its time in ms, checks the values. */
static double exchange(gmpi_comm_t comm, int rank, int partner, unsigned char *dev_s,
                       unsigned char *dev_r, unsigned char *host) {
  double t0 = now();
  if (gmpi_sendrecv(dev_s, BYTES, GMPI_UINT8, partner, 9, dev_r, BYTES, GMPI_UINT8, partner, 9,
                    comm, NULL) != GMPI_SUCCESS)
    die("gmpi_sendrecv");
  double ms = 1e3 * (now() - t0);
  if (gmpi_mem_copy(comm, host, dev_r, BYTES) != GMPI_SUCCESS) die("gmpi_mem_copy");
  for (size_t i = 0; i < BYTES; i++)
    if (host[i] != (unsigned char)(partner * 31 + i)) {
      fprintf(stderr, "p2p_peers: rank %d: byte %zu from rank %d is %u\n", rank, i, partner,
              host[i]);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  return ms;
}

int main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  gmpi_comm_t comm;
  if (gmpi_init(MPI_COMM_WORLD, &comm) != GMPI_SUCCESS) die("gmpi_init");
  int rank, size;
  gmpi_comm_rank(comm, &rank);
  gmpi_comm_size(comm, &size);
  unsigned char *dev_s, *dev_r, *host = malloc(BYTES);
  if (gmpi_mem_alloc(comm, BYTES, (void **)&dev_s) != GMPI_SUCCESS ||
      gmpi_mem_alloc(comm, BYTES, (void **)&dev_r) != GMPI_SUCCESS || !host)
    die("gmpi_mem_alloc");
  for (size_t i = 0; i < BYTES; i++)
    host[i] = (unsigned char)(rank * 31 + i);
  if (gmpi_mem_copy(comm, dev_s, host, BYTES) != GMPI_SUCCESS) die("gmpi_mem_copy");
  gmpi_barrier(comm);
  size_t free0 = 0, total = 0;
  cudaMemGetInfo(&free0, &total);
  const char *mode = getenv("GMPI_DEVICE_P2P");
  if (rank == 0)
    printf("# p2p_peers: %d ranks, GMPI_DEVICE_P2P=%s, 1 MiB messages\n"
           "# peers  first_ms(max)  first_ms(rank0)  later_ms(max)  gmpi_MiB/rank(max)  "
           "device_drop_MiB/rank\n",
           size, mode ? mode : "auto");
  for (int step = 1; step < size && step <= 3; step++) {
    int partner = rank ^ step;
    double first = 0, later = 0;
    if (partner < size) {
      first = exchange(comm, rank, partner, dev_s, dev_r, host);
      later = exchange(comm, rank, partner, dev_s, dev_r, host);
    }
    gmpi_barrier(comm);
    size_t lib = 0, user = 0, free1 = 0;
    gmpi_comm_mem_usage(comm, &lib, &user);
    cudaMemGetInfo(&free1, &total);
    double mine[3] = {first, later, (double)lib / (1 << 20)}, most[3];
    MPI_Reduce(mine, most, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
      printf("%7d  %13.2f  %15.2f  %13.3f  %18.1f  %20.1f\n", step, most[0], first, most[1],
             most[2], (double)(free0 > free1 ? free0 - free1 : 0) / (1 << 20) / size);
  }
  gmpi_mem_free(comm, dev_s);
  gmpi_mem_free(comm, dev_r);
  free(host);
  gmpi_finalize(&comm);
  return 0;
}
