/* SPDX-License-Identifier: BSD-3-Clause */
/* The envelope engine: MPI point-to-point semantics (source, tag, wildcards, non-overtaking,
 * truncation) over data movers that know nothing of tags: NCCL, CUDA IPC copies, MPI.
 *
 * Every message starts with an envelope on a control channel (core/oob.h). What follows depends
 * on its size:
 *  - eager (at most GMPI_ENV_EAGER_BYTES): the data rides inside the envelope. The send is
 *    complete once the engine holds a copy (the mover's copy, tested by progress), like MPI's
 *    eager protocol, so a blocking send of an eager message completes with no receive posted.
 *  - rendezvous (larger): nothing moves until the receiver has matched the message to a
 *    receive. Then either
 *      * pull: the receiver copies straight from the sender's buffer (CUDA IPC between ranks
 *        of one host) and tells the sender "fin"; or
 *      * link: both ranks issue one transfer on their two-rank ordered channel ("link": an
 *        NCCL communicator, or its MPI model on machines without GPUs) at a position in the
 *        link's order that the lower rank of the pair (the link's "leader") assigns. Both ranks
 *        issue the link's transfers in that one order, so no transfer on a link ever waits for
 *        one issued after it, and links are independent of each other: no wait cycle can form.
 * Self messages never touch a link or a pull. Nothing posted here waits: the mover's copies
 * and exposures start, and progress tests them (core/mover.h). */
#ifndef GMPI_CORE_ENVELOPE_H
#define GMPI_CORE_ENVELOPE_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "gmpi.h"
#include "mover.h"

/* Largest message whose data rides in its envelope (documented in docs/api.md). */
#define GMPI_ENV_EAGER_BYTES ((size_t)16 * 1024)

struct gmpi_envelope_engine;

/* Collective over comm: opens a control channel for envelopes (core/oob.h), registers the
 * engine for progress (core/progress.h). The engine owns mover_ctx from here on (also on
 * failure). */
gmpi_status_t gmpi_env_create(gmpi_comm_t comm, const gmpi_mover_t *mover, void *mover_ctx,
                              struct gmpi_envelope_engine **out);
/* Local: what is still moving is cancelled (a caller that needs its peers' receives landed
 * first has every rank arrive before this). Releases the mover's context. */
void gmpi_env_destroy(struct gmpi_envelope_engine *env);

/* The envelope engine as an engine's point-to-point half (state: the engine). Core builds the
 * device engine's point to point this way from the backend's mover, and the host engine its
 * own under GMPI_P2P=envelope from the MPI model of NCCL's links. */
extern const gmpi_p2p_engine_ops_t gmpi_p2p_envelope;
/* Make engine's point-to-point half an envelope engine over mover (collective, as
 * gmpi_env_create; owns mover_ctx from here on, also on failure); close it (local, as
 * gmpi_env_destroy), leaving the half empty. */
gmpi_status_t gmpi_env_engine_open(gmpi_comm_t comm, const gmpi_mover_t *mover, void *mover_ctx,
                                   gmpi_engine_t *engine);
void gmpi_env_engine_close(gmpi_engine_t *engine);

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
