/* SPDX-License-Identifier: BSD-3-Clause */
#include "wait.h"

#include <sched.h>
#include <time.h>

#include "progress.h"

double gmpi_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The clock is first read at the 64th poll, not at the start: most waits end sooner (a
 * clock read is a sizable part of a small message's cost), and a deadline a few polls late
 * is still GMPI_TIMEOUT to within microseconds. */
#define DEADLINE_UNREAD (-1.0)

void gmpi_deadline_start(gmpi_deadline_t *d, double timeout_s) {
  d->timeout = timeout_s;
  d->deadline = timeout_s > 0 ? DEADLINE_UNREAD : 0;
  d->spins = 0;
  d->tests = 0;
}

/* Every bounded loop in gmpi comes here (with GMPI_TIMEOUT=0 too): the one place where a
 * rank waiting on anything keeps every engine moving, as MPI's progress rule requires. Each
 * loop's own test drives the engine it waits on (an MPI test, the envelope engine's pass), so
 * the others are driven at one poll in GMPI_DRIVE_OTHERS_EVERY: a pass over every busy comm's
 * engine -- an MPI_Test on each one's channel -- at every spin lengthened a small message's
 * wait by as many. Once the wait yields the core, at every poll. */
static int poll_once(gmpi_deadline_t *d, int drive) {
  if (drive) gmpi_progress_all();
  gmpi_polls++;
  d->spins++;
  /* Spin hot for the first polls (latency), then share the core (oversubscribed runs). */
  if (d->spins > 2000) sched_yield();
  if (d->deadline == 0 || (d->spins & 63u) != 0) return 0;
  double now = gmpi_now();
  if (d->deadline == DEADLINE_UNREAD) d->deadline = now + d->timeout;
  return now > d->deadline;
}

int gmpi_deadline_poll(gmpi_deadline_t *d) {
  return poll_once(d, d->spins % GMPI_DRIVE_OTHERS_EVERY == 0 || d->spins > 2000);
}

int gmpi_deadline_poll_passive(gmpi_deadline_t *d) {
  /* Once a wait yields the core (a long one), each test is a whole poll again: a yield can take
   * a scheduler slice, so the clock must be read as often as in gmpi_deadline_poll. Its test
   * drives nothing, so every poll drives every engine. */
  if (d->spins > 2000 || ++d->tests % GMPI_PASSIVE_TESTS == 0) return poll_once(d, 1);
  return 0;
}
