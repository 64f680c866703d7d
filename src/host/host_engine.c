/* SPDX-License-Identifier: BSD-3-Clause */
/* The MPI engine: host memory on every comm, whatever the backend. Its state (gmpi_host_t) is
 * a private duplicate of the comm's MPI communicator, plus the envelope engine when
 * point-to-point is matched by gmpi (GMPI_P2P=envelope). */
#include <stdlib.h>
#include <string.h>

#include "../core/comm.h"
#include "../core/envelope.h"
#include "../core/error.h"
#include "../mpi/mpi_check.h"
#include "../mpi/oob.h"
#include "../mpi/types.h"
#include "host.h"

gmpi_status_t gmpi_host_open(gmpi_comm_t comm, gmpi_host_t *host) {
  memset(host, 0, sizeof(*host));
  host->plans = MPI_COMM_NULL;
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_CHECK(gmpi_mpi_ops_acquire());
  GMPI_CHECK_GOTO(gmpi_mpi_dup(gmpi_oob_mpi_comm(comm), comm->cfg.timeout_s,
                               "the MPI engine's communicator (MPI_Comm_idup)", &host->data),
                  st, release_ops);
  GMPI_MPI_CHECK_GOTO(PMPI_Comm_set_errhandler(host->data, MPI_ERRORS_RETURN), st, free_data);
  /* GMPI_P2P=envelope asks for the NCCL model (the deadlock finder). GMPI_CHECK=1 otherwise
   * only needs each message's dtype: native messages with a header (host_frame.c). */
  if (comm->cfg.p2p == GMPI_P2P_ENVELOPE)
    GMPI_CHECK_GOTO(gmpi_env_create_model(comm, host->data, &host->env), st, free_data);
  else
    host->checked = comm->cfg.check;
  return GMPI_SUCCESS;
free_data:
  PMPI_Comm_free(&host->data);
release_ops:
  gmpi_mpi_ops_release();
  return st;
}

void gmpi_host_close(gmpi_comm_t comm, gmpi_host_t *host) {
  if (host->env) gmpi_env_destroy(host->env);
  gmpi_host_p2p_close(comm, host);
  if (comm->failure == GMPI_SUCCESS) {
    PMPI_Comm_free(&host->data);
    if (host->plans != MPI_COMM_NULL) PMPI_Comm_free(&host->plans);
  }
  gmpi_mpi_ops_release();
}

static gmpi_status_t engine_open(gmpi_comm_t comm, void **state) {
  gmpi_host_t *host = calloc(1, sizeof(*host));
  if (!host) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for the MPI engine's state");
  gmpi_status_t st = gmpi_host_open(comm, host);
  if (st != GMPI_SUCCESS) {
    free(host);
    return st;
  }
  *state = host;
  return GMPI_SUCCESS;
}

static void engine_close(gmpi_comm_t comm, void *state) {
  if (!state) return;
  gmpi_host_close(comm, state);
  free(state);
}

static gmpi_status_t engine_coll(gmpi_comm_t comm, void *state, const gmpi_coll_args_t *a) {
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
static int engine_p2p_can_exchange(void *state) { return gmpi_host_p2p_can_exchange(state); }
static gmpi_status_t engine_p2p_exchange(void *state, gmpi_comm_t comm, const gmpi_p2p_args_t *send,
                                         const gmpi_p2p_args_t *recv, gmpi_msg_status_t *status) {
  return gmpi_host_p2p_exchange(state, comm, send, recv, status);
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

const gmpi_engine_ops_t gmpi_engine_mpi = {
    .name = "mpi",
    .open = engine_open,
    .close = engine_close,
    .coll = engine_coll,
    .p2p_post = engine_p2p_post,
    .p2p_test = engine_p2p_test,
    .p2p_abandon = engine_p2p_abandon,
    .p2p_cancel = engine_p2p_cancel,
    .p2p_probe = engine_p2p_probe,
    .p2p_can_exchange = engine_p2p_can_exchange,
    .p2p_exchange = engine_p2p_exchange,
    .coll_start = engine_coll_start,
    .coll_test = engine_coll_test,
    .coll_abandon = engine_coll_abandon,
    .plan_lower = engine_plan_lower,
    .plan_replay = engine_plan_replay,
    .plan_free = gmpi_host_plan_free,
};
