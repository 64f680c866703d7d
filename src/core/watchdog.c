/* SPDX-License-Identifier: BSD-3-Clause */
#include "watchdog.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "comm.h"
#include "error.h"
#include "log.h"
#include "oob.h"
#include "wait.h"

/* What the thread remembers of each watched comm between looks. */
typedef struct {
  gmpi_comm_t comm;
  unsigned long last_mark;
  double inside_since; /* when last_mark (odd) was first seen */
} watched_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static watched_t *watched;
static int n_watched, cap_watched;
static int running, stopping;
static pthread_t thread;

/* Every comm with a timeout: under GMPI_TIMEOUT_ACTION=status the collectives are polled and
 * never marked, but the calls MPI has no nonblocking form of (gmpi_comm_split's
 * MPI_Comm_split) still are. */
static int watches(gmpi_comm_t comm) { return comm->cfg.timeout_s > 0; }

/* A comm has been inside one call for longer than its timeout: say so, end the job. The other
 * ranks' watchdogs say the same of theirs, so every rank names the call it is stuck in. */
void gmpi_watchdog_end_job(gmpi_comm_t comm, const char *what, size_t count, double inside) {
  int status_mode = comm->cfg.timeout_action == GMPI_TIMEOUT_STATUS;
  gmpi_log(GMPI_LOG_WARN,
           "watchdog: rank %d of a %d-rank comm has been inside %s (count %zu) for %.1f s, over "
           "GMPI_TIMEOUT = %g s: a rank is not taking part (no matching send or receive; a "
           "different collective), or passed memory of another kind (device memory here, host "
           "memory there: GMPI_CHECK=1 names the rank). Ending the job (%s; docs/reliability.md)",
           comm->rank, comm->size, what ? what : "a collective", count, inside, comm->cfg.timeout_s,
           status_mode ? "nothing can interrupt this call to return a status (MPI has no "
                         "nonblocking form of it, or it is inside NCCL), also under "
                         "GMPI_TIMEOUT_ACTION=status"
                       : "GMPI_TIMEOUT_ACTION=status returns GMPI_ERR_TIMEOUT instead, at a "
                         "cost");
  gmpi_flight_dump(&comm->flight, "watchdog");
  comm->oob.ops->end_job(70); /* EX_SOFTWARE; not 124, which timeout(1) reports for its own kill */
}

static void fire(gmpi_comm_t comm, double inside) {
  const char *what = atomic_load_explicit(&comm->watch.what, memory_order_relaxed);
  int source = atomic_load_explicit(&comm->watch.source, memory_order_relaxed);
  int dest = atomic_load_explicit(&comm->watch.dest, memory_order_relaxed);
  char p2p[192], from[64] = "", to[64] = "";
  if (source >= 0) /* point to point: the ranks and tags it waits for */
    snprintf(from, sizeof(from), " from rank %d (tag %d)", source,
             atomic_load_explicit(&comm->watch.recv_tag, memory_order_relaxed));
  if (dest >= 0)
    snprintf(to, sizeof(to), "%s to rank %d (tag %d)", source >= 0 ? " and" : "", dest,
             atomic_load_explicit(&comm->watch.send_tag, memory_order_relaxed));
  if (source >= 0 || dest >= 0) {
    snprintf(p2p, sizeof(p2p), "%s%s%s", what ? what : "a call", from, to);
    what = p2p;
  }
  gmpi_watchdog_end_job(comm, what, atomic_load_explicit(&comm->watch.count, memory_order_relaxed),
                        inside);
}

/* One look at every comm; returns the period until the next (a quarter of the shortest
 * timeout, between 10 ms and 1 s). */
static double look(double now) {
  double period = 1.0;
  for (int i = 0; i < n_watched; i++) {
    watched_t *w = &watched[i];
    unsigned long mark = atomic_load_explicit(&w->comm->watch.mark, memory_order_acquire);
    double timeout = w->comm->cfg.timeout_s;
    period = timeout / 4 < period ? timeout / 4 : period;
    if (!(mark & 1) || mark != w->last_mark) {
      w->last_mark = mark;
      w->inside_since = now;
      continue;
    }
    if (now - w->inside_since > timeout) fire(w->comm, now - w->inside_since);
  }
  return period < 0.01 ? 0.01 : period;
}

static void *run(void *arg) {
  (void)arg;
  pthread_mutex_lock(&lock);
  while (!stopping) {
    double period = look(gmpi_now());
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long ns = until.tv_nsec + (long)(period * 1e9);
    until.tv_sec += ns / 1000000000L;
    until.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(&wake, &lock, &until);
  }
  pthread_mutex_unlock(&lock);
  return NULL;
}

void gmpi_watchdog_add(gmpi_comm_t comm) {
  /* once only: a second entry would outlive the comm when the first is removed */
  if (!watches(comm) || atomic_load_explicit(&comm->watch.watched, memory_order_relaxed)) return;
  const char *failed = NULL;
  pthread_mutex_lock(&lock);
  if (n_watched == cap_watched) {
    int cap = cap_watched ? 2 * cap_watched : 8;
    watched_t *grown = realloc(watched, (size_t)cap * sizeof(*grown));
    if (!grown) {
      failed = "no memory for its list";
      goto unlock;
    }
    watched = grown;
    cap_watched = cap;
  }
  comm->watch.slot = n_watched;
  watched[n_watched++] = (watched_t){comm, 0, gmpi_now()};
  if (!running) {
    stopping = 0;
    if (pthread_create(&thread, NULL, run, NULL) != 0) {
      n_watched--;
      failed = "its thread could not start";
      goto unlock;
    }
    running = 1;
  }
  atomic_store_explicit(&comm->watch.watched, 1, memory_order_relaxed);
unlock:
  pthread_mutex_unlock(&lock);
  /* Not fatal, and not a reason to change how this rank runs collectives (every rank must run
   * them alike): the comm goes on unwatched, and says so. */
  if (failed)
    gmpi_log(GMPI_LOG_WARN,
             "watchdog: %s; blocking host collectives of this comm are not bounded by "
             "GMPI_TIMEOUT (its blocking point to point stays polled)",
             failed);
}

void gmpi_watchdog_remove(gmpi_comm_t comm) {
  atomic_store_explicit(&comm->watch.watched, 0, memory_order_relaxed);
  pthread_mutex_lock(&lock);
  int i = comm->watch.slot; /* its own slot, or another comm's when it was never added */
  if (i >= 0 && i < n_watched && watched[i].comm == comm) {
    watched[i] = watched[--n_watched];
    if (i < n_watched) watched[i].comm->watch.slot = i;
  }
  int stop = running && n_watched == 0;
  if (stop) {
    stopping = 1;
    running = 0;
    pthread_cond_signal(&wake);
  }
  pthread_mutex_unlock(&lock);
  if (stop) pthread_join(thread, NULL);
}
