/* SPDX-License-Identifier: BSD-3-Clause */
/* The cuda backend's data mover (core/mover.h), on which core builds device point to point
 * (its envelope engine, core/envelope.h): eager data through host memory, rendezvous data by
 * CUDA IPC within a host and by NCCL links between hosts. The engine decides the order of
 * everything; this file only moves bytes and never calls the engine. */
#include <stdlib.h>
#include <string.h>

#include "../../core/comm.h"
#include "../../core/error.h"
#include "../../core/hostmem.h"
#include "../../core/log.h"
#include "../../core/mover.h"
#include "../../core/oob.h"
#include "../../core/request.h"
#include "cuda_check.h"
#include "cuda_p2p.h"

/* A message's stack or heap end is host memory by the process's layout (hostmem.h), as
 * route.c answers it: no lock, table search or driver question per message (~0.1 us). Else the
 * driver says; managed memory counts as host here, since the CPU may touch it (its pages
 * migrate), so MPI can move it -- and the copies and marks that order it with the program's
 * stream are those of any host end. */
int cuda_p2p_is_host(cuda_p2p_t *p, const void *ptr) {
  gmpi_mem_kind_t kind = GMPI_MEM_HOST;
  if (gmpi_hostmem_surely(ptr)) return 1;
  return cuda_classify(p->comm, ptr, "buf", &kind) == GMPI_SUCCESS && kind != GMPI_MEM_DEVICE;
}

/* ---- copies and exposures: started here, tested by the engine ---------------------------- */

/* A copy, or (no bytes) a mark: done when the program's stream has reached the post (an
 * ordered copy, a mark) and, for a copy, the bytes have landed. */
typedef struct {
  xfer_kind_t kind; /* XFER_COPY */
  cuda_p2p_t *p;
  cudaEvent_t ready; /* a host end or an exposure: where the program's stream was at the post */
  cudaEvent_t done;  /* after the copy, once issued; NULL before */
  void *dst;
  const void *src;
  size_t bytes;
} copy_t;

/* The stream a post is ordered on: the user's in stream-ordered mode, else the p2p stream
 * after the work the program queued on the legacy default stream. */
static gmpi_status_t post_stream(cuda_p2p_t *p, cudaStream_t *s) {
  *s = p->cc->user_stream ? p->cc->user_stream : p->stream;
  return cuda_after_default_stream(p->cc, *s);
}

static void copy_release(copy_t *c) {
  if (c->ready) cuda_event_give(c->p->cc, c->ready);
  if (c->done) cuda_event_give(c->p->cc, c->done);
  free(c);
}

static gmpi_status_t copy_issue(copy_t *c);

/* Between two device buffers the copy is queued in the stream's order at once: nothing on the
 * host waits for it. With a host end CUDA would hold the host until the stream reached the
 * copy (into pageable memory it returns only once the copy has landed), and that stream may
 * hold work that ends only when a peer joins it -- a peer that may be waiting for this rank's
 * envelopes. So an ordered copy only records the stream's position; copy_test issues the copy
 * once the stream has passed it, on host_copies, which holds nothing else that could wait. An
 * unordered one (the program's stream passed both posts already: core/mover.h) is issued on
 * host_copies at once, or between device buffers on the p2p stream. */
gmpi_status_t cuda_copy_start(cuda_p2p_t *p, void *dst, const void *src, size_t bytes, int host_end,
                              int ordered, void **handle) {
  *handle = NULL;
  copy_t *c = calloc(1, sizeof(*c));
  if (!c) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a copy");
  *c = (copy_t){.kind = XFER_COPY, .p = p, .dst = dst, .src = src, .bytes = bytes};
  cudaStream_t s = p->stream;
  gmpi_status_t st = GMPI_SUCCESS;
  if (ordered) GMPI_CHECK_GOTO(post_stream(p, &s), st, release_c);
  if (host_end && !ordered) {
    GMPI_CHECK_GOTO(copy_issue(c), st, release_c);
  } else if (host_end) {
    GMPI_CHECK_GOTO(cuda_event_take(p->cc, &c->ready), st, release_c);
    GMPI_CUDA_CHECK_GOTO(cudaEventRecord(c->ready, s), st, release_c);
  } else {
    GMPI_CUDA_CHECK_GOTO(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s), st, release_c);
    GMPI_CHECK_GOTO(cuda_event_take(p->cc, &c->done), st, release_c);
    GMPI_CUDA_CHECK_GOTO(cudaEventRecord(c->done, s), st, release_c);
  }
  *handle = c;
  return GMPI_SUCCESS;
release_c:
  copy_release(c);
  return st;
}

/* Has the event passed? *passed 0 while the device has not got there. */
static gmpi_status_t event_passed(cudaEvent_t ev, int *passed) {
  cudaError_t e = cudaEventQuery(ev);
  *passed = e == cudaSuccess;
  if (e != cudaSuccess && e != cudaErrorNotReady) return gmpi_cuda_error(e, "cudaEventQuery");
  return GMPI_SUCCESS;
}

/* A host end's copy, its source ready: on host_copies, an event after it. A failure leaves
 * it unissued (the engine cancels it). */
static gmpi_status_t copy_issue(copy_t *c) {
  cudaStream_t s = c->p->host_copies;
  cudaEvent_t done;
  GMPI_CHECK(cuda_event_take(c->p->cc, &done));
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_CUDA_CHECK_GOTO(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDefault, s), st,
                       give_done);
  GMPI_CUDA_CHECK_GOTO(cudaEventRecord(done, s), st, give_done);
  c->done = done;
  return GMPI_SUCCESS;
give_done:
  cuda_event_give(c->p->cc, done);
  return st;
}

static gmpi_status_t copy_test(copy_t *c, int *done) {
  *done = 0;
  if (!c->done) { /* waits for its post's place on the program's stream */
    int passed = 0;
    GMPI_CHECK(event_passed(c->ready, &passed));
    if (!passed) return GMPI_SUCCESS;
    if (c->bytes) GMPI_CHECK(copy_issue(c)); /* it waits for the copy engine alone */
  }
  int passed = 1;
  if (c->done) GMPI_CHECK(event_passed(c->done, &passed));
  if (!passed) return GMPI_SUCCESS;
  *done = 1;
  copy_release(c);
  return GMPI_SUCCESS;
}

/* Nothing of the engine's is touched after this: a copy into or out of its host memory is
 * pageable on both sides, which CUDA finishes reading (to a staging buffer) or writing before
 * cudaMemcpyAsync returns; one not issued yet never is. The events may still be recorded
 * work: destroyed, not reused (CUDA releases them when it is done). */
static void copy_cancel(copy_t *c) {
  if (c->ready) cudaEventDestroy(c->ready);
  if (c->done) cudaEventDestroy(c->done);
  free(c);
}

/* Host to host (a comm matching across memory kinds moves host messages here too) is a
 * memcpy, done at once. ordered: the program's stream has not passed the post yet (to_host). */
static gmpi_status_t copy(cuda_p2p_t *p, void *dst, const void *src, size_t bytes, int ordered,
                          void **handle) {
  int dst_host = cuda_p2p_is_host(p, dst), src_host = cuda_p2p_is_host(p, src);
  *handle = NULL;
  if (!dst_host || !src_host)
    return cuda_copy_start(p, dst, src, bytes, dst_host || src_host, ordered, handle);
  memcpy(dst, src, bytes);
  return GMPI_SUCCESS;
}

static gmpi_status_t dev_to_host(void *ctx, void *host, const void *buf, size_t bytes,
                                 void **handle) {
  return copy(ctx, host, buf, bytes, 1, handle); /* at the send's post */
}
static gmpi_status_t host_to_dev(void *ctx, void *buf, const void *host, size_t bytes,
                                 void **handle) {
  return copy(ctx, buf, host, bytes, 0, handle); /* the receive's mark has passed */
}
static gmpi_status_t dev_self_copy(void *ctx, void *dst, const void *src, size_t bytes,
                                   void **handle) {
  return copy(ctx, dst, src, bytes, 0, handle); /* both marks have passed */
}

/* Where the program's stream is now: the user's in stream-ordered mode, else the legacy
 * default stream where GMPI_DEFAULT_STREAM_ORDER wants it (cuda_default_stream_wanted). A
 * handle with no bytes. */
static gmpi_status_t mark(void *ctx, const void *buf, void **handle) {
  cuda_p2p_t *p = ctx;
  cuda_comm_t *cc = p->cc;
  *handle = NULL;
  /* The stack or the break's heap: host memory, which the program's MPI call orders, as a
   * CUDA-aware MPI's host path (or MPI alone) does -- a program finishes device work on a host
   * buffer (a copy into registered memory, a kernel reading it through HMM) before it hands the
   * buffer to MPI. Pageable memory the device cannot even reach unseen: a copy with a pageable
   * end returns only once it has read or written it. */
  if (buf && gmpi_hostmem_surely(buf)) return GMPI_SUCCESS;
  int wanted = 1;
  /* matching across kinds routes without classifying the buffer, so memops knows nothing of
   * it: the event */
  if (p->comm->match_across_kinds && cc->default_stream_order == GMPI_STREAM_ORDER_MEMOPS)
    cuda_memops_unsure();
  if (!cc->user_stream) GMPI_CHECK(cuda_default_stream_wanted(cc, &wanted));
  if (!wanted) return GMPI_SUCCESS;
  copy_t *c = calloc(1, sizeof(*c));
  if (!c) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a stream mark");
  *c = (copy_t){.kind = XFER_COPY, .p = p};
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_CHECK_GOTO(cuda_event_take(cc, &c->ready), st, release_c);
  GMPI_CUDA_CHECK_GOTO(
      cudaEventRecord(c->ready, cc->user_stream ? cc->user_stream : cudaStreamLegacy), st,
      release_c);
  *handle = c;
  return GMPI_SUCCESS;
release_c:
  copy_release(c);
  return st;
}

/* The receiver reads buf as soon as it matches: its data must be there first, i.e. the
 * program's stream must have reached the send. *ready is that point (a mark); the engine sends
 * the envelope after it. */
static size_t expose(void *ctx, int peer, const void *buf, size_t bytes, void *blob, void **ready) {
  cuda_p2p_t *p = ctx;
  (void)bytes;
  *ready = NULL;
  if (!p->can_pull[peer] || cuda_p2p_is_host(p, buf)) return 0; /* host memory: the link */
  size_t len = cuda_ipc_expose(p, buf, blob);
  if (!len) return 0;
  if (mark(p, buf, ready) != GMPI_SUCCESS) { /* the link then, after the engine's own mark */
    cudaGetLastError();
    *ready = NULL;
    cuda_memops_owed(); /* the failed mark may have used up an owed event: the engine's mark */
    return 0;
  }
  return len;
}

static gmpi_status_t pull(void *ctx, int peer, const void *blob, size_t len, void *dst,
                          size_t bytes, void **handle) {
  return cuda_ipc_pull(ctx, peer, blob, len, dst, bytes, handle);
}

static gmpi_status_t link_open(void *ctx, int peer, void *blob, size_t *len) {
  return cuda_link_open(ctx, peer, blob, len);
}
static gmpi_status_t link_join(void *ctx, int peer, const void *blob, size_t len) {
  return cuda_link_join(ctx, peer, blob, len);
}
/* Device messages to a peer of another host (or every peer under GMPI_DEVICE_P2P=nccl) take a
 * link; host-buffer ends take one too, but only when matching across kinds, and lazily. */
static int link_wanted(void *ctx, int peer) {
  cuda_p2p_t *p = ctx;
  return !p->can_pull[peer];
}
static gmpi_status_t link_ready(void *ctx, int peer, int *ready) {
  return cuda_link_ready(ctx, peer, ready);
}
static gmpi_status_t link_send(void *ctx, int peer, uint64_t k, const void *buf, size_t bytes,
                               void **handle) {
  (void)k; /* the engine issues in link order; NCCL pairs by that order */
  return cuda_link_issue(ctx, 1, peer, (void *)buf, bytes, handle);
}
static gmpi_status_t link_recv(void *ctx, int peer, uint64_t k, void *buf, size_t bytes,
                               void **handle) {
  (void)k;
  return cuda_link_issue(ctx, 0, peer, buf, bytes, handle);
}

/* Host memory (not device, whatever the driver says of it otherwise) MPI reads and writes
 * itself: a host-to-host rendezvous message then goes over the engine's channel instead of a
 * staged copy through the device and a link. */
static int host_mem(void *ctx, const void *buf) { return cuda_p2p_is_host(ctx, buf); }

static gmpi_status_t xfer_test(void *ctx, void *handle, int *done) {
  (void)ctx;
  switch (*(xfer_kind_t *)handle) {
  case XFER_COPY: return copy_test(handle, done);
  case XFER_PULL: return cuda_ipc_test(handle, done);
  default: return cuda_link_test(handle, done);
  }
}
static void xfer_cancel(void *ctx, void *handle) {
  (void)ctx;
  switch (*(xfer_kind_t *)handle) {
  case XFER_COPY: copy_cancel(handle); break;
  case XFER_PULL: cuda_ipc_cancel(handle); break;
  default: cuda_link_cancel(handle);
  }
}

static gmpi_status_t progress(void *ctx) { return cuda_links_progress(ctx); }

static void destroy(void *ctx) {
  cuda_p2p_t *p = ctx;
  if (p->cc->p2p == p) p->cc->p2p = NULL; /* the comm's usage no longer counts its links */
  /* local copies, then the links (whose host ends' staging copies run on host_copies) */
  if (p->stream) (void)cuda_stream_drained(p->stream, p->comm->cfg.timeout_s);
  cuda_ipc_close(p);
  cuda_links_close(p);
  if (p->host_copies) (void)cuda_stream_drained(p->host_copies, p->comm->cfg.timeout_s);
  if (p->host_copies) cudaStreamDestroy(p->host_copies);
  if (p->stream) cudaStreamDestroy(p->stream);
  free(p->can_pull);
  free(p);
}

static const gmpi_mover_t cuda_mover = {
    .name = "cuda",
    .to_host = dev_to_host,
    .from_host = host_to_dev,
    .self_copy = dev_self_copy,
    .mark = mark,
    .expose = expose,
    .pull = pull,
    .link_open = link_open,
    .link_join = link_join,
    .link_wanted = link_wanted,
    .link_ready = link_ready,
    .link_send = link_send,
    .link_recv = link_recv,
    .host_mem = host_mem,
    .test = xfer_test,
    .cancel = xfer_cancel,
    .progress = progress,
    .destroy = destroy,
};

/* Which peers share this host (collective): their device memory is reachable by CUDA IPC. */
static gmpi_status_t find_pullable(cuda_p2p_t *p) {
  gmpi_comm_t comm = p->comm;
  char(*hosts)[64] = calloc((size_t)comm->size, sizeof(*hosts));
  if (!hosts) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for %d host names", comm->size);
  gmpi_status_t st = comm->oob.ops->allgather(comm, comm->host, hosts, sizeof(hosts[0]));
  for (int r = 0; st == GMPI_SUCCESS && r < comm->size; r++)
    p->can_pull[r] = comm->cfg.device_p2p == GMPI_DEVICE_P2P_AUTO &&
                     !strncmp(hosts[r], comm->host, sizeof(hosts[0]));
  free(hosts);
  return st;
}

gmpi_status_t cuda_mover_open(gmpi_comm_t comm, const gmpi_mover_t **mover, void **ctx) {
  cuda_comm_t *cc = comm->be;
  cuda_p2p_t *p = calloc(1, sizeof(*p));
  if (!p) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for device point to point");
  p->comm = comm;
  p->cc = cc;
  gmpi_status_t st = GMPI_SUCCESS;
  if (!(p->can_pull = calloc((size_t)comm->size, 1))) {
    st = gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for device point to point");
    goto destroy_p;
  }
  GMPI_CUDA_CHECK_GOTO(cudaStreamCreateWithFlags(&p->stream, cudaStreamNonBlocking), st, destroy_p);
  GMPI_CUDA_CHECK_GOTO(cudaStreamCreateWithFlags(&p->host_copies, cudaStreamNonBlocking), st,
                       destroy_p);
  GMPI_CHECK_GOTO(find_pullable(p), st, destroy_p);
  GMPI_CHECK_GOTO(cuda_links_create(p), st, destroy_p);
  cc->p2p = p;
  *mover = &cuda_mover;
  *ctx = p;
  return GMPI_SUCCESS;
destroy_p:
  destroy(p);
  return st;
}

size_t cuda_p2p_device_bytes(const cuda_comm_t *cc) {
  return cc->p2p ? cuda_links_device_bytes(cc->p2p) : 0;
}
