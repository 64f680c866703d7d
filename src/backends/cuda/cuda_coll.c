/* SPDX-License-Identifier: BSD-3-Clause */
/* Collectives on the cuda backend. Host buffers take the cpu engine (MPI); device buffers of
 * this rank's GPU take NCCL -- natively where NCCL has the type and op, as real pairs for
 * complex sums, as sum + division for averages, and otherwise by gathering every
 * rank's input and reducing with gmpi's kernel (core/devpath.c decides). Data movement is
 * type-agnostic: bytes. Blocking mode waits (bounded) for the stream; stream-ordered mode
 * returns once enqueued on the user's stream. */
#include <stdlib.h>
#include <string.h>

#include "../../core/comm.h"
#include "../../core/devpath.h"
#include "../../core/dtype.h"
#include "../../core/error.h"
#include "../../core/ops.h"
#include "../../core/request.h"
#include "../../core/vote.h"
#include "cuda.h"
#include "cuda_check.h"

static const ncclDataType_t nccl_type[GMPI_DTYPE_COUNT] = {
    [GMPI_INT8] = ncclInt8,       [GMPI_UINT8] = ncclUint8,       [GMPI_INT32] = ncclInt32,
    [GMPI_UINT32] = ncclUint32,   [GMPI_INT64] = ncclInt64,       [GMPI_UINT64] = ncclUint64,
    [GMPI_FLOAT16] = ncclFloat16, [GMPI_BFLOAT16] = ncclBfloat16, [GMPI_FLOAT32] = ncclFloat32,
    [GMPI_FLOAT64] = ncclFloat64,
};
/* No ncclAvg: devpath hands avg to NCCL as a sum, divided afterwards (see devpath.c). */
static const ncclRedOp_t nccl_op[GMPI_OP_COUNT] = {
    [GMPI_SUM] = ncclSum, [GMPI_PROD] = ncclProd, [GMPI_MIN] = ncclMin, [GMPI_MAX] = ncclMax};

/* Temporaries one collective holds (staging copies, gather space when nonblocking). */
#define DEV_TEMPS 2

typedef struct {
  gmpi_comm_t comm;
  cuda_comm_t *cc;
  const gmpi_coll_args_t *a;
  cudaStream_t s;
  size_t es;    /* element size */
  size_t bytes; /* count * es */
  int nonblocking;
  void *temp[DEV_TEMPS]; /* released when the collective is enqueued (dev_release_temps) */
  size_t temp_bytes[DEV_TEMPS];
  int n_temps;
} dev_ctx_t;

#define AT(ptr, off) ((char *)(ptr) + (off))

/* Scratch sizes: powers of two from 4 KiB, the last one GMPI_CUDA_SCRATCH_BYTES (or more, for
 * a caller that checked its own larger need). */
static size_t scratch_size(size_t bytes) {
  size_t size = 4096;
  while (size < bytes && size < GMPI_CUDA_SCRATCH_BYTES)
    size *= 2;
  return size < bytes ? bytes : size;
}

/* A captured plan's graph holds the scratch address it was captured with, so an outgrown block
 * is kept until the comm is freed (freeing it would let a later replay write into memory the
 * program may own by then; found in review), and cudaFree, which waits for the whole device,
 * stays off the data path. */
gmpi_status_t cuda_comm_scratch(cuda_comm_t *cc, size_t bytes, void **ptr) {
  if (bytes > cc->scratch_bytes) {
    size_t size = scratch_size(bytes);
    void *grown;
    GMPI_CHECK(cuda_lib_alloc(size, &grown));
    if (cc->scratch && cc->n_retired < CUDA_RETIRED_SCRATCH) {
      cc->retired[cc->n_retired] = cc->scratch;
      cc->retired_bytes[cc->n_retired++] = cc->scratch_bytes;
    } else if (cc->scratch) { /* only after requests above GMPI_CUDA_SCRATCH_BYTES: none asks */
      cuda_lib_free(cc->scratch, cc->scratch_bytes);
    }
    cc->scratch = grown;
    cc->scratch_bytes = size;
  }
  *ptr = cc->scratch;
  return GMPI_SUCCESS;
}

void cuda_comm_release_scratch(cuda_comm_t *cc) {
  cuda_lib_free(cc->scratch, cc->scratch_bytes);
  cc->scratch = NULL;
  cc->scratch_bytes = 0;
  while (cc->n_retired > 0) {
    cc->n_retired--;
    cuda_lib_free(cc->retired[cc->n_retired], cc->retired_bytes[cc->n_retired]);
  }
}

/* Device memory for this collective alone. Nonblocking: stream-ordered memory
 * (cudaMallocAsync), freed in stream order right after the collective, so nothing waits and
 * no pending collective's scratch is touched. Blocking: library memory, freed once the stream
 * has finished. A plan's capture cannot allocate: its steps must not need one. */
static gmpi_status_t dev_temp(dev_ctx_t *x, size_t bytes, void **ptr) {
  if (atomic_load(&x->cc->capturing))
    return gmpi_error(GMPI_ERR_UNSUPPORTED,
                      "%s in a plan would need %zu bytes of temporary device memory, which a "
                      "CUDA graph capture cannot allocate; use separate send and receive buffers",
                      gmpi_coll_name(x->a->kind), bytes);
  if (x->n_temps == DEV_TEMPS)
    return gmpi_error(GMPI_ERR_INTERNAL, "more than %d temporaries for one collective", DEV_TEMPS);
  if (x->nonblocking)
    GMPI_CUDA_CHECK(cudaMallocAsync(ptr, bytes ? bytes : 1, x->s));
  else
    GMPI_CHECK(cuda_lib_alloc(bytes, ptr));
  x->temp[x->n_temps] = *ptr;
  x->temp_bytes[x->n_temps++] = bytes;
  return GMPI_SUCCESS;
}

static gmpi_status_t dev_release_temps(dev_ctx_t *x, gmpi_status_t st) {
  if (!x->n_temps) return st;
  if (!x->nonblocking && st == GMPI_SUCCESS)
    st = cuda_wait_stream(x->comm, x->s, gmpi_coll_name(x->a->kind));
  for (int i = 0; i < x->n_temps; i++) {
    if (x->nonblocking)
      cudaFreeAsync(x->temp[i], x->s);
    else if (st == GMPI_SUCCESS) /* after a failure the transfer may still use it: leave it */
      cuda_lib_free(x->temp[i], x->temp_bytes[i]);
  }
  x->n_temps = 0;
  return st;
}

/* Gather space for the fallback reductions: the comm's scratch, or a temporary when
 * nonblocking (a pending collective may still be using the scratch). */
static gmpi_status_t dev_scratch(dev_ctx_t *x, size_t bytes, void **ptr) {
  if (x->nonblocking) return dev_temp(x, bytes, ptr);
  return cuda_comm_scratch(x->cc, bytes, ptr);
}

/* A copy of bytes at src on the stream: in-place inputs are sent from one. */
static gmpi_status_t dev_stage_copy(dev_ctx_t *x, const void *src, size_t bytes, void **copy) {
  if (!x->nonblocking && bytes <= GMPI_CUDA_SCRATCH_BYTES)
    GMPI_CHECK(cuda_comm_scratch(x->cc, bytes, copy));
  else
    GMPI_CHECK(dev_temp(x, bytes, copy));
  GMPI_CUDA_CHECK(cudaMemcpyAsync(*copy, src, bytes, cudaMemcpyDeviceToDevice, x->s));
  return GMPI_SUCCESS;
}

/* Elements per gather round: all of them, or as many as fit the scratch for every rank. */
static size_t gather_elems(size_t count, int nranks, size_t es) {
  size_t fit = GMPI_CUDA_SCRATCH_BYTES / ((size_t)nranks * es);
  fit = fit ? fit : 1;
  return count < fit ? count : fit;
}

static size_t gather_chunk(const dev_ctx_t *x) {
  return gather_elems(x->a->count, x->comm->size, x->es);
}

/* ---- NCCL groups of sends and receives ---------------------------------------------------- */

gmpi_status_t cuda_group_start(gmpi_comm_t comm, ncclComm_t nc) {
  GMPI_NCCL_ENQUEUE(comm, nc, ncclGroupStart());
  return GMPI_SUCCESS;
}

gmpi_status_t cuda_group_end(gmpi_comm_t comm, ncclComm_t nc, gmpi_status_t status) {
  cuda_nccl_enter(comm, "ncclGroupEnd()");
  ncclResult_t r = ncclGroupEnd();
  cuda_nccl_exit(comm);
  if (status != GMPI_SUCCESS) return status;
  return r == ncclSuccess ? GMPI_SUCCESS : cuda_nccl_failed(comm, nc, r, "ncclGroupEnd()");
}

gmpi_status_t cuda_group_pair(gmpi_comm_t comm, ncclComm_t nc, int peer, const void *send,
                              size_t send_bytes, void *recv, size_t recv_bytes, cudaStream_t s) {
  if (send_bytes) GMPI_NCCL_ENQUEUE(comm, nc, ncclSend(send, send_bytes, ncclUint8, peer, nc, s));
  if (recv_bytes) GMPI_NCCL_ENQUEUE(comm, nc, ncclRecv(recv, recv_bytes, ncclUint8, peer, nc, s));
  return GMPI_SUCCESS;
}

/* Alltoall and gather of byte blocks: NCCL's ncclAlltoAll/ncclGather where this NCCL has them
 * (2.28 does), else the grouped sends and receives those calls are made of (any NCCL 2.x). */
static gmpi_status_t grouped_alltoall(dev_ctx_t *x, const void *send, void *recv, size_t block) {
  ncclComm_t nc = x->cc->nccl;
#ifdef GMPI_HAVE_NCCL_ALLTOALL
  GMPI_NCCL_ENQUEUE(x->comm, nc, ncclAlltoAll(send, recv, block, ncclUint8, nc, x->s));
  return GMPI_SUCCESS;
#else
  GMPI_CHECK(cuda_group_start(x->comm, nc));
  gmpi_status_t st = GMPI_SUCCESS;
  for (int p = 0; p < x->comm->size && st == GMPI_SUCCESS; p++)
    st = cuda_group_pair(x->comm, nc, p, AT(send, (size_t)p * block), block,
                         AT(recv, (size_t)p * block), block, x->s);
  return cuda_group_end(x->comm, nc, st);
#endif
}

static gmpi_status_t grouped_gather(dev_ctx_t *x, const void *send, void *recv, size_t block,
                                    int root) {
  ncclComm_t nc = x->cc->nccl;
#ifdef GMPI_HAVE_NCCL_GATHER
  GMPI_NCCL_ENQUEUE(x->comm, nc, ncclGather(send, recv, block, ncclUint8, root, nc, x->s));
  return GMPI_SUCCESS;
#else
  GMPI_CHECK(cuda_group_start(x->comm, nc));
  gmpi_status_t st = cuda_group_pair(x->comm, nc, root, send, block, NULL, 0, x->s);
  for (int p = 0; x->comm->rank == root && p < x->comm->size && st == GMPI_SUCCESS; p++)
    st = cuda_group_pair(x->comm, nc, p, NULL, 0, AT(recv, (size_t)p * block), block, x->s);
  return cuda_group_end(x->comm, nc, st);
#endif
}

static gmpi_status_t reduce_kernel(dev_ctx_t *x, const void *gathered, void *out, size_t len) {
  cudaError_t e = gmpi_cuda_reduce_ranks((int)x->a->dtype, (int)x->a->op, gathered, out, len,
                                         x->comm->size, x->a->op == GMPI_AVG, x->s);
  return e == cudaSuccess ? GMPI_SUCCESS : gmpi_cuda_error(e, "gmpi_cuda_reduce_ranks");
}

/* ---- reductions NCCL cannot do: gather, then gmpi's kernel ------------------------------ */

static gmpi_status_t gather_allreduce(dev_ctx_t *x, int root) {
  const gmpi_coll_args_t *a = x->a;
  ncclComm_t nc = x->cc->nccl;
  size_t chunk = gather_chunk(x);
  void *scratch;
  GMPI_CHECK(dev_scratch(x, (size_t)x->comm->size * chunk * x->es, &scratch));
  for (size_t off = 0; off < a->count; off += chunk) {
    size_t len = a->count - off < chunk ? a->count - off : chunk;
    const void *in = AT(a->sendbuf, off * x->es);
    if (root < 0)
      GMPI_NCCL_ENQUEUE(x->comm, nc, ncclAllGather(in, scratch, len * x->es, ncclUint8, nc, x->s));
    else
      GMPI_CHECK(grouped_gather(x, in, scratch, len * x->es, root));
    if (root < 0 || root == x->comm->rank)
      GMPI_CHECK(reduce_kernel(x, scratch, AT(a->recvbuf, off * x->es), len));
  }
  return GMPI_SUCCESS;
}

/* Each rank receives every rank's block `rank`, chunk by chunk, and reduces it. Results
 * overwrite only input chunks already sent, so both in-place forms are safe. */
static gmpi_status_t gather_reduce_scatter(dev_ctx_t *x, void *out) {
  const gmpi_coll_args_t *a = x->a;
  ncclComm_t nc = x->cc->nccl;
  size_t chunk = gather_chunk(x), n = a->count;
  void *scratch;
  GMPI_CHECK(dev_scratch(x, (size_t)x->comm->size * chunk * x->es, &scratch));
  for (size_t off = 0; off < n; off += chunk) {
    size_t len = n - off < chunk ? n - off : chunk, b = len * x->es;
    if (len == n) { /* one round: exactly an alltoall of the blocks */
      GMPI_CHECK(grouped_alltoall(x, a->sendbuf, scratch, b));
      GMPI_CHECK(reduce_kernel(x, scratch, out, len));
      break;
    }
    /* block p's chunk goes to rank p: strided sends, not an alltoall's layout */
    GMPI_CHECK(cuda_group_start(x->comm, nc));
    gmpi_status_t st = GMPI_SUCCESS;
    for (int p = 0; p < x->comm->size && st == GMPI_SUCCESS; p++)
      st = cuda_group_pair(x->comm, nc, p, AT(a->sendbuf, ((size_t)p * n + off) * x->es), b,
                           AT(scratch, (size_t)p * b), b, x->s);
    GMPI_CHECK(cuda_group_end(x->comm, nc, st));
    GMPI_CHECK(reduce_kernel(x, scratch, AT(out, off * x->es), len));
  }
  return GMPI_SUCCESS;
}

static gmpi_status_t divide(dev_ctx_t *x, void *buf, size_t count) {
  cudaError_t e = gmpi_cuda_divide((int)x->a->dtype, buf, count, x->comm->size, x->s);
  return e == cudaSuccess ? GMPI_SUCCESS : gmpi_cuda_error(e, "gmpi_cuda_divide");
}

/* ---- connecting pairs before the first collective made of sends and receives ------------ */

/* NCCL_RUNTIME_CONNECT=0 connects NCCL's collective algorithms at init (cuda_backend.c says
 * why), not its point-to-point channels: those of a pair connect at its first ncclSend/ncclRecv,
 * inside that call, and the host waits there for the peer. Alltoall, gather, scatter and the
 * v-variants are made of them, so the cycle cuda_backend.c describes could form at a comm's
 * first one: this rank inside NCCL's connect, a peer blocked in a send to it that only this
 * rank's progress completes. So before a comm's first such collective every rank arrives in a
 * polled vote (gmpi's engines move while it waits), then one byte each way connects the pairs
 * it and every later one may use: every pair, or for a rooted collective the root's pairs
 * (kept per root). Every rank makes a comm's collectives in the same order, so all decide
 * alike. Connecting every pair at init instead would cost a link's memory per peer on every
 * comm, whether it ever runs such a collective or not. */

enum { EVERY_PAIR = -1, NO_PAIRS = -2 };

/* Which pairs a's collective sends between: EVERY_PAIR, a root's pairs (the root), NO_PAIRS
 * (NCCL's collective algorithms only). */
static int pairs_used(const gmpi_coll_args_t *a) {
  if (a->count == 0 && !gmpi_coll_varies(a->kind)) return NO_PAIRS; /* enqueue runs nothing */
  int gathers = 0; /* a reduction NCCL cannot do: gathered (gather_allreduce, ...) */
  if (a->kind == GMPI_COLL_REDUCE || a->kind == GMPI_COLL_REDUCE_SCATTER ||
      a->kind == GMPI_COLL_REDUCE_SCATTERV)
    gathers = gmpi_devpath_for(a->dtype, a->op).kind == GMPI_DEVPATH_GATHER;
  switch (a->kind) {
  case GMPI_COLL_GATHER:
  case GMPI_COLL_SCATTER:
  case GMPI_COLL_GATHERV:
  case GMPI_COLL_SCATTERV: return a->root;
  case GMPI_COLL_REDUCE: return gathers ? a->root : NO_PAIRS;
  case GMPI_COLL_REDUCE_SCATTER:
  case GMPI_COLL_REDUCE_SCATTERV: return gathers ? EVERY_PAIR : NO_PAIRS;
  case GMPI_COLL_ALLTOALL:
  case GMPI_COLL_ALLTOALLV:
  case GMPI_COLL_ALLGATHERV: return EVERY_PAIR;
  default: return NO_PAIRS;
  }
}

static int pairs_ready(const cuda_comm_t *cc, int root) {
  if (cc->pairs_connected) return 1;
  return root >= 0 && cc->root_pairs_connected && cc->root_pairs_connected[root];
}

/* One byte each way between this rank and every peer (EVERY_PAIR), or between the root and
 * every rank, from the comm's scratch (2 bytes per rank, zeroed first; stream-ordered after its
 * other users). */
static gmpi_status_t connect_exchange(gmpi_comm_t comm, cuda_comm_t *cc, int root, char *bytes,
                                      cudaStream_t s) {
  int n = comm->size, me = comm->rank;
  GMPI_CUDA_CHECK(cudaMemsetAsync(bytes, 0, 2 * (size_t)n, s));
  GMPI_CHECK(cuda_group_start(comm, cc->nccl));
  gmpi_status_t st = GMPI_SUCCESS;
  for (int p = 0; p < n && st == GMPI_SUCCESS; p++) {
    if (p == me || (root >= 0 && me != root && p != root)) continue;
    st = cuda_group_pair(comm, cc->nccl, p, bytes + p, 1, bytes + n + p, 1, s);
  }
  return cuda_group_end(comm, cc->nccl, st);
}

gmpi_status_t cuda_connect_every_pair(gmpi_comm_t comm, cuda_comm_t *cc) {
  void *bytes;
  if (comm->size == 1 || cc->pairs_connected) return GMPI_SUCCESS;
  GMPI_CHECK(cuda_comm_scratch(cc, 2 * (size_t)comm->size, &bytes));
  GMPI_CHECK(connect_exchange(comm, cc, EVERY_PAIR, bytes, cc->stream));
  cc->pairs_connected = 1;
  return GMPI_SUCCESS;
}

/* Connect the pairs a's collective uses, if not yet (see above), before anything else of the
 * call can fail on this rank alone. A plan's capture does not: every rank has arrived at
 * gmpi_plan_end before any lowers it (its check gathers every rank's steps, core/plan_check.c),
 * the capture connects what the plan uses, and replays connect nothing. Under GMPI_CHECK every
 * pair was connected when the comm was built (cuda_backend.c), so no rank that refused its
 * call is waited for here. */
static gmpi_status_t connect_pairs(gmpi_comm_t comm, cuda_comm_t *cc, const gmpi_coll_args_t *a,
                                   cudaStream_t s) {
  int root = pairs_used(a), n = comm->size;
  if (root == NO_PAIRS || n == 1 || pairs_ready(cc, root) || atomic_load(&cc->capturing))
    return GMPI_SUCCESS;
  void *bytes = NULL;
  gmpi_status_t mine = cuda_comm_scratch(cc, 2 * (size_t)n, &bytes);
  if (mine == GMPI_SUCCESS && root >= 0 && !cc->root_pairs_connected &&
      !(cc->root_pairs_connected = calloc((size_t)n, 1)))
    mine = gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for %d flags of connected roots", n);
  /* every rank, or none, goes on into NCCL's connect */
  GMPI_CHECK(
      gmpi_vote(comm, mine, 0, NULL, "could not prepare to connect NCCL's point-to-point pairs"));
  GMPI_CHECK(connect_exchange(comm, cc, root, bytes, s));
  if (root >= 0)
    cc->root_pairs_connected[root] = 1;
  else
    cc->pairs_connected = 1;
  return GMPI_SUCCESS;
}

/* ---- one function per collective ---------------------------------------------------------- */

static gmpi_status_t dev_allreduce(dev_ctx_t *x) {
  const gmpi_coll_args_t *a = x->a;
  gmpi_devpath_t p = gmpi_devpath_for(a->dtype, a->op);
  if (p.kind == GMPI_DEVPATH_GATHER) return gather_allreduce(x, -1);
  ncclComm_t nc = x->cc->nccl;
  GMPI_NCCL_ENQUEUE(x->comm, nc,
                    ncclAllReduce(a->sendbuf, a->recvbuf, a->count * p.count_mult,
                                  nccl_type[p.dtype], nccl_op[p.op], nc, x->s));
  return p.kind == GMPI_DEVPATH_SUM_DIVIDE ? divide(x, a->recvbuf, a->count) : GMPI_SUCCESS;
}

static gmpi_status_t dev_reduce(dev_ctx_t *x) {
  const gmpi_coll_args_t *a = x->a;
  gmpi_devpath_t p = gmpi_devpath_for(a->dtype, a->op);
  if (p.kind == GMPI_DEVPATH_GATHER) return gather_allreduce(x, a->root);
  ncclComm_t nc = x->cc->nccl;
  int is_root = x->comm->rank == a->root;
  GMPI_NCCL_ENQUEUE(x->comm, nc,
                    ncclReduce(a->sendbuf, is_root ? a->recvbuf : NULL, a->count * p.count_mult,
                               nccl_type[p.dtype], nccl_op[p.op], a->root, nc, x->s));
  if (p.kind == GMPI_DEVPATH_SUM_DIVIDE && is_root) return divide(x, a->recvbuf, a->count);
  return GMPI_SUCCESS;
}

static gmpi_status_t dev_reduce_scatter(dev_ctx_t *x) {
  const gmpi_coll_args_t *a = x->a;
  ncclComm_t nc = x->cc->nccl;
  /* MPI's in-place form (recvbuf == sendbuf) wants the result at the start: compute at our
   * slot, NCCL's in-place form, then move it. */
  int mpi_in_place = a->sendbuf == a->recvbuf;
  void *out = mpi_in_place ? AT(a->recvbuf, (size_t)x->comm->rank * x->bytes) : a->recvbuf;
  gmpi_devpath_t p = gmpi_devpath_for(a->dtype, a->op);
  if (p.kind == GMPI_DEVPATH_GATHER) {
    GMPI_CHECK(gather_reduce_scatter(x, a->recvbuf));
    return GMPI_SUCCESS;
  }
  GMPI_NCCL_ENQUEUE(x->comm, nc,
                    ncclReduceScatter(a->sendbuf, out, a->count * p.count_mult, nccl_type[p.dtype],
                                      nccl_op[p.op], nc, x->s));
  if (p.kind == GMPI_DEVPATH_SUM_DIVIDE) GMPI_CHECK(divide(x, out, a->count));
  if (out != a->recvbuf)
    GMPI_CUDA_CHECK(cudaMemcpyAsync(a->recvbuf, out, x->bytes, cudaMemcpyDeviceToDevice, x->s));
  return GMPI_SUCCESS;
}

static gmpi_status_t dev_bcast(dev_ctx_t *x) {
  ncclComm_t nc = x->cc->nccl;
  GMPI_NCCL_ENQUEUE(
      x->comm, nc,
      ncclBroadcast(x->a->recvbuf, x->a->recvbuf, x->bytes, ncclUint8, x->a->root, nc, x->s));
  return GMPI_SUCCESS;
}

static gmpi_status_t dev_allgather(dev_ctx_t *x) {
  const gmpi_coll_args_t *a = x->a;
  ncclComm_t nc = x->cc->nccl;
  /* Either in-place form means our block already sits at our slot: NCCL's in place. */
  const void *send =
      a->sendbuf == a->recvbuf ? AT(a->recvbuf, (size_t)x->comm->rank * x->bytes) : a->sendbuf;
  GMPI_NCCL_ENQUEUE(x->comm, nc, ncclAllGather(send, a->recvbuf, x->bytes, ncclUint8, nc, x->s));
  return GMPI_SUCCESS;
}

static gmpi_status_t dev_alltoall(dev_ctx_t *x) {
  const gmpi_coll_args_t *a = x->a;
  size_t all = x->bytes * (size_t)x->comm->size;
  const void *send = a->sendbuf;
  if (a->sendbuf == a->recvbuf && all) { /* in place: send from a copy */
    void *copy;
    GMPI_CHECK(dev_stage_copy(x, a->sendbuf, all, &copy));
    send = copy;
  }
  return grouped_alltoall(x, send, a->recvbuf, x->bytes);
}

/* ---- gather, scatter and the v-variants: blocks between pairs of ranks ------------------ */

static gmpi_status_t dev_gather(dev_ctx_t *x) {
  const gmpi_coll_args_t *a = x->a;
  const void *send = a->sendbuf;
  /* MPI's in-place form: the root's block already sits at its slot (NCCL's in place). */
  if (gmpi_coll_in_place(x->comm, a) && a->sendbuf == a->recvbuf)
    send = AT(a->recvbuf, (size_t)x->comm->rank * x->bytes);
  return grouped_gather(x, send, a->recvbuf, x->bytes, a->root);
}

static gmpi_status_t dev_scatter(dev_ctx_t *x) {
  const gmpi_coll_args_t *a = x->a;
  ncclComm_t nc = x->cc->nccl;
  void *recv = a->recvbuf;
  if (gmpi_coll_in_place(x->comm, a)) /* the root keeps its block: NCCL's in place */
    recv = AT(a->sendbuf, (size_t)a->root * x->bytes);
#ifdef GMPI_HAVE_NCCL_SCATTER
  GMPI_NCCL_ENQUEUE(x->comm, nc,
                    ncclScatter(a->sendbuf, recv, x->bytes, ncclUint8, a->root, nc, x->s));
  return GMPI_SUCCESS;
#else
  GMPI_CHECK(cuda_group_start(x->comm, nc));
  gmpi_status_t st = GMPI_SUCCESS;
  for (int p = 0; x->comm->rank == a->root && p < x->comm->size && st == GMPI_SUCCESS; p++)
    st = cuda_group_pair(x->comm, nc, p, AT(a->sendbuf, (size_t)p * x->bytes), x->bytes, NULL, 0,
                         x->s);
  if (st == GMPI_SUCCESS) st = cuda_group_pair(x->comm, nc, a->root, NULL, 0, recv, x->bytes, x->s);
  return cuda_group_end(x->comm, nc, st);
#endif
}

/* Allgatherv, gatherv, scatterv, alltoallv: what this rank sends to and receives from each
 * peer (gmpi_coll_pair), as one NCCL group of sends and receives; its block to itself is a
 * copy on the stream. */
static gmpi_status_t dev_exchange(dev_ctx_t *x) {
  const gmpi_coll_args_t *a = x->a;
  ncclComm_t nc = x->cc->nccl;
  int me = x->comm->rank, n = x->comm->size;
  const char *send = a->sendbuf;
  char *recv = a->recvbuf;
  if (a->kind == GMPI_COLL_ALLTOALLV && a->sendbuf == a->recvbuf) {
    void *copy;
    size_t span = gmpi_layout_span(n, a->recvcounts, a->rdispls) * x->es;
    if (span) GMPI_CHECK(dev_stage_copy(x, a->recvbuf, span, &copy));
    send = span ? copy : NULL;
  }
  gmpi_coll_pair_t self = gmpi_coll_pair(x->comm, a, me);
  if (self.recv_count)
    GMPI_CUDA_CHECK(cudaMemcpyAsync(AT(recv, self.recv_displ * x->es),
                                    AT(send, self.send_displ * x->es), self.recv_count * x->es,
                                    cudaMemcpyDeviceToDevice, x->s));
  GMPI_CHECK(cuda_group_start(x->comm, nc));
  gmpi_status_t st = GMPI_SUCCESS;
  for (int p = 0; p < n && st == GMPI_SUCCESS; p++) {
    if (p == me) continue;
    gmpi_coll_pair_t q = gmpi_coll_pair(x->comm, a, p);
    st = cuda_group_pair(x->comm, nc, p, AT(send, q.send_displ * x->es), q.send_count * x->es,
                         AT(recv, q.recv_displ * x->es), q.recv_count * x->es, x->s);
  }
  return cuda_group_end(x->comm, nc, st);
}

/* Reduce-scatter with per-rank counts: one reduce per rank (NCCL has no reduce_scatterv), each
 * taking the path its type and op need (dev_reduce). In place, this rank's result goes to a
 * temporary first: recvbuf's start still holds blocks the reduces read. */
static gmpi_status_t dev_reduce_scatterv(dev_ctx_t *x) {
  const gmpi_coll_args_t *a = x->a;
  int me = x->comm->rank;
  size_t mine = a->recvcounts[me] * x->es, off = 0;
  void *result = a->recvbuf;
  if (a->sendbuf == a->recvbuf && mine) GMPI_CHECK(dev_temp(x, mine, &result));
  for (int root = 0; root < x->comm->size; off += a->recvcounts[root], root++) {
    if (!a->recvcounts[root]) continue;
    gmpi_coll_args_t r = {.kind = GMPI_COLL_REDUCE,
                          .sendbuf = AT(a->sendbuf, off * x->es),
                          .recvbuf = root == me ? result : NULL,
                          .count = a->recvcounts[root],
                          .dtype = a->dtype,
                          .op = a->op,
                          .root = root};
    dev_ctx_t y = *x;
    y.a = &r;
    y.bytes = r.count * x->es;
    y.n_temps = 0; /* its own temporaries (nonblocking gather space), freed in stream order */
    GMPI_CHECK(dev_release_temps(&y, dev_reduce(&y)));
  }
  if (result != a->recvbuf)
    GMPI_CUDA_CHECK(cudaMemcpyAsync(a->recvbuf, result, mine, cudaMemcpyDeviceToDevice, x->s));
  return GMPI_SUCCESS;
}

static gmpi_status_t dev_barrier(dev_ctx_t *x) {
  void *word;
  ncclComm_t nc = x->cc->nccl;
  GMPI_CHECK(cuda_comm_scratch(x->cc, sizeof(int), &word));
  GMPI_NCCL_ENQUEUE(x->comm, nc, ncclAllReduce(word, word, 1, ncclInt32, ncclSum, nc, x->s));
  return GMPI_SUCCESS;
}

typedef gmpi_status_t (*dev_fn_t)(dev_ctx_t *x);
static const dev_fn_t dev_table[GMPI_COLL_KIND_COUNT] = {
    [GMPI_COLL_ALLREDUCE] = dev_allreduce,
    [GMPI_COLL_BCAST] = dev_bcast,
    [GMPI_COLL_REDUCE] = dev_reduce,
    [GMPI_COLL_ALLGATHER] = dev_allgather,
    [GMPI_COLL_REDUCE_SCATTER] = dev_reduce_scatter,
    [GMPI_COLL_ALLTOALL] = dev_alltoall,
    [GMPI_COLL_BARRIER] = dev_barrier,
    [GMPI_COLL_GATHER] = dev_gather,
    [GMPI_COLL_SCATTER] = dev_scatter,
    [GMPI_COLL_ALLGATHERV] = dev_exchange,
    [GMPI_COLL_GATHERV] = dev_exchange,
    [GMPI_COLL_SCATTERV] = dev_exchange,
    [GMPI_COLL_ALLTOALLV] = dev_exchange,
    [GMPI_COLL_REDUCE_SCATTERV] = dev_reduce_scatterv,
};

/* Enqueue one collective on stream s; its temporaries are released in stream order. */
static gmpi_status_t enqueue(gmpi_comm_t comm, const gmpi_coll_args_t *a, cudaStream_t s,
                             int nonblocking) {
  dev_ctx_t x = {.comm = comm, .cc = comm->be, .a = a, .s = s, .es = gmpi_dtype_size(a->dtype)};
  x.bytes = a->count * x.es;
  x.nonblocking = nonblocking;
  /* count is only this rank's part of the v-variants: they run whatever it is */
  if (a->count == 0 && !gmpi_coll_varies(a->kind) && a->kind != GMPI_COLL_BARRIER)
    return GMPI_SUCCESS;
  return dev_release_temps(&x, dev_table[a->kind](&x));
}

gmpi_status_t cuda_coll(gmpi_comm_t comm, void *state, const gmpi_coll_args_t *a) {
  cuda_comm_t *cc = state;
  GMPI_CHECK(connect_pairs(comm, cc, a, cuda_stream(cc)));
  GMPI_CHECK(cuda_after_default_stream(cc, cuda_stream(cc)));
  GMPI_CHECK(enqueue(comm, a, cuda_stream(cc), 0));
  if (cc->user_stream) return GMPI_SUCCESS; /* stream-ordered: enqueued is done */
  return cuda_wait_stream(comm, cuda_stream(cc), gmpi_coll_name(a->kind));
}

gmpi_status_t cuda_coll_enqueue(gmpi_comm_t comm, const gmpi_coll_args_t *a, cudaStream_t s) {
  return enqueue(comm, a, s, 0);
}

/* ---- nonblocking: enqueued on the stream, done when the event after it has happened ---- */

gmpi_status_t cuda_coll_start(gmpi_comm_t comm, void *state, const gmpi_coll_args_t *a,
                              gmpi_request_t req) {
  cuda_comm_t *cc = state;
  cudaStream_t s = cuda_stream(cc);
  cudaEvent_t done;
  GMPI_CHECK(connect_pairs(comm, cc, a, s));
  GMPI_CHECK(cuda_after_default_stream(cc, s));
  GMPI_CHECK(cuda_event_take(cc, &done));
  gmpi_status_t st = enqueue(comm, a, s, 1);
  if (st == GMPI_SUCCESS) {
    cudaError_t e = cudaEventRecord(done, s);
    if (e != cudaSuccess) st = gmpi_cuda_error(e, "cudaEventRecord");
  }
  if (st != GMPI_SUCCESS) {
    cuda_event_give(cc, done);
    return st;
  }
  req->be = done;
  return GMPI_SUCCESS;
}

gmpi_status_t cuda_coll_test(void *state, gmpi_request_t req, int *done) {
  cuda_comm_t *cc = state;
  /* NCCL's asynchronous error at one unfinished test in 16 on this comm, as a blocking wait
   * asks it: a wait tests often (core/wait.h). Counted per comm, not per thread: requests of
   * two comms tested in turn would otherwise leave one comm never asked. */
  cudaError_t e = cudaEventQuery((cudaEvent_t)req->be);
  *done = e == cudaSuccess;
  if (e == cudaErrorNotReady) {
    unsigned n = atomic_fetch_add_explicit(&cc->unfinished_tests, 1, memory_order_relaxed);
    return (n & 15u) == 15u ? cuda_poll_errors(req->comm, cc) : GMPI_SUCCESS;
  }
  if (e == cudaSuccess)
    cuda_event_give(cc, (cudaEvent_t)req->be);
  else
    cudaEventDestroy((cudaEvent_t)req->be);
  req->be = NULL;
  return e == cudaSuccess ? GMPI_SUCCESS : gmpi_cuda_error(e, "cudaEventQuery");
}

void cuda_coll_abandon(void *state, gmpi_request_t req) {
  /* Given up (the comm failed): a collective some rank never joins would hold the stream
   * forever, so the NCCL communicator is aborted; then the event can go. */
  if (req->comm->failure != GMPI_SUCCESS) cuda_abort(req->comm, state, req->comm->failure);
  if (req->be) cudaEventDestroy((cudaEvent_t)req->be);
  req->be = NULL;
}

int cuda_coll_single_call(const gmpi_coll_args_t *a) {
  switch (a->kind) {
  case GMPI_COLL_BCAST:
  case GMPI_COLL_ALLGATHER:
  case GMPI_COLL_BARRIER: return 1;
  case GMPI_COLL_ALLREDUCE:
  case GMPI_COLL_REDUCE: return gmpi_devpath_for(a->dtype, a->op).kind <= GMPI_DEVPATH_PAIRS;
  default: return 0; /* reduce_scatter and alltoall may copy, depending on local buffers */
  }
}

size_t cuda_coll_scratch_need(gmpi_comm_t comm, const gmpi_coll_args_t *a) {
  size_t es = gmpi_dtype_size(a->dtype), all = a->count * es * (size_t)comm->size;
  switch (a->kind) {
  case GMPI_COLL_BARRIER: return sizeof(int);
  case GMPI_COLL_ALLTOALL: return a->sendbuf == a->recvbuf ? all : 0;
  case GMPI_COLL_ALLTOALLV:
    return a->sendbuf == a->recvbuf ? gmpi_layout_span(comm->size, a->recvcounts, a->rdispls) * es
                                    : 0;
  case GMPI_COLL_ALLREDUCE:
  case GMPI_COLL_REDUCE:
  case GMPI_COLL_REDUCE_SCATTER:
    if (gmpi_devpath_for(a->dtype, a->op).kind != GMPI_DEVPATH_GATHER) return 0;
    return gather_elems(a->count, comm->size, es) * (size_t)comm->size * es;
  default: return 0;
  }
}
