/* SPDX-License-Identifier: BSD-3-Clause */
/* Experiment (not part of the library): which CUDA and NCCL calls wait for a kernel of the
 * calling process that is still running -- such a call made inside gmpi's progress, while a
 * device collective's kernel waits for a peer that waits for this rank, never returns
 * (docs/design.md, "Stale CUDA IPC mappings" and "Peers are connected when the communicator is
 * built"). Two ranks: rank 0 exports a buffer by CUDA IPC, frees it and allocates another (at the
 * same address); rank 1, each time with a 2 s spinning kernel on a stream of its own, opens both
 * handles, closes the stale and the live mapping, sets SYNC_MEMOPS, cudaMalloc/cudaFree, and
 * both ranks build an NCCL communicator and exchange a byte. Each call's time and how long the
 * kernel ran on after it: a call that took ~1.8 s and left the kernel done waited for it.
 *   nvcc -ccbin mpicxx -arch=sm_90 -o ipc_sync ipc_sync.cu -lnccl -lcuda
 *   mpiexec -n 2 scripts/shared-gpu-rank ./ipc_sync   (docs/results/h100_probe_ipc_sync.txt) */
#include <cuda.h>
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <unistd.h>
__global__ void spin(volatile int *flag, long long cycles) {
  long long t0 = clock64();
  while (!*flag && clock64() - t0 < cycles) {
  }
}
static double now() { return MPI_Wtime(); }
static int *flag_h, *flag_d;
static cudaStream_t s;
static void start_spin() {
  *flag_h = 0;
  spin<<<1, 1, 0, s>>>(flag_d, 4000000000LL); // ~2 s
  cudaError_t e = cudaGetLastError();
  if (e) printf("launch: %s\n", cudaGetErrorString(e));
  usleep(200000);
}
static void end_spin(const char *what) {
  double t = now();
  cudaStreamSynchronize(s);
  printf("  %s: kernel finished %.3f s after the call returned\n", what, now() - t);
}
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  cudaSetDevice(0);
  cudaHostAlloc(&flag_h, 4, cudaHostAllocMapped);
  cudaHostGetDevicePointer(&flag_d, flag_h, 0);
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaIpcMemHandle_t h;
  void *buf = NULL;
  if (rank == 0) {
    cudaMalloc(&buf, 1 << 20);
    cudaIpcGetMemHandle(&h, buf);
    MPI_Send(&h, sizeof(h), MPI_BYTE, 1, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD); // rank 1 opened it
    void *old = buf;
    cudaFree(buf);
    cudaMalloc(&buf, 1 << 20);
    printf("rank 0: new allocation %s the old address\n", buf == old ? "at" : "not at");
    cudaIpcGetMemHandle(&h, buf);
    MPI_Send(&h, sizeof(h), MPI_BYTE, 1, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
  } else {
    MPI_Recv(&h, sizeof(h), MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    void *m1 = NULL, *m2 = NULL;
    start_spin();
    double t = now();
    cudaError_t e = cudaIpcOpenMemHandle(&m1, h, cudaIpcMemLazyEnablePeerAccess);
    printf("rank 1: open #1 while a kernel runs: %s in %.3f s\n", cudaGetErrorString(e), now() - t);
    end_spin("open #1");
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Recv(&h, sizeof(h), MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    start_spin();
    t = now();
    e = cudaIpcOpenMemHandle(&m2, h, cudaIpcMemLazyEnablePeerAccess);
    printf("rank 1: open #2 (peer re-allocated) while a kernel runs: %s in %.3f s\n",
           cudaGetErrorString(e), now() - t);
    cudaGetLastError();
    t = now();
    e = cudaIpcCloseMemHandle(m1);
    printf("rank 1: close of the stale mapping while a kernel runs: %s in %.3f s\n",
           cudaGetErrorString(e), now() - t);
    end_spin("close");
    if (!m2) {
      start_spin();
      t = now();
      e = cudaIpcOpenMemHandle(&m2, h, cudaIpcMemLazyEnablePeerAccess);
      printf("rank 1: open #2 again while a kernel runs: %s in %.3f s\n", cudaGetErrorString(e),
             now() - t);
      end_spin("open #2 again");
    }
    start_spin();
    {
      void *y = NULL;
      cudaMalloc(&y, 1 << 20);
      unsigned one = 1;
      t = now();
      CUresult cr = cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, (CUdeviceptr)y);
      printf("rank 1: set SYNC_MEMOPS on a fresh allocation while a kernel runs: %d in %.3f s\n",
             (int)cr, now() - t);
      end_spin("sync memops");
    }
    start_spin();
    t = now();
    void *x = NULL;
    e = cudaMalloc(&x, 1 << 20);
    printf("rank 1: cudaMalloc while a kernel runs: %s in %.3f s\n", cudaGetErrorString(e),
           now() - t);
    t = now();
    e = cudaFree(x);
    printf("rank 1: cudaFree while a kernel runs: %s in %.3f s\n", cudaGetErrorString(e),
           now() - t);
    end_spin("malloc/free");
    start_spin();
    t = now();
    e = cudaIpcCloseMemHandle(m2);
    printf("rank 1: close of a live mapping while a kernel runs: %s in %.3f s\n",
           cudaGetErrorString(e), now() - t);
    end_spin("close live");
    MPI_Barrier(MPI_COMM_WORLD);
  }
  { // NCCL init and first send/recv while this process has a kernel spinning (rank 1)
    ncclUniqueId id;
    if (rank == 0) ncclGetUniqueId(&id);
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    char *w = NULL;
    cudaMalloc(&w, 2);
    cudaStream_t ls;
    cudaStreamCreateWithFlags(&ls, cudaStreamNonBlocking);
    if (rank == 1) start_spin();
    double t = now();
    ncclComm_t c;
    ncclResult_t r = ncclCommInitRank(&c, 2, id, rank);
    double t_init = now() - t;
    ncclGroupStart();
    ncclSend(w, 1, ncclUint8, 1 - rank, c, ls);
    ncclRecv(w + 1, 1, ncclUint8, 1 - rank, c, ls);
    ncclResult_t r2 = ncclGroupEnd();
    cudaError_t e = cudaStreamSynchronize(ls);
    printf("rank %d: ncclCommInitRank %s in %.3f s, warm-up %s/%s in %.3f s (rank 1 had a kernel "
           "spinning)\n",
           rank, ncclGetErrorString(r), t_init, ncclGetErrorString(r2), cudaGetErrorString(e),
           now() - t);
    if (rank == 1) end_spin("nccl init");
    ncclCommDestroy(c);
  }
  MPI_Finalize();
  return 0;
}
