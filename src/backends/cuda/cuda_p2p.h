/* SPDX-License-Identifier: BSD-3-Clause */
/* Device point to point on the cuda backend: the envelope engine (src/core/envelope.c) matches as
 * MPI does; this is its mover. Eager data is copied through host memory; rendezvous data moves by
 * CUDA IPC copies between ranks of one host (cuda_ipc.c) and by NCCL links between hosts
 * (cuda_links.c). Both kinds of transfer start with this header so one test serves both. */
#ifndef GMPI_CUDA_P2P_H
#define GMPI_CUDA_P2P_H

#include "cuda.h"

typedef enum { XFER_COPY = 1, XFER_PULL, XFER_LINK } xfer_kind_t;

typedef struct cuda_p2p {
  gmpi_comm_t comm;
  cuda_comm_t *cc;
  cudaStream_t stream; /* device-to-device copies and IPC pulls (ordered after stream 0) */
  /* Copies with a host end (eager data, a link's staging, a pull into host memory), each
   * issued only once its device end is ready: CUDA holds the host until such a copy lands, so
   * this stream carries nothing that waits for the program or a peer. */
  cudaStream_t host_copies;
  unsigned char *can_pull; /* per peer: shares this host, so CUDA IPC reaches its memory */
  struct cuda_ipc *ipc;    /* peer buffers opened so far */
  struct cuda_links *links;
} cuda_p2p_t;

/* Is ptr host memory (a host end of a message on a comm matching across memory kinds)? */
int cuda_p2p_is_host(cuda_p2p_t *p, const void *ptr);
/* Start copying bytes from src to dst, never waiting for the program; host_end: one of them is
 * host memory; ordered: after the program's work queued so far (else its stream passed both
 * posts already). *handle is tested and cancelled as a transfer. */
gmpi_status_t cuda_copy_start(cuda_p2p_t *p, void *dst, const void *src, size_t bytes, int host_end,
                              int ordered, void **handle);

/* ---- CUDA IPC (cuda_ipc.c) ---- */
/* Describe buf for a peer of this host; 0 when it cannot be shared (not cudaMalloc memory). */
size_t cuda_ipc_expose(cuda_p2p_t *p, const void *buf, void *blob);
gmpi_status_t cuda_ipc_pull(cuda_p2p_t *p, int peer, const void *blob, size_t len, void *dst,
                            size_t bytes, void **handle);
gmpi_status_t cuda_ipc_test(void *handle, int *done);
void cuda_ipc_cancel(void *handle);
void cuda_ipc_close(cuda_p2p_t *p);

/* ---- NCCL links (cuda_links.c) ---- */
gmpi_status_t cuda_links_create(cuda_p2p_t *p);
gmpi_status_t cuda_link_open(cuda_p2p_t *p, int peer, void *blob, size_t *len);
gmpi_status_t cuda_link_join(cuda_p2p_t *p, int peer, const void *blob, size_t len);
/* *ready: the link to peer (opened or joined) is set up; drives it; an error once it failed. */
gmpi_status_t cuda_link_ready(cuda_p2p_t *p, int peer, int *ready);
gmpi_status_t cuda_link_issue(cuda_p2p_t *p, int is_send, int peer, void *buf, size_t bytes,
                              void **handle);
gmpi_status_t cuda_link_test(void *handle, int *done);
void cuda_link_cancel(void *handle);
gmpi_status_t cuda_links_progress(cuda_p2p_t *p);
/* NCCL's device memory for the links, as measured when each was set up. */
size_t cuda_links_device_bytes(const cuda_p2p_t *p);
void cuda_links_close(cuda_p2p_t *p);

#endif
