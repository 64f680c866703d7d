/* Point to point on the cuda backend: the envelope engine (src/p2p) matches as MPI does; this
 * file is its NCCL mover. Host buffers take the cpu engine instead.
 *
 * Why lanes. NCCL runs every kernel of one communicator in order, and a send or receive
 * blocks its kernel until the peer's matching operation runs. With all messages on one
 * communicator, any ordering gmpi picks can deadlock some legal MPI program: two ranks that
 * each Isend then Irecv a large message enqueue send-before-receive on both sides. So each
 * ordered pair (a -> b) that exchanges device messages gets its own two-rank NCCL
 * communicator and stream, a "lane": a lane carries messages in one direction, in the
 * sender's order, and the receiver takes them in that order (the engine stages a message it
 * cannot deliver yet). Nothing on a lane ever waits for anything but the lane's own previous
 * message, so no cycle can form. A lane is set up on the first message: its NCCL unique id
 * rides in the first envelope, and both sides initialise it nonblocking, bounded by
 * GMPI_TIMEOUT. Self messages use NCCL too: a send and a receive to ourselves in one group. */
#include <stdlib.h>
#include <string.h>

#include "../../core/comm.h"
#include "../../core/error.h"
#include "../../core/log.h"
#include "../../core/request.h"
#include "../../mpi/oob.h"
#include "../../p2p/envelope.h"
#include "cuda.h"
#include "cuda_check.h"

typedef enum { LANE_NONE = 0, LANE_STARTING, LANE_READY, LANE_FAILED } lane_state_t;

typedef struct xfer {
  struct lane *lane;
  int is_send;
  void *buf;
  size_t bytes;
  cudaEvent_t ready; /* stream-ordered mode: the user's stream reached the post */
  cudaEvent_t done;  /* recorded once NCCL has really enqueued the transfer */
  int issued;        /* done is recorded: completion can be tested */
  struct xfer *next; /* the lane's queue */
} xfer_t;

/* A lane issues its transfers one at a time, in order: the communicator is nonblocking, so a
 * call may return ncclInProgress while NCCL still enqueues it (the first one also connects
 * the two ranks); the next call waits until that settles. Nothing here blocks the host. */
typedef struct lane {
  int peer;
  ncclComm_t nccl;
  cudaStream_t stream;
  lane_state_t state;
  xfer_t *queue_head, *queue_tail; /* not yet handed to NCCL */
  xfer_t *enqueuing;               /* handed to NCCL, ncclInProgress */
} lane_t;

struct cuda_lanes {
  gmpi_comm_t comm;
  cuda_comm_t *cc;
  lane_t *out, *in; /* per peer: our messages to it, its messages to us */
};

/* ---- lanes ------------------------------------------------------------------------------- */

static void free_xfer(xfer_t *x) {
  if (x->ready) cudaEventDestroy(x->ready);
  cudaEventDestroy(x->done);
  free(x);
}

static gmpi_status_t lane_start(lane_t *lane, const ncclUniqueId *id, int my_rank) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  GMPI_CUDA_CHECK(cudaStreamCreateWithFlags(&lane->stream, cudaStreamNonBlocking));
  GMPI_NCCL_CHECK(ncclCommInitRankConfig(&lane->nccl, 2, *id, my_rank, &config), NULL);
  lane->state = LANE_STARTING;
  GMPI_TRACE("lane %s rank %d: starting", my_rank == 0 ? "to" : "from", lane->peer);
  return GMPI_SUCCESS;
}

static gmpi_status_t lane_failed(lane_t *lane, ncclResult_t r, const char *what) {
  lane->state = LANE_FAILED;
  return gmpi_nccl_error(r, lane->nccl, what);
}

/* The lane's NCCL state: 1 when idle (init or last enqueue finished), 0 when busy. */
static gmpi_status_t lane_settled(lane_t *lane, int *idle) {
  ncclResult_t r = ncclInProgress;
  ncclCommGetAsyncError(lane->nccl, &r);
  *idle = r == ncclSuccess;
  if (r == ncclSuccess || r == ncclInProgress) return GMPI_SUCCESS;
  return lane_failed(lane, r, "NCCL point-to-point lane");
}

static gmpi_status_t record_done(xfer_t *x) {
  GMPI_CUDA_CHECK(cudaEventRecord(x->done, x->lane->stream));
  x->issued = 1;
  return GMPI_SUCCESS;
}

/* Hand the next queued transfer to NCCL. A lane's sender is its rank 0, its receiver rank 1. */
static gmpi_status_t lane_issue_next(lane_t *lane) {
  xfer_t *x = lane->queue_head;
  lane->queue_head = x->next;
  if (!lane->queue_head) lane->queue_tail = NULL;
  x->next = NULL;
  if (x->ready) GMPI_CUDA_CHECK(cudaStreamWaitEvent(lane->stream, x->ready, 0));
  ncclResult_t r = x->is_send ? ncclSend(x->buf, x->bytes, ncclUint8, 1, lane->nccl, lane->stream)
                              : ncclRecv(x->buf, x->bytes, ncclUint8, 0, lane->nccl, lane->stream);
  if (r == ncclInProgress) {
    lane->enqueuing = x;
    return GMPI_SUCCESS;
  }
  if (r != ncclSuccess) return lane_failed(lane, r, x->is_send ? "ncclSend" : "ncclRecv");
  return record_done(x);
}

/* Move the lane along as far as it goes without waiting. */
static gmpi_status_t lane_pump(lane_t *lane) {
  if (lane->state == LANE_NONE || lane->state == LANE_FAILED) return GMPI_SUCCESS;
  for (;;) {
    int idle = 0;
    GMPI_CHECK(lane_settled(lane, &idle));
    if (!idle) return GMPI_SUCCESS;
    lane->state = LANE_READY;
    if (lane->enqueuing) {
      xfer_t *x = lane->enqueuing;
      lane->enqueuing = NULL;
      GMPI_CHECK(record_done(x));
    }
    if (!lane->queue_head) return GMPI_SUCCESS;
    GMPI_CHECK(lane_issue_next(lane));
  }
}

static gmpi_status_t lanes_progress(void *ctx) {
  struct cuda_lanes *l = ctx;
  for (int p = 0; p < l->comm->size; p++) {
    GMPI_CHECK(lane_pump(&l->out[p]));
    GMPI_CHECK(lane_pump(&l->in[p]));
  }
  return GMPI_SUCCESS;
}

static void lane_close(struct cuda_lanes *l, lane_t *lane) {
  if (lane->state == LANE_NONE) return;
  for (xfer_t *x = lane->queue_head, *n; x; x = n)
    n = x->next, free_xfer(x);
  if (lane->enqueuing) free_xfer(lane->enqueuing);
  if (lane->nccl) {
    int healthy = l->comm->failure == GMPI_SUCCESS && lane->state == LANE_READY;
    ncclResult_t r = healthy ? ncclCommFinalize(lane->nccl) : ncclInternalError;
    gmpi_deadline_t d;
    gmpi_deadline_start(&d, l->comm->cfg.timeout_s);
    while (r == ncclInProgress || (r == ncclSuccess && healthy)) {
      ncclCommGetAsyncError(lane->nccl, &r);
      if (r != ncclInProgress || gmpi_deadline_poll(&d)) break;
    }
    if (r == ncclSuccess)
      ncclCommDestroy(lane->nccl);
    else
      ncclCommAbort(lane->nccl);
  }
  if (lane->stream) cudaStreamDestroy(lane->stream);
  memset(lane, 0, sizeof(*lane));
}

/* ---- the mover ----------------------------------------------------------------------------- */

static size_t lanes_hello(void *ctx, int peer, void *blob) {
  struct cuda_lanes *l = ctx;
  lane_t *lane = &l->out[peer];
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess || lane_start(lane, &id, 0) != GMPI_SUCCESS) {
    lane->state = LANE_FAILED;
    return 0;
  }
  memcpy(blob, &id, sizeof(id));
  return sizeof(id);
}

static gmpi_status_t lanes_welcome(void *ctx, int source, const void *blob, size_t len) {
  struct cuda_lanes *l = ctx;
  if (len != sizeof(ncclUniqueId))
    return gmpi_error(GMPI_ERR_INTERNAL, "lane introduction from rank %d has %zu bytes", source,
                      len);
  ncclUniqueId id;
  memcpy(&id, blob, sizeof(id));
  return lane_start(&l->in[source], &id, 1);
}

static gmpi_status_t start_xfer(struct cuda_lanes *l, lane_t *lane, int is_send, void *buf,
                                size_t bytes, void **handle) {
  if (lane->state == LANE_FAILED || lane->state == LANE_NONE)
    return gmpi_error(GMPI_ERR_BACKEND, "the point-to-point lane %s rank %d could not be set up",
                      is_send ? "to" : "from", lane->peer);
  xfer_t *x = calloc(1, sizeof(*x));
  if (!x) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a transfer");
  *x = (xfer_t){.lane = lane, .is_send = is_send, .buf = buf, .bytes = bytes};
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_CUDA_CHECK_GOTO(cudaEventCreateWithFlags(&x->done, cudaEventDisableTiming), st, free_x);
  if (l->cc->user_stream) { /* stream-ordered: the data is ready when the user's stream is */
    GMPI_CUDA_CHECK_GOTO(cudaEventCreateWithFlags(&x->ready, cudaEventDisableTiming), st,
                         destroy_done);
    GMPI_CUDA_CHECK_GOTO(cudaEventRecord(x->ready, l->cc->user_stream), st, destroy_ready);
  }
  if (lane->queue_tail)
    lane->queue_tail->next = x;
  else
    lane->queue_head = x;
  lane->queue_tail = x;
  *handle = x;
  return lane_pump(lane); /* x stays queued on failure; the lane's close frees it */
destroy_ready:
  if (x->ready) cudaEventDestroy(x->ready);
destroy_done:
  cudaEventDestroy(x->done);
free_x:
  free(x);
  return st;
}

static gmpi_status_t lanes_send(void *ctx, int peer, const void *buf, size_t bytes, void **h) {
  struct cuda_lanes *l = ctx;
  return start_xfer(l, &l->out[peer], 1, (void *)buf, bytes, h);
}

static gmpi_status_t lanes_recv(void *ctx, int peer, void *buf, size_t bytes, void **h) {
  struct cuda_lanes *l = ctx;
  return start_xfer(l, &l->in[peer], 0, buf, bytes, h);
}

static gmpi_status_t lanes_test(void *ctx, void *handle, int *done) {
  struct cuda_lanes *l = ctx;
  xfer_t *x = handle;
  (void)l;
  *done = 0;
  if (!x->issued) GMPI_CHECK(lane_pump(x->lane));
  if (!x->issued) return GMPI_SUCCESS;
  cudaError_t e = cudaEventQuery(x->done);
  if (e == cudaErrorNotReady) {
    ncclResult_t r = ncclSuccess;
    ncclCommGetAsyncError(x->lane->nccl, &r);
    if (r != ncclSuccess && r != ncclInProgress)
      return gmpi_nccl_error(r, x->lane->nccl, "NCCL point-to-point lane");
    return GMPI_SUCCESS;
  }
  if (e != cudaSuccess) return gmpi_cuda_error(e, "cudaEventQuery");
  free_xfer(x);
  *done = 1;
  return GMPI_SUCCESS;
}

static void lanes_cancel(void *ctx, void *handle) {
  (void)ctx;
  xfer_t *x = handle;
  if (x->issued) free_xfer(x); /* a queued or enqueuing one is freed with its lane */
}

static gmpi_status_t lanes_alloc(void *ctx, size_t bytes, void **ptr) {
  (void)ctx;
  return cuda_lib_alloc(bytes, ptr);
}

static void lanes_release(void *ctx, void *ptr, size_t bytes) {
  (void)ctx;
  cuda_lib_free(ptr, bytes);
}

static gmpi_status_t lanes_copy(void *ctx, void *dst, const void *src, size_t bytes) {
  struct cuda_lanes *l = ctx;
  GMPI_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, l->cc->stream));
  return cuda_wait_stream(l->comm, l->cc->stream, "a staged message copy");
}

/* Self messages through NCCL: a send and a receive to ourselves, in one group. */
static gmpi_status_t lanes_self_copy(void *ctx, void *dst, const void *src, size_t bytes) {
  struct cuda_lanes *l = ctx;
  ncclComm_t nc = l->cc->nccl;
  cudaStream_t s = l->cc->stream;
  int me = l->comm->rank;
  GMPI_NCCL_ENQUEUE(l->comm, nc, ncclGroupStart());
  GMPI_NCCL_ENQUEUE(l->comm, nc, ncclSend(src, bytes, ncclUint8, me, nc, s));
  GMPI_NCCL_ENQUEUE(l->comm, nc, ncclRecv(dst, bytes, ncclUint8, me, nc, s));
  GMPI_NCCL_ENQUEUE(l->comm, nc, ncclGroupEnd());
  return cuda_wait_stream(l->comm, s, "a self send/recv");
}

static const gmpi_mover_t nccl_mover = {
    .name = "nccl",
    .send = lanes_send,
    .recv = lanes_recv,
    .test = lanes_test,
    .cancel = lanes_cancel,
    .alloc = lanes_alloc,
    .release = lanes_release,
    .copy = lanes_copy,
    .self_copy = lanes_self_copy,
    .hello = lanes_hello,
    .welcome = lanes_welcome,
    .progress = lanes_progress,
};

/* ---- the backend's point-to-point ops ------------------------------------------------------ */

gmpi_status_t cuda_p2p_open(gmpi_comm_t comm, cuda_comm_t *cc) {
  struct cuda_lanes *l = calloc(1, sizeof(*l));
  if (!l) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for the lanes");
  l->comm = comm;
  l->cc = cc;
  l->out = calloc((size_t)comm->size, sizeof(lane_t));
  l->in = calloc((size_t)comm->size, sizeof(lane_t));
  gmpi_status_t st = GMPI_SUCCESS;
  if (!l->out || !l->in) {
    st = gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for %d lanes", 2 * comm->size);
    goto free_lanes;
  }
  for (int p = 0; p < comm->size; p++)
    l->out[p].peer = l->in[p].peer = p;
  GMPI_CHECK_GOTO(gmpi_env_create(comm, &nccl_mover, l, &cc->env), st, free_lanes);
  cc->lanes = l;
  return GMPI_SUCCESS;
free_lanes:
  free(l->out);
  free(l->in);
  free(l);
  return st;
}

void cuda_p2p_close(gmpi_comm_t comm, cuda_comm_t *cc) {
  struct cuda_lanes *l = cc->lanes;
  if (!l) return;
  gmpi_env_destroy(cc->env);
  cc->env = NULL;
  for (int p = 0; p < comm->size; p++) {
    lane_close(l, &l->out[p]);
    lane_close(l, &l->in[p]);
  }
  free(l->out);
  free(l->in);
  free(l);
  cc->lanes = NULL;
}

/* A request's buffer decides its engine: host memory goes through the cpu engine (MPI). */
enum { ROUTE_DEVICE = 0, ROUTE_HOST = 1 };
static int on_host(gmpi_request_t req) { return req->route == ROUTE_HOST; }

gmpi_status_t cuda_p2p_post(gmpi_request_t req) {
  cuda_comm_t *cc = req->comm->be;
  buf_kind_t kind;
  GMPI_CHECK(cuda_classify(cc, req->args.buf, "buf", &kind));
  if (kind == BUF_HOST) {
    req->route = ROUTE_HOST;
    return gmpi_cpu_p2p_post(&cc->host, req);
  }
  return gmpi_env_post(cc->env, req);
}

gmpi_status_t cuda_p2p_test(gmpi_request_t req, int *done) {
  cuda_comm_t *cc = req->comm->be;
  if (on_host(req)) return gmpi_cpu_p2p_test(&cc->host, req, done);
  return gmpi_env_test(cc->env, req, done);
}

void cuda_p2p_abandon(gmpi_request_t req) {
  cuda_comm_t *cc = req->comm->be;
  if (on_host(req))
    gmpi_cpu_p2p_abandon(&cc->host, req);
  else
    gmpi_env_abandon(cc->env, req);
}

gmpi_status_t cuda_p2p_progress(gmpi_comm_t comm) {
  cuda_comm_t *cc = comm->be;
  if (cc->capturing) return GMPI_SUCCESS; /* deliveries would land in the captured graph */
  return cc->env ? gmpi_env_progress(cc->env) : GMPI_SUCCESS;
}
