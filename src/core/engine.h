/* SPDX-License-Identifier: BSD-3-Clause */
/* Engines: what moves the bytes of one memory kind. Every comm has a host engine (MPI, in
 * src/host) and, when its backend drives a GPU, a device engine. An engine has two halves,
 * each one struct of function pointers: collectives and plans (MPI's, or NCCL's from the
 * backend), and point to point (MPI's own matching, or core's envelope engine over a data
 * mover, core/mover.h). Core classifies an operation's buffers once (src/core/route.c) and
 * hands the operation to the one engine for that memory; an engine never hands work to
 * another, and no half calls back into the code that called it. */
#ifndef GMPI_CORE_ENGINE_H
#define GMPI_CORE_ENGINE_H

#include "args.h"
#include "gmpi.h"

struct gmpi_plan;

/* Where a buffer lives, as far as routing cares. NONE: no buffer is used (count 0, barrier). */
typedef enum { GMPI_MEM_NONE = 0, GMPI_MEM_HOST, GMPI_MEM_DEVICE } gmpi_mem_kind_t;

/* The collective half of an engine: collectives and plans on its memory, run on the state
 * its maker gave it (the host engine's MPI communicators, the device engine's NCCL
 * communicator). */
typedef struct gmpi_coll_engine_ops {
  const char *name; /* "mpi" or "nccl": logs and plan dumps */
  /* Run one validated collective whose buffers are this engine's memory, to completion (or
   * enqueued, in stream-ordered mode), honouring GMPI_TIMEOUT. */
  gmpi_status_t (*run)(gmpi_comm_t comm, void *state, const gmpi_coll_args_t *args);
  /* Start a validated collective whose buffers are this engine's memory without waiting for it
   * (the nonblocking collectives): whatever tracks it goes in req->be. Collectives start in
   * call order on the comm, interleaved with blocking ones, as every rank calls them. */
  gmpi_status_t (*start)(gmpi_comm_t comm, void *state, const gmpi_coll_args_t *args,
                         gmpi_request_t req);
  /* Progress a started collective; on done its results are in place and req->be released.
   * Never blocks. */
  gmpi_status_t (*test)(void *state, gmpi_request_t req, int *done);
  /* Give up on a started collective (timeout, finalize): what it holds may still be in use by
   * the transfer, so it is left, not freed, when the transfer cannot be stopped. */
  void (*abandon)(void *state, gmpi_request_t req);
  /* Plans whose buffers are all this engine's memory: lower once (*lowered is the engine's),
   * replay, free. */
  gmpi_status_t (*plan_lower)(gmpi_comm_t comm, void *state, struct gmpi_plan *plan,
                              void **lowered);
  gmpi_status_t (*plan_replay)(gmpi_comm_t comm, void *state, struct gmpi_plan *plan,
                               void *lowered);
  void (*plan_free)(void *lowered);
  /* Its started collectives complete without gmpi's progress (the device runs them): a wait
   * tests them several times between progress passes (core/wait.h). */
  int completes_alone;
} gmpi_coll_engine_ops_t;

/* The point-to-point half of an engine: MPI's matching and messages on its memory. Native MPI
 * on host memory (src/host), or core's envelope engine over a data mover (core/envelope.h:
 * the device's, or the MPI model of NCCL's links under GMPI_P2P=envelope). */
typedef struct gmpi_p2p_engine_ops {
  const char *name; /* "mpi" or "envelope": logs */
  /* Start a validated point-to-point request on this engine's memory. */
  gmpi_status_t (*post)(void *state, gmpi_request_t req);
  /* Progress and tell whether req is done; on done req->status and req->result are final and
   * the engine has released its part of req. Never blocks. */
  gmpi_status_t (*test)(void *state, gmpi_request_t req, int *done);
  /* Give up on a request that will not be waited (timeout, finalize): release what it holds. */
  void (*abandon)(void *state, gmpi_request_t req);
  /* Take back a receive no message has matched yet: *cancelled 1 and the engine has let go of
   * req (nothing was written). *cancelled 0 when a message matched it first (it completes as
   * received). Never blocks beyond GMPI_TIMEOUT. NULL: the engine takes nothing back. */
  gmpi_status_t (*cancel)(void *state, gmpi_request_t req, int *cancelled);
  /* Is a message from source with tag (wildcards allowed) waiting to be received on this
   * engine? *flag 1 and *status (count in the sender's elements) for the one the next matching
   * receive would get; nothing is received. Never blocks. */
  gmpi_status_t (*probe)(void *state, gmpi_comm_t comm, int source, int tag, int *flag,
                         gmpi_msg_status_t *status);
  /* gmpi_sendrecv's validated send and receive, both this engine's memory, their peers two
   * other ranks (no wildcard source), run together to completion with no request: on success
   * and on GMPI_ERR_TRUNCATE *status is the receive's (request.h); GMPI_ERR_TIMEOUT (no message
   * written) when GMPI_TIMEOUT passed, with whatever did not end let go, as abandon does -- or,
   * where the engine runs it as MPI's blocking call under GMPI_TIMEOUT_ACTION=end, the watchdog
   * ends the job instead (host engine, host_exchange.c). One half may be NULL: a blocking
   * gmpi_send/gmpi_ssend (status untouched) or gmpi_recv alone, with the same promises as its
   * request would keep (a standard send of eager size completes with no receive posted, unless the
   * comm's sends complete as MPI's: gmpi_comm_set_sends). NULL: never (every sendrecv is two
   * requests). */
  gmpi_status_t (*exchange)(void *state, gmpi_comm_t comm, const gmpi_p2p_args_t *send,
                            const gmpi_p2p_args_t *recv, gmpi_msg_status_t *status);
  /* 1, and the handle of the communicator written at *wire (an MPI_Comm: core never looks into
   * it), when this engine's messages between two different ranks are MPI's own there -- posted
   * when called, bytes as they lie, the tag as given (gmpi_comm_host_wire) -- on comm as it is
   * set now; else 0. NULL: never. */
  int (*wire)(void *state, gmpi_comm_t comm, void *wire);
} gmpi_p2p_engine_ops_t;

/* The engine for one memory kind on one comm: its two halves, each on its own state. coll and
 * p2p are NULL when the comm has no engine for that memory kind (device memory on cpu). */
typedef struct {
  const gmpi_coll_engine_ops_t *coll;
  void *coll_state;
  const gmpi_p2p_engine_ops_t *p2p;
  void *p2p_state;
} gmpi_engine_t;

#endif
