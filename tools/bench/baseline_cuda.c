/* SPDX-License-Identifier: BSD-3-Clause */
/* Baselines on the cuda backend, on the very device buffers gmpi used:
 *   nccl   -- the raw NCCL call, as a plain NCCL program makes it: its own (blocking)
 *             communicator built over MPI, its own stream; in eager mode each call is
 *             followed by a stream synchronize (what a blocking call must do), in stream mode
 *             only the timed loop's end is synchronized, as for gmpi;
 *   ncclevent -- the same raw NCCL call completed as a nonblocking request over raw NCCL
 *             must be: an event recorded after it, polled with cudaEventQuery until it has
 *             passed (the cost gmpi's --nonblocking form is compared with; nccl's stream
 *             synchronize cannot be tested without waiting);
 *   staged -- what a program without gmpi does with plain MPI: copy to pinned host memory,
 *             the blocking MPI call, copy back;
 *   graph  -- plan mode: the plan's calls made raw on the nccl baseline's communicator,
 *             each on the same buffers as in the plan, captured once into one CUDA graph;
 *             one run is one launch and a stream synchronize. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

static const struct {
  ncclDataType_t type;
  int ok;
} nccl_types[GMPI_DTYPE_COUNT] = {
    [GMPI_INT8] = {ncclInt8, 1},       [GMPI_UINT8] = {ncclUint8, 1},
    [GMPI_INT32] = {ncclInt32, 1},     [GMPI_UINT32] = {ncclUint32, 1},
    [GMPI_INT64] = {ncclInt64, 1},     [GMPI_UINT64] = {ncclUint64, 1},
    [GMPI_FLOAT16] = {ncclFloat16, 1}, [GMPI_BFLOAT16] = {ncclBfloat16, 1},
    [GMPI_FLOAT32] = {ncclFloat32, 1}, [GMPI_FLOAT64] = {ncclFloat64, 1},
};
static const struct {
  ncclRedOp_t op;
  int ok;
} nccl_ops[GMPI_OP_COUNT] = {
    [GMPI_SUM] = {ncclSum, 1}, [GMPI_PROD] = {ncclProd, 1}, [GMPI_MIN] = {ncclMin, 1},
    [GMPI_MAX] = {ncclMax, 1}, [GMPI_AVG] = {ncclAvg, 1},
};

static int is_cuda(const bench_ctx_t *c, char *why, size_t len) {
  if (c->backend == GMPI_BACKEND_CUDA) return 1;
  snprintf(why, len, "the comm runs the cpu backend (no device buffers)");
  return 0;
}

static int nccl_available(const bench_ctx_t *c, char *why, size_t len) {
  if (!is_cuda(c, why, len)) return 0;
  if (!nccl_types[c->dtype].ok || !nccl_ops[c->op].ok) {
    snprintf(why, len, "NCCL has no %s %s", gmpi_dtype_name(c->dtype), gmpi_op_name(c->op));
    return 0;
  }
  if (c->op == GMPI_AVG && c->dtype <= GMPI_UINT64) {
    snprintf(why, len, "NCCL's integer average is not C's truncating division");
    return 0;
  }
  return 1;
}

/* The baseline's own communicator and stream, made on first use (collective over MPI). */
static ncclComm_t raw_comm;
static cudaStream_t raw_stream;

static int raw_nccl_setup(bench_ctx_t *c) {
  if (raw_comm) return 0;
  ncclUniqueId id;
  if (c->rank == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, c->mpi);
  if (ncclCommInitRank(&raw_comm, c->size, id, c->rank) != ncclSuccess) return 1;
  return cudaStreamCreateWithFlags(&raw_stream, cudaStreamNonBlocking) != cudaSuccess;
}

/* The raw NCCL call, enqueued on the baseline's stream. */
static int nccl_enqueue(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s) {
  if (raw_nccl_setup(c)) return 1;
  ncclComm_t nc = raw_comm;
  cudaStream_t st = raw_stream;
  ncclDataType_t t = nccl_types[c->dtype].type;
  ncclRedOp_t op = nccl_ops[c->op].op;
  size_t n = s->count, es = gmpi_dtype_size(c->dtype);
  int next = (c->rank + 1) % c->size, prev = (c->rank + c->size - 1) % c->size;
  ncclResult_t r = ncclSuccess;
  switch (coll->kind) {
  case BENCH_ALLREDUCE: r = ncclAllReduce(c->send, c->recv, n, t, op, nc, st); break;
  case BENCH_BCAST: r = ncclBroadcast(c->recv, c->recv, n, t, c->root, nc, st); break;
  case BENCH_REDUCE: r = ncclReduce(c->send, c->recv, n, t, op, c->root, nc, st); break;
  case BENCH_ALLGATHER: r = ncclAllGather(c->send, c->recv, n, t, nc, st); break;
  case BENCH_REDUCE_SCATTER: r = ncclReduceScatter(c->send, c->recv, n, t, op, nc, st); break;
  case BENCH_ALLTOALL:  /* grouped, as nccl-tests does: every NCCL 2.x has it */
  case BENCH_ALLTOALLV: /* equal blocks: what a raw NCCL user writes for alltoallv too */
    ncclGroupStart();
    for (int p = 0; p < c->size; p++) {
      ncclSend((char *)c->send + p * n * es, n * es, ncclUint8, p, nc, st);
      ncclRecv((char *)c->recv + p * n * es, n * es, ncclUint8, p, nc, st);
    }
    r = ncclGroupEnd();
    break;
  case BENCH_GATHER:
  case BENCH_GATHERV: /* equal blocks: the rooted gather */
    ncclGroupStart();
    ncclSend(c->send, n * es, ncclUint8, c->root, nc, st);
    if (c->rank == c->root)
      for (int p = 0; p < c->size; p++)
        ncclRecv((char *)c->recv + p * n * es, n * es, ncclUint8, p, nc, st);
    r = ncclGroupEnd();
    break;
  case BENCH_SCATTER:
  case BENCH_SCATTERV:
    ncclGroupStart();
    if (c->rank == c->root)
      for (int p = 0; p < c->size; p++)
        ncclSend((char *)c->send + p * n * es, n * es, ncclUint8, p, nc, st);
    ncclRecv(c->recv, n * es, ncclUint8, c->root, nc, st);
    r = ncclGroupEnd();
    break;
  case BENCH_ALLGATHERV: r = ncclAllGather(c->send, c->recv, n * es, ncclUint8, nc, st); break;
  case BENCH_REDUCE_SCATTERV: r = ncclReduceScatter(c->send, c->recv, n, t, op, nc, st); break;
  case BENCH_SENDRECV:
    ncclGroupStart();
    ncclSend(c->send, n * es, ncclUint8, next, nc, st);
    ncclRecv(c->recv, n * es, ncclUint8, prev, nc, st);
    r = ncclGroupEnd();
    break;
  case BENCH_COLL_COUNT: break;
  }
  return r != ncclSuccess;
}

static int nccl_run(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s) {
  if (nccl_enqueue(c, coll, s)) return 1;
  if (c->mode == MODE_STREAM) return 0;
  return cudaStreamSynchronize(raw_stream) != cudaSuccess;
}

static int ncclevent_available(const bench_ctx_t *c, char *why, size_t len) {
  if (!nccl_available(c, why, len)) return 0;
  if (c->mode == MODE_EAGER) return 1;
  snprintf(why, len, "an event per call is the eager (and --nonblocking) form's baseline");
  return 0;
}

static int ncclevent_run(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s) {
  static cudaEvent_t done;
  if (!done && cudaEventCreateWithFlags(&done, cudaEventDisableTiming) != cudaSuccess) return 1;
  if (nccl_enqueue(c, coll, s) || cudaEventRecord(done, raw_stream) != cudaSuccess) return 1;
  cudaError_t e;
  while ((e = cudaEventQuery(done)) == cudaErrorNotReady) {
  }
  return e != cudaSuccess;
}

static int staged_available(const bench_ctx_t *c, char *why, size_t len) {
  if (!is_cuda(c, why, len)) return 0;
  if (!bench_mpi_type_ok(c->dtype) || c->op == GMPI_AVG) {
    snprintf(why, len, "MPI has no %s %s", gmpi_dtype_name(c->dtype), gmpi_op_name(c->op));
    return 0;
  }
  return 1;
}

/* Pinned staging, allocated once at the largest size. */
static void *pinned_send, *pinned_recv;

static int staged_run(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s) {
  size_t es = gmpi_dtype_size(c->dtype);
  if (!pinned_send && (cudaMallocHost(&pinned_send, c->send_cap) != cudaSuccess ||
                       cudaMallocHost(&pinned_recv, c->recv_cap) != cudaSuccess))
    return 1;
  void *dev_in = coll->kind == BENCH_BCAST ? c->recv : c->send;
  void *host_in = coll->kind == BENCH_BCAST ? pinned_recv : pinned_send;
  if (cudaMemcpy(host_in, dev_in, s->send_elems * es, cudaMemcpyDeviceToHost) != cudaSuccess)
    return 1;
  if (bench_mpi_call(c, coll->kind, s, pinned_send, pinned_recv) != MPI_SUCCESS) return 1;
  return cudaMemcpy(c->recv, pinned_recv, s->recv_elems * es, cudaMemcpyHostToDevice) !=
         cudaSuccess;
}

const bench_baseline_t bench_baseline_nccl = {"nccl", nccl_available, nccl_run, 0, NULL};
const bench_baseline_t bench_baseline_ncclevent = {"ncclevent", ncclevent_available, ncclevent_run,
                                                   0, NULL};
const bench_baseline_t bench_baseline_staged = {"staged", staged_available, staged_run, 0, NULL};

/* The captured graph of the current row. */
static struct {
  const bench_coll_t *coll;
  size_t count;
  cudaGraphExec_t exec;
} graph;

static int graph_available(const bench_ctx_t *c, char *why, size_t len) {
  if (c->mode != MODE_PLAN) {
    snprintf(why, len, "a raw CUDA graph is the baseline of plan mode only");
    return 0;
  }
  return nccl_available(c, why, len);
}

/* Capture plan_ops raw calls, sliced as bench_plan_impl slices the plan's. nccl_run does not
 * synchronize in stream mode, so the row's mode is stream while capturing. */
static int graph_build(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s) {
  if (graph.exec) cudaGraphExecDestroy(graph.exec);
  graph.exec = NULL;
  if (raw_nccl_setup(c)) return 1; /* a communicator cannot be made inside a capture */
  size_t slice = bench_plan_slice_bytes(c, s);
  void *send = c->send, *recv = c->recv;
  bench_mode_t mode = c->mode;
  cudaGraph_t g = NULL;
  int err = cudaStreamBeginCapture(raw_stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess;
  c->mode = MODE_STREAM;
  for (int i = 0; i < c->plan_ops && !err; i++) {
    c->send = (char *)send + (size_t)i * slice;
    c->recv = (char *)recv + (size_t)i * slice;
    err = nccl_run(c, coll, s);
  }
  c->mode = mode, c->send = send, c->recv = recv;
  if (cudaStreamEndCapture(raw_stream, &g) != cudaSuccess || err) goto destroy_graph;
  err = cudaGraphInstantiate(&graph.exec, g, 0) != cudaSuccess;
  cudaGraphDestroy(g);
  graph.coll = coll, graph.count = s->count;
  return err;
destroy_graph:
  if (g) cudaGraphDestroy(g);
  return 1;
}

static int graph_run(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s) {
  if ((graph.coll != coll || graph.count != s->count || !graph.exec) && graph_build(c, coll, s))
    return 1;
  return cudaGraphLaunch(graph.exec, raw_stream) != cudaSuccess ||
         cudaStreamSynchronize(raw_stream) != cudaSuccess;
}
const bench_baseline_t bench_baseline_graph = {"graph", graph_available, graph_run, 1, NULL};

/* Stream-ordered gmpi: the comm enqueues on its stream; the timed loop syncs at its end. */
int bench_stream_impl(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s) {
  void *stream = NULL;
  gmpi_comm_stream(c->comm, &stream);
  gmpi_status_t st = gmpi_comm_set_stream(c->comm, stream);
  if (st == GMPI_SUCCESS) st = coll->run(c, s);
  return st != GMPI_SUCCESS;
}

void bench_sync(bench_ctx_t *c) {
  if (c->backend != GMPI_BACKEND_CUDA) return;
  void *stream = NULL;
  gmpi_comm_stream(c->comm, &stream);
  cudaStreamSynchronize((cudaStream_t)stream);
  if (raw_stream) cudaStreamSynchronize(raw_stream);
}

void bench_cuda_teardown(void) {
  if (graph.exec) cudaGraphExecDestroy(graph.exec);
  graph.exec = NULL;
  if (raw_comm) ncclCommDestroy(raw_comm);
  if (raw_stream) cudaStreamDestroy(raw_stream);
  raw_comm = NULL;
  raw_stream = NULL;
}
