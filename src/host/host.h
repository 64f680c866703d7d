/* SPDX-License-Identifier: BSD-3-Clause */
/* This folder: the host engine, which moves host memory through MPI on every comm, whatever
 * its backend (host_engine.c, host_engine.h; state gmpi_host_t). It is no backend: src/api
 * gives it to every comm, beside the backend's device engine. */
#ifndef GMPI_HOST_H
#define GMPI_HOST_H

#include <mpi.h>

#include "../core/backend.h"

typedef struct {
  MPI_Comm data;                   /* gmpi's duplicate carrying host data */
  int checked;                     /* GMPI_CHECK=1 on native p2p: framed messages */
  MPI_Comm plans;                  /* plans' persistent requests live here (made on demand) */
  struct gmpi_host_native *native; /* native p2p: eager sends, self messages (host_native.h) */
} gmpi_host_t;

/* The host engine's parts (host_engine.c wires them into its two halves). */
gmpi_status_t gmpi_host_open(gmpi_comm_t comm, gmpi_host_t *host);
void gmpi_host_close(gmpi_comm_t comm, gmpi_host_t *host);
gmpi_status_t gmpi_host_coll(gmpi_comm_t comm, gmpi_host_t *host, const gmpi_coll_args_t *a);
/* The collective past its arrival gate (plans gate once per replay): MPI's blocking call under
 * the watchdog, or under GMPI_TIMEOUT_ACTION=status its nonblocking form polled within
 * GMPI_TIMEOUT (a replay's collectives are bounded like the eager ones). */
gmpi_status_t gmpi_host_coll_past_gate(gmpi_comm_t comm, gmpi_host_t *host,
                                       const gmpi_coll_args_t *a);
/* Nonblocking collectives: start (MPI's nonblocking calls, state in req->be), test, abandon. */
gmpi_status_t gmpi_host_coll_start(gmpi_comm_t comm, gmpi_host_t *host, const gmpi_coll_args_t *a,
                                   gmpi_request_t req);
gmpi_status_t gmpi_host_coll_test(gmpi_host_t *host, gmpi_request_t req, int *done);
void gmpi_host_coll_abandon(gmpi_host_t *host, gmpi_request_t req);
/* Every rank has arrived, within GMPI_TIMEOUT, engines driven meanwhile (nothing when the
 * timeout is 0 and the comm has no engine). */
gmpi_status_t gmpi_host_gate(gmpi_comm_t comm, gmpi_host_t *host);
/* Plans on host buffers (host_plan.c), also used by cuda for host-buffer plans. */
gmpi_status_t gmpi_host_plan_lower(gmpi_comm_t comm, gmpi_host_t *host, struct gmpi_plan *plan,
                                   void **lowered);
gmpi_status_t gmpi_host_plan_replay(gmpi_comm_t comm, gmpi_host_t *host, struct gmpi_plan *plan,
                                    void *lowered);
void gmpi_host_plan_free(void *lowered);
gmpi_status_t gmpi_host_p2p_post(gmpi_host_t *host, gmpi_request_t req);
gmpi_status_t gmpi_host_p2p_test(gmpi_host_t *host, gmpi_request_t req, int *done);
void gmpi_host_p2p_abandon(gmpi_host_t *host, gmpi_request_t req);
gmpi_status_t gmpi_host_p2p_cancel(gmpi_host_t *host, gmpi_request_t req, int *cancelled);
/* Is a message from source with tag waiting to be received here (me: this rank)? */
gmpi_status_t gmpi_host_p2p_probe(gmpi_host_t *host, gmpi_comm_t comm, int source, int tag,
                                  int *flag, gmpi_msg_status_t *status);
void gmpi_host_p2p_close(gmpi_comm_t comm, gmpi_host_t *host); /* before MPI_Comm_free(data) */
/* sendrecv with two other ranks, straight to MPI (host_exchange.c): native mode only. */
gmpi_status_t gmpi_host_p2p_exchange(gmpi_host_t *host, gmpi_comm_t comm,
                                     const gmpi_p2p_args_t *send, const gmpi_p2p_args_t *recv,
                                     gmpi_msg_status_t *status);
/* A data mover (core/mover.h) on host memory whose links are the MPI model of NCCL's
 * semantics on data_comm (mover_model.c), for the envelope engine core builds on it under
 * GMPI_P2P=envelope (CI's deadlock finder). */
gmpi_status_t gmpi_host_model_mover(gmpi_comm_t comm, MPI_Comm data_comm,
                                    const gmpi_mover_t **mover, void **ctx);

#endif
