/* SPDX-License-Identifier: BSD-3-Clause */
/* Progress everywhere. MPI's progress rule says a send completes once its receive is posted,
 * whatever else the receiving rank is doing. gmpi's envelope engines only move when called,
 * so every engine registers here and every wait inside gmpi (p2p waits, collectives, gates,
 * plan run and compile, split, out-of-band exchanges) calls gmpi_progress_all() while it
 * waits (core/wait.h: at its first poll and one in GMPI_DRIVE_OTHERS_EVERY after), which
 * drives the engines that say they have work. Core knows the engines only as (function,
 * context, flag) triples. */
#ifndef GMPI_CORE_PROGRESS_H
#define GMPI_CORE_PROGRESS_H

#include <stdatomic.h>
#include <stdint.h>

#include "gmpi.h"
#include "tls.h"

typedef gmpi_status_t (*gmpi_progress_fn)(void *ctx);

/* An engine's say in whether waits drive it: its bit in the registry's map of engines with
 * work. A wait finds the engines to drive by the map's words, 64 engines a load, so a
 * program's many idle comms cost it next to nothing. Written by its engine under the engine's
 * own lock (gmpi_progress_want); word and bit are the registry's. */
typedef struct {
  _Atomic uint64_t *word; /* its word in the map while registered, else NULL */
  uint64_t bit;
  int on; /* what the engine said last */
} gmpi_progress_flag_t;

/* Register an engine; it is called by every wait until removed -- while its flag is on when
 * flag is not NULL (gmpi_progress_want), always when it is NULL. flag stays the caller's and
 * must live until gmpi_progress_remove. */
gmpi_status_t gmpi_progress_add(gmpi_progress_fn fn, void *ctx, gmpi_progress_flag_t *flag);
void gmpi_progress_remove(gmpi_progress_fn fn, void *ctx);
/* The engine says whether a pass could move anything. Only a change touches the map: one
 * atomic or/and, the engine's lock held. Before registration and after removal the flag is
 * only remembered. */
static inline void gmpi_progress_want(gmpi_progress_flag_t *flag, int on) {
  if (flag->on == on) return;
  flag->on = on;
  if (!flag->word) return;
  if (on)
    atomic_fetch_or_explicit(flag->word, flag->bit, memory_order_relaxed);
  else
    atomic_fetch_and_explicit(flag->word, ~flag->bit, memory_order_relaxed);
}
/* 1 when any engine is registered: waits that would block inside MPI must poll instead. */
extern atomic_int gmpi_progress_registered; /* engines registered (progress.c) */
static inline int gmpi_progress_needed(void) {
  return atomic_load_explicit(&gmpi_progress_registered, memory_order_acquire);
}
/* This thread's polls (core/wait.h) and drives of every engine so far, each counted as it
 * ends: between two of them -- one spin of a wait, its tests then its poll -- it stays the
 * same, so an engine can tell a second pass in that spin from the next one's first. A
 * program's own test loop drives every engine at each call, so it counts there too. */
extern _Thread_local unsigned long gmpi_polls GMPI_TLS_HOT;

/* Drive every registered engine once. Re-entrant calls (an engine's own wait) return at once.
 * An engine's failure is logged and reported to that engine's comm, not to the caller, whose
 * wait is about something else. */
void gmpi_progress_all(void);

#endif
