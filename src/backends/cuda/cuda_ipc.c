/* SPDX-License-Identifier: BSD-3-Clause */
/* CUDA IPC between ranks of one host: the sender describes its buffer (an IPC handle of the
 * allocation that holds it, and the offset); the receiver opens the handle once per allocation
 * and copies with the copy engine. A copy waits for no kernel of the peer's, so it cannot join a
 * wait cycle, and it runs at the copy engine's speed even when ranks share one GPU (measured:
 * docs/design.md, "What NCCL point to point does"). The mapping costs no device memory. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/error.h"
#include "../../core/log.h"
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
};

typedef struct {
  xfer_kind_t kind; /* XFER_PULL */
  cudaEvent_t done;
  opened_t *from; /* the mapping it reads */
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

/* Close peer's mappings that no pull reads: one of them is stale. A mapping a pull still reads
 * is not -- its sender keeps that buffer until the pull's FIN -- and closing it would let the
 * pull (a copy into host memory not yet issued, or one on p->stream) read an unmapped or
 * re-mapped range. Nothing here waits for a stream: this runs inside the engine's progress. */
static void close_peer(cuda_p2p_t *p, int peer) {
  for (opened_t **link = &p->ipc->opened; *link;) {
    opened_t *o = *link;
    if (o->peer != peer || o->reading) {
      link = &o->next;
      continue;
    }
    *link = o->next;
    cudaIpcCloseMemHandle(o->base);
    free(o);
  }
  GMPI_TRACE("closed the CUDA IPC mappings of rank %d that no pull reads", peer);
}

/* The peer's allocation, opened once and kept until the comm closes (or until the peer reuses
 * its memory for a new allocation: close_peer). */
static gmpi_status_t open_peer_buffer(cuda_p2p_t *p, int peer, const cudaIpcMemHandle_t *h,
                                      opened_t **out) {
  if (!p->ipc && !(p->ipc = calloc(1, sizeof(*p->ipc))))
    return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for CUDA IPC state");
  for (opened_t *o = p->ipc->opened; o; o = o->next) {
    if (o->peer == peer && !memcmp(&o->handle, h, sizeof(*h))) {
      *out = o;
      return GMPI_SUCCESS;
    }
  }
  opened_t *o = calloc(1, sizeof(*o));
  if (!o) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for CUDA IPC state");
  cudaError_t e = cudaIpcOpenMemHandle((void **)&o->base, *h, cudaIpcMemLazyEnablePeerAccess);
  if (e == cudaErrorAlreadyMapped) {
    /* The peer freed an allocation we still map and made a new one over its memory: the old
     * mappings of that peer are stale. Drop them (once no pull reads them) and open again. */
    cudaGetLastError();
    close_peer(p, peer);
    e = cudaIpcOpenMemHandle((void **)&o->base, *h, cudaIpcMemLazyEnablePeerAccess);
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

gmpi_status_t cuda_ipc_pull(cuda_p2p_t *p, int peer, const void *blob, size_t len, void *dst,
                            size_t bytes, void **handle) {
  ipc_blob_t b;
  if (len != sizeof(b))
    return gmpi_error(GMPI_ERR_INTERNAL, "buffer description from rank %d has %zu bytes", peer,
                      len);
  memcpy(&b, blob, sizeof(b));
  opened_t *from = NULL;
  GMPI_CHECK(open_peer_buffer(p, peer, &b.handle, &from));
  char *base = from->base;
  /* The program's stream passed the receive's post (its mark, core/mover.h) and the sender's
   * (its exposure): the copy waits for nothing of the program's. Into host memory (matching
   * across kinds) it goes on host_copies, where CUDA holding the host waits for copies alone. */
  if (cuda_p2p_is_host(p, dst))
    return cuda_copy_start(p, dst, base + b.offset, bytes, 1, 0, &from->reading, handle);
  pull_t *x = calloc(1, sizeof(*x));
  if (!x) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a transfer");
  x->kind = XFER_PULL;
  x->from = from;
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_CUDA_CHECK_GOTO(cudaEventCreateWithFlags(&x->done, cudaEventDisableTiming), st, free_x);
  GMPI_CUDA_CHECK_GOTO(cudaMemcpyAsync(dst, base + b.offset, bytes, cudaMemcpyDefault, p->stream),
                       st, destroy_event);
  GMPI_CUDA_CHECK_GOTO(cudaEventRecord(x->done, p->stream), st, destroy_event);
  from->reading++;
  *handle = x;
  return GMPI_SUCCESS;
destroy_event:
  cudaEventDestroy(x->done);
free_x:
  free(x);
  return st;
}

gmpi_status_t cuda_ipc_test(void *handle, int *done) {
  pull_t *x = handle;
  cudaError_t e = cudaEventQuery(x->done);
  *done = e == cudaSuccess;
  if (e != cudaSuccess && e != cudaErrorNotReady) return gmpi_cuda_error(e, "cudaEventQuery");
  if (!*done) return GMPI_SUCCESS;
  x->from->reading--;
  cuda_ipc_cancel(x);
  return GMPI_SUCCESS;
}

/* The copy may still run: the event is released when it is done (CUDA defers it), and the
 * mapping keeps the pull's count, so close_peer never closes it under the copy. */
void cuda_ipc_cancel(void *handle) {
  pull_t *x = handle;
  cudaEventDestroy(x->done);
  free(x);
}

void cuda_ipc_close(cuda_p2p_t *p) {
  if (!p->ipc) return;
  for (opened_t *o = p->ipc->opened, *next; o; o = next) {
    next = o->next;
    cudaIpcCloseMemHandle(o->base);
    free(o);
  }
  free(p->ipc);
  p->ipc = NULL;
}
