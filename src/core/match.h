/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI message matching, without MPI: posted receives and unexpected messages in the order
 * MPI defines. A message matches the earliest posted receive that accepts its (source, tag);
 * a new receive matches the earliest unexpected message it accepts. Messages of one source
 * arrive in the sender's order, so non-overtaking holds. The envelope engine (envelope.c) and
 * the plan compiler use it; tests/unit_match.c checks it with no MPI at all. */
#ifndef GMPI_CORE_MATCH_H
#define GMPI_CORE_MATCH_H

#include <stddef.h>
#include <stdint.h>

#include "gmpi.h"

/* A message whose envelope is known. */
typedef struct gmpi_match_msg {
  int source, tag;
  size_t bytes;
  int dtype;                   /* the sender's dtype, for GMPI_CHECK */
  uint64_t seq;                /* per (source -> this rank) order, from 0 */
  struct gmpi_match_msg *next; /* unexpected queue */
} gmpi_match_msg_t;

/* A posted receive. */
typedef struct gmpi_match_recv {
  int source, tag; /* may be GMPI_ANY_SOURCE / GMPI_ANY_TAG */
  struct gmpi_match_recv *next;
} gmpi_match_recv_t;

typedef struct {
  gmpi_match_recv_t *posted_head, *posted_tail;
  gmpi_match_msg_t *unexpected_head, *unexpected_tail;
} gmpi_match_t;

int gmpi_match_accepts(int want_source, int want_tag, int source, int tag);

/* A message arrived: returns the receive it matches (removed from the posted queue), or
 * NULL after queueing it as unexpected. */
gmpi_match_recv_t *gmpi_match_arrive(gmpi_match_t *m, gmpi_match_msg_t *msg);
/* A receive is posted: returns the message it matches (removed from the unexpected queue),
 * or NULL after queueing it as posted. */
gmpi_match_msg_t *gmpi_match_post(gmpi_match_t *m, gmpi_match_recv_t *recv);
/* Would a message from source with tag match a posted receive now? (Nothing is changed.) */
int gmpi_match_would_take(const gmpi_match_t *m, int source, int tag);
/* Remove a receive that will not complete (abandoned); 1 if it was queued. */
int gmpi_match_cancel(gmpi_match_t *m, gmpi_match_recv_t *recv);

#endif
