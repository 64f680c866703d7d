/* SPDX-License-Identifier: BSD-3-Clause */
/* The flight record: the last operations of a comm (sequence, kind, count, peer or root,
 * state), printed with GMPI_DEBUG=info when a timeout or mismatch makes the culprit matter. */
#ifndef GMPI_CORE_FLIGHT_H
#define GMPI_CORE_FLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "gmpi.h"
#include "log.h"

typedef enum { GMPI_FLIGHT_STARTED = 0, GMPI_FLIGHT_DONE, GMPI_FLIGHT_FAILED } gmpi_flight_state_t;

typedef struct {
  uint64_t seq;     /* per-comm operation number, from 1 */
  const char *what; /* "allreduce", "isend"... (static strings) */
  size_t count;     /* elements */
  int peer;         /* peer for p2p, root for rooted collectives, -1 otherwise */
  int tag;          /* p2p tag, -1 otherwise */
  gmpi_flight_state_t state;
  gmpi_status_t status; /* when failed */
} gmpi_flight_entry_t;

typedef struct {
  gmpi_flight_entry_t *ring; /* never NULL once initialized: &none when nothing is kept */
  int cap;                   /* operations kept (GMPI_FLIGHT_RECORDS); 0: none */
  uint64_t mask;             /* the ring holds a power of two >= cap entries: slot = seq & mask */
  uint64_t next_seq;
  /* The ring of a record that keeps nothing (GMPI_FLIGHT_RECORDS=0, no memory, freed): one
   * slot written and never read, so that recording tests nothing (two tests an operation). */
  gmpi_flight_entry_t none;
} gmpi_flight_t;

gmpi_status_t gmpi_flight_init(gmpi_flight_t *f, int cap);
void gmpi_flight_free(gmpi_flight_t *f);
/* GMPI_DEBUG=trace's lines of gmpi_flight_start and _end, out of line (rarely on). */
void gmpi_flight_trace_start(uint64_t seq, const char *what, size_t count, int peer, int tag);
void gmpi_flight_trace_end(uint64_t seq, gmpi_status_t status);

/* Record the start of an operation; returns its sequence number. Inline, as _end: every
 * operation records, and the record is a few stores (no clock read). */
static inline uint64_t gmpi_flight_start(gmpi_flight_t *f, const char *what, size_t count, int peer,
                                         int tag) {
  uint64_t seq = f->next_seq++;
  if (gmpi_log_tracing) gmpi_flight_trace_start(seq, what, count, peer, tag);
  f->ring[seq & f->mask] =
      (gmpi_flight_entry_t){.seq = seq, .what = what, .count = count, .peer = peer, .tag = tag};
  return seq;
}

/* Record its end (GMPI_SUCCESS or the failure). Entries already overwritten are ignored. */
static inline void gmpi_flight_end(gmpi_flight_t *f, uint64_t seq, gmpi_status_t status) {
  if (gmpi_log_tracing) gmpi_flight_trace_end(seq, status);
  gmpi_flight_entry_t *e = &f->ring[seq & f->mask];
  if (e->seq != seq) return;
  e->state = status == GMPI_SUCCESS ? GMPI_FLIGHT_DONE : GMPI_FLIGHT_FAILED;
  e->status = status;
}
/* Print the record at info level, oldest first. */
void gmpi_flight_dump(const gmpi_flight_t *f, const char *why);

#endif
