/* The watchdog: bounds the one wait gmpi does not poll -- a blocking MPI collective on host
 * buffers, which is how the host path runs at MPI's speed (no arrival gate, no nonblocking
 * collective polled). Each comm marks when it enters and leaves such a call (two relaxed
 * atomic stores, no clock, no lock); a helper thread looks at the marks a few times per
 * GMPI_TIMEOUT, and a comm that stays inside one call for longer than GMPI_TIMEOUT ends the job
 * with a diagnosis naming the call, its count and the flight record. The thread calls no MPI
 * function unless MPI granted MPI_THREAD_MULTIPLE (core/oob.h's gmpi_oob_end_job decides).
 * GMPI_TIMEOUT_ACTION=status replaces this by polled collectives that return
 * GMPI_ERR_TIMEOUT instead (docs/reliability.md); the one blocking call left then is
 * gmpi_comm_split's MPI_Comm_split (MPI has no nonblocking split), watched in both actions. */
#ifndef GMPI_CORE_WATCHDOG_H
#define GMPI_CORE_WATCHDOG_H

#include <stdatomic.h>
#include <stddef.h>

#include "gmpi.h"

/* A comm's mark: odd while inside a watched call. what/count describe that call. */
typedef struct {
  atomic_ulong mark;
  const char *_Atomic what;
  atomic_size_t count;
} gmpi_watch_t;

/* Watch comm from now on (starts the thread with the first comm); no-op when its timeout is 0.
 * Under GMPI_TIMEOUT_ACTION=status only calls without a nonblocking form are marked. Cannot fail:
 * without memory or a thread the comm is left unwatched, with a warning. */
void gmpi_watchdog_add(gmpi_comm_t comm);
/* Stop watching comm (the last one stops the thread). */
void gmpi_watchdog_remove(gmpi_comm_t comm);

/* Around a blocking MPI call on comm: what names it for the diagnosis. */
void gmpi_watch_enter(gmpi_comm_t comm, const char *what, size_t count);
void gmpi_watch_exit(gmpi_comm_t comm);

#endif
