/* SPDX-License-Identifier: BSD-3-Clause */
/* This folder: the MPI engine, which moves host memory on every comm (gmpi_engine_mpi,
 * cpu_engine.c; state gmpi_cpu_t), and the cpu backend, a backend with no device engine. */
#ifndef GMPI_CPU_H
#define GMPI_CPU_H

#include <mpi.h>

#include "../../core/backend.h"

struct gmpi_envelope_engine;

typedef struct {
  MPI_Comm data;                    /* gmpi's duplicate carrying host data */
  struct gmpi_envelope_engine *env; /* envelope matching when GMPI_P2P=envelope */
  int checked;                      /* GMPI_CHECK=1 on native p2p: framed messages */
  MPI_Comm plans;                   /* plans' persistent requests live here (made on demand) */
  struct gmpi_cpu_native *native;   /* native p2p: eager sends, self messages (cpu_native.h) */
} gmpi_cpu_t;

extern const gmpi_backend_ops_t gmpi_backend_cpu;

/* The MPI engine's parts (gmpi_engine_mpi wires them up). */
gmpi_status_t gmpi_cpu_open(gmpi_comm_t comm, gmpi_cpu_t *cpu);
void gmpi_cpu_close(gmpi_comm_t comm, gmpi_cpu_t *cpu);
gmpi_status_t gmpi_cpu_coll(gmpi_comm_t comm, gmpi_cpu_t *cpu, const gmpi_coll_args_t *a);
/* The collective past its arrival gate (plans gate once per replay): MPI's blocking call under
 * the watchdog, or under GMPI_TIMEOUT_ACTION=status its nonblocking form polled within
 * GMPI_TIMEOUT (a replay's collectives are bounded like the eager ones). */
gmpi_status_t gmpi_cpu_coll_past_gate(gmpi_comm_t comm, gmpi_cpu_t *cpu, const gmpi_coll_args_t *a);
/* The collective's blocking MPI calls, neither gated nor watched. */
gmpi_status_t gmpi_cpu_coll_run(gmpi_comm_t comm, gmpi_cpu_t *cpu, const gmpi_coll_args_t *a);
/* Nonblocking collectives: start (MPI's nonblocking calls, state in req->be), test, abandon. */
gmpi_status_t gmpi_cpu_coll_start(gmpi_comm_t comm, gmpi_cpu_t *cpu, const gmpi_coll_args_t *a,
                                  gmpi_request_t req);
gmpi_status_t gmpi_cpu_coll_test(gmpi_cpu_t *cpu, gmpi_request_t req, int *done);
void gmpi_cpu_coll_abandon(gmpi_cpu_t *cpu, gmpi_request_t req);
/* Every rank has arrived, within GMPI_TIMEOUT, engines driven meanwhile (nothing when the
 * timeout is 0 and the comm has no engine). */
gmpi_status_t gmpi_cpu_gate(gmpi_comm_t comm, gmpi_cpu_t *cpu);
/* Plans on host buffers (cpu_plan.c), also used by cuda for host-buffer plans. */
gmpi_status_t gmpi_cpu_plan_lower(gmpi_comm_t comm, gmpi_cpu_t *cpu, struct gmpi_plan *plan,
                                  void **lowered);
gmpi_status_t gmpi_cpu_plan_replay(gmpi_comm_t comm, gmpi_cpu_t *cpu, struct gmpi_plan *plan,
                                   void *lowered);
void gmpi_cpu_plan_free(void *lowered);
gmpi_status_t gmpi_cpu_p2p_post(gmpi_cpu_t *cpu, gmpi_request_t req);
gmpi_status_t gmpi_cpu_p2p_test(gmpi_cpu_t *cpu, gmpi_request_t req, int *done);
void gmpi_cpu_p2p_abandon(gmpi_cpu_t *cpu, gmpi_request_t req);
gmpi_status_t gmpi_cpu_p2p_cancel(gmpi_cpu_t *cpu, gmpi_request_t req, int *cancelled);
/* Is a message from source with tag waiting to be received here (me: this rank)? */
gmpi_status_t gmpi_cpu_p2p_probe(gmpi_cpu_t *cpu, gmpi_comm_t comm, int source, int tag, int *flag,
                                 gmpi_msg_status_t *status);
void gmpi_cpu_p2p_close(gmpi_comm_t comm, gmpi_cpu_t *cpu); /* before MPI_Comm_free(data) */
/* sendrecv with two other ranks, straight to MPI (cpu_exchange.c): native mode only. */
int gmpi_cpu_p2p_can_exchange(const gmpi_cpu_t *cpu);
gmpi_status_t gmpi_cpu_p2p_exchange(gmpi_cpu_t *cpu, gmpi_comm_t comm, const gmpi_p2p_args_t *send,
                                    const gmpi_p2p_args_t *recv, gmpi_msg_status_t *status);
/* An envelope engine (core/envelope.h) on host memory whose links are the MPI model of NCCL's
 * semantics on data_comm (mover_model.c): GMPI_P2P=envelope, CI's deadlock finder. */
gmpi_status_t gmpi_env_create_model(gmpi_comm_t comm, MPI_Comm data_comm,
                                    struct gmpi_envelope_engine **out);

#endif
