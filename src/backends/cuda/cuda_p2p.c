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
 * rides in the first envelope, and each side initialises its end in a helper thread -- a
 * blocking communicator, connected by a one-byte warm-up transfer -- so the host never waits
 * for the peer, and later transfers enqueue at once (a nonblocking NCCL communicator hands
 * every send/recv to a background thread: 67 us instead of 16 us per 8-byte message on an
 * H200, docs/gpu-results.md). A lane whose set-up never finishes is reported by the bounded
 * waits of the transfers on it. Self messages are a device-to-device copy. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
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
  cudaEvent_t done;  /* recorded right after the NCCL call */
  int issued;        /* handed to NCCL: completion can be tested */
  struct xfer *next; /* the lane's queue */
} xfer_t;

typedef struct lane {
  int peer;
  int my_rank; /* 0: we send on this lane; 1: we receive */
  int device;
  ncclUniqueId id;
  ncclComm_t nccl;
  cudaStream_t stream;
  void *warm; /* the warm-up byte */
  pthread_t setup;
  atomic_int setup_state; /* LANE_STARTING until the helper thread is done */
  lane_state_t state;
  char setup_error[160];
  xfer_t *queue_head, *queue_tail; /* waiting for the lane */
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

/* The helper thread: join the two-rank communicator and move one byte over it, so the
 * connection exists before the first real transfer. Blocking calls are fine here. */
static void *lane_setup_main(void *arg) {
  lane_t *lane = arg;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  ncclResult_t r = ncclSuccess;
  cudaError_t e = cudaSetDevice(lane->device);
  if (e == cudaSuccess)
    r = ncclCommInitRankConfig(&lane->nccl, 2, lane->id, lane->my_rank, &config);
  if (e == cudaSuccess && r == ncclSuccess) {
    r = lane->my_rank == 0 ? ncclSend(lane->warm, 1, ncclUint8, 1, lane->nccl, lane->stream)
                           : ncclRecv(lane->warm, 1, ncclUint8, 0, lane->nccl, lane->stream);
    if (r == ncclSuccess) e = cudaStreamSynchronize(lane->stream);
  }
  if (e != cudaSuccess)
    snprintf(lane->setup_error, sizeof(lane->setup_error), "%s", cudaGetErrorString(e));
  else if (r != ncclSuccess)
    snprintf(lane->setup_error, sizeof(lane->setup_error), "%s", ncclGetErrorString(r));
  atomic_store(&lane->setup_state, lane->setup_error[0] ? LANE_FAILED : LANE_READY);
  return NULL;
}

static gmpi_status_t lane_start(struct cuda_lanes *l, lane_t *lane, const ncclUniqueId *id,
                                int my_rank) {
  lane->id = *id;
  lane->my_rank = my_rank;
  lane->device = l->cc->device;
  GMPI_CUDA_CHECK(cudaStreamCreateWithFlags(&lane->stream, cudaStreamNonBlocking));
  GMPI_CHECK(cuda_lib_alloc(1, &lane->warm));
  atomic_store(&lane->setup_state, LANE_STARTING);
  if (pthread_create(&lane->setup, NULL, lane_setup_main, lane) != 0)
    return gmpi_error(GMPI_ERR_BACKEND, "cannot start a thread to set up the lane %s rank %d",
                      my_rank == 0 ? "to" : "from", lane->peer);
  lane->state = LANE_STARTING;
  GMPI_TRACE("lane %s rank %d: starting", my_rank == 0 ? "to" : "from", lane->peer);
  return GMPI_SUCCESS;
}

static gmpi_status_t record_issue(xfer_t *x, ncclResult_t r) {
  lane_t *lane = x->lane;
  if (r != ncclSuccess) {
    lane->state = LANE_FAILED;
    return gmpi_nccl_error(r, lane->nccl, x->is_send ? "ncclSend (lane)" : "ncclRecv (lane)");
  }
  GMPI_CUDA_CHECK(cudaEventRecord(x->done, lane->stream));
  x->issued = 1;
  return GMPI_SUCCESS;
}

/* Hand a transfer to NCCL. A lane's sender is its rank 0, its receiver rank 1. */
static gmpi_status_t lane_issue(xfer_t *x) {
  lane_t *lane = x->lane;
  if (x->ready) GMPI_CUDA_CHECK(cudaStreamWaitEvent(lane->stream, x->ready, 0));
  ncclResult_t r = x->is_send ? ncclSend(x->buf, x->bytes, ncclUint8, 1, lane->nccl, lane->stream)
                              : ncclRecv(x->buf, x->bytes, ncclUint8, 0, lane->nccl, lane->stream);
  return record_issue(x, r);
}

/* A lane being set up: is it ready? Then issue what waited for it, in order. */
static gmpi_status_t lane_pump(lane_t *lane) {
  if (lane->state != LANE_STARTING) return GMPI_SUCCESS;
  int state = atomic_load(&lane->setup_state);
  if (state == LANE_STARTING) return GMPI_SUCCESS;
  pthread_join(lane->setup, NULL);
  lane->state = (lane_state_t)state;
  if (state == LANE_FAILED)
    return gmpi_error(GMPI_ERR_BACKEND, "setting up the point-to-point lane %s rank %d failed: %s",
                      lane->my_rank == 0 ? "to" : "from", lane->peer, lane->setup_error);
  for (xfer_t *x = lane->queue_head; x; x = x->next)
    GMPI_CHECK(lane_issue(x));
  lane->queue_head = lane->queue_tail = NULL;
  return GMPI_SUCCESS;
}

static gmpi_status_t lanes_progress(void *ctx) {
  struct cuda_lanes *l = ctx;
  for (int p = 0; p < l->comm->size; p++) {
    GMPI_CHECK(lane_pump(&l->out[p]));
    GMPI_CHECK(lane_pump(&l->in[p]));
  }
  return GMPI_SUCCESS;
}

/* Close a lane. Its transfers have all completed by now (finalize is collective and waits), so
 * the communicator is aborted rather than finalized: abort needs no cooperation from the peer,
 * whose lanes close in another order (finalize could wait on each other in a cycle). A lane
 * whose set-up never finished is left to the process: its thread may be blocked in NCCL,
 * waiting for a peer that is gone. */
static void lane_close(lane_t *lane) {
  if (lane->state == LANE_NONE) return;
  for (xfer_t *x = lane->queue_head, *n; x; x = n)
    n = x->next, free_xfer(x);
  if (lane->state == LANE_STARTING) {
    if (atomic_load(&lane->setup_state) == LANE_STARTING) {
      pthread_detach(lane->setup);
      return;
    }
    pthread_join(lane->setup, NULL);
  }
  if (lane->stream) cudaStreamSynchronize(lane->stream);
  if (lane->nccl) ncclCommAbort(lane->nccl);
  cuda_lib_free(lane->warm, 1);
  if (lane->stream) cudaStreamDestroy(lane->stream);
  memset(lane, 0, sizeof(*lane));
}

/* ---- the mover ----------------------------------------------------------------------------- */

static size_t lanes_hello(void *ctx, int peer, void *blob) {
  struct cuda_lanes *l = ctx;
  lane_t *lane = &l->out[peer];
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess || lane_start(l, lane, &id, 0) != GMPI_SUCCESS) {
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
  return lane_start(l, &l->in[source], &id, 1);
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
    if (r != ncclSuccess) return gmpi_nccl_error(r, x->lane->nccl, "NCCL point-to-point lane");
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
  if (x->issued) free_xfer(x); /* a queued one is freed with its lane */
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

static const gmpi_mover_t nccl_mover = {
    .name = "nccl",
    .send = lanes_send,
    .recv = lanes_recv,
    .test = lanes_test,
    .cancel = lanes_cancel,
    .alloc = lanes_alloc,
    .release = lanes_release,
    .copy = lanes_copy,
    .self_copy = lanes_copy, /* a self message is a device copy */
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
    lane_close(&l->out[p]);
    lane_close(&l->in[p]);
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
