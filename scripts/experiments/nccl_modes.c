/* SPDX-License-Identifier: BSD-3-Clause */
/* Experiment (not part of the library): latency of NCCL operations on a blocking and on a
 * nonblocking communicator, one GPU, one rank. Answers: does a nonblocking communicator make
 * grouped send/recv slow, and how long does a 32 MiB allreduce take when 100 are enqueued?
 *   nvcc -O2 -o nccl_modes nccl_modes.c -lnccl && ./nccl_modes */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static void settle(ncclComm_t c, ncclResult_t r) {
  while (r == ncclInProgress)
    ncclCommGetAsyncError(c, &r);
  if (r != ncclSuccess) printf("  NCCL error %d\n", r);
}

static void run(int blocking) {
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = blocking;
  ncclComm_t c;
  settle(c, ncclCommInitRankConfig(&c, 1, id, 0, &cfg));
  ncclResult_t r = ncclInProgress;
  while (r == ncclInProgress)
    ncclCommGetAsyncError(c, &r);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  void *a, *b;
  size_t big = 32u << 20;
  cudaMalloc(&a, big);
  cudaMalloc(&b, big);
  int in_progress = 0;
  for (int pass = 0; pass < 2; pass++) {
    double t0 = now();
    for (int i = 0; i < 1000; i++) {
      r = ncclAllReduce(a, b, 2, ncclFloat32, ncclSum, c, s);
      in_progress += r == ncclInProgress;
      settle(c, r);
      cudaStreamSynchronize(s);
    }
    double t1 = now();
    for (int i = 0; i < 1000; i++) {
      ncclGroupStart();
      ncclSend(a, 8, ncclUint8, 0, c, s);
      ncclRecv(b, 8, ncclUint8, 0, c, s);
      r = ncclGroupEnd();
      in_progress += r == ncclInProgress;
      settle(c, r);
      cudaStreamSynchronize(s);
    }
    double t2 = now();
    for (int i = 0; i < 100; i++) {
      r = ncclAllReduce(a, b, big / 4, ncclFloat32, ncclSum, c, s);
      settle(c, r);
    }
    cudaStreamSynchronize(s);
    double t3 = now();
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaEventRecord(e0, s);
    for (int i = 0; i < 100; i++)
      cudaMemcpyAsync(b, a, big, cudaMemcpyDeviceToDevice, s);
    cudaEventRecord(e1, s);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (pass)
      printf("%s: allreduce 8B %.2f us | self send/recv 8B %.2f us | allreduce 32MiB x100 "
             "enqueued %.2f us each | memcpy 32MiB %.2f us | InProgress returns %d\n",
             blocking ? "blocking   " : "nonblocking", (t1 - t0) * 1e3, (t2 - t1) * 1e3,
             (t3 - t2) * 1e4, ms * 10, in_progress);
  }
  ncclCommDestroy(c);
  cudaFree(a);
  cudaFree(b);
}

int main(void) {
  int v;
  ncclGetVersion(&v);
  printf("NCCL %d\n", v);
  run(1);
  run(0);
  return 0;
}
