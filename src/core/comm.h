/* SPDX-License-Identifier: BSD-3-Clause */
/* The communicator: what every layer shares about one group of ranks. */
#ifndef GMPI_CORE_COMM_H
#define GMPI_CORE_COMM_H

#include <stdatomic.h>
#include <stdint.h>

#include "backend.h"
#include "config.h"
#include "engine.h"
#include "error.h"
#include "flight.h"
#include "gmpi.h"
#include "oob.h"
#include "progress.h"
#include "watchdog.h"

struct gmpi_plan;
struct gmpi_plan_rec;

struct gmpi_comm {
  int rank, size;
  int world_rank;                /* for log prefixes */
  char host[64];                 /* host name, for messages and gmpi-info */
  int local_rank, local_size;    /* among the ranks of this host */
  const gmpi_backend_ops_t *ops; /* the backend running this comm */
  char backend_why[320];         /* why gmpi_init chose it ("" on split comms: the parent's) */
  void *be;                      /* backend state (the device engine's state) */
  gmpi_engine_t host_engine;     /* moves host buffers: MPI, on every backend */
  gmpi_engine_t device_engine;   /* moves device buffers: collectives the backend's, point to
                                  * point core's over the backend's mover (empty on cpu) */
  gmpi_oob_t oob;                /* out-of-band channel: bootstrap, checks, envelopes */
  gmpi_config_t cfg;
  int tag_ub;                /* largest valid tag */
  int tags_full;             /* gmpi_comm_set_tags(GMPI_TAGS_FULL): no element size in MPI tags */
  int sends_as_mpi;          /* gmpi_comm_set_sends(GMPI_SENDS_AS_MPI): no eager copies */
  int owns_mpi;              /* gmpi_init called MPI_Init_thread: finalize calls MPI_Finalize */
  int from_init;             /* made by gmpi_init (ended by gmpi_finalize, not gmpi_comm_free) */
  int match_across_kinds;    /* gmpi_comm_set_matching: every p2p message on one engine */
  int p2p_started;           /* a point-to-point call was made: matching is fixed from here */
  gmpi_status_t failure;     /* GMPI_SUCCESS while healthy; else why only finalize is allowed */
  uint64_t coll_seq;         /* collectives issued, for GMPI_CHECK and the flight record */
  struct gmpi_plan_rec *rec; /* the plan being recorded, or NULL */
  struct gmpi_plan *plans;   /* live plans made on this comm (list through plan->next) */
  gmpi_flight_t flight;      /* last operations, printed on timeout and mismatch */
  gmpi_watch_t watch;        /* inside a blocking MPI collective? (core/watchdog.h) */
  /* Requests the caller released unfinished (gmpi_request_release), until gmpi frees them
   * (core/request.c; under its lock). */
  struct gmpi_request *released;
};

/* May a blocking host call on comm be MPI's own blocking call, inside the comm's watch mark
 * (core/watchdog.h)? Only where nothing but MPI must progress while this rank is inside MPI --
 * no engine of gmpi's in the process (an envelope or device engine, on which a peer's send may
 * wait), no device engine on comm -- and where the mark bounds it: under GMPI_TIMEOUT_ACTION=end
 * with the watchdog watching comm, or with no timeout (it waits forever either way). The host
 * engine's blocking sends and receives (host_exchange.c) and gmpi_comm_watch_enter ask it. */
static inline int gmpi_comm_may_block(gmpi_comm_t comm) {
  if (comm->device_engine.p2p || gmpi_progress_needed()) return 0;
  if (comm->cfg.timeout_s <= 0) return 1;
  return comm->cfg.timeout_action == GMPI_TIMEOUT_END_JOB && gmpi_watchdog_watches(&comm->watch);
}

/* Live comms are registered so that a finalized or foreign handle is reported, not used. */
void gmpi_comm_register(gmpi_comm_t comm);
void gmpi_comm_unregister(gmpi_comm_t comm);
int gmpi_comm_is_live(gmpi_comm_t comm);

/* Changes with every (un)registration: a thread that found a handle live under generation g
 * knows it is still live while the generation is g, without the lock (the per-call path). */
extern atomic_ulong gmpi_registry_gen;
/* The lock-free answer for the comm this thread found live last (gmpi_thread's memo; every
 * call asks). */
static inline int gmpi_comm_live_as_last(gmpi_comm_t comm) {
  return comm && gmpi_thread.live_comm == comm &&
         gmpi_thread.live_gen == atomic_load(&gmpi_registry_gen);
}

/* Start a public call on comm: NULL, dead or failed comms are refused with a clear message
 * (gmpi_comm_enter_local, below: failed ones are accepted). Inline for the common case (the
 * comm this thread used last, healthy, no tracing), every public call's first step; the rest
 * asks the registry (gmpi_comm_enter_asked). */
gmpi_status_t gmpi_comm_enter_asked(const char *func, gmpi_comm_t comm);
static inline gmpi_status_t gmpi_comm_enter(const char *func, gmpi_comm_t comm) {
  if (!gmpi_comm_live_as_last(comm) || gmpi_log_tracing || comm->failure != GMPI_SUCCESS)
    return gmpi_comm_enter_asked(func, comm);
  gmpi_call_begin(func, comm->rank);
  return GMPI_SUCCESS;
}
/* Start a public call that has no comm yet (gmpi_init, gmpi_wait on NULL...). */
void gmpi_call_begin_nocomm(const char *func);

/* Mark comm failed (timeout, lost rank): later calls get GMPI_ERR_STATE; finalize works. */
void gmpi_comm_fail(gmpi_comm_t comm, gmpi_status_t why);

#define GMPI_API_ENTER(comm) GMPI_CHECK(gmpi_comm_enter(__func__, (comm)))
/* The same for calls that touch only this process's memory (gmpi_mem_is_device, _copy, _free,
 * gmpi_comm_mem_usage): allowed on a failed comm too, which needs no peer for them. */
gmpi_status_t gmpi_comm_enter_local(const char *func, gmpi_comm_t comm);
#define GMPI_API_ENTER_LOCAL(comm) GMPI_CHECK(gmpi_comm_enter_local(__func__, (comm)))

#endif
