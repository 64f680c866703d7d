/* SPDX-License-Identifier: BSD-3-Clause */
/* The watchdog: bounds the waits gmpi does not poll -- a blocking MPI collective on host
 * buffers, and under GMPI_TIMEOUT_ACTION=end a blocking host send or receive with another rank
 * (host_exchange.c), which is how the host path runs at MPI's speed (no arrival gate, no
 * nonblocking call polled). Each comm marks when it enters and leaves such a call (two relaxed
 * atomic stores, no clock, no lock); a helper thread looks at the marks a few times per
 * GMPI_TIMEOUT, and a comm that stays inside one call for longer than GMPI_TIMEOUT ends the job
 * with a diagnosis naming the call, its count and the flight record. The thread calls no MPI
 * function unless MPI granted MPI_THREAD_MULTIPLE (the end_job of the comm's out-of-band
 * channel decides, core/oob.h).
 * GMPI_TIMEOUT_ACTION=status replaces this by polled collectives that return
 * GMPI_ERR_TIMEOUT instead (docs/reliability.md); the blocking calls left then are those
 * nothing can interrupt -- gmpi_comm_split's MPI_Comm_split (MPI has no nonblocking split) and
 * a blocking NCCL call on device buffers (an enqueue that waits for a lazy connection or a
 * full work queue; aborting its communicator while a thread is inside is unsafe) -- watched
 * in both actions. */
#ifndef GMPI_CORE_WATCHDOG_H
#define GMPI_CORE_WATCHDOG_H

#include <stdatomic.h>
#include <stddef.h>

#include "gmpi.h"

/* A comm's mark: odd while inside a watched call. what/count (and for point to point the
 * ranks and tags) describe that call. */
typedef struct {
  atomic_ulong mark;
  const char *_Atomic what;
  atomic_size_t count;
  atomic_int source, recv_tag; /* a receive's; source -1: none */
  atomic_int dest, send_tag;   /* a send's; dest -1: none */
  atomic_int watched;          /* the watchdog looks at this comm (gmpi_watchdog_add worked) */
  int slot; /* where the watchdog's list holds it, while watched (under the watchdog's lock) */
} gmpi_watch_t;

/* Watch comm from now on (starts the thread with the first comm); no-op when its timeout is 0.
 * Under GMPI_TIMEOUT_ACTION=status only calls without a nonblocking form are marked. Cannot fail:
 * without memory or a thread the comm is left unwatched, with a warning. */
void gmpi_watchdog_add(gmpi_comm_t comm);
/* Stop watching comm (the last one stops the thread). */
void gmpi_watchdog_remove(gmpi_comm_t comm);

/* One thread calls a comm at a time (MPI's rule for a communicator), so the mark has one
 * writer: a load and a release store, no read-modify-write. */
static inline void gmpi_watch_step(gmpi_watch_t *w) {
  unsigned long m = atomic_load_explicit(&w->mark, memory_order_relaxed);
  atomic_store_explicit(&w->mark, m + 1, memory_order_release);
}

/* Around a blocking point-to-point call on the comm whose mark w is, that gmpi cannot poll:
 * what names it for the diagnosis, with its receive's source and tag and its send's dest and
 * tag (-1 for a half it does not have). Inline: a small call's latency. */
static inline void gmpi_watch_enter_p2p(gmpi_watch_t *w, const char *what, size_t count, int source,
                                        int recv_tag, int dest, int send_tag) {
  atomic_store_explicit(&w->what, what, memory_order_relaxed);
  atomic_store_explicit(&w->count, count, memory_order_relaxed);
  atomic_store_explicit(&w->source, source, memory_order_relaxed);
  atomic_store_explicit(&w->recv_tag, recv_tag, memory_order_relaxed);
  atomic_store_explicit(&w->dest, dest, memory_order_relaxed);
  atomic_store_explicit(&w->send_tag, send_tag, memory_order_relaxed);
  gmpi_watch_step(w);
}
/* The same around any other blocking call. Under GMPI_TIMEOUT_ACTION=status mark only calls
 * nothing can interrupt (above). */
static inline void gmpi_watch_enter(gmpi_watch_t *w, const char *what, size_t count) {
  gmpi_watch_enter_p2p(w, what, count, -1, -1, -1, -1);
}
static inline void gmpi_watch_exit(gmpi_watch_t *w) { gmpi_watch_step(w); }
/* Whether the watchdog bounds the comm's watched calls: 0 when its timeout is 0 or the
 * watchdog could not take it (no memory, no thread), so that a caller can keep a wait it
 * polls. */
static inline int gmpi_watchdog_watches(gmpi_watch_t *w) {
  return atomic_load_explicit(&w->watched, memory_order_relaxed);
}

/* End the job now for a wait on comm that passed GMPI_TIMEOUT inside `what` (count elements)
 * after `inside` seconds: the watchdog's own diagnosis (the call, the flight record), for
 * waits that poll their own deadline under GMPI_TIMEOUT_ACTION=end. Never returns. */
void gmpi_watchdog_end_job(gmpi_comm_t comm, const char *what, size_t count, double inside)
    __attribute__((noreturn));

#endif
