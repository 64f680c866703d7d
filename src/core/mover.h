/* SPDX-License-Identifier: BSD-3-Clause */
/* The data mover: what a device (or its model) gives core to build point to point on. It moves
 * bytes and knows nothing of tags, sources or order; core's envelope engine (core/envelope.h)
 * matches messages as MPI does and decides when each transfer starts. A mover never calls
 * back into the engine: every call returns at once unless it says, and the engine tests what
 * it started. */
#ifndef GMPI_CORE_MOVER_H
#define GMPI_CORE_MOVER_H

#include <stddef.h>
#include <stdint.h>

#include "gmpi.h"

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

#endif
