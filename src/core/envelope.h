/* SPDX-License-Identifier: BSD-3-Clause */
/* The envelope engine: MPI point-to-point semantics (source, tag, wildcards, non-overtaking,
 * truncation) over data movers that know nothing of tags: NCCL, CUDA IPC copies, MPI.
 *
 * Every message starts with an envelope on a control channel (core/oob.h). What follows depends
 * on its size:
 *  - eager (at most GMPI_ENV_EAGER_BYTES): the data rides inside the envelope. The send is
 *    complete once posted (the engine holds a copy), like MPI's eager protocol, so a blocking
 *    send of an eager message completes with no receive posted.
 *  - rendezvous (larger): nothing moves until the receiver has matched the message to a
 *    receive. Then either
 *      * pull: the receiver copies straight from the sender's buffer (CUDA IPC between ranks
 *        of one host) and tells the sender "fin"; or
 *      * link: both ranks issue one transfer on their two-rank ordered channel ("link": an
 *        NCCL communicator, or its MPI model on machines without GPUs) at a position in the
 *        link's order that the lower rank of the pair (the link's "leader") assigns. Both ranks
 *        issue the link's transfers in that one order, so no transfer on a link ever waits for
 *        one issued after it, and links are independent of each other: no wait cycle can form.
 * Self messages never touch a mover. */
#ifndef GMPI_CORE_ENVELOPE_H
#define GMPI_CORE_ENVELOPE_H

#include <stddef.h>
#include <stdint.h>

#include "gmpi.h"

/* Largest message whose data rides in its envelope (documented in docs/api.md). */
#define GMPI_ENV_EAGER_BYTES ((size_t)16 * 1024)
/* Largest mover introduction or buffer description an envelope carries. */
#define GMPI_MOVER_BLOB_BYTES 128

/* How data moves. Handles are the mover's own; every call returns at once unless it says. */
typedef struct gmpi_mover {
  const char *name; /* "mpi-model", "cuda": logs */
  /* Copies between user buffers and host memory (eager data, staging); complete on return. */
  gmpi_status_t (*to_host)(void *ctx, void *host, const void *buf, size_t bytes);
  gmpi_status_t (*from_host)(void *ctx, void *buf, const void *host, size_t bytes);
  /* A self message, from the sender's buffer to the receiver's; complete on return. */
  gmpi_status_t (*self_copy)(void *ctx, void *dst, const void *src, size_t bytes);
  /* Pull (NULL when the mover has none). expose: describe buf so that peer can read it; 0 when
   * peer cannot (another host, memory that cannot be shared): the engine then uses the link.
   * pull: start copying bytes described by blob into dst. */
  size_t (*expose)(void *ctx, int peer, const void *buf, size_t bytes, void *blob);
  gmpi_status_t (*pull)(void *ctx, int peer, const void *blob, size_t len, void *dst, size_t bytes,
                        void **handle);
  /* Links. The leader opens the link to peer and writes the introduction the follower needs
   * (at most GMPI_MOVER_BLOB_BYTES; returns its length, 0 with an error described on failure);
   * the follower joins with it. Transfers are issued in the link's order, position k. */
  gmpi_status_t (*link_open)(void *ctx, int peer, void *blob, size_t *len);
  gmpi_status_t (*link_join)(void *ctx, int peer, const void *blob, size_t len);
  gmpi_status_t (*link_send)(void *ctx, int peer, uint64_t k, const void *buf, size_t bytes,
                             void **handle);
  gmpi_status_t (*link_recv)(void *ctx, int peer, uint64_t k, void *buf, size_t bytes,
                             void **handle);
  /* Has a pull or link transfer finished? Releases the handle when it has. */
  gmpi_status_t (*test)(void *ctx, void *handle, int *done);
  /* Forget a transfer that will not be waited (timeout, finalize). */
  void (*cancel)(void *ctx, void *handle);
  /* Push work waiting inside the mover (links being connected). NULL when none. */
  gmpi_status_t (*progress)(void *ctx);
  /* Release the mover's context when the engine is destroyed (links closed). */
  void (*destroy)(void *ctx);
} gmpi_mover_t;

struct gmpi_envelope_engine;

/* Collective over comm: opens a control channel for envelopes (core/oob.h), registers the
 * engine for progress (core/progress.h). The engine owns mover_ctx from here on (also on
 * failure). */
gmpi_status_t gmpi_env_create(gmpi_comm_t comm, const gmpi_mover_t *mover, void *mover_ctx,
                              struct gmpi_envelope_engine **out);
void gmpi_env_destroy(struct gmpi_envelope_engine *env);

gmpi_status_t gmpi_env_post(struct gmpi_envelope_engine *env, gmpi_request_t req);
/* Progress everything, then report whether req is done (its status and result final). */
gmpi_status_t gmpi_env_test(struct gmpi_envelope_engine *env, gmpi_request_t req, int *done);
void gmpi_env_abandon(struct gmpi_envelope_engine *env, gmpi_request_t req);
/* Take back a receive still posted (no message matched it): *cancelled 1, req->be released. */
gmpi_status_t gmpi_env_cancel(struct gmpi_envelope_engine *env, gmpi_request_t req, int *cancelled);
/* Progress, then describe the first unexpected message a receive for (source, tag) would take
 * (*flag 0 when none has arrived). Nothing is received. */
gmpi_status_t gmpi_env_probe(struct gmpi_envelope_engine *env, int source, int tag, int *flag,
                             gmpi_msg_status_t *status);
/* Progress without a request in mind. */
gmpi_status_t gmpi_env_progress(struct gmpi_envelope_engine *env);

#endif
