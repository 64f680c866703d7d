/* SPDX-License-Identifier: BSD-3-Clause */
/* The cuda backend's data mover (core/mover.h), on which core builds device point to point
 * (its envelope engine, core/envelope.h): eager data through host memory, rendezvous data by
 * CUDA IPC within a host and by NCCL links between hosts. The engine decides the order of
 * everything; this file only moves bytes and never calls the engine. */
#include <stdlib.h>
#include <string.h>

#include "../../core/comm.h"
#include "../../core/error.h"
#include "../../core/log.h"
#include "../../core/mover.h"
#include "../../core/oob.h"
#include "../../core/request.h"
#include "cuda_check.h"
#include "cuda_p2p.h"

int cuda_p2p_is_host(cuda_p2p_t *p, const void *ptr) {
  gmpi_mem_kind_t kind = GMPI_MEM_HOST;
  return cuda_classify(p->comm, ptr, "buf", &kind) == GMPI_SUCCESS && kind != GMPI_MEM_DEVICE;
}

/* Copies on the p2p stream (after the user's stream in stream-ordered mode), waited here. Host
 * to host (a comm matching across memory kinds moves host messages here too) is a memcpy. */
static gmpi_status_t copy_now(cuda_p2p_t *p, void *dst, const void *src, size_t bytes,
                              const char *what) {
  if (cuda_p2p_is_host(p, dst) && cuda_p2p_is_host(p, src)) {
    memcpy(dst, src, bytes);
    return GMPI_SUCCESS;
  }
  cudaStream_t s = p->cc->user_stream ? p->cc->user_stream : p->stream;
  GMPI_CHECK(cuda_after_default_stream(p->cc, s));
  GMPI_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
  return cuda_wait_stream(p->comm, s, what);
}

static gmpi_status_t dev_to_host(void *ctx, void *host, const void *buf, size_t bytes) {
  return copy_now(ctx, host, buf, bytes, "an eager message's copy to host memory");
}
static gmpi_status_t host_to_dev(void *ctx, void *buf, const void *host, size_t bytes) {
  return copy_now(ctx, buf, host, bytes, "an eager message's copy to the receive buffer");
}
static gmpi_status_t dev_self_copy(void *ctx, void *dst, const void *src, size_t bytes) {
  return copy_now(ctx, dst, src, bytes, "a self message's copy");
}

static size_t expose(void *ctx, int peer, const void *buf, size_t bytes, void *blob) {
  cuda_p2p_t *p = ctx;
  (void)bytes;
  if (!p->can_pull[peer] || cuda_p2p_is_host(p, buf)) return 0; /* host memory: the link */
  /* The receiver reads buf as soon as it matches: in stream-ordered mode the data must be
   * there first. */
  cudaStream_t ready = p->cc->user_stream ? p->cc->user_stream : cudaStreamLegacy;
  if (cuda_wait_stream(p->comm, ready, "the program's stream before a send") != GMPI_SUCCESS)
    return 0;
  return cuda_ipc_expose(p, buf, blob);
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

static gmpi_status_t xfer_test(void *ctx, void *handle, int *done) {
  (void)ctx;
  return *(xfer_kind_t *)handle == XFER_PULL ? cuda_ipc_test(handle, done)
                                             : cuda_link_test(handle, done);
}
static void xfer_cancel(void *ctx, void *handle) {
  (void)ctx;
  if (*(xfer_kind_t *)handle == XFER_PULL)
    cuda_ipc_cancel(handle);
  else
    cuda_link_cancel(handle);
}

static gmpi_status_t progress(void *ctx) { return cuda_links_progress(ctx); }

static void destroy(void *ctx) {
  cuda_p2p_t *p = ctx;
  if (p->cc->p2p == p) p->cc->p2p = NULL; /* the comm's usage no longer counts its links */
  if (p->stream) (void)cuda_stream_drained(p->stream, p->comm->cfg.timeout_s); /* local copies */
  cuda_ipc_close(p);
  cuda_links_close(p);
  if (p->stream) cudaStreamDestroy(p->stream);
  free(p->can_pull);
  free(p);
}

static const gmpi_mover_t cuda_mover = {
    .name = "cuda",
    .to_host = dev_to_host,
    .from_host = host_to_dev,
    .self_copy = dev_self_copy,
    .expose = expose,
    .pull = pull,
    .link_open = link_open,
    .link_join = link_join,
    .link_send = link_send,
    .link_recv = link_recv,
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
