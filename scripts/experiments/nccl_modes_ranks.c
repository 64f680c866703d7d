/* SPDX-License-Identifier: BSD-3-Clause */
/* Experiment (not part of the library): an 8-byte ncclAllReduce, enqueued and waited for,
 * on a blocking and on a nonblocking communicator, one rank per GPU over MPI. Answers: what
 * does the nonblocking communicator that gmpi's collectives use cost per call with 2+ ranks,
 * and where (the enqueue's ncclInProgress settling, or the stream)?
 *   mpicc -O2 -o nccl_modes_ranks nccl_modes_ranks.c -I$CUDA/include -L$CUDA/lib64 -lcudart -lnccl
 *   mpiexec -n 2 ./nccl_modes_ranks */
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* How the host waits for ncclInProgress to settle: a hot loop, sched_yield between polls, or
 * a 1 us sleep between polls. */
static int wait_style;
static const char *const style_name[] = {"hot", "yield", "sleep 1 us"};

static long settle(ncclComm_t c, ncclResult_t r) {
  long polls = 0;
  struct timespec us = {0, 1000};
  while (r == ncclInProgress) {
    if (wait_style == 1) sched_yield();
    if (wait_style == 2) nanosleep(&us, NULL);
    ncclCommGetAsyncError(c, &r);
    polls++;
  }
  if (r != ncclSuccess) printf("  NCCL error %d\n", r);
  return polls;
}

static void run(int blocking, int rank, int size) {
  ncclUniqueId id;
  if (rank == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = blocking;
  ncclComm_t c;
  settle(c, ncclCommInitRankConfig(&c, size, id, rank, &cfg));
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  float *a, *b;
  cudaMalloc((void **)&a, 1 << 20);
  cudaMalloc((void **)&b, 1 << 20);
  for (int pass = 0; pass < 2; pass++) {
    int n = 1000;
    long polls = 0;
    double enq = 0, t0 = now();
    for (int i = 0; i < n; i++) {
      double e0 = now();
      polls += settle(c, ncclAllReduce(a, b, 2, ncclFloat, ncclSum, c, s));
      enq += now() - e0;
      while (cudaStreamQuery(s) == cudaErrorNotReady) {
      }
    }
    double t = (now() - t0) / n * 1e6;
    if (rank == 0 && pass == 1)
      printf("%s communicator (%s), %d ranks: allreduce 8 B %.2f us per call (enqueue and "
             "settle %.2f us, %.1f async polls)\n",
             blocking ? "blocking   " : "nonblocking", style_name[wait_style], size, t,
             enq / n * 1e6, (double)polls / n);
  }
  cudaFree(a);
  cudaFree(b);
  ncclCommDestroy(c);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, ndev;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  cudaGetDeviceCount(&ndev);
  cudaSetDevice(rank % ndev);
  for (int rep = 0; rep < 2; rep++) {
    wait_style = 0;
    run(1, rank, size);
    for (wait_style = 0; wait_style < 3; wait_style++)
      run(0, rank, size);
  }
  MPI_Finalize();
  return 0;
}
