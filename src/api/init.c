/* SPDX-License-Identifier: BSD-3-Clause */
/* Life cycle: gmpi_init, gmpi_finalize, gmpi_comm_split. Bootstrap order (docs/design.md): MPI,
 * configuration, arrival, the out-of-band channel, locality, the backend (agreed by all ranks),
 * registration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../backends/registry.h"
#include "../core/comm.h"
#include "../core/envelope.h"
#include "../core/error.h"
#include "../core/log.h"
#include "../core/plan.h"
#include "../core/request.h"
#include "../core/select.h"
#include "../core/vote.h"
#include "../host/host_engine.h"
#include "../mpi/bootstrap.h"
#include "../mpi/mpi_check.h"
#include "../mpi/oob.h"

/* All ranks must run the same backend. auto falls back to cpu everywhere when any rank cannot
 * use a GPU; an explicit choice that fails anywhere fails everywhere. */
static gmpi_status_t agree_backend(gmpi_comm_t comm) {
  const gmpi_backend_ops_t *ops = NULL;
  gmpi_status_t mine = gmpi_backend_select(comm, &gmpi_backends_built, &ops);
  char failed[96];
  snprintf(failed, sizeof(failed), "could not use the requested backend (GMPI_BACKEND=%s)",
           gmpi_backend_want_name(comm->cfg.backend));
  int cpu_somewhere = 0;
  gmpi_status_t st =
      gmpi_vote(comm, mine, ops && ops->kind == GMPI_BACKEND_CPU, &cpu_somewhere, failed);
  if (st != GMPI_SUCCESS) return st;
  if (cpu_somewhere && ops->kind != GMPI_BACKEND_CPU) {
    gmpi_log(GMPI_LOG_WARN, "GMPI_BACKEND=auto: some ranks have no usable GPU; all use cpu");
    ops = gmpi_backend_by_kind(&gmpi_backends_built, GMPI_BACKEND_CPU);
  }
  comm->ops = ops;
  return GMPI_SUCCESS;
}

/* The device engine: the backend's collectives on comm->be, and the point to point core
 * builds on the backend's data mover (core/envelope.h). */
static gmpi_status_t open_device_engine(const gmpi_backend_ops_t *ops, gmpi_comm_t comm) {
  comm->device_engine = (gmpi_engine_t){.coll = ops->device_coll, .coll_state = comm->be};
  if (!ops->device_mover) return GMPI_SUCCESS;
  const gmpi_mover_t *mover = NULL;
  void *ctx = NULL;
  GMPI_CHECK(ops->device_mover(comm, &mover, &ctx));
  return gmpi_env_engine_open(comm, mover, ctx, &comm->device_engine);
}

/* The comm's engines: the host engine (MPI) on every comm, then the backend and its device
 * engine. comm is NULL on a rank that joins no child of parent's split: it still takes part
 * in the backend's split. */
static gmpi_status_t open_engines(const gmpi_backend_ops_t *ops, gmpi_comm_t comm,
                                  gmpi_comm_t parent, int color, int key) {
  if (comm) GMPI_CHECK(gmpi_host_engine_open(comm, &comm->host_engine));
  gmpi_status_t st = ops->comm_init(comm, parent, color, key);
  if (!comm) return st;
  if (st == GMPI_SUCCESS) {
    st = open_device_engine(ops, comm);
    if (st == GMPI_SUCCESS) return GMPI_SUCCESS;
    gmpi_comm_fail(comm, st); /* only this rank failed: the backend lets go alone */
    comm->device_engine = (gmpi_engine_t){0};
    ops->comm_fini(comm);
  }
  gmpi_host_engine_close(comm, &comm->host_engine);
  return st;
}

/* Device engine first (its point to point, then the backend), then the host engine: the
 * device's teardown may still drive host-side channels. No rank lets go of its device
 * transfers before every rank has arrived: a send that completed may still be on its way
 * (NCCL's proxy) to a receive its rank waited for (found on the H200: the receive cut by
 * "Connection closed by remote peer" after a buffered send and MPI_Comm_free). */
static void close_engines(gmpi_comm_t comm) {
  if (comm->device_engine.p2p) {
    if (comm->failure == GMPI_SUCCESS && comm->size > 1)
      (void)gmpi_vote(comm, GMPI_SUCCESS, 0, NULL, "arrive at the communicator's free");
    gmpi_env_engine_close(&comm->device_engine);
  }
  comm->ops->comm_fini(comm);
  comm->device_engine = (gmpi_engine_t){0};
  gmpi_host_engine_close(comm, &comm->host_engine);
}

/* Start the engines on comm (or on this rank's part of parent's split when comm is NULL) and
 * make sure every rank of the group succeeded. */
static gmpi_status_t start_backend(gmpi_comm_t group, const gmpi_backend_ops_t *ops,
                                   gmpi_comm_t comm, gmpi_comm_t parent, int color, int key) {
  gmpi_status_t mine = open_engines(ops, comm, parent, color, key);
  char failed[64];
  snprintf(failed, sizeof(failed), "failed to start the %s backend", ops->name);
  /* After a timeout a rank is missing: a vote would only wait for it a second time. */
  gmpi_status_t st = mine == GMPI_ERR_TIMEOUT ? mine : gmpi_vote(group, mine, 0, NULL, failed);
  if (st != GMPI_SUCCESS && mine == GMPI_SUCCESS && comm) {
    gmpi_comm_fail(comm, st); /* engines close alone: a peer whose start failed is not there */
    close_engines(comm);
  }
  return st;
}

/* The ranks of this host: local rank and count, from every rank's host name gathered over the
 * channel -- polled within GMPI_TIMEOUT like every exchange, where MPI_Comm_split_type
 * (MPI_COMM_TYPE_SHARED, the same grouping on one host) would block inside MPI. */
static gmpi_status_t find_locality(gmpi_comm_t comm) {
  gmpi_mpi_host_name(comm->host, sizeof(comm->host));
  size_t len = sizeof(comm->host);
  char *all = calloc((size_t)comm->size, len);
  if (!all) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for %d host names", comm->size);
  gmpi_status_t st = comm->oob.ops->allgather(comm, comm->host, all, len);
  if (st == GMPI_SUCCESS) {
    comm->local_rank = comm->local_size = 0;
    for (int r = 0; r < comm->size; r++) {
      const char *peer = all + (size_t)r * len;
      if (strncmp(peer, comm->host, len) != 0) continue;
      comm->local_size++;
      if (r < comm->rank) comm->local_rank++;
    }
  }
  free(all);
  return st;
}

/* Fields every comm needs once its channel exists. */
static gmpi_status_t describe_comm(gmpi_comm_t comm) {
  MPI_Comm mc = gmpi_oob_mpi_comm(comm);
  PMPI_Comm_rank(mc, &comm->rank);
  PMPI_Comm_size(mc, &comm->size);
  PMPI_Comm_rank(MPI_COMM_WORLD, &comm->world_rank);
  comm->tag_ub = comm->tags_full ? gmpi_mpi_tag_ub_full() : gmpi_mpi_tag_ub();
  GMPI_CHECK(find_locality(comm));
  if (gmpi_flight_init(&comm->flight, comm->cfg.flight_records) != GMPI_SUCCESS)
    return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for the flight record");
  return GMPI_SUCCESS;
}

/* A handle of all zero bits (NULL in Open MPI, where MPI_Comm is a pointer) is no
 * communicator in any MPI; MPI calls on it crash, so it is refused before any. */
static int mpi_comm_is_zero(MPI_Comm mpi_comm) {
  MPI_Comm zero;
  memset(&zero, 0, sizeof(zero));
  return memcmp(&mpi_comm, &zero, sizeof(zero)) == 0;
}

static gmpi_status_t init_on(MPI_Comm mpi_comm, gmpi_comm_t *out) {
  if (!out) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'comm' (the result) is NULL");
  if (mpi_comm_is_zero(mpi_comm))
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'mpi_comm' is a NULL handle");
  GMPI_CHECK(gmpi_mpi_start());
  gmpi_status_t st = GMPI_SUCCESS;
  gmpi_comm_t comm = NULL;
  double timeout_s = GMPI_DEFAULT_TIMEOUT_S; /* for the last step, MPI's finalize */
  if (mpi_comm == MPI_COMM_NULL) {
    st = gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'mpi_comm' is MPI_COMM_NULL");
    goto stop_mpi;
  }
  /* MPI first, so that a bad GMPI_* value is reported with this rank's number. */
  PMPI_Comm_rank(mpi_comm, &gmpi_call_ctx()->rank);
  gmpi_config_t cfg;
  GMPI_CHECK_GOTO(gmpi_config_load(&cfg), st, stop_mpi);
  timeout_s = cfg.timeout_s;
  gmpi_log_setup(cfg.debug, -1);
  if (!(comm = calloc(1, sizeof(*comm)))) {
    st = gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a communicator");
    goto stop_mpi;
  }
  comm->cfg = cfg;
  /* MPI_Comm_dup blocks, and a rank blocked in it cannot drive the engines of its other comms,
   * on which a peer may be waiting before it comes here. A polled barrier first (on every
   * rank, so all make the same MPI calls): after it, every MPI call of this gmpi_init waits
   * only on ranks already inside it. */
  GMPI_CHECK_GOTO(gmpi_mpi_arrive(mpi_comm, cfg.timeout_s, "gmpi_init's arrival"), st, free_comm);
  GMPI_CHECK_GOTO(gmpi_oob_create(mpi_comm, cfg.timeout_s, &comm->oob), st, free_comm);
  GMPI_CHECK_GOTO(describe_comm(comm), st, destroy_oob);
  gmpi_log_setup(cfg.debug, comm->world_rank);
  gmpi_call_ctx()->rank = comm->rank;
  GMPI_CHECK_GOTO(agree_backend(comm), st, free_flight);
  GMPI_CHECK_GOTO(start_backend(comm, comm->ops, comm, NULL, 0, 0), st, free_flight);
  gmpi_log(GMPI_LOG_INFO, "gmpi_init: rank %d/%d on %s (local %d/%d), backend %s", comm->rank,
           comm->size, comm->host, comm->local_rank, comm->local_size, comm->ops->name);
  comm->from_init = 1;
  gmpi_comm_register(comm);
  gmpi_watchdog_add(comm);
  *out = comm;
  return GMPI_SUCCESS;
free_flight:
  gmpi_flight_free(&comm->flight);
destroy_oob:
  gmpi_oob_destroy(&comm->oob, comm->failure != GMPI_SUCCESS);
free_comm:
  free(comm);
stop_mpi:
  /* After a timeout MPI_Finalize would wait for the missing rank: skipped. Otherwise every rank
   * failed alike (or arrives within the default timeout). */
  gmpi_mpi_stop(st == GMPI_ERR_TIMEOUT, timeout_s);
  return st;
}

gmpi_status_t gmpi_init(MPI_Comm mpi_comm, gmpi_comm_t *out) {
  gmpi_call_begin_nocomm(__func__);
  return init_on(mpi_comm, out);
}

/* MPI_COMM_WORLD named here, so bindings (ctypes, cffi) need no ABI-specific MPI handle. */
gmpi_status_t gmpi_init_world(gmpi_comm_t *out) {
  gmpi_call_begin_nocomm(__func__);
  return init_on(MPI_COMM_WORLD, out);
}

/* End a comm: collective while it is healthy, local after a failure. */
static gmpi_status_t release_comm(gmpi_comm_t *pcomm) {
  gmpi_comm_t comm = *pcomm;
  if (!gmpi_comm_is_live(comm))
    return gmpi_error(GMPI_ERR_INVALID_ARG,
                      "argument '*comm' = %p is not a live communicator (finalized already?)",
                      (void *)comm);
  gmpi_call_ctx()->rank = comm->rank;
  gmpi_watchdog_remove(comm); /* first: the watchdog reads the comm's flight record */
  gmpi_plan_abort_recording(comm);
  gmpi_plan_orphan_all(comm);
  gmpi_request_drop_released(comm); /* while its engines are still open to let go of them */
  close_engines(comm);
  /* Read after the engines closed: their last collective step (cuda: every rank arrives before
   * links close) may have failed the comm, and then peers may be gone. */
  int failed = comm->failure != GMPI_SUCCESS;
  gmpi_oob_destroy(&comm->oob, failed);
  gmpi_flight_free(&comm->flight);
  gmpi_comm_unregister(comm);
  double timeout_s = comm->cfg.timeout_s;
  free(comm);
  *pcomm = NULL;
  return gmpi_mpi_stop(failed, timeout_s); /* the comm is gone whatever it returns */
}

gmpi_status_t gmpi_finalize(gmpi_comm_t *pcomm) {
  gmpi_call_begin_nocomm(__func__);
  if (!pcomm || !*pcomm) return GMPI_SUCCESS;
  return release_comm(pcomm);
}

/* A child comm inherits what does not depend on the group. */
static gmpi_status_t make_child(gmpi_comm_t parent, gmpi_oob_t oob, gmpi_comm_t *out) {
  gmpi_comm_t child = calloc(1, sizeof(*child));
  if (!child) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a communicator");
  child->cfg = parent->cfg;
  child->match_across_kinds = parent->match_across_kinds;
  child->tags_full = parent->tags_full;
  child->sends_as_mpi = parent->sends_as_mpi;
  child->ops = parent->ops;
  child->oob = oob;
  gmpi_status_t st = describe_comm(child);
  if (st != GMPI_SUCCESS) {
    free(child);
    return st;
  }
  *out = child;
  return GMPI_SUCCESS;
}

/* The work of gmpi_comm_split and gmpi_comm_dup (entered and checked by them); dup: the same
 * group (color 0 everywhere, key = rank), made by MPI's nonblocking duplicate. */
static gmpi_status_t split(gmpi_comm_t comm, int color, int key, int dup, gmpi_comm_t *newcomm) {
  if (!newcomm) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'newcomm' is NULL");
  if (comm->rec)
    return gmpi_error(GMPI_ERR_STATE, "cannot make a communicator from one that records a plan");
  gmpi_oob_t oob = {0};
  gmpi_comm_t child = NULL;
  GMPI_CHECK(dup ? gmpi_oob_dup(comm, &oob) : gmpi_oob_split(comm, color, key, &oob));
  gmpi_status_t st = GMPI_SUCCESS;
  if (oob.state) GMPI_CHECK_GOTO(make_child(comm, oob, &child), st, destroy_oob);
  GMPI_CHECK_GOTO(start_backend(comm, comm->ops, child, comm, color, key), st, free_child);
  if (child) {
    GMPI_CHECK_GOTO(gmpi_mpi_start(), st, fini_child); /* counts the new live comm */
    gmpi_comm_register(child);
    gmpi_watchdog_add(child);
  }
  *newcomm = child;
  return GMPI_SUCCESS;
fini_child:
  gmpi_comm_fail(child, st); /* only this rank failed: its engines close alone */
  close_engines(child);
free_child:
  if (child) gmpi_flight_free(&child->flight);
  free(child);
destroy_oob:
  gmpi_oob_destroy(&oob, 0);
  /* A rank did not take part in time: the parent's peers may be stuck with it (every timeout
   * fails its comm). */
  if (st == GMPI_ERR_TIMEOUT) gmpi_comm_fail(comm, st);
  return st;
}

gmpi_status_t gmpi_comm_split(gmpi_comm_t comm, int color, int key, gmpi_comm_t *newcomm) {
  GMPI_API_ENTER(comm);
  if (color < 0 && color != GMPI_UNDEFINED)
    return gmpi_error(GMPI_ERR_INVALID_ARG,
                      "argument 'color' = %d is negative and not GMPI_UNDEFINED", color);
  return split(comm, color, key, 0, newcomm);
}

/* A split with one color, ranks in their order: the same group, a separate matching space
 * (its own MPI duplicates and, on cuda, its own NCCL communicator). */
gmpi_status_t gmpi_comm_dup(gmpi_comm_t comm, gmpi_comm_t *newcomm) {
  GMPI_API_ENTER(comm);
  return split(comm, 0, comm->rank, 1, newcomm);
}

gmpi_status_t gmpi_comm_free(gmpi_comm_t *pcomm) {
  gmpi_call_begin_nocomm(__func__);
  if (!pcomm || !*pcomm) return GMPI_SUCCESS;
  if (gmpi_comm_is_live(*pcomm) && (*pcomm)->from_init)
    return gmpi_error(GMPI_ERR_INVALID_ARG,
                      "argument '*comm' = %p was made by gmpi_init: end it with gmpi_finalize "
                      "(gmpi_comm_free is for the results of gmpi_comm_split and gmpi_comm_dup)",
                      (void *)*pcomm);
  return release_comm(pcomm);
}
