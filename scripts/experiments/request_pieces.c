/* SPDX-License-Identifier: BSD-3-Clause */
/* Experiment (not part of the library): the host cost of the pieces of a nonblocking device
 * collective and of buffer classification, one GPU, one rank, each piece alone, so that a
 * request's cost over raw NCCL (docs/performance.md, issue 23's bounds) is cut where it is:
 *   1. classifying a pointer: the runtime's cudaPointerGetAttributes against the driver's
 *      cuPointerGetAttribute (one attribute) and cuPointerGetAttributes (the four gmpi needs:
 *      memory type, device, managed, synchronous memops), on device and host memory;
 *   2. a request's device pieces: cudaEventRecord, cudaEventQuery of a completed event,
 *      ncclCommGetAsyncError on a blocking communicator;
 *   3. what the wait does between polls: MPI_Test of a posted receive (gmpi's envelope engine
 *      tests its incoming channel so at every progress pass);
 *   4. an in-place 8-byte ncclBroadcast (no device work at one rank) completed by an event,
 *      polled tight, with MPI_Test at every poll, and with MPI_Test at every 8th poll.
 *   mpicc -O2 -I$CUDA/include -o request_pieces request_pieces.c -L$CUDA/lib64 -lcudart -lnccl
 *   ./request_pieces */
#include <cuda.h>
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef int (*get_one_fn)(void *, CUpointer_attribute, CUdeviceptr);
typedef int (*get_many_fn)(unsigned, CUpointer_attribute *, void **, CUdeviceptr);

static void *driver(const char *name) {
  void *fn = NULL;
  enum cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess)
    return NULL;
  return fn;
}

#define N 200000
#define TIME(label, body)                                                                          \
  do {                                                                                             \
    double t0_ = now();                                                                            \
    for (int i_ = 0; i_ < N; i_++) {                                                               \
      body;                                                                                        \
    }                                                                                              \
    printf("  %-58s %7.3f us\n", label, (now() - t0_) / N * 1e6);                                  \
  } while (0)

static void classify_costs(void *dev, void *host) {
  get_one_fn one = (get_one_fn)driver("cuPointerGetAttribute");
  get_many_fn many = (get_many_fn)driver("cuPointerGetAttributes");
  struct cudaPointerAttributes attr;
  printf("classification, per call:\n");
  TIME("cudaPointerGetAttributes, device", cudaPointerGetAttributes(&attr, dev));
  TIME("cudaPointerGetAttributes, host (malloc)", cudaPointerGetAttributes(&attr, host));
  if (!one || !many) {
    printf("  driver entry points not found\n");
    return;
  }
  unsigned type = 0;
  TIME("cuPointerGetAttribute(MEMORY_TYPE), device",
       one(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)dev));
  TIME("cuPointerGetAttribute(MEMORY_TYPE), host",
       one(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)host));
  CUpointer_attribute which[4] = {
      CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
      CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS};
  unsigned mtype = 0, sync = 0, managed = 0;
  int ordinal = -1;
  void *values[4] = {&mtype, &ordinal, &managed, &sync};
  TIME("cuPointerGetAttributes(type, device, managed, memops), device",
       many(4, which, values, (CUdeviceptr)dev));
  void *ptrs[2] = {dev, host};
  const char *names[2] = {"device", "host"};
  for (int k = 0; k < 2; k++) { /* what one call answers, each from fresh values */
    mtype = sync = managed = 0;
    ordinal = -1;
    int r = many(4, which, values, (CUdeviceptr)ptrs[k]);
    printf("    (%s: result %d, type %u ordinal %d managed %u memops %u)\n", names[k], r, mtype,
           ordinal, managed, sync);
  }
  TIME("cuPointerGetAttributes(type, device, managed, memops), host",
       many(4, which, values, (CUdeviceptr)host));
}

static void request_costs(ncclComm_t nc, cudaStream_t s) {
  cudaEvent_t ev;
  cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  cudaEventRecord(ev, s);
  cudaStreamSynchronize(s);
  ncclResult_t async;
  int flag = 0, got = 0;
  MPI_Request rq;
  MPI_Irecv(&got, 1, MPI_INT, 0, 77, MPI_COMM_WORLD, &rq);
  printf("a request's pieces, per call:\n");
  TIME("cudaEventQuery, completed event", cudaEventQuery(ev));
  TIME("ncclCommGetAsyncError, blocking communicator", ncclCommGetAsyncError(nc, &async));
  TIME("MPI_Test, a posted receive nothing matches", MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
  double t0 = now();
  for (int i = 0; i < N / 10; i++)
    cudaEventRecord(ev, s);
  cudaStreamSynchronize(s);
  printf("  %-58s %7.3f us\n", "cudaEventRecord (an idle stream)", (now() - t0) / (N / 10) * 1e6);
  MPI_Send(&flag, 1, MPI_INT, 0, 77, MPI_COMM_WORLD);
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  cudaEventDestroy(ev);
}

/* An in-place ncclBroadcast completed by an event, each poll doing MPI_Test every `every`
 * polls (0: never); returns us per call and the polls per call. */
static double bcast_polled(ncclComm_t nc, cudaStream_t s, void *buf, int every, int n,
                           double *polls) {
  cudaEvent_t ev;
  cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  int flag = 0, got = 0;
  MPI_Request rq;
  MPI_Irecv(&got, 1, MPI_INT, 0, 78, MPI_COMM_WORLD, &rq);
  long total = 0;
  double t0 = now();
  for (int i = 0; i < n; i++) {
    ncclBroadcast(buf, buf, 8, ncclUint8, 0, nc, s);
    cudaEventRecord(ev, s);
    for (int p = 1; cudaEventQuery(ev) == cudaErrorNotReady; p++) {
      total++;
      if (every && p % every == 0) MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
    }
  }
  double us = (now() - t0) / n * 1e6;
  MPI_Send(&flag, 1, MPI_INT, 0, 78, MPI_COMM_WORLD);
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  cudaEventDestroy(ev);
  *polls = (double)total / n;
  return us;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  cudaSetDevice(0);
  cudaFree(0);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  void *dev = NULL, *host = malloc(64);
  cudaMalloc(&dev, 64);
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  ncclComm_t nc;
  ncclCommInitRank(&nc, 1, id, 0);
  classify_costs(dev, host);
  request_costs(nc, s);
  printf("in-place 8-byte ncclBroadcast + event, polled (5 rounds, interleaved):\n");
  const int every[3] = {0, 1, 8};
  const char *names[3] = {"tight", "MPI_Test every poll", "MPI_Test every 8th poll"};
  for (int round = 0; round < 5; round++) {
    for (int k = 0; k < 3; k++) {
      double polls = 0;
      double us = bcast_polled(nc, s, dev, every[k], 20000, &polls);
      printf("  round %d %-28s %7.3f us  (%.1f polls a call)\n", round, names[k], us, polls);
    }
  }
  ncclCommDestroy(nc);
  cudaFree(dev);
  free(host);
  MPI_Finalize();
  return 0;
}
