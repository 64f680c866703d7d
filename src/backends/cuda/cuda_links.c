/* SPDX-License-Identifier: BSD-3-Clause */
/* NCCL links: one two-rank NCCL communicator and stream per peer that exchanges rendezvous
 * device messages with this rank (between hosts, or everywhere with GMPI_DEVICE_P2P=nccl).
 *
 * The envelope engine issues a link's transfers on both ranks in one order (its leader's), so a
 * transfer never waits for one issued after it; links share no communicator or stream, so no
 * wait crosses from one link to another. What NCCL adds (docs/design.md, "What NCCL point to point
 * does"): the first operation on a communicator blocks the host until the peer's first one. So a
 * link is set up by a helper thread -- blocking init, then one grouped send and receive of a byte
 * each way, which pairs up whatever the order of the two ranks -- and transfers issued meanwhile
 * wait in the link's queue; the host never blocks on a peer. The helper's blocking wait cannot
 * be bounded, but the transfers that wait for it are (GMPI_TIMEOUT), and a link whose set-up
 * never finishes is left to the process at close. Nothing here synchronizes the device while
 * link kernels run (no cudaMalloc/cudaFree between set-up and close: a host end's staging copy
 * comes from the stream-ordered allocator). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/comm.h"
#include "../../core/error.h"
#include "../../core/log.h"
#include "cuda_check.h"
#include "cuda_p2p.h"

typedef enum { LINK_NONE = 0, LINK_STARTING, LINK_READY, LINK_FAILED } link_state_t;

typedef struct xfer {
  xfer_kind_t kind; /* XFER_LINK */
  struct link *link;
  int is_send;
  void *buf;
  size_t bytes;
  cudaEvent_t staged; /* a host end's device copy is allocated (and filled, for a send) */
  cudaEvent_t done;   /* recorded right after the NCCL call */
  int issued;         /* handed to NCCL */
  void *stage;        /* a host end's device copy (matching across memory kinds), or NULL */
  void *host;         /* a receive's host buffer, filled from stage when the transfer is done */
  cudaStream_t copy_stream; /* the p2p host_copies stream: stage copies, off the link's order */
  int cancelled;            /* given up before it was issued: freed when the queue drains */
  struct xfer *next;        /* the link's queue until issued */
} xfer_t;

typedef struct link {
  int peer;
  int my_rank; /* 0 for the link's leader (lower comm rank), 1 for its follower */
  int device;
  ncclUniqueId id;
  ncclComm_t nccl;
  cudaStream_t stream;
  void *warm; /* two bytes: the warm-up's send and receive */
  pthread_t setup;
  atomic_int setup_state;
  link_state_t state;
  _Atomic size_t device_bytes; /* its share of its set-up phase's memory (set_up_phase) */
  struct link *phase_next;     /* the next link of its set-up phase */
  char setup_error[160];
  xfer_t *head, *tail; /* issued before the link was ready */
} link_t;

struct cuda_links {
  link_t *by_peer;
  int size;
};

/* What a link costs is the device's free memory lost while NCCL sets it up, but links set up
 * concurrently -- every one a comm wants, at once, under GMPI_LINKS=eager -- each lost the
 * others' too: summed per link, a rank with three links counted its memory about three times
 * (3424 MiB against a drop of about 290 per rank: docs/gpu-results.md, twenty-third session).
 * So the drop is measured once for a phase, from the first set-up of this process to start while
 * none ran to the last to end, and shared among the phase's links. Memory the program or other
 * processes on the device allocate meanwhile is counted too (ranks sharing a GPU: each rank
 * counts the device's whole drop), and a set-up that never returns (its peer gone: link_close
 * leaves it running) keeps its phase open, so links set up after it count no memory. */
static struct {
  pthread_mutex_t lock;
  int running;       /* set-ups under way */
  size_t free_start; /* the device's free memory when the phase began */
  link_t *links;     /* the phase's links so far */
} set_up_phase = {PTHREAD_MUTEX_INITIALIZER, 0, 0, NULL};

static void phase_enter(void) {
  pthread_mutex_lock(&set_up_phase.lock);
  if (set_up_phase.running++ == 0) {
    size_t total = 0;
    if (cudaMemGetInfo(&set_up_phase.free_start, &total) != cudaSuccess)
      set_up_phase.free_start = 0;
  }
  pthread_mutex_unlock(&set_up_phase.lock);
}

/* link's set-up is over; the last of a phase shares the phase's drop among its links. */
static void phase_leave(link_t *link) {
  pthread_mutex_lock(&set_up_phase.lock);
  link->phase_next = set_up_phase.links;
  set_up_phase.links = link;
  if (--set_up_phase.running == 0) {
    size_t free_end = 0, total = 0, n = 0;
    if (cudaMemGetInfo(&free_end, &total) != cudaSuccess) free_end = set_up_phase.free_start;
    size_t drop = set_up_phase.free_start > free_end ? set_up_phase.free_start - free_end : 0;
    for (link_t *l = set_up_phase.links; l; l = l->phase_next)
      n++;
    for (link_t *l = set_up_phase.links, *next; l; l = next) {
      next = l->phase_next;
      l->phase_next = NULL;
      atomic_store(&l->device_bytes, drop / n);
    }
    set_up_phase.links = NULL;
    gmpi_log(GMPI_LOG_INFO, "NCCL links: %zu set up together took %.1f MiB of device memory", n,
             (double)drop / (1 << 20));
  }
  pthread_mutex_unlock(&set_up_phase.lock);
}

/* A link being closed leaves a phase that has not ended: its memory is not written after. */
static void phase_forget(link_t *link) {
  pthread_mutex_lock(&set_up_phase.lock);
  for (link_t **at = &set_up_phase.links; *at; at = &(*at)->phase_next) {
    if (*at == link) {
      *at = link->phase_next;
      break;
    }
  }
  pthread_mutex_unlock(&set_up_phase.lock);
}

gmpi_status_t cuda_links_create(cuda_p2p_t *p) {
  struct cuda_links *l = calloc(1, sizeof(*l));
  if (!l || !(l->by_peer = calloc((size_t)p->comm->size, sizeof(link_t)))) {
    free(l);
    return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for %d links", p->comm->size);
  }
  l->size = p->comm->size;
  for (int r = 0; r < l->size; r++)
    l->by_peer[r].peer = r;
  p->links = l;
  return GMPI_SUCCESS;
}

/* ---- set-up ---------------------------------------------------------------------------- */

static ncclResult_t warm_up(link_t *link) {
  char *w = link->warm;
  ncclGroupStart();
  ncclSend(w, 1, ncclUint8, 1 - link->my_rank, link->nccl, link->stream);
  ncclRecv(w + 1, 1, ncclUint8, 1 - link->my_rank, link->nccl, link->stream);
  return ncclGroupEnd();
}

/* The helper thread: join the two-rank communicator and connect it. Blocking calls are fine
 * here; a link carries few channels (one CTA), which keeps its memory small. */
static void *link_setup_main(void *arg) {
  link_t *link = arg;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  config.minCTAs = 1;
  config.maxCTAs = 1;
  ncclResult_t r = ncclSuccess;
  cudaError_t e = cudaSetDevice(link->device);
  if (e == cudaSuccess) {
    phase_enter();
    r = ncclCommInitRankConfig(&link->nccl, 2, link->id, link->my_rank, &config);
    if (r == ncclSuccess) r = warm_up(link);
    if (r == ncclSuccess) e = cudaStreamSynchronize(link->stream);
    phase_leave(link);
  }
  if (e != cudaSuccess)
    snprintf(link->setup_error, sizeof(link->setup_error), "%s", cudaGetErrorString(e));
  else if (r != ncclSuccess)
    snprintf(link->setup_error, sizeof(link->setup_error), "%s", ncclGetErrorString(r));
  atomic_store(&link->setup_state, link->setup_error[0] ? LINK_FAILED : LINK_READY);
  return NULL;
}

static gmpi_status_t link_start(cuda_p2p_t *p, link_t *link, const ncclUniqueId *id, int my_rank) {
  link->id = *id;
  link->my_rank = my_rank;
  link->device = p->cc->device;
  GMPI_CUDA_CHECK(cudaStreamCreateWithFlags(&link->stream, cudaStreamNonBlocking));
  GMPI_CHECK(cuda_lib_alloc(2, &link->warm));
  atomic_store(&link->setup_state, LINK_STARTING);
  if (pthread_create(&link->setup, NULL, link_setup_main, link) != 0)
    return gmpi_error(GMPI_ERR_BACKEND, "cannot start a thread to set up the link with rank %d",
                      link->peer);
  link->state = LINK_STARTING;
  GMPI_TRACE("NCCL link with rank %d: setting up (%s)", link->peer,
             my_rank == 0 ? "leader" : "follower");
  return GMPI_SUCCESS;
}

gmpi_status_t cuda_link_open(cuda_p2p_t *p, int peer, void *blob, size_t *len) {
  ncclUniqueId id;
  GMPI_NCCL_CHECK(ncclGetUniqueId(&id), NULL);
  GMPI_CHECK(link_start(p, &p->links->by_peer[peer], &id, 0));
  memcpy(blob, &id, sizeof(id));
  *len = sizeof(id);
  return GMPI_SUCCESS;
}

gmpi_status_t cuda_link_join(cuda_p2p_t *p, int peer, const void *blob, size_t len) {
  if (len != sizeof(ncclUniqueId))
    return gmpi_error(GMPI_ERR_INTERNAL, "link introduction from rank %d has %zu bytes", peer, len);
  ncclUniqueId id;
  memcpy(&id, blob, sizeof(id));
  return link_start(p, &p->links->by_peer[peer], &id, 1);
}

/* ---- transfers --------------------------------------------------------------------------- */

static void free_xfer(xfer_t *x) {
  /* after whatever NCCL still does with it, or (never issued) after its staging copy */
  if (x->stage) cudaFreeAsync(x->stage, x->issued ? x->link->stream : x->copy_stream);
  if (x->staged) cudaEventDestroy(x->staged);
  cudaEventDestroy(x->done);
  free(x);
}

static gmpi_status_t issue(xfer_t *x) {
  link_t *link = x->link;
  if (x->staged) GMPI_CUDA_CHECK(cudaStreamWaitEvent(link->stream, x->staged, 0));
  int to = 1 - link->my_rank;
  ncclResult_t r = x->is_send ? ncclSend(x->buf, x->bytes, ncclUint8, to, link->nccl, link->stream)
                              : ncclRecv(x->buf, x->bytes, ncclUint8, to, link->nccl, link->stream);
  if (r != ncclSuccess) {
    link->state = LINK_FAILED;
    return gmpi_nccl_error(r, link->nccl, x->is_send ? "ncclSend (link)" : "ncclRecv (link)");
  }
  x->issued = 1; /* NCCL has the buffers: what frees them follows the link's stream */
  cudaError_t e = cudaEventRecord(x->done, link->stream);
  if (e != cudaSuccess) { /* done would read as passed: the link is failed instead */
    link->state = LINK_FAILED;
    return gmpi_cuda_error(e, "cudaEventRecord (link transfer)");
  }
  if (x->is_send && x->stage) {
    GMPI_CUDA_CHECK(cudaFreeAsync(x->stage, link->stream));
    x->stage = NULL;
  }
  return GMPI_SUCCESS;
}

/* A link being set up: once ready, issue what waited for it, in order. */
static gmpi_status_t link_pump(link_t *link) {
  if (link->state != LINK_STARTING) return GMPI_SUCCESS;
  int state = atomic_load(&link->setup_state);
  if (state == LINK_STARTING) return GMPI_SUCCESS;
  pthread_join(link->setup, NULL);
  link->state = (link_state_t)state;
  if (state == LINK_FAILED)
    return gmpi_error(GMPI_ERR_BACKEND, "setting up the NCCL link with rank %d failed: %s",
                      link->peer, link->setup_error);
  gmpi_log(GMPI_LOG_INFO, "NCCL link with rank %d ready", link->peer);
  /* The queue holds what was never issued (link_close frees it), never a transfer freed here. */
  while (link->head) {
    xfer_t *x = link->head;
    gmpi_status_t st = issue(x);
    if (st != GMPI_SUCCESS) link->state = LINK_FAILED;
    if (!x->issued) return st; /* failed before NCCL had it: stays queued */
    link->head = x->next;
    if (!link->head) link->tail = NULL;
    if (x->cancelled) free_xfer(x); /* NCCL has the call; CUDA releases events when done */
    GMPI_CHECK(st);
  }
  return GMPI_SUCCESS;
}

gmpi_status_t cuda_links_progress(cuda_p2p_t *p) {
  for (int r = 0; p->links && r < p->links->size; r++)
    GMPI_CHECK(link_pump(&p->links->by_peer[r]));
  return GMPI_SUCCESS;
}

/* A host end of a message (a comm matching across memory kinds): NCCL moves device memory, so
 * the transfer goes through a device copy from the stream-ordered allocator, on the
 * host_copies stream (nothing there waits for the program or a peer). A send fills it now --
 * from pageable memory CUDA has read the whole buffer when the call returns -- and the link's
 * stream waits for it on the device; a receive empties it into the host buffer once the
 * transfer is done. The host waits for neither. */
static gmpi_status_t stage_host_end(cuda_p2p_t *p, xfer_t *x) {
  cudaStream_t s = p->host_copies;
  x->copy_stream = s;
  GMPI_CUDA_CHECK(cudaMallocAsync(&x->stage, x->bytes ? x->bytes : 1, s));
  if (x->is_send)
    GMPI_CUDA_CHECK(cudaMemcpyAsync(x->stage, x->buf, x->bytes, cudaMemcpyHostToDevice, s));
  GMPI_CUDA_CHECK(cudaEventCreateWithFlags(&x->staged, cudaEventDisableTiming));
  GMPI_CUDA_CHECK(cudaEventRecord(x->staged, s));
  if (!x->is_send) x->host = x->buf;
  x->buf = x->stage;
  return GMPI_SUCCESS;
}

/* The transfer is done (its event passed): the copy waits for the copy engine alone. */
static gmpi_status_t unstage_receive(xfer_t *x) {
  GMPI_CUDA_CHECK(
      cudaMemcpyAsync(x->host, x->stage, x->bytes, cudaMemcpyDeviceToHost, x->copy_stream));
  GMPI_CUDA_CHECK(cudaStreamSynchronize(x->copy_stream));
  GMPI_CUDA_CHECK(cudaFreeAsync(x->stage, x->copy_stream));
  x->stage = NULL;
  return GMPI_SUCCESS;
}

gmpi_status_t cuda_link_ready(cuda_p2p_t *p, int peer, int *ready) {
  link_t *link = &p->links->by_peer[peer];
  GMPI_CHECK(link_pump(link));
  if (link->state == LINK_FAILED)
    return gmpi_error(GMPI_ERR_BACKEND, "the NCCL link with rank %d could not be set up: %s", peer,
                      link->setup_error);
  *ready = link->state == LINK_READY;
  return GMPI_SUCCESS;
}

gmpi_status_t cuda_link_issue(cuda_p2p_t *p, int is_send, int peer, void *buf, size_t bytes,
                              void **handle) {
  link_t *link = &p->links->by_peer[peer];
  if (link->state == LINK_FAILED || link->state == LINK_NONE)
    return gmpi_error(GMPI_ERR_BACKEND, "the NCCL link with rank %d could not be set up", peer);
  xfer_t *x = calloc(1, sizeof(*x));
  if (!x) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a transfer");
  *x = (xfer_t){.kind = XFER_LINK, .link = link, .is_send = is_send, .buf = buf, .bytes = bytes};
  gmpi_status_t st = GMPI_SUCCESS;
  /* The program's stream has passed both ends' posts (the engine's marks, core/mover.h): the
   * data is ready and the buffer free to fill, so the link waits for nothing of the program's. */
  GMPI_CUDA_CHECK_GOTO(cudaEventCreateWithFlags(&x->done, cudaEventDisableTiming), st, free_x);
  if (cuda_p2p_is_host(p, buf)) GMPI_CHECK_GOTO(stage_host_end(p, x), st, destroy_staging);
  if (link->state == LINK_READY) {
    st = issue(x);
    if (st != GMPI_SUCCESS) { /* the engine gets no handle for it: freed after what NCCL has */
      free_xfer(x);
      return st;
    }
    *handle = x;
    return GMPI_SUCCESS;
  }
  *handle = x; /* queued: the engine's from here, whatever the pump says */
  if (link->tail)
    link->tail->next = x;
  else
    link->head = x;
  link->tail = x;
  return link_pump(link);
destroy_staging:
  if (x->stage) cudaFreeAsync(x->stage, p->host_copies);
  if (x->staged) cudaEventDestroy(x->staged);
  cudaEventDestroy(x->done);
free_x:
  free(x);
  return st;
}

gmpi_status_t cuda_link_test(void *handle, int *done) {
  xfer_t *x = handle;
  *done = 0;
  if (!x->issued) GMPI_CHECK(link_pump(x->link));
  if (x->link->state == LINK_FAILED) /* its set-up or an issue failed: it may never run */
    return gmpi_error(GMPI_ERR_BACKEND, "the NCCL link with rank %d failed (a %s of %zu bytes)",
                      x->link->peer, x->is_send ? "send" : "receive", x->bytes);
  if (!x->issued) return GMPI_SUCCESS;
  cudaError_t e = cudaEventQuery(x->done);
  if (e == cudaErrorNotReady) {
    ncclResult_t r = ncclSuccess;
    ncclCommGetAsyncError(x->link->nccl, &r);
    if (r != ncclSuccess) return gmpi_nccl_error(r, x->link->nccl, "NCCL link");
    return GMPI_SUCCESS;
  }
  if (e != cudaSuccess) return gmpi_cuda_error(e, "cudaEventQuery");
  if (x->host) GMPI_CHECK(unstage_receive(x)); /* failed: still the engine's, to cancel */
  free_xfer(x);
  *done = 1;
  return GMPI_SUCCESS;
}

/* A transfer not yet issued keeps its place in the link's order (its peer issues the other
 * half): it is issued, then released. */
void cuda_link_cancel(void *handle) {
  xfer_t *x = handle;
  if (x->issued)
    free_xfer(x);
  else
    x->cancelled = 1;
}

size_t cuda_links_device_bytes(const cuda_p2p_t *p) {
  size_t sum = 0;
  for (int r = 0; p->links && r < p->links->size; r++)
    if (p->links->by_peer[r].state == LINK_READY)
      sum += atomic_load(&p->links->by_peer[r].device_bytes);
  return sum;
}

/* Close a link. Its transfers have completed (every rank arrived at the comm's free first:
 * close_engines in src/api/init.c), so the communicator is aborted rather than finalized: abort
 * needs no cooperation from the peer, whose links close in another order. */
/* Returns 0 when its set-up thread is still running: the link is left to it. */
static int link_close(link_t *link, double timeout_s) {
  if (link->state == LINK_NONE) return 1;
  for (xfer_t *x = link->head, *n; x; x = n)
    n = x->next, free_xfer(x);
  link->head = link->tail = NULL;
  if (link->state == LINK_STARTING) {
    if (atomic_load(&link->setup_state) == LINK_STARTING) {
      pthread_detach(link->setup); /* blocked in NCCL, waiting for a peer that is gone */
      return 0;
    }
    pthread_join(link->setup, NULL);
  }
  phase_forget(link);
  /* A transfer a lost peer never joins would hold the stream forever: wait at most
   * GMPI_TIMEOUT, then the abort ends it. */
  if (link->stream && !cuda_stream_drained(link->stream, timeout_s))
    gmpi_log(GMPI_LOG_WARN,
             "cuda: a point-to-point link to rank %d still had work after "
             "GMPI_TIMEOUT = %g s at the comm's free; aborting it",
             link->peer, timeout_s);
  if (link->nccl) ncclCommAbort(link->nccl);
  cuda_lib_free(link->warm, 2);
  if (link->stream) cudaStreamDestroy(link->stream);
  memset(link, 0, sizeof(*link));
  return 1;
}

void cuda_links_close(cuda_p2p_t *p) {
  if (!p->links) return;
  int all_closed = 1;
  for (int r = 0; r < p->links->size; r++)
    all_closed &= link_close(&p->links->by_peer[r], p->comm->cfg.timeout_s);
  /* A set-up thread still blocked in NCCL writes its link when (if) it returns: the links stay
   * allocated for it, left to the process with it. */
  if (all_closed) free(p->links->by_peer);
  free(p->links);
  p->links = NULL;
}
