/* SPDX-License-Identifier: BSD-3-Clause */
#include "comm.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "error.h"
#include "log.h"
#include "ptrset.h"

/* The live handles. Membership is checked by address only, so a stale handle is never
 * dereferenced; a set, so a program with thousands of comms pays the same per question. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static gmpi_ptrset_t registry;
/* Changes with every (un)registration: a thread that found a handle live under generation g
 * knows it is still live while the generation is g, without the lock (the per-call path). */
atomic_ulong gmpi_registry_gen = 1;

void gmpi_comm_register(gmpi_comm_t comm) {
  pthread_mutex_lock(&registry_lock);
  if (!gmpi_ptrset_add(&registry, comm)) abort(); /* a pointer's room: the process is lost */
  atomic_fetch_add(&gmpi_registry_gen, 1);
  pthread_mutex_unlock(&registry_lock);
}

void gmpi_comm_unregister(gmpi_comm_t comm) {
  pthread_mutex_lock(&registry_lock);
  gmpi_ptrset_remove(&registry, comm);
  atomic_fetch_add(&gmpi_registry_gen, 1);
  if (registry.len == 0) gmpi_ptrset_clear(&registry);
  pthread_mutex_unlock(&registry_lock);
}

int gmpi_comm_is_live(gmpi_comm_t comm) {
  if (gmpi_comm_live_as_last(comm)) return 1;
  unsigned long gen;
  pthread_mutex_lock(&registry_lock);
  int live = gmpi_ptrset_has(&registry, comm);
  gen = atomic_load(&gmpi_registry_gen);
  pthread_mutex_unlock(&registry_lock);
  if (live) {
    gmpi_thread.live_comm = comm;
    gmpi_thread.live_gen = gen;
  }
  return live;
}

void gmpi_call_begin_nocomm(const char *func) { gmpi_call_begin(func, -1); }

gmpi_status_t gmpi_comm_enter_local(const char *func, gmpi_comm_t comm) {
  if (!comm) {
    gmpi_call_begin(func, -1);
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'comm' is NULL");
  }
  if (!gmpi_comm_live_as_last(comm) && !gmpi_comm_is_live(comm)) {
    gmpi_call_begin(func, -1);
    return gmpi_error(GMPI_ERR_INVALID_ARG,
                      "argument 'comm' = %p is not a live communicator (finalized, or never "
                      "returned by gmpi_init/gmpi_comm_split)",
                      (void *)comm);
  }
  gmpi_call_begin(func, comm->rank);
  GMPI_TRACE("%s", func); /* the public call; its operation's line follows (flight record) */
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_comm_enter_asked(const char *func, gmpi_comm_t comm) {
  GMPI_CHECK(gmpi_comm_enter_local(func, comm));
  if (comm->failure != GMPI_SUCCESS)
    return gmpi_error(GMPI_ERR_STATE,
                      "the communicator failed earlier (%s); only gmpi_finalize (and the local "
                      "memory calls: gmpi_mem_is_device, _copy, _free, gmpi_comm_mem_usage) is "
                      "allowed",
                      gmpi_strerror(comm->failure));
  return GMPI_SUCCESS;
}

void gmpi_comm_fail(gmpi_comm_t comm, gmpi_status_t why) {
  if (comm->failure == GMPI_SUCCESS) comm->failure = why;
}
