/* SPDX-License-Identifier: BSD-3-Clause */
/* Progress everywhere. MPI's progress rule says a send completes once its receive is posted,
 * whatever else the receiving rank is doing. gmpi's envelope engines only move when called,
 * so every engine registers here and every wait inside gmpi (p2p waits, collectives, gates,
 * plan run and compile, split, out-of-band exchanges) calls gmpi_progress_all() while it
 * waits (core/wait.h: at its first poll and one in GMPI_DRIVE_OTHERS_EVERY after), which
 * drives the engines that say they have work. Core knows the engines only as (function,
 * context, wanted) triples. */
#ifndef GMPI_CORE_PROGRESS_H
#define GMPI_CORE_PROGRESS_H

#include <stdatomic.h>

#include "gmpi.h"

typedef gmpi_status_t (*gmpi_progress_fn)(void *ctx);

/* Register an engine; it is called by every wait until removed -- while *wanted is nonzero
 * when wanted is not NULL: the engine says there whether a pass could move anything, so that
 * an idle one costs a wait one load (a program's many comms, each with its engine). */
gmpi_status_t gmpi_progress_add(gmpi_progress_fn fn, void *ctx, const atomic_int *wanted);
void gmpi_progress_remove(gmpi_progress_fn fn, void *ctx);
/* 1 when any engine is registered: waits that would block inside MPI must poll instead. */
extern atomic_int gmpi_progress_registered; /* engines registered (progress.c) */
static inline int gmpi_progress_needed(void) {
  return atomic_load_explicit(&gmpi_progress_registered, memory_order_acquire);
}
/* This thread's polls (core/wait.h) and drives of every engine so far, each counted as it
 * ends: between two of them -- one spin of a wait, its tests then its poll -- it stays the
 * same, so an engine can tell a second pass in that spin from the next one's first. A
 * program's own test loop drives every engine at each call, so it counts there too. */
extern _Thread_local unsigned long gmpi_polls;

/* Drive every registered engine once. Re-entrant calls (an engine's own wait) return at once.
 * An engine's failure is logged and reported to that engine's comm, not to the caller, whose
 * wait is about something else. */
void gmpi_progress_all(void);

#endif
