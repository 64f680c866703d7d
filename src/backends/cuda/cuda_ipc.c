/* SPDX-License-Identifier: BSD-3-Clause */
/* CUDA IPC between ranks of one host: the sender describes its buffer (an IPC handle of the
 * allocation that holds it, and the offset); the receiver opens the handle once per allocation
 * and copies with the copy engine. A copy waits for no kernel of the peer's, so it cannot join a
 * wait cycle, and it runs at the copy engine's speed even when ranks share one GPU (measured:
 * docs/design.md, "What NCCL point to point does"). The mapping costs no device memory.
 * Stale mappings are not closed inside the engine's progress: cudaIpcCloseMemHandle waits for
 * every kernel on the device, and one of them may wait for the very peer whose data this rank is
 * to pull (docs/design.md, "Stale CUDA IPC mappings"). A thread of their own closes them while
 * the pull waits (inline only when no thread can be started). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/comm.h"
#include "../../core/error.h"
#include "../../core/log.h"
#include "../../core/wait.h"
#include "cuda_check.h"
#include "cuda_p2p.h"

typedef struct {
  cudaIpcMemHandle_t handle;
  uint64_t offset; /* of the buffer in its allocation */
} ipc_blob_t;

typedef struct opened {
  int peer;
  cudaIpcMemHandle_t handle;
  char *base;
  int reading; /* pulls from it not yet tested done (a cancelled one that ran keeps its count) */
  struct opened *next;
} opened_t;

struct cuda_ipc {
  opened_t *opened;
  struct unmap *pending; /* the latest unmap (a reference): no handle opens while it runs */
};

/* Mappings being closed by a thread of their own; shared by that thread, the pulls waiting for
 * it and p->ipc->pending, freed by the last of them. */
typedef struct unmap {
  opened_t *stale;
  int device;
  atomic_int done; /* the thread is through: every stale mapping closed (or the device unset) */
  atomic_int refs;
} unmap_t;

typedef struct {
  xfer_kind_t kind; /* XFER_PULL */
  cudaEvent_t done; /* after the copy, once issued; NULL before */
  opened_t *from;   /* the mapping it reads, once open */
  /* Waiting for stale mappings to close before the sender's buffer can be opened: */
  unmap_t *unmap;
  cuda_p2p_t *p;
  int peer;
  ipc_blob_t b;
  void *dst;
  size_t bytes;
} pull_t;

size_t cuda_ipc_expose(cuda_p2p_t *p, const void *buf, void *blob) {
  (void)p;
  uintptr_t base = 0;
  size_t size = 0;
  ipc_blob_t b;
  if (!cuda_alloc_range(buf, &base, &size)) return 0;
  if (cudaIpcGetMemHandle(&b.handle, (void *)(uintptr_t)base) != cudaSuccess) {
    cudaGetLastError();
    GMPI_TRACE("buffer %p cannot be shared by CUDA IPC: it moves on the NCCL link", buf);
    return 0;
  }
  b.offset = (uint64_t)((uintptr_t)buf - (uintptr_t)base);
  memcpy(blob, &b, sizeof(b));
  return sizeof(b);
}

static void unmap_put(unmap_t *u) {
  if (atomic_fetch_sub(&u->refs, 1) == 1) free(u);
}

/* Free the list, closing its mappings when close is set. */
static void close_all(opened_t *list, int close) {
  for (opened_t *o = list, *next; o; o = next) {
    next = o->next;
    if (close) cudaIpcCloseMemHandle(o->base);
    free(o);
  }
}

static void *unmap_main(void *arg) {
  unmap_t *u = arg;
  close_all(u->stale, cudaSetDevice(u->device) == cudaSuccess); /* waits for the device */
  atomic_store(&u->done, 1);
  unmap_put(u);
  return NULL;
}

/* Hand peer's mappings that no pull reads (one of them is stale) to a thread that closes them;
 * *out: what the pull waits for. A mapping a pull still reads is not stale -- its sender keeps
 * that buffer until the pull's FIN -- and closing it would let the pull read an unmapped range.
 * Without a thread they are closed here, as a last resort. */
static gmpi_status_t unmap_stale(cuda_p2p_t *p, int peer, unmap_t **out) {
  unmap_t *u = calloc(1, sizeof(*u));
  if (!u) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for CUDA IPC state");
  for (opened_t **link = &p->ipc->opened; *link;) {
    opened_t *o = *link;
    if (o->peer != peer || o->reading) {
      link = &o->next;
      continue;
    }
    *link = o->next;
    o->next = u->stale;
    u->stale = o;
  }
  if (!u->stale) {
    free(u);
    return gmpi_error(GMPI_ERR_BACKEND,
                      "cudaIpcOpenMemHandle: a device buffer of rank %d is already mapped, and "
                      "every mapping of that rank's memory is being read",
                      peer);
  }
  u->device = p->cc->device;
  atomic_store(&u->refs, 3); /* the thread, the pull, p->ipc->pending */
  pthread_t t;
  if (pthread_create(&t, NULL, unmap_main, u) != 0) {
    close_all(u->stale, 1);
    free(u);
    *out = NULL;
    return GMPI_SUCCESS;
  }
  pthread_detach(t);
  /* said once per comm (its first unmap), traced after */
  gmpi_log(p->ipc->pending ? GMPI_LOG_TRACE : GMPI_LOG_WARN,
           "rank %d freed a device buffer this rank had read by CUDA IPC and allocated over it: "
           "its stale mapping here must close before the new buffer can be read, and CUDA "
           "closes it only once every kernel on this device has finished -- if one of them "
           "waits for rank %d, this message cannot move before GMPI_TIMEOUT",
           peer, peer);
  if (p->ipc->pending) unmap_put(p->ipc->pending);
  p->ipc->pending = u;
  *out = u;
  return GMPI_SUCCESS;
}

/* The peer's allocation, opened once and kept until the comm closes (or until the peer reuses
 * its memory for a new allocation: unmap_stale). *unmap non-NULL: it cannot open before the
 * stale mappings handed to that thread are closed. */
static gmpi_status_t open_peer_buffer(cuda_p2p_t *p, int peer, const cudaIpcMemHandle_t *h,
                                      opened_t **out, unmap_t **unmap) {
  *unmap = NULL;
  if (!p->ipc && !(p->ipc = calloc(1, sizeof(*p->ipc))))
    return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for CUDA IPC state");
  for (opened_t *o = p->ipc->opened; o; o = o->next) {
    if (o->peer == peer && !memcmp(&o->handle, h, sizeof(*h))) {
      *out = o;
      return GMPI_SUCCESS;
    }
  }
  /* While an unmap runs, its thread may be closing this very handle (it takes every mapping of
   * a peer that no pull reads, live ones too): an open now could race that close. Wait. */
  unmap_t *busy = p->ipc->pending;
  if (busy && !atomic_load(&busy->done)) {
    atomic_fetch_add(&busy->refs, 1);
    *unmap = busy;
    return GMPI_SUCCESS;
  }
  opened_t *o = calloc(1, sizeof(*o));
  if (!o) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for CUDA IPC state");
  cudaError_t e = cudaIpcOpenMemHandle((void **)&o->base, *h, cudaIpcMemLazyEnablePeerAccess);
  if (e == cudaErrorAlreadyMapped) {
    /* The peer freed an allocation we still map and made a new one over its memory. */
    cudaGetLastError();
    free(o);
    GMPI_CHECK(unmap_stale(p, peer, unmap));
    if (*unmap) return GMPI_SUCCESS;
    return open_peer_buffer(p, peer, h, out, unmap); /* closed here: open again */
  }
  if (e != cudaSuccess) {
    free(o);
    return gmpi_cuda_error(e, "cudaIpcOpenMemHandle (a device buffer of a rank on this host)");
  }
  o->peer = peer;
  o->handle = *h;
  o->next = p->ipc->opened;
  p->ipc->opened = o;
  GMPI_TRACE("opened a device allocation of rank %d by CUDA IPC", peer);
  *out = o;
  return GMPI_SUCCESS;
}

/* The copy out of an open mapping. The program's stream passed the receive's post (its mark,
 * core/mover.h) and the sender's (its exposure): it waits for nothing of the program's. Into
 * host memory (matching across kinds) it goes on host_copies, where CUDA holding the host waits
 * for copies alone, else on the p2p stream. */
static gmpi_status_t pull_issue(pull_t *x) {
  cuda_p2p_t *p = x->p;
  cudaStream_t s = cuda_p2p_is_host(p, x->dst) ? p->host_copies : p->stream;
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_CUDA_CHECK(cudaEventCreateWithFlags(&x->done, cudaEventDisableTiming));
  GMPI_CUDA_CHECK_GOTO(
      cudaMemcpyAsync(x->dst, x->from->base + x->b.offset, x->bytes, cudaMemcpyDefault, s), st,
      destroy_event);
  GMPI_CUDA_CHECK_GOTO(cudaEventRecord(x->done, s), st, destroy_event);
  x->from->reading++;
  return GMPI_SUCCESS;
destroy_event:
  cudaEventDestroy(x->done);
  x->done = NULL;
  return st;
}

gmpi_status_t cuda_ipc_pull(cuda_p2p_t *p, int peer, const void *blob, size_t len, void *dst,
                            size_t bytes, void **handle) {
  ipc_blob_t b;
  if (len != sizeof(b))
    return gmpi_error(GMPI_ERR_INTERNAL, "buffer description from rank %d has %zu bytes", peer,
                      len);
  memcpy(&b, blob, sizeof(b));
  opened_t *from = NULL;
  unmap_t *unmap = NULL;
  GMPI_CHECK(open_peer_buffer(p, peer, &b.handle, &from, &unmap));
  pull_t *x = calloc(1, sizeof(*x));
  if (!x) {
    if (unmap) unmap_put(unmap);
    return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a transfer");
  }
  *x = (pull_t){.kind = XFER_PULL,
                .from = from,
                .unmap = unmap,
                .p = p,
                .peer = peer,
                .b = b,
                .dst = dst,
                .bytes = bytes};
  gmpi_status_t st = unmap ? GMPI_SUCCESS : pull_issue(x);
  if (st != GMPI_SUCCESS) {
    free(x);
    return st;
  }
  *handle = x;
  return GMPI_SUCCESS;
}

/* A pull waiting for stale mappings to close: once they are, open the buffer and copy. */
static gmpi_status_t pull_after_unmap(pull_t *x, int *issued) {
  *issued = 0;
  if (!x->unmap) /* its open or copy failed at an earlier test */
    return gmpi_error(GMPI_ERR_BACKEND, "a pull from rank %d failed before its copy started",
                      x->peer);
  if (!atomic_load(&x->unmap->done)) return GMPI_SUCCESS;
  unmap_put(x->unmap);
  x->unmap = NULL;
  GMPI_CHECK(open_peer_buffer(x->p, x->peer, &x->b.handle, &x->from, &x->unmap));
  if (x->unmap) return GMPI_SUCCESS; /* another stale one: wait again */
  GMPI_CHECK(pull_issue(x));
  *issued = 1;
  return GMPI_SUCCESS;
}

gmpi_status_t cuda_ipc_test(void *handle, int *done) {
  pull_t *x = handle;
  *done = 0;
  if (!x->done) {
    int issued = 0;
    GMPI_CHECK(pull_after_unmap(x, &issued));
    if (!issued) return GMPI_SUCCESS;
  }
  cudaError_t e = cudaEventQuery(x->done);
  *done = e == cudaSuccess;
  if (e != cudaSuccess && e != cudaErrorNotReady) return gmpi_cuda_error(e, "cudaEventQuery");
  if (!*done) return GMPI_SUCCESS;
  x->from->reading--;
  cuda_ipc_cancel(x);
  return GMPI_SUCCESS;
}

/* The copy may still run: the event is released when it is done (CUDA defers it), and the
 * mapping keeps the pull's count, so no unmap closes it under the copy. */
void cuda_ipc_cancel(void *handle) {
  pull_t *x = handle;
  if (x->done) cudaEventDestroy(x->done);
  if (x->unmap) unmap_put(x->unmap);
  free(x);
}

/* A running unmap is waited for, up to GMPI_TIMEOUT: past it (a kernel that never ends holds
 * its close) the thread is left running, and that is said. */
void cuda_ipc_close(cuda_p2p_t *p) {
  if (!p->ipc) return;
  close_all(p->ipc->opened, 1);
  unmap_t *u = p->ipc->pending;
  if (u) {
    gmpi_deadline_t d;
    gmpi_deadline_start(&d, p->comm->cfg.timeout_s);
    while (!atomic_load(&u->done) && !gmpi_deadline_poll(&d))
      ;
    if (!atomic_load(&u->done))
      gmpi_log(GMPI_LOG_WARN,
               "cuda: a thread closing stale CUDA IPC mappings has not finished within "
               "GMPI_TIMEOUT = %g s: a kernel on the device has not ended; it is left running",
               p->comm->cfg.timeout_s);
    unmap_put(u);
  }
  free(p->ipc);
  p->ipc = NULL;
}
