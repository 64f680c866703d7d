/* SPDX-License-Identifier: BSD-3-Clause */
#include "flight.h"

#include <stdlib.h>

#include "log.h"

static const char *const state_name[] = {[GMPI_FLIGHT_STARTED] = "started",
                                         [GMPI_FLIGHT_DONE] = "done",
                                         [GMPI_FLIGHT_FAILED] = "failed"};

/* Keep nothing: every operation writes the one slot f->none. */
static void keep_none(gmpi_flight_t *f) {
  f->ring = &f->none;
  f->cap = 0;
  f->mask = 0;
}

gmpi_status_t gmpi_flight_init(gmpi_flight_t *f, int cap) {
  uint64_t slots = 1;
  f->next_seq = 1;
  keep_none(f);
  if (cap <= 0) return GMPI_SUCCESS;
  while (slots < (uint64_t)cap)
    slots *= 2; /* a mask, not a division, on every operation's path */
  gmpi_flight_entry_t *ring = calloc((size_t)slots, sizeof(*ring));
  if (!ring) return GMPI_ERR_NO_MEMORY;
  f->ring = ring;
  f->cap = cap;
  f->mask = slots - 1;
  return GMPI_SUCCESS;
}

void gmpi_flight_free(gmpi_flight_t *f) {
  if (f->ring != &f->none) free(f->ring);
  keep_none(f);
}

void gmpi_flight_trace_start(uint64_t seq, const char *what, size_t count, int peer, int tag) {
  /* GMPI_DEBUG=trace: every operation's arguments here, its outcome in gmpi_flight_trace_end. */
  GMPI_TRACE("#%llu %s count %zu peer/root %d tag %d: started", (unsigned long long)seq, what,
             count, peer, tag);
}

void gmpi_flight_trace_end(uint64_t seq, gmpi_status_t status) {
  GMPI_TRACE("#%llu %s", (unsigned long long)seq,
             status == GMPI_SUCCESS ? "done" : gmpi_status_name(status));
}

void gmpi_flight_dump(const gmpi_flight_t *f, const char *why) {
  if (!gmpi_log_enabled(GMPI_LOG_INFO) || f->cap == 0) return;
  gmpi_log(GMPI_LOG_INFO, "flight record (%s): last %d operations, oldest first", why, f->cap);
  uint64_t first = f->next_seq > (uint64_t)f->cap ? f->next_seq - (uint64_t)f->cap : 1;
  for (uint64_t s = first; s < f->next_seq; s++) {
    const gmpi_flight_entry_t *e = &f->ring[s & f->mask];
    if (e->seq != s) continue;
    gmpi_log(GMPI_LOG_INFO, "  #%llu %-15s count %zu peer/root %d tag %d: %s%s%s",
             (unsigned long long)e->seq, e->what, e->count, e->peer, e->tag, state_name[e->state],
             e->state == GMPI_FLIGHT_FAILED ? " " : "",
             e->state == GMPI_FLIGHT_FAILED ? gmpi_strerror(e->status) : "");
  }
}
