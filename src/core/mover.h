/* SPDX-License-Identifier: BSD-3-Clause */
/* The data mover: what a device (or its model) gives core to build point to point on. It moves
 * bytes and knows nothing of tags, sources or order; core's envelope engine (core/envelope.h)
 * matches messages as MPI does and decides when each transfer starts. A mover never calls
 * back into the engine, nor into anything that waits: every call starts what it is asked and
 * returns, and the engine tests what it started (docs/design.md, "Where waits drive
 * progress"). */
#ifndef GMPI_CORE_MOVER_H
#define GMPI_CORE_MOVER_H

#include <stddef.h>
#include <stdint.h>

#include "gmpi.h"

/* Largest mover introduction or buffer description an envelope carries. */
#define GMPI_MOVER_BLOB_BYTES 128

/* How data moves. Handles are the mover's own. No call waits for the program's device work or
 * for a peer, nor drives progress: a post into the engine only queues, so the engine is never
 * re-entered. A call that starts a copy or a transfer returns a handle the engine tests in its
 * progress; *handle NULL means it finished before the call returned.
 *
 * Where the program's stream was at a post is taken at the post (to_host, expose, mark), never
 * later: a mark taken when the message is matched would also wait for work the program queued
 * after the post -- in stream-ordered mode a collective that a peer joins only once this very
 * transfer let its blocking send return. So from_host, self_copy, pull, link_send and link_recv
 * are called only once the program's stream has passed the posts of both ends, and order
 * nothing after the program themselves. */
typedef struct gmpi_mover {
  const char *name; /* "mpi-model", "cuda": logs */
  /* Start copying between a user buffer and the engine's host memory (eager data), or from a
   * self message's sender buffer to its receiver's. The source is read and the destination
   * written until the handle tests done. to_host is called at the send's post and reads buf
   * once the program's stream has passed it. */
  gmpi_status_t (*to_host)(void *ctx, void *host, const void *buf, size_t bytes, void **handle);
  gmpi_status_t (*from_host)(void *ctx, void *buf, const void *host, size_t bytes, void **handle);
  gmpi_status_t (*self_copy)(void *ctx, void *dst, const void *src, size_t bytes, void **handle);
  /* Record where the program's stream is now, at the post of a receive into buf or of a send
   * whose buf is read later: *handle tests done once the stream has passed it; NULL when it
   * has, or when nothing on a device can be using buf (host memory, which the program's own
   * MPI call orders), or the mover orders nothing after the program. NULL: no ordering. */
  gmpi_status_t (*mark)(void *ctx, const void *buf, void **handle);
  /* Describe buf so that peer can read it, into blob; returns its length, 0 when peer cannot
   * (another host, memory that cannot be shared): the engine then uses the link. *ready
   * (whatever the length): NULL when buf's data may be read now, else a handle that tests done
   * once it may (the program's stream has reached the send); until then the engine tells the
   * peer nothing of the message, nor of later ones to it (a NULL *ready with length 0: the
   * engine takes a mark). NULL: every rendezvous takes the link.
   * pull: start copying bytes described by blob into dst (NULL when expose never describes). */
  size_t (*expose)(void *ctx, int peer, const void *buf, size_t bytes, void *blob, void **ready);
  gmpi_status_t (*pull)(void *ctx, int peer, const void *blob, size_t len, void *dst, size_t bytes,
                        void **handle);
  /* Links. The leader opens the link to peer and writes the introduction the follower needs
   * (at most GMPI_MOVER_BLOB_BYTES; returns its length, 0 with an error described on failure);
   * the follower joins with it. Transfers are issued in the link's order, position k. */
  gmpi_status_t (*link_open)(void *ctx, int peer, void *blob, size_t *len);
  gmpi_status_t (*link_join)(void *ctx, int peer, const void *blob, size_t len);
  /* GMPI_LINKS=eager (envelope.c, open_links_early): would rendezvous messages to peer take a
   * link? Then the engine opens it when it starts instead of at the first such message.
   * NULL: links only as messages need them. */
  int (*link_wanted)(void *ctx, int peer);
  /* Is the link to peer, opened or joined, ready for transfers? Drives its set-up; never
   * blocks; an error when the set-up failed. NULL: ready as soon as it is opened. */
  gmpi_status_t (*link_ready)(void *ctx, int peer, int *ready);
  gmpi_status_t (*link_send)(void *ctx, int peer, uint64_t k, const void *buf, size_t bytes,
                             void **handle);
  gmpi_status_t (*link_recv)(void *ctx, int peer, uint64_t k, void *buf, size_t bytes,
                             void **handle);
  /* Is buf host memory the engine's control channel may read or write itself (MPI, which is not
   * CUDA-aware)? A rendezvous message whose two ends both are then moves over the channel, as
   * MPI would move it, not through the device and a link. NULL: never. */
  int (*host_mem)(void *ctx, const void *buf);
  /* Has a copy, an exposure or a transfer finished? Releases the handle when it has. */
  gmpi_status_t (*test)(void *ctx, void *handle, int *done);
  /* Forget a handle that will not be tested again (timeout, finalize, a failed send). From
   * its return the mover touches no memory of the engine's (its host buffers may be freed); a
   * copy or transfer already running may still touch the user's buffers, as MPI allows for a
   * request given up. */
  void (*cancel)(void *ctx, void *handle);
  /* Push work waiting inside the mover (links being connected). NULL when none. */
  gmpi_status_t (*progress)(void *ctx);
  /* Release the mover's context when the engine is destroyed (links closed). */
  void (*destroy)(void *ctx);
} gmpi_mover_t;

#endif
