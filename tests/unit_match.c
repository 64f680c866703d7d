/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI matching rules in core/match.c, without MPI: FIFO per (source, tag), wildcards take the
 * earliest message, posted receives are served in posting order, a look takes nothing, cancel
 * removes one. */
#include <stdio.h>

#include "unit_util.h"

#include "../src/core/match.h"

static gmpi_match_msg_t msg(int source, int tag, unsigned long long seq) {
  return (gmpi_match_msg_t){.source = source, .tag = tag, .bytes = 8, .seq = seq};
}

int main(void) {
  gmpi_match_t m = {0};
  /* Unexpected messages: from 1 tag 1, from 1 tag 2, from 2 tag 1 (arrival order). */
  gmpi_match_msg_t a = msg(1, 1, 0), b = msg(1, 2, 1), c = msg(2, 1, 0);
  CHECK_EQ(gmpi_match_arrive(&m, &a) == NULL, 1);
  CHECK_EQ(gmpi_match_arrive(&m, &b) == NULL, 1);
  CHECK_EQ(gmpi_match_arrive(&m, &c) == NULL, 1);
  /* A receive for tag 2 skips the earlier tag-1 message (out-of-order tags). */
  gmpi_match_recv_t r_tag2 = {.source = 1, .tag = 2};
  CHECK_EQ(gmpi_match_post(&m, &r_tag2) == &b, 1);
  /* ANY_SOURCE + tag 1 takes the earliest arrival: from 1, not from 2. */
  gmpi_match_recv_t r_any_src = {.source = GMPI_ANY_SOURCE, .tag = 1};
  CHECK_EQ(gmpi_match_post(&m, &r_any_src) == &a, 1);
  /* ANY_TAG from 2 takes c. Nothing is left. */
  gmpi_match_recv_t r_any_tag = {.source = 2, .tag = GMPI_ANY_TAG};
  CHECK_EQ(gmpi_match_post(&m, &r_any_tag) == &c, 1);
  CHECK_EQ(m.unexpected_head == NULL, 1);

  /* Posted receives: two for (3, 5), one wildcard; messages are served in posting order. */
  gmpi_match_recv_t p1 = {.source = 3, .tag = 5}, p2 = {.source = GMPI_ANY_SOURCE, .tag = 5},
                    p3 = {.source = 3, .tag = 5};
  CHECK_EQ(gmpi_match_post(&m, &p1) == NULL, 1);
  CHECK_EQ(gmpi_match_post(&m, &p2) == NULL, 1);
  CHECK_EQ(gmpi_match_post(&m, &p3) == NULL, 1);
  /* Looking does not take: (3, 5) and (4, 5) would match, (3, 6) would not. */
  CHECK_EQ(gmpi_match_would_take(&m, 3, 5), 1);
  CHECK_EQ(gmpi_match_would_take(&m, 4, 5), 1);
  CHECK_EQ(gmpi_match_would_take(&m, 3, 6), 0);
  CHECK_EQ(m.posted_head == &p1, 1);
  gmpi_match_msg_t d = msg(3, 5, 0), e = msg(4, 5, 0), f = msg(3, 5, 1), g = msg(3, 6, 2);
  CHECK_EQ(gmpi_match_arrive(&m, &d) == &p1, 1);
  CHECK_EQ(gmpi_match_arrive(&m, &e) == &p2, 1);  /* the wildcard, not p3 (wrong source) */
  CHECK_EQ(gmpi_match_arrive(&m, &g) == NULL, 1); /* tag 6: nobody wants it */
  CHECK_EQ(gmpi_match_arrive(&m, &f) == &p3, 1);
  /* Cancel: a posted receive disappears, a second cancel finds nothing. */
  gmpi_match_recv_t p4 = {.source = 9, .tag = 9};
  CHECK_EQ(gmpi_match_post(&m, &p4) == NULL, 1);
  CHECK_EQ(gmpi_match_cancel(&m, &p4), 1);
  CHECK_EQ(gmpi_match_cancel(&m, &p4), 0);
  gmpi_match_msg_t h = msg(9, 9, 0);
  CHECK_EQ(gmpi_match_arrive(&m, &h) == NULL, 1);
  /* g and h wait, in arrival order. */
  CHECK_EQ(m.unexpected_head == &g, 1);
  CHECK_EQ(m.unexpected_tail == &h, 1);
  printf("unit_match: %s (%d failed checks)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
