/* The cuda backend's life cycle: probe, bind one device per local rank, build the NCCL
 * communicator over MPI (unique id on rank 0, bcast, nonblocking init bounded by
 * GMPI_TIMEOUT), split, bounded completion, teardown; and its ops table. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/comm.h"
#include "../../core/error.h"
#include "../../core/log.h"
#include "../../core/oob.h"
#include "../../core/progress.h"
#include "../../core/request.h"
#include "../../core/vote.h"
#include "cuda.h"
#include "cuda_check.h"

/* ---- which device this rank gets ------------------------------------------------------ */

/* The device of local rank `local` given GMPI_VISIBLE_DEVICES, or -1 with the reason.
 * Without the variable local rank i takes device i, so two local ranks never share a GPU. With
 * it, local rank i takes entry i; an entry named more than once is the user's explicit request
 * to put several ranks on one GPU (NCCL then needs each such rank to claim its own host, e.g.
 * scripts/shared-gpu-rank), said at info level. More local ranks than entries is an error. */
static int pick_device(const gmpi_config_t *cfg, int local, int local_size, const char *host,
                       int say, char *why, size_t why_len) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    /* Without a GPU the runtime says "driver version is insufficient": say what it means. */
    int no_gpu = e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice || count == 0;
    snprintf(why, why_len, "%s (cudaGetDeviceCount: %s)",
             no_gpu ? "no GPU or no CUDA driver on this machine" : "the CUDA runtime failed",
             e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    cudaGetLastError();
    return -1;
  }
  int visible[256] = {0}, n = 0;
  if (cfg->visible_devices[0]) {
    for (const char *p = cfg->visible_devices; *p && n < 256; p++) {
      visible[n++] = atoi(p);
      while (p[1] && *p != ',')
        p++;
    }
  } else {
    for (n = 0; n < count && n < 256; n++)
      visible[n] = n;
  }
  if (local_size > n) {
    snprintf(why, why_len,
             "host %s has %d local ranks but %d usable devices (%d visible to CUDA%s%s); "
             "gmpi puts two ranks on one GPU only when GMPI_VISIBLE_DEVICES names it twice",
             host, local_size, n, count, cfg->visible_devices[0] ? ", GMPI_VISIBLE_DEVICES=" : "",
             cfg->visible_devices);
    return -1;
  }
  if (visible[local] >= count) {
    snprintf(why, why_len, "GMPI_VISIBLE_DEVICES names device %d but %s has only %d",
             visible[local], host, count);
    return -1;
  }
  int sharing = 0; /* local ranks on our device (entries beyond local_size are unused) */
  for (int i = 0; i < local_size; i++)
    sharing += visible[i] == visible[local];
  if (sharing > 1 && say)
    gmpi_log(GMPI_LOG_INFO,
             "cuda: local rank %d shares device %d with %d other local rank(s) on %s, as "
             "GMPI_VISIBLE_DEVICES=%s asks (correct, not fast: NCCL needs each such rank to "
             "claim its own host, e.g. scripts/shared-gpu-rank)",
             local, visible[local], sharing - 1, host, cfg->visible_devices);
  return visible[local];
}

static gmpi_status_t cuda_probe(gmpi_comm_t comm, char *why, size_t why_len) {
  int dev =
      pick_device(&comm->cfg, comm->local_rank, comm->local_size, comm->host, 0, why, why_len);
  return dev < 0 ? GMPI_ERR_NO_DEVICE : GMPI_SUCCESS;
}

/* ---- bounded waiting --------------------------------------------------------------------- */

/* The NCCL communicator failed or timed out: abort it so no kernel hangs, fail the comm. */
static gmpi_status_t abort_nccl(gmpi_comm_t comm, cuda_comm_t *cc, gmpi_status_t why) {
  if (cc->nccl) ncclCommAbort(cc->nccl);
  cc->nccl = NULL;
  gmpi_comm_fail(comm, why);
  return why;
}

static gmpi_status_t nccl_async(gmpi_comm_t comm, cuda_comm_t *cc, ncclComm_t nc, int *ready) {
  ncclResult_t r = ncclInProgress;
  ncclResult_t q = ncclCommGetAsyncError(nc, &r);
  if (q != ncclSuccess) r = q;
  *ready = r == ncclSuccess;
  if (r == ncclSuccess || r == ncclInProgress) return GMPI_SUCCESS;
  gmpi_status_t st = gmpi_nccl_error(r, nc, "NCCL (asynchronous error)");
  if (nc == cc->nccl) abort_nccl(comm, cc, GMPI_ERR_BACKEND);
  return st;
}

gmpi_status_t cuda_poll_errors(gmpi_comm_t comm, cuda_comm_t *cc) {
  int ready;
  return cc->nccl ? nccl_async(comm, cc, cc->nccl, &ready) : GMPI_SUCCESS;
}

void cuda_abort(gmpi_comm_t comm, cuda_comm_t *cc, gmpi_status_t why) {
  if (cc->nccl) abort_nccl(comm, cc, why);
}

static gmpi_status_t timed_out(gmpi_comm_t comm, cuda_comm_t *cc, const char *what) {
  abort_nccl(comm, cc, GMPI_ERR_TIMEOUT);
  return gmpi_error(GMPI_ERR_TIMEOUT,
                    "%s did not complete within GMPI_TIMEOUT = %g s (a rank is not taking part, "
                    "or is stuck elsewhere); the NCCL communicator was aborted and the comm is "
                    "now failed",
                    what, comm->cfg.timeout_s);
}

/* Wait until the nonblocking communicator nc has nothing in progress (an init, a split, an
 * enqueue), bounded; progress_p2p keeps the comm's envelopes moving meanwhile (not during
 * init: there is no engine yet). */
static gmpi_status_t wait_settled(gmpi_comm_t comm, cuda_comm_t *cc, ncclComm_t nc,
                                  const char *what, int progress_p2p) {
  gmpi_deadline_t d;
  gmpi_deadline_start(&d, comm->cfg.timeout_s);
  for (;;) {
    int ready = 0;
    GMPI_CHECK(nccl_async(comm, cc, nc, &ready));
    if (ready) return GMPI_SUCCESS;
    if (progress_p2p && !cc->capturing) gmpi_progress_all();
    if (gmpi_deadline_poll(&d)) {
      if (nc != cc->nccl) ncclCommAbort(nc); /* a child being split: the parent is aborted below */
      return timed_out(comm, cc, what);
    }
  }
}

static gmpi_status_t nccl_wait_ready(gmpi_comm_t comm, cuda_comm_t *cc, ncclComm_t nc,
                                     const char *what) {
  return wait_settled(comm, cc, nc, what, 0);
}

gmpi_status_t cuda_nccl_settle(gmpi_comm_t comm, ncclComm_t nc, ncclResult_t r, const char *call) {
  if (r == ncclSuccess) return GMPI_SUCCESS;
  if (r != ncclInProgress) return gmpi_nccl_error(r, nc, call);
  return wait_settled(comm, comm->be, nc, call, 1);
}

gmpi_status_t cuda_wait_stream(gmpi_comm_t comm, cudaStream_t stream, const char *what) {
  cuda_comm_t *cc = comm->be;
  gmpi_deadline_t d;
  gmpi_deadline_start(&d, comm->cfg.timeout_s);
  for (unsigned polls = 0;; polls++) {
    cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return GMPI_SUCCESS;
    if (e != cudaErrorNotReady) return gmpi_cuda_error(e, "cudaStreamQuery");
    if ((polls & 15u) == 15u) {
      int ready;
      if (cc->nccl) GMPI_CHECK(nccl_async(comm, cc, cc->nccl, &ready));
      if (!cc->capturing) gmpi_progress_all(); /* peers may wait on our envelopes */
    }
    if (gmpi_deadline_poll(&d)) return timed_out(comm, cc, what);
  }
}

gmpi_status_t cuda_after_default_stream(cuda_comm_t *cc, cudaStream_t s) {
  if (cc->user_stream || cc->capturing) return GMPI_SUCCESS;
  if (!cc->default_mark)
    GMPI_CUDA_CHECK(cudaEventCreateWithFlags(&cc->default_mark, cudaEventDisableTiming));
  GMPI_CUDA_CHECK(cudaEventRecord(cc->default_mark, cudaStreamLegacy));
  GMPI_CUDA_CHECK(cudaStreamWaitEvent(s, cc->default_mark, 0));
  return GMPI_SUCCESS;
}

/* ---- init, split, teardown -------------------------------------------------------------- */

static ncclConfig_t nonblocking_config(void) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0; /* every NCCL wait is ours, so it can be bounded */
  return config;
}

static gmpi_status_t nccl_init(gmpi_comm_t comm, cuda_comm_t *cc) {
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  if (comm->rank == 0) GMPI_NCCL_CHECK(ncclGetUniqueId(&id), NULL);
  GMPI_CHECK(gmpi_oob_bcast(comm, &id, sizeof(id), 0));
  ncclConfig_t config = nonblocking_config();
  size_t free_before = 0, free_after = 0, total = 0;
  cudaMemGetInfo(&free_before, &total);
  GMPI_NCCL_CHECK(ncclCommInitRankConfig(&cc->nccl, comm->size, id, comm->rank, &config), NULL);
  GMPI_CHECK(nccl_wait_ready(comm, cc, cc->nccl, "ncclCommInitRankConfig"));
  cudaMemGetInfo(&free_after, &total);
  size_t nccl_bytes = free_before > free_after ? free_before - free_after : 0;
  gmpi_log(GMPI_LOG_INFO, "NCCL communicator of %d ranks took %.1f MiB of device %d", comm->size,
           (double)nccl_bytes / (1 << 20), cc->device);
  return GMPI_SUCCESS;
}

/* Nonblocking, NCCL may fill the new handle after returning: it goes to cc (on the heap, or
 * a frame that outlives the wait), and the parent's state says when the split is done. */
static gmpi_status_t nccl_split(gmpi_comm_t comm, gmpi_comm_t parent, cuda_comm_t *cc, int color,
                                int key) {
  cuda_comm_t *pc = parent->be;
  ncclConfig_t config = nonblocking_config();
  int nccl_color = color == GMPI_UNDEFINED ? NCCL_SPLIT_NOCOLOR : color;
  cc->nccl = NULL;
  GMPI_NCCL_CHECK(ncclCommSplit(pc->nccl, nccl_color, key, &cc->nccl, &config), pc->nccl);
  GMPI_CHECK(nccl_wait_ready(parent, pc, pc->nccl, "ncclCommSplit"));
  if (!comm) return GMPI_SUCCESS;
  if (!cc->nccl) return gmpi_error(GMPI_ERR_BACKEND, "ncclCommSplit returned no communicator");
  return nccl_wait_ready(comm, cc, cc->nccl, "ncclCommSplit");
}

/* Finalize (collective, flushes NCCL's work) then destroy; abort after a failure. */
static void nccl_destroy(gmpi_comm_t comm, cuda_comm_t *cc) {
  if (!cc->nccl) return;
  ncclResult_t r = comm->failure == GMPI_SUCCESS ? ncclCommFinalize(cc->nccl) : ncclInternalError;
  int finalized = (r == ncclSuccess || r == ncclInProgress) &&
                  nccl_wait_ready(comm, cc, cc->nccl, "ncclCommFinalize") == GMPI_SUCCESS;
  if (cc->nccl) finalized ? ncclCommDestroy(cc->nccl) : ncclCommAbort(cc->nccl);
  cc->nccl = NULL;
}

static gmpi_status_t cuda_comm_init(gmpi_comm_t comm, gmpi_comm_t parent, int color, int key) {
  char why[256] = "";
  gmpi_comm_t self = comm ? comm : parent;
  int dev = parent ? ((cuda_comm_t *)parent->be)->device
                   : pick_device(&self->cfg, self->local_rank, self->local_size, self->host, 1, why,
                                 sizeof(why));
  if (dev < 0) return gmpi_error(GMPI_ERR_NO_DEVICE, "%s", why);
  cuda_comm_t *cc = comm ? calloc(1, sizeof(*cc)) : NULL;
  if (comm && !cc) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for the cuda backend state");
  cuda_comm_t scratch_cc = {.device = dev};
  cuda_comm_t *target = cc ? cc : &scratch_cc;
  target->device = dev;
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_CUDA_CHECK_GOTO(cudaSetDevice(dev), st, free_cc);
  GMPI_CHECK_GOTO(cuda_mem_setup(&self->cfg, dev), st, free_cc);
  if (comm)
    GMPI_CUDA_CHECK_GOTO(cudaStreamCreateWithFlags(&cc->stream, cudaStreamNonBlocking), st,
                         teardown_mem);
  if (parent)
    GMPI_CHECK_GOTO(nccl_split(comm, parent, target, color, key), st, destroy_stream);
  else
    GMPI_CHECK_GOTO(nccl_init(comm, cc), st, destroy_stream);
  if (!comm) {
    cuda_mem_teardown();
    return GMPI_SUCCESS;
  }
  comm->be = cc;
  GMPI_CHECK_GOTO(cuda_p2p_open(comm, cc), st, destroy_nccl);
  gmpi_log(GMPI_LOG_INFO, "cuda: rank %d on device %d, NCCL communicator of %d ranks", comm->rank,
           dev, comm->size);
  return GMPI_SUCCESS;
destroy_nccl:
  comm->be = NULL;
  if (cc->nccl) ncclCommAbort(cc->nccl);
destroy_stream:
  if (cc) cudaStreamDestroy(cc->stream);
teardown_mem:
  cuda_mem_teardown();
free_cc:
  free(cc);
  return st;
}

static void cuda_comm_fini(gmpi_comm_t comm) {
  cuda_comm_t *cc = comm->be;
  if (!cc) return;
  if (comm->failure == GMPI_SUCCESS) cudaStreamSynchronize(cc->stream);
  /* Point-to-point links are aborted at close (cuda_links.c), and NCCL's proxy may still be
   * sending data whose send completed: no rank closes before every rank has arrived here, so
   * every receive the program waited for has landed (found on the H200: a peer's receive cut
   * by "Connection closed by remote peer" after a buffered send and MPI_Comm_free). */
  if (comm->failure == GMPI_SUCCESS && comm->size > 1)
    (void)gmpi_vote(comm, GMPI_SUCCESS, 0, NULL, "arrive at the communicator's free");
  cuda_p2p_close(comm, cc);
  nccl_destroy(comm, cc);
  cuda_comm_release_scratch(cc);
  cudaStreamDestroy(cc->stream);
  if (cc->default_mark) cudaEventDestroy(cc->default_mark);
  cuda_mem_teardown();
  free(cc);
  comm->be = NULL;
}

/* ---- the rest of the ops ------------------------------------------------------------------ */

static gmpi_status_t cuda_alloc(gmpi_comm_t comm, size_t bytes, void **ptr) {
  (void)comm;
  return cuda_mem_alloc(bytes, ptr);
}
static gmpi_status_t cuda_free(gmpi_comm_t comm, void *ptr) {
  (void)comm;
  return cuda_mem_free(ptr);
}
/* On gmpi's stream, then waited: cudaMemcpy from pageable memory may return before the DMA
 * lands, and gmpi's non-blocking stream would not wait for the legacy stream's copy. */
static gmpi_status_t cuda_copy(gmpi_comm_t comm, void *dst, const void *src, size_t bytes) {
  cuda_comm_t *cc = comm->be;
  if (!bytes) return GMPI_SUCCESS;
  GMPI_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cc->stream));
  return cuda_wait_stream(comm, cc->stream, "gmpi_mem_copy");
}

static gmpi_status_t cuda_query(gmpi_comm_t comm, gmpi_query_t what, void **out) {
  cuda_comm_t *cc = comm->be;
  switch (what) {
  case GMPI_QUERY_NCCL_COMM: *out = cc->nccl; break;
  case GMPI_QUERY_STREAM: *out = cuda_stream(cc); break;
  case GMPI_QUERY_DEVICE: *out = (void *)(intptr_t)cc->device; break;
  }
  return GMPI_SUCCESS;
}

static gmpi_status_t cuda_set_stream(gmpi_comm_t comm, void *stream) {
  cuda_comm_t *cc = comm->be;
  if (stream == cc->user_stream) return GMPI_SUCCESS;
  /* Work gmpi already enqueued on its own stream must not overtake later user work. */
  GMPI_CHECK(cuda_wait_stream(comm, cc->stream, "gmpi_comm_set_stream"));
  cc->user_stream = stream;
  return GMPI_SUCCESS;
}

/* gmpi's own device memory (scratch, and what NCCL took for the comm's p2p links) and the
 * user's; the main NCCL communicator's is logged at init. */
static void cuda_usage(gmpi_comm_t comm, size_t *library, size_t *user) {
  cuda_mem_usage(library, user);
  *library += cuda_p2p_device_bytes(comm->be);
}

static const char *cuda_lib_version(void) {
  static char text[32];
  int v = 0;
  ncclGetVersion(&v);
  snprintf(text, sizeof(text), "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
  return text;
}

static int cuda_stream_ordered(gmpi_comm_t comm) {
  return ((cuda_comm_t *)comm->be)->user_stream != NULL;
}
static gmpi_status_t cuda_host_fence(gmpi_comm_t comm) {
  cuda_comm_t *cc = comm->be;
  return cuda_wait_stream(comm, cc->user_stream, "the user's stream");
}

/* The device engine: NCCL on this comm's GPU. Its state is the comm's cuda_comm_t, made by
 * cuda_comm_init. */
static const gmpi_engine_ops_t gmpi_engine_nccl = {
    .name = "nccl",
    .open = NULL,
    .close = NULL,
    .coll = cuda_coll,
    .p2p_post = cuda_p2p_post,
    .p2p_test = cuda_p2p_test,
    .p2p_abandon = cuda_p2p_abandon,
    .p2p_cancel = cuda_p2p_cancel,
    .p2p_probe = cuda_p2p_probe,
    .coll_start = cuda_coll_start,
    .coll_test = cuda_coll_test,
    .coll_abandon = cuda_coll_abandon,
    .plan_lower = cuda_plan_lower,
    .plan_replay = cuda_plan_replay,
    .plan_free = cuda_plan_free,
};

const gmpi_backend_ops_t gmpi_backend_cuda = {
    .name = "cuda",
    .kind = GMPI_BACKEND_CUDA,
    .lib_version = cuda_lib_version,
    .probe = cuda_probe,
    .comm_init = cuda_comm_init,
    .comm_fini = cuda_comm_fini,
    .mem_alloc = cuda_alloc,
    .mem_free = cuda_free,
    .mem_copy = cuda_copy,
    .classify = cuda_classify,
    .stream_ordered = cuda_stream_ordered,
    .host_fence = cuda_host_fence,
    .device = &gmpi_engine_nccl,
    .query = cuda_query,
    .set_stream = cuda_set_stream,
    .mem_usage = cuda_usage,
};
