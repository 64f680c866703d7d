/* SPDX-License-Identifier: BSD-3-Clause */
/* The out-of-band channel between the ranks of a comm: small collective exchanges for
 * bootstrap, cross-rank checks and plan compilation, bounded by GMPI_TIMEOUT; and control
 * channels, nonblocking point to point for engines. Core declares what it needs here, as one
 * struct of function pointers, and calls only through the comm's copy (comm->oob.ops): it never
 * names an implementation. The implementation over MPI (src/mpi/oob.c, src/mpi/channel.c)
 * fills the struct in and installs it on each comm it creates (gmpi_init, split, dup), as UCC's
 * core is handed its out-of-band allgather by the library that bootstraps it. */
#ifndef GMPI_CORE_OOB_H
#define GMPI_CORE_OOB_H

#include <stddef.h>

#include "gmpi.h"

typedef struct gmpi_oob_state gmpi_oob_state_t; /* the implementation's, per comm */
/* A started out-of-band exchange (iallgather). */
typedef struct gmpi_oob_op gmpi_oob_op_t;
/* A control channel: a private point-to-point byte channel among the ranks of a comm, for an
 * engine's own messages (the envelope engine's envelopes, core/envelope.c), separate from the
 * out-of-band exchanges and from all user traffic, so core can run a protocol without knowing
 * MPI. Messages between two ranks arrive in the order they were sent, and receives posted on
 * one channel are filled in the order they were posted (MPI's rules). Nothing on it waits:
 * every call returns at once, and handles are tested. Calls on one channel and its handles
 * are never made at once by two threads (its engine holds its own lock around them). */
typedef struct gmpi_chan gmpi_chan_t;
typedef struct gmpi_chan_op gmpi_chan_op_t; /* a send or receive in flight on a channel */
/* Tags a channel's data messages may take (chan_send_data). */
#define GMPI_CHAN_DATA_TAGS 30000

/* Every exchange taking comm runs on comm's channel (comm->oob.state), among its ranks, and
 * waits at most comm's GMPI_TIMEOUT: then GMPI_ERR_TIMEOUT, comm is failed, and any staging
 * MPI may still write is left allocated, never the caller's buffers. Exchanges of a comm,
 * blocking or not, match across ranks in the order they start. */
typedef struct gmpi_oob_ops {
  /* Every rank gives bytes of mine; all gets size * bytes, rank r's at r * bytes. Blocking
   * (bootstrap, votes, GMPI_CHECK's signatures). */
  gmpi_status_t (*allgather)(gmpi_comm_t comm, const void *mine, void *all, size_t bytes);
  /* root's bytes of buf into every rank's buf. Blocking (the NCCL unique id). */
  gmpi_status_t (*bcast)(gmpi_comm_t comm, void *buf, size_t bytes, int root);
  /* Variable-size allgather: each rank gives bytes, gets everyone's sizes and data in one
   * malloc'd block (*all, free it) with *offsets[size + 1] (free it). Blocking (plan checks). */
  gmpi_status_t (*allgatherv)(gmpi_comm_t comm, const void *mine, size_t bytes, void **all,
                              size_t **offsets);
  /* The allgather without waiting (a nonblocking collective's check): test says when it is
   * done. mine and all must stay allocated until then, or for ever if it is abandoned. */
  gmpi_status_t (*iallgather)(gmpi_comm_t comm, const void *mine, void *all, size_t bytes,
                              gmpi_oob_op_t **op);
  /* Has *op finished? *done = 1 then, *op released and set to NULL. Never blocks. */
  gmpi_status_t (*test)(gmpi_oob_op_t **op, int *done);
  /* Give up an op that will not be tested: MPI cannot stop a started collective, so it is
   * left to run, holding its buffers. */
  void (*abandon)(gmpi_oob_op_t *op);
  /* Collective over comm (every rank opens its channels in the same order): a control channel
   * whose traffic no other channel can receive. Bounded by comm's GMPI_TIMEOUT. */
  gmpi_status_t (*chan_open)(gmpi_comm_t comm, gmpi_chan_t **out);
  /* Release the channel (NULL: nothing). failed: comm has failed, so peers may never close
   * their side and closing would wait for them; the channel is then left to process exit.
   * Every handle must be completed or cancelled first. */
  void (*chan_close)(gmpi_chan_t *chan, int failed);
  /* Start sending bytes of buf to rank dest, without waiting for the peer. buf must stay
   * untouched until the handle tests done (or, after chan_cancel, for ever). */
  gmpi_status_t (*chan_send)(gmpi_chan_t *chan, int dest, const void *buf, size_t bytes,
                             gmpi_chan_op_t **op);
  /* Post a receive of one message of at most max_bytes from any rank into buf: engines keep
   * receives posted so that peers' messages land whatever this rank is doing. */
  gmpi_status_t (*chan_recv)(gmpi_chan_t *chan, void *buf, size_t max_bytes, gmpi_chan_op_t **op);
  /* Data beside the envelopes: bytes of buf to rank dest under tag (0 .. GMPI_CHAN_DATA_TAGS -
   * 1), received only by chan_recv_data for that source and tag, never by chan_recv; between
   * a pair and a tag messages pair up in the order they were posted (MPI's rule). Either end
   * may be any size (one message beyond INT_MAX). The buffers stay untouched until the handle
   * tests done. */
  gmpi_status_t (*chan_send_data)(gmpi_chan_t *chan, int dest, int tag, const void *buf,
                                  size_t bytes, gmpi_chan_op_t **op);
  gmpi_status_t (*chan_recv_data)(gmpi_chan_t *chan, int src, int tag, void *buf, size_t bytes,
                                  gmpi_chan_op_t **op);
  /* Has *op finished? When it has, *done = 1, the handle is released and *op set to NULL; for a
   * receive *source and *bytes say who sent how much (either may be NULL when not wanted).
   * Engines poll from their progress function, so this never blocks. */
  gmpi_status_t (*chan_test)(gmpi_chan_op_t **op, int *done, int *source, size_t *bytes);
  /* Give up a handle that will not be tested again (engine shutdown): a receive is cancelled,
   * or, when its message was under way already, given a short while to land; a send cannot be
   * recalled and is left to complete on its own. Releases the handle. Returns 1 when the
   * buffer is free to reuse, 0 when the channel may still touch it (a send, a receive that
   * neither cancelled nor landed in time): then it must never be freed. Never blocks longer
   * than that short while, whatever the peer does. */
  int (*chan_cancel)(gmpi_chan_op_t *op);
  /* End the whole job now with exit code code (the watchdog, from its own thread): the
   * launcher is told to stop every rank where that is safe from this thread, else the process
   * exits and the launcher ends the job. Never returns. */
  void (*end_job)(int code) __attribute__((noreturn));
  /* Nonzero when threads of this process may call gmpi at the same time on different comms
   * (MPI granted MPI_THREAD_MULTIPLE): engines then keep apart what must not be touched by two
   * threads at once, at some cost (the cuda backend's communicators share no NCCL resources). */
  int (*concurrent_threads)(void);
} gmpi_oob_ops_t;

/* A comm's out-of-band channel: the functions, and their state for this comm. */
typedef struct gmpi_oob {
  const gmpi_oob_ops_t *ops;
  gmpi_oob_state_t *state;
} gmpi_oob_t;

#endif
