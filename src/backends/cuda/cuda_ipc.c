/* SPDX-License-Identifier: BSD-3-Clause */
/* CUDA IPC between ranks of one host: the sender describes its buffer (an IPC handle of the
 * allocation that holds it, and the offset); the receiver opens the handle once per allocation
 * and copies with the copy engine. A copy waits for no kernel of the peer's, so it cannot join a
 * wait cycle, and it runs at the copy engine's speed even when ranks share one GPU (measured:
 * docs/design.md, "What NCCL point to point does"). The mapping costs no device memory.
 * A mapping is stale once its sender freed the allocation: the sender's address range travels
 * with each handle, and a new allocation over a mapped one's range retires it. Stale mappings
 * are not closed inside the engine's progress: cudaIpcCloseMemHandle waits for every kernel on
 * the device, and one of them may wait for the very peer whose data this rank is to pull
 * (docs/design.md, "Stale CUDA IPC mappings"). A thread closes them, one per comm at a time
 * (inline only when no thread can be started); a pull waits for it only where the driver
 * refuses the new handle until then, or while it closes mappings that may be live. */
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
  uint64_t offset;      /* of the buffer in its allocation */
  uint64_t base, bytes; /* the allocation, in the sender's address space */
} ipc_blob_t;

typedef struct opened {
  int peer;
  cudaIpcMemHandle_t handle;
  uint64_t sender_base, sender_bytes; /* where the allocation is in the peer */
  char *base;
  int reading; /* pulls from it not yet tested done (a cancelled one that ran keeps its count) */
  struct opened *next;
} opened_t;

struct cuda_ipc {
  opened_t *opened;
  opened_t *retired;     /* stale, waiting for the running unmap to end: the next one's */
  struct unmap *pending; /* the latest unmap (a reference); done: so are all before it */
  int warned;            /* a pull has waited for an unmap (said once per comm) */
};

/* Mappings being closed by a thread of their own; shared by that thread, the pulls waiting for
 * it and p->ipc->pending, freed by the last of them. At most one runs per comm: a new one is
 * started only once the one before is done (close_retired, open_peer_buffer). */
typedef struct unmap {
  opened_t *stale;
  int device;
  int live;        /* it may close mappings still in use (the driver refused a handle, and which
                      mapping was stale is not known): no handle opens while it runs */
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
  b.base = (uint64_t)base;
  b.bytes = (uint64_t)size;
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

/* Close the mappings of list (taken out of p's) on a thread of their own; it becomes
 * p->ipc->pending, whose last unmap is done. Without a thread they are closed here, as a last
 * resort, and *out is NULL. */
static gmpi_status_t unmap_start(cuda_p2p_t *p, opened_t *list, int live, unmap_t **out) {
  *out = NULL;
  unmap_t *u = calloc(1, sizeof(*u));
  if (!u) {
    close_all(list, 1);
    return GMPI_SUCCESS;
  }
  u->stale = list;
  u->device = p->cc->device;
  u->live = live;
  atomic_store(&u->refs, 2); /* the thread, p->ipc->pending */
  pthread_t t;
  if (pthread_create(&t, NULL, unmap_main, u) != 0) {
    free(u);
    close_all(list, 1);
    return GMPI_SUCCESS;
  }
  pthread_detach(t);
  if (p->ipc->pending) unmap_put(p->ipc->pending);
  p->ipc->pending = u;
  *out = u;
  return GMPI_SUCCESS;
}

/* A pull waits for u: one more reference, and the first wait of a comm says why. */
static gmpi_status_t unmap_wait(cuda_p2p_t *p, int peer, unmap_t *u, unmap_t **unmap) {
  atomic_fetch_add(&u->refs, 1);
  *unmap = u;
  gmpi_log(p->ipc->warned ? GMPI_LOG_TRACE : GMPI_LOG_WARN,
           "a device buffer of rank %d can be mapped here by CUDA IPC only once stale mappings "
           "(of device buffers a peer freed) are closed, and CUDA closes them only once every "
           "kernel on this device has finished -- if one of them waits for rank %d, this "
           "message cannot move before GMPI_TIMEOUT",
           peer, peer);
  p->ipc->warned = 1;
  return GMPI_SUCCESS;
}

/* Hand the retired mappings to a thread once no unmap runs: one closing thread per comm at a
 * time, however fast the peers reallocate. */
static gmpi_status_t close_retired(cuda_p2p_t *p) {
  unmap_t *busy = p->ipc->pending, *u;
  if (!p->ipc->retired || (busy && !atomic_load(&busy->done))) return GMPI_SUCCESS;
  opened_t *list = p->ipc->retired;
  p->ipc->retired = NULL;
  return unmap_start(p, list, 0, &u);
}

/* Retire peer's mappings of allocations that overlap [base, base + bytes) of the peer's
 * memory: the peer freed them (a live allocation never overlaps a new one), so they are stale.
 * A thread closes them (close_retired); a pull waits for it only where the driver refuses the
 * new handle meanwhile. One a pull still reads is kept: its sender keeps that buffer until the
 * pull's FIN, so it cannot be what was freed. */
/* Take peer's mappings that no pull reads out of p's opened list, only those whose sender
 * range overlaps b's allocation unless b is NULL; they are put before list, returned. A
 * mapping a pull still reads is not stale: its sender keeps that buffer until the pull's FIN,
 * and closing it would let the pull read an unmapped range. */
static opened_t *take_mappings(cuda_p2p_t *p, int peer, const ipc_blob_t *b, opened_t *list) {
  for (opened_t **link = &p->ipc->opened; *link;) {
    opened_t *o = *link;
    int overlaps =
        !b || (o->sender_base < b->base + b->bytes && b->base < o->sender_base + o->sender_bytes);
    if (o->peer != peer || o->reading || !overlaps) {
      link = &o->next;
      continue;
    }
    *link = o->next;
    o->next = list;
    list = o;
  }
  return list;
}

/* Retire peer's mappings of allocations that overlap b's in the peer's memory: the peer freed
 * them (a live allocation never overlaps a new one), so they are stale. A thread closes them
 * (close_retired); a pull waits for it only where the driver refuses the new handle meanwhile. */
static gmpi_status_t retire_overlapped(cuda_p2p_t *p, int peer, const ipc_blob_t *b) {
  opened_t *stale = take_mappings(p, peer, b, p->ipc->retired);
  if (stale != p->ipc->retired)
    GMPI_TRACE("rank %d allocated over device memory mapped here: its stale mapping is retired",
               peer);
  p->ipc->retired = stale;
  return close_retired(p);
}

/* The driver refused a handle of peer's as already mapped, and no unmap runs: hand every
 * mapping of peer's that no pull reads (which one is stale is not known) to a thread; *out:
 * what the pull waits for, NULL when they were closed here. */
static gmpi_status_t unmap_unknown(cuda_p2p_t *p, int peer, unmap_t **out) {
  opened_t *stale = take_mappings(p, peer, NULL, NULL);
  if (!stale)
    return gmpi_error(GMPI_ERR_BACKEND,
                      "cudaIpcOpenMemHandle: a device buffer of rank %d is already mapped, and "
                      "every mapping of that rank's memory is being read",
                      peer);
  unmap_t *u;
  GMPI_CHECK(unmap_start(p, stale, 1, &u));
  *out = NULL;
  return u ? unmap_wait(p, peer, u, out) : GMPI_SUCCESS;
}

/* The peer's allocation, opened once and kept until the comm closes or the peer allocates
 * over it (retire_overlapped). *unmap non-NULL: it cannot open before that unmap is done. */
static gmpi_status_t open_peer_buffer(cuda_p2p_t *p, int peer, const ipc_blob_t *b, opened_t **out,
                                      unmap_t **unmap) {
  *unmap = NULL;
  if (!p->ipc && !(p->ipc = calloc(1, sizeof(*p->ipc))))
    return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for CUDA IPC state");
  for (opened_t *o = p->ipc->opened; o; o = o->next) {
    if (o->peer == peer && !memcmp(&o->handle, &b->handle, sizeof(b->handle))) {
      *out = o;
      return GMPI_SUCCESS;
    }
  }
  /* An unmap of mappings that may be live may be closing this very handle: an open now could
   * race that close. Wait. */
  unmap_t *busy = p->ipc->pending;
  if (busy && busy->live && !atomic_load(&busy->done)) return unmap_wait(p, peer, busy, unmap);
  GMPI_CHECK(retire_overlapped(p, peer, b));
  opened_t *o = calloc(1, sizeof(*o));
  if (!o) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for CUDA IPC state");
  cudaError_t e =
      cudaIpcOpenMemHandle((void **)&o->base, b->handle, cudaIpcMemLazyEnablePeerAccess);
  if (e == cudaErrorAlreadyMapped) {
    /* Some drivers (the H200's) refuse the new allocation while a stale mapping is open. */
    cudaGetLastError();
    free(o);
    busy = p->ipc->pending;
    if (busy && !atomic_load(&busy->done)) return unmap_wait(p, peer, busy, unmap);
    if (p->ipc->retired) { /* retired while the last unmap ran: their close may free the way */
      GMPI_CHECK(close_retired(p));
      busy = p->ipc->pending;
      if (busy && !atomic_load(&busy->done)) return unmap_wait(p, peer, busy, unmap);
      return open_peer_buffer(p, peer, b, out, unmap); /* closed here: open again */
    }
    GMPI_CHECK(unmap_unknown(p, peer, unmap));
    if (*unmap) return GMPI_SUCCESS;
    return open_peer_buffer(p, peer, b, out, unmap); /* closed here: open again */
  }
  if (e != cudaSuccess) {
    free(o);
    return gmpi_cuda_error(e, "cudaIpcOpenMemHandle (a device buffer of a rank on this host)");
  }
  o->peer = peer;
  o->handle = b->handle;
  o->sender_base = b->base;
  o->sender_bytes = b->bytes;
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
  if (b.offset > b.bytes || bytes > b.bytes - b.offset)
    return gmpi_error(GMPI_ERR_INTERNAL,
                      "rank %d described %zu bytes at offset %llu of a %llu-byte allocation", peer,
                      bytes, (unsigned long long)b.offset, (unsigned long long)b.bytes);
  opened_t *from = NULL;
  unmap_t *unmap = NULL;
  GMPI_CHECK(open_peer_buffer(p, peer, &b, &from, &unmap));
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
  GMPI_CHECK(open_peer_buffer(x->p, x->peer, &x->b, &x->from, &x->unmap));
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
  close_all(p->ipc->retired, 1);
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
