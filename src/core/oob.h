/* SPDX-License-Identifier: BSD-3-Clause */
/* The out-of-band channel between the ranks of a comm: small collective exchanges for
 * bootstrap, cross-rank checks and plan compilation, bounded by GMPI_TIMEOUT; and control
 * channels, nonblocking point to point for engines. Implemented over MPI in src/mpi/oob.c and
 * src/mpi/channel.c; core sees only these calls. */
#ifndef GMPI_CORE_OOB_H
#define GMPI_CORE_OOB_H

#include <stddef.h>

#include "gmpi.h"

/* End the whole job now, with exit code code (the watchdog): MPI_Abort when MPI allows this
 * thread to call it (MPI_THREAD_MULTIPLE), else the process exits and the launcher ends the
 * job. Never returns. */
void gmpi_oob_end_job(int code) __attribute__((noreturn));

gmpi_status_t gmpi_oob_allgather(gmpi_comm_t comm, const void *mine, void *all, size_t bytes);
gmpi_status_t gmpi_oob_bcast(gmpi_comm_t comm, void *buf, size_t bytes, int root);
/* The allgather without waiting: exchanges of a comm, blocking or not, match in the order they
 * start. gmpi_oob_test says when it is done (then *op is released and NULL); an op that will
 * not be tested is abandoned -- MPI cannot stop it, so mine and all must then stay allocated. */
typedef struct gmpi_oob_op gmpi_oob_op_t;
gmpi_status_t gmpi_oob_iallgather(gmpi_comm_t comm, const void *mine, void *all, size_t bytes,
                                  gmpi_oob_op_t **op);
gmpi_status_t gmpi_oob_test(gmpi_oob_op_t **op, int *done);
void gmpi_oob_abandon(gmpi_oob_op_t *op);
/* Variable-size allgather: each rank gives `bytes`, gets everyone's sizes and data in one
 * malloc'd block (*all, free it), with offsets[size+1]. */
gmpi_status_t gmpi_oob_allgatherv(gmpi_comm_t comm, const void *mine, size_t bytes, void **all,
                                  size_t **offsets);

/* ---- control channel ---------------------------------------------------------------------
 * A private point-to-point byte channel among the ranks of a comm, for an engine's own
 * messages (the envelope engine's envelopes, core/envelope.c): separate from the out-of-band
 * collectives above and from all user traffic, so core can run a protocol without knowing MPI.
 * Messages between two ranks arrive in the order they were sent, and receives posted on one
 * channel are filled in the order they were posted (MPI's rules). Nothing here waits: every
 * call returns at once, and handles are tested. Implemented in src/mpi/channel.c. */
typedef struct gmpi_chan gmpi_chan_t;       /* a channel */
typedef struct gmpi_chan_op gmpi_chan_op_t; /* a send or receive in flight */

/* Collective over comm (every rank opens its channel in the same order): an engine gets
 * traffic of its own that no other channel can receive. */
gmpi_status_t gmpi_chan_open(gmpi_comm_t comm, gmpi_chan_t **out);
/* Release the channel (NULL: nothing). failed: the comm has failed, so peers may never close
 * their side and closing would wait for them; the channel is then left to process exit. Every
 * handle must be completed or cancelled first. */
void gmpi_chan_close(gmpi_chan_t *chan, int failed);
/* Start sending bytes of buf to rank dest: engines send without waiting for their peer. buf
 * must stay untouched until the handle tests done (or, after gmpi_chan_cancel, forever). */
gmpi_status_t gmpi_chan_send(gmpi_chan_t *chan, int dest, const void *buf, size_t bytes,
                             gmpi_chan_op_t **op);
/* Post a receive of one message of at most max_bytes from any rank into buf: engines keep
 * receives posted so that peers' messages land whatever this rank is doing. */
gmpi_status_t gmpi_chan_recv(gmpi_chan_t *chan, void *buf, size_t max_bytes, gmpi_chan_op_t **op);
/* Has *op finished? When it has, *done = 1, the handle is released and *op set to NULL; for a
 * receive *source and *bytes say who sent how much (either may be NULL when not wanted).
 * Engines poll from their progress function, so this never blocks. */
gmpi_status_t gmpi_chan_test(gmpi_chan_op_t **op, int *done, int *source, size_t *bytes);
/* Give up a handle that will not be tested again (engine shutdown): a receive is cancelled
 * (its buffer is free to reuse on return); a send cannot be recalled and is left to complete
 * on its own, so its buffer must never be freed. Releases the handle. */
void gmpi_chan_cancel(gmpi_chan_op_t *op);

#endif
