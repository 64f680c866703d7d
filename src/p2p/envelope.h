/* The envelope engine: MPI point-to-point semantics over a data mover that only knows
 * "the next message from A to B" (NCCL has no tags and matches by order per peer).
 *
 * Each send posts a small envelope (tag, bytes, dtype, sequence) on an MPI channel and starts
 * its data on the mover at once. The receiver matches envelopes against posted receives as
 * MPI does (core/match.c: source, tag, ANY_*, non-overtaking) and issues its mover receives in
 * the sender's order. A message that must be taken off the wire before its receive exists
 * (it is small, or a later message from the same sender was matched first) lands in a
 * staging buffer and is copied when matched. Receive counts are maxima; a longer message is
 * GMPI_ERR_TRUNCATE. Self messages never touch the wire: the receiver copies from the
 * sender's buffer (or from staging, once a blocking self-send has been buffered). */
#ifndef GMPI_P2P_ENVELOPE_H
#define GMPI_P2P_ENVELOPE_H

#include <mpi.h>
#include <stddef.h>

#include "gmpi.h"

/* How bytes move between two ranks, in order. Handles are the mover's own. */
typedef struct gmpi_mover {
  const char *name; /* "mpi", "nccl": logs */
  /* Start sending bytes to peer as the next message on the (me -> peer) lane. */
  gmpi_status_t (*send)(void *ctx, int peer, const void *buf, size_t bytes, void **handle);
  /* Start receiving the next message of the (peer -> me) lane, exactly bytes long. */
  gmpi_status_t (*recv)(void *ctx, int peer, void *buf, size_t bytes, void **handle);
  /* Has the transfer finished? Releases the handle when it has. Never blocks. */
  gmpi_status_t (*test)(void *ctx, void *handle, int *done);
  /* Forget a transfer that will not be waited (timeout, finalize). */
  void (*cancel)(void *ctx, void *handle);
  /* Staging memory of the kind the user's buffers are (host for mpi, device for nccl). */
  gmpi_status_t (*alloc)(void *ctx, size_t bytes, void **ptr);
  void (*release)(void *ctx, void *ptr, size_t bytes);
  /* Copy between two such buffers (staging to user); complete when it returns. */
  gmpi_status_t (*copy)(void *ctx, void *dst, const void *src, size_t bytes);
  /* Deliver a self message from the sender's buffer; complete when it returns. */
  gmpi_status_t (*self_copy)(void *ctx, void *dst, const void *src, size_t bytes);
  /* Introductions: bytes (at most GMPI_MOVER_HELLO_BYTES) the first envelope to peer carries,
   * and what the receiver does with them. NULL when the mover needs none. */
  size_t (*hello)(void *ctx, int peer, void *blob);
  gmpi_status_t (*welcome)(void *ctx, int source, const void *blob, size_t len);
  /* Push work that waits on the mover itself (lanes being set up). NULL when none. */
  gmpi_status_t (*progress)(void *ctx);
} gmpi_mover_t;

#define GMPI_MOVER_HELLO_BYTES 128

struct gmpi_envelope_engine;

/* Collective over comm: duplicates its MPI channel for envelopes. */
gmpi_status_t gmpi_env_create(gmpi_comm_t comm, const gmpi_mover_t *mover, void *mover_ctx,
                              struct gmpi_envelope_engine **out);
/* An engine whose mover is MPI itself on data_comm (cpu, GMPI_P2P=envelope or GMPI_CHECK=1). */
gmpi_status_t gmpi_env_create_mpi(gmpi_comm_t comm, MPI_Comm data_comm,
                                  struct gmpi_envelope_engine **out);
void gmpi_env_destroy(struct gmpi_envelope_engine *env);
/* The engine frees the mover context (malloc'd) when destroyed. */
void gmpi_env_own_mover_ctx(struct gmpi_envelope_engine *env);

gmpi_status_t gmpi_env_post(struct gmpi_envelope_engine *env, gmpi_request_t req);
/* Progress everything, then report whether req is done (its status and result final). */
gmpi_status_t gmpi_env_test(struct gmpi_envelope_engine *env, gmpi_request_t req, int *done);
void gmpi_env_abandon(struct gmpi_envelope_engine *env, gmpi_request_t req);
/* Progress without a request in mind (while a collective waits). */
gmpi_status_t gmpi_env_progress(struct gmpi_envelope_engine *env);

/* Small unexpected messages are taken off the wire at once, like MPI's eager protocol. */
#define GMPI_ENV_EAGER_BYTES ((size_t)64 * 1024)

#endif
