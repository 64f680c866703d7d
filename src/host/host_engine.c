/* SPDX-License-Identifier: BSD-3-Clause */
/* The host engine: host memory on every comm, whatever the backend. Its state (gmpi_host_t)
 * is a private duplicate of the comm's MPI communicator. Collectives are MPI's; point to point
 * is MPI's matching, or under GMPI_P2P=envelope core's envelope engine over the MPI model of
 * NCCL's links (mover_model.c), the same engine core builds on a device's mover. */
#include <stdlib.h>
#include <string.h>

#include "../core/comm.h"
#include "../core/envelope.h"
#include "../core/error.h"
#include "../mpi/mpi_check.h"
#include "../mpi/oob.h"
#include "../mpi/types.h"
#include "host.h"
#include "host_engine.h"

gmpi_status_t gmpi_host_open(gmpi_comm_t comm, gmpi_host_t *host) {
  memset(host, 0, sizeof(*host));
  host->plans = MPI_COMM_NULL;
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_CHECK(gmpi_mpi_ops_acquire());
  GMPI_CHECK_GOTO(gmpi_mpi_dup(gmpi_oob_mpi_comm(comm), comm->cfg.timeout_s,
                               "the MPI engine's communicator (MPI_Comm_idup)", &host->data),
                  st, release_ops);
  GMPI_MPI_CHECK_GOTO(PMPI_Comm_set_errhandler(host->data, MPI_ERRORS_RETURN), st, free_data);
  /* GMPI_CHECK=1 on native messages only needs each message's dtype: a header (host_frame.c).
   * (Under GMPI_P2P=envelope the envelope carries it.) */
  host->checked = comm->cfg.p2p != GMPI_P2P_ENVELOPE && comm->cfg.check;
  return GMPI_SUCCESS;
free_data:
  PMPI_Comm_free(&host->data);
release_ops:
  gmpi_mpi_ops_release();
  return st;
}

void gmpi_host_close(gmpi_comm_t comm, gmpi_host_t *host) {
  gmpi_host_p2p_close(comm, host);
  if (comm->failure == GMPI_SUCCESS) {
    PMPI_Comm_free(&host->data);
    if (host->plans != MPI_COMM_NULL) PMPI_Comm_free(&host->plans);
  }
  gmpi_mpi_ops_release();
}

static gmpi_status_t engine_coll_run(gmpi_comm_t comm, void *state, const gmpi_coll_args_t *a) {
  return gmpi_host_coll(comm, state, a);
}
static gmpi_status_t engine_p2p_post(void *state, gmpi_request_t req) {
  return gmpi_host_p2p_post(state, req);
}
static gmpi_status_t engine_p2p_test(void *state, gmpi_request_t req, int *done) {
  return gmpi_host_p2p_test(state, req, done);
}
static void engine_p2p_abandon(void *state, gmpi_request_t req) {
  gmpi_host_p2p_abandon(state, req);
}
static gmpi_status_t engine_p2p_cancel(void *state, gmpi_request_t req, int *cancelled) {
  return gmpi_host_p2p_cancel(state, req, cancelled);
}
static gmpi_status_t engine_p2p_probe(void *state, gmpi_comm_t comm, int source, int tag, int *flag,
                                      gmpi_msg_status_t *status) {
  return gmpi_host_p2p_probe(state, comm, source, tag, flag, status);
}
static gmpi_status_t engine_p2p_exchange(void *state, gmpi_comm_t comm, const gmpi_p2p_args_t *send,
                                         const gmpi_p2p_args_t *recv, gmpi_msg_status_t *status) {
  return gmpi_host_p2p_exchange(state, comm, send, recv, status);
}
/* Native messages between two ranks are MPI's own on host->data unless something of gmpi's is
 * added to them: a check header, an element size in the tag, an eager copy (host_native.h). */
static int engine_p2p_wire(void *state, gmpi_comm_t comm, void *wire) {
  const gmpi_host_t *host = state;
  if (host->checked || !comm->tags_full || !comm->sends_as_mpi) return 0;
  *(MPI_Comm *)wire = host->data;
  return 1;
}
static gmpi_status_t engine_coll_start(gmpi_comm_t comm, void *state, const gmpi_coll_args_t *a,
                                       gmpi_request_t req) {
  return gmpi_host_coll_start(comm, state, a, req);
}
static gmpi_status_t engine_coll_test(void *state, gmpi_request_t req, int *done) {
  return gmpi_host_coll_test(state, req, done);
}
static void engine_coll_abandon(void *state, gmpi_request_t req) {
  gmpi_host_coll_abandon(state, req);
}
static gmpi_status_t engine_plan_lower(gmpi_comm_t comm, void *state, struct gmpi_plan *plan,
                                       void **lowered) {
  return gmpi_host_plan_lower(comm, state, plan, lowered);
}
static gmpi_status_t engine_plan_replay(gmpi_comm_t comm, void *state, struct gmpi_plan *plan,
                                        void *lowered) {
  return gmpi_host_plan_replay(comm, state, plan, lowered);
}

static const gmpi_coll_engine_ops_t host_coll = {
    .name = "mpi",
    .run = engine_coll_run,
    .start = engine_coll_start,
    .test = engine_coll_test,
    .abandon = engine_coll_abandon,
    .plan_lower = engine_plan_lower,
    .plan_replay = engine_plan_replay,
    .plan_free = gmpi_host_plan_free,
};

/* MPI's matching (the default, GMPI_P2P=native). */
static const gmpi_p2p_engine_ops_t host_p2p = {
    .name = "mpi",
    .post = engine_p2p_post,
    .test = engine_p2p_test,
    .abandon = engine_p2p_abandon,
    .cancel = engine_p2p_cancel,
    .probe = engine_p2p_probe,
    .exchange = engine_p2p_exchange,
    .wire = engine_p2p_wire,
};

/* GMPI_P2P=envelope asks for the NCCL model (the deadlock finder): core's envelope engine on
 * the model mover, which moves data on the host engine's own communicator. */
static gmpi_status_t open_p2p(gmpi_comm_t comm, gmpi_host_t *host, gmpi_engine_t *engine) {
  if (comm->cfg.p2p != GMPI_P2P_ENVELOPE) {
    engine->p2p = &host_p2p;
    engine->p2p_state = host;
    return GMPI_SUCCESS;
  }
  const gmpi_mover_t *mover = NULL;
  void *ctx = NULL;
  GMPI_CHECK(gmpi_host_model_mover(comm, host->data, &mover, &ctx));
  return gmpi_env_engine_open(comm, mover, ctx, engine);
}

gmpi_status_t gmpi_host_engine_open(gmpi_comm_t comm, gmpi_engine_t *engine) {
  *engine = (gmpi_engine_t){0};
  gmpi_host_t *host = calloc(1, sizeof(*host));
  if (!host) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for the host engine's state");
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_CHECK_GOTO(gmpi_host_open(comm, host), st, free_host);
  GMPI_CHECK_GOTO(open_p2p(comm, host, engine), st, close_host);
  engine->coll = &host_coll;
  engine->coll_state = host;
  return GMPI_SUCCESS;
close_host:
  gmpi_host_close(comm, host);
free_host:
  free(host);
  *engine = (gmpi_engine_t){0};
  return st;
}

void gmpi_host_engine_close(gmpi_comm_t comm, gmpi_engine_t *engine) {
  gmpi_host_t *host = engine->coll_state;
  if (!host) return;
  gmpi_env_engine_close(engine); /* GMPI_P2P=envelope: before the communicator it moves on */
  gmpi_host_close(comm, host);
  free(host);
  *engine = (gmpi_engine_t){0};
}
