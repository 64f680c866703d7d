/* SPDX-License-Identifier: BSD-3-Clause */
/* Experiment (not part of the library): what gmpi's cuda comm costs, one GPU, one rank, each
 * piece alone, so that the per-call path can be cut where it costs (docs/performance.md).
 *   1. device memory and build time of one blocking communicator (what a gmpi comm holds since
 *      the second session; the nonblocking pair it replaced is gone), with peers connected at
 *      build or at first use (NCCL_RUNTIME_CONNECT, read once per process: run the program
 *      once with each value);
 *   2. per-call host cost of the pieces of a blocking device call: cudaPointerGetAttributes on
 *      device and host memory, ordering after the legacy default stream (event record + stream
 *      wait, GMPI_DEFAULT_STREAM_ORDER=1; or first asking whether stream 0 is busy,
 *      cudaStreamQuery, =pending), an 8-byte ncclAllReduce plus its stream wait.
 *   nvcc -O2 -o nccl_pair nccl_pair.c -lnccl
 *   NCCL_RUNTIME_CONNECT=0 ./nccl_pair; NCCL_RUNTIME_CONNECT=1 ./nccl_pair */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static size_t free_bytes(void) {
  size_t f = 0, t = 0;
  cudaMemGetInfo(&f, &t);
  return f;
}

static void report(const char *what, double t0, size_t before) {
  size_t after = free_bytes();
  printf("%-44s %8.1f ms %8.1f MiB\n", what, (now() - t0) * 1e3,
         before > after ? (double)(before - after) / (1 << 20) : 0.0);
}

/* Per call, averaged over n calls after a warm-up. */
static double per_call_us(ncclComm_t c, cudaStream_t s, void *buf, int n) {
  for (int i = 0; i < 10; i++)
    ncclAllReduce(buf, buf, 2, ncclFloat32, ncclSum, c, s);
  cudaStreamSynchronize(s);
  double t0 = now();
  for (int i = 0; i < n; i++) {
    if (ncclAllReduce(buf, buf, 2, ncclFloat32, ncclSum, c, s) != ncclSuccess) return -1;
    while (cudaStreamQuery(s) == cudaErrorNotReady)
      ;
  }
  return (now() - t0) / n * 1e6;
}

static double synced_us(ncclComm_t c, cudaStream_t s, void *buf, int n) {
  double t0 = now();
  for (int i = 0; i < n; i++) {
    ncclAllReduce(buf, buf, 2, ncclFloat32, ncclSum, c, s);
    cudaStreamSynchronize(s);
  }
  return (now() - t0) / n * 1e6;
}

int main(void) {
  int v = 0;
  ncclGetVersion(&v);
  const char *rc = getenv("NCCL_RUNTIME_CONNECT");
  printf("NCCL %d, NCCL_RUNTIME_CONNECT=%s\n", v, rc ? rc : "(unset: 1)");
  cudaSetDevice(0);
  cudaFree(0); /* the context first: its memory is not a communicator's */
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  void *buf, *host = malloc(64);
  cudaMalloc(&buf, 64);

  ncclUniqueId id;
  ncclConfig_t blocking = NCCL_CONFIG_INITIALIZER;
  blocking.blocking = 1;

  ncclGetUniqueId(&id);
  size_t before = free_bytes();
  double t0 = now();
  ncclComm_t single;
  ncclCommInitRankConfig(&single, 1, id, 0, &blocking);
  report("one blocking communicator: init", t0, before);
  before = free_bytes();
  t0 = now();
  double single_us = per_call_us(single, s, buf, 2000);
  report("  its first 2010 allreduces (connections)", t0, before);

  struct cudaPointerAttributes attr;
  cudaEvent_t mark;
  cudaEventCreateWithFlags(&mark, cudaEventDisableTiming);
  int n = 100000;
  t0 = now();
  for (int i = 0; i < n; i++)
    cudaPointerGetAttributes(&attr, buf);
  double attr_dev = (now() - t0) / n * 1e6;
  t0 = now();
  for (int i = 0; i < n; i++)
    cudaPointerGetAttributes(&attr, host);
  double attr_host = (now() - t0) / n * 1e6;
  t0 = now();
  for (int i = 0; i < n; i++) {
    cudaEventRecord(mark, cudaStreamLegacy);
    cudaStreamWaitEvent(s, mark, 0);
  }
  cudaStreamSynchronize(s);
  double legacy = (now() - t0) / n * 1e6;
  t0 = now();
  int busy = 0;
  for (int i = 0; i < n; i++)
    busy += cudaStreamQuery(cudaStreamLegacy) == cudaErrorNotReady;
  double query = (now() - t0) / n * 1e6;

  printf("per call, us: allreduce 8 B + stream wait %.2f\n", single_us);
  printf("per call, us: cudaPointerGetAttributes device %.3f host %.3f; legacy-stream order "
         "(record + wait) %.3f; asking stream 0 (cudaStreamQuery, idle) %.3f (%d busy)\n",
         attr_dev, attr_host, legacy, query, busy);
  /* the pieces together: legacy order + allreduce + stream wait, as gmpi's blocking call */
  t0 = now();
  for (int i = 0; i < 2000; i++) {
    cudaEventRecord(mark, cudaStreamLegacy);
    cudaStreamWaitEvent(s, mark, 0);
    ncclAllReduce(buf, buf, 2, ncclFloat32, ncclSum, single, s);
    while (cudaStreamQuery(s) == cudaErrorNotReady)
      ;
  }
  double ordered = (now() - t0) / 2000 * 1e6;
  t0 = now(); /* =pending with stream 0 idle: the question, no event */
  for (int i = 0; i < 2000; i++) {
    if (cudaStreamQuery(cudaStreamLegacy) == cudaErrorNotReady) {
      cudaEventRecord(mark, cudaStreamLegacy);
      cudaStreamWaitEvent(s, mark, 0);
    }
    ncclAllReduce(buf, buf, 2, ncclFloat32, ncclSum, single, s);
    while (cudaStreamQuery(s) == cudaErrorNotReady)
      ;
  }
  double asked = (now() - t0) / 2000 * 1e6;
  printf("per call, us: allreduce 8 B + stream wait, after legacy order %.2f, after asking "
         "stream 0 %.2f; with cudaStreamSynchronize instead of the poll %.2f\n",
         ordered, asked, synced_us(single, s, buf, 2000));
  ncclCommDestroy(single);
  return 0;
}
