/* SPDX-License-Identifier: BSD-3-Clause */
/* gmpi-jax-bench's "c" baseline: the chain gmpi.jax runs inside jax.jit, written against gmpi's
 * C API on the same buffers, so the bench can say what gmpi.jax adds to the C call. Loaded with
 * ctypes; one call runs one timed block, so Python's per-call cost is not in the time. On a GPU
 * the calls are stream-ordered on a stream of the chain's own (as gmpi.jax's CUDA handler is on
 * XLA's) with one synchronize at the end; on cpu they are gmpi's blocking host calls. */
#include <gmpi.h>
#include <stddef.h>
#include <time.h>
#ifdef GMPI_BENCH_CUDA
#include <cuda_runtime.h>
#endif

/* What the chain calls: matches gmpi-jax-bench's --coll names. */
enum { CHAIN_ALLREDUCE = 0, CHAIN_SENDRECV = 1 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One call of the chain: a into b (a sum over ranks, or a's contents from left while a goes to
 * right). */
static gmpi_status_t chain_step(gmpi_comm_t comm, int coll, const void *a, void *b, size_t count,
                                int left, int right) {
  if (coll == CHAIN_ALLREDUCE) return gmpi_allreduce(a, b, count, GMPI_FLOAT32, GMPI_SUM, comm);
  return gmpi_sendrecv(a, count, GMPI_FLOAT32, right, 7, b, count, GMPI_FLOAT32, left, 7, comm,
                       NULL);
}

/* The chain, timed: seconds in *took. */
static gmpi_status_t chain_run(gmpi_comm_t comm, int coll, void *a, void *b, size_t count,
                               int iters, int left, int right, double *took) {
  double t0 = now();
  for (int i = 0; i < iters; i++) {
    gmpi_status_t st = chain_step(comm, coll, i % 2 ? b : a, i % 2 ? a : b, count, left, right);
    if (st != GMPI_SUCCESS) return st;
  }
  *took = now() - t0;
  return GMPI_SUCCESS;
}

#ifdef GMPI_BENCH_CUDA
/* Stream-ordered: the chain queued on a stream of its own, then one synchronize, timed from the
 * first call to the synchronize's return (the stream is made once, outside the time). */
static gmpi_status_t chain_on_stream(gmpi_comm_t comm, int coll, void *a, void *b, size_t count,
                                     int iters, int left, int right, double *took) {
  static cudaStream_t s;
  if (!s && cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
    return GMPI_ERR_BACKEND;
  gmpi_status_t st = gmpi_comm_set_stream(comm, s);
  if (st != GMPI_SUCCESS) return st;
  double t0 = now(), queued = 0.0;
  st = chain_run(comm, coll, a, b, count, iters, left, right, &queued);
  if (st == GMPI_SUCCESS && cudaStreamSynchronize(s) != cudaSuccess) st = GMPI_ERR_BACKEND;
  *took = now() - t0;
  gmpi_status_t back = gmpi_comm_set_stream(comm, NULL);
  return st != GMPI_SUCCESS ? st : back;
}
#endif

/* Seconds for iters dependent calls (a -> b, then b -> a, ...) of count float32 on this rank,
 * or -1 with gmpi_last_error() saying why (-2: the backend or one of the chain's CUDA calls
 * failed). */
double gmpi_c_chain(gmpi_comm_t comm, int coll, void *a, void *b, size_t count, int iters, int left,
                    int right) {
  gmpi_backend_t backend = GMPI_BACKEND_CPU;
  if (gmpi_comm_backend(comm, &backend) != GMPI_SUCCESS) return -1.0;
  double took = 0.0;
  gmpi_status_t st;
#ifdef GMPI_BENCH_CUDA
  if (backend == GMPI_BACKEND_CUDA)
    st = chain_on_stream(comm, coll, a, b, count, iters, left, right, &took);
  else
#endif
    st = chain_run(comm, coll, a, b, count, iters, left, right, &took);
  return st == GMPI_SUCCESS ? took : st == GMPI_ERR_BACKEND ? -2.0 : -1.0;
}
