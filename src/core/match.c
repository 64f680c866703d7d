/* SPDX-License-Identifier: BSD-3-Clause */
#include "match.h"

int gmpi_match_accepts(int want_source, int want_tag, int source, int tag) {
  return (want_source == GMPI_ANY_SOURCE || want_source == source) &&
         (want_tag == GMPI_ANY_TAG || want_tag == tag);
}

gmpi_match_recv_t *gmpi_match_arrive(gmpi_match_t *m, gmpi_match_msg_t *msg) {
  gmpi_match_recv_t **link = &m->posted_head, *prev = NULL;
  for (gmpi_match_recv_t *r = m->posted_head; r; prev = r, link = &r->next, r = r->next) {
    if (!gmpi_match_accepts(r->source, r->tag, msg->source, msg->tag)) continue;
    *link = r->next;
    if (m->posted_tail == r) m->posted_tail = prev;
    r->next = NULL;
    return r;
  }
  msg->next = NULL;
  if (m->unexpected_tail)
    m->unexpected_tail->next = msg;
  else
    m->unexpected_head = msg;
  m->unexpected_tail = msg;
  return NULL;
}

gmpi_match_msg_t *gmpi_match_post(gmpi_match_t *m, gmpi_match_recv_t *recv) {
  gmpi_match_msg_t **link = &m->unexpected_head, *prev = NULL;
  for (gmpi_match_msg_t *u = m->unexpected_head; u; prev = u, link = &u->next, u = u->next) {
    if (!gmpi_match_accepts(recv->source, recv->tag, u->source, u->tag)) continue;
    *link = u->next;
    if (m->unexpected_tail == u) m->unexpected_tail = prev;
    u->next = NULL;
    return u;
  }
  recv->next = NULL;
  if (m->posted_tail)
    m->posted_tail->next = recv;
  else
    m->posted_head = recv;
  m->posted_tail = recv;
  return NULL;
}

int gmpi_match_would_take(const gmpi_match_t *m, int source, int tag) {
  for (const gmpi_match_recv_t *r = m->posted_head; r; r = r->next)
    if (gmpi_match_accepts(r->source, r->tag, source, tag)) return 1;
  return 0;
}

int gmpi_match_cancel(gmpi_match_t *m, gmpi_match_recv_t *recv) {
  gmpi_match_recv_t **link = &m->posted_head, *prev = NULL;
  for (gmpi_match_recv_t *r = m->posted_head; r; prev = r, link = &r->next, r = r->next) {
    if (r != recv) continue;
    *link = r->next;
    if (m->posted_tail == r) m->posted_tail = prev;
    return 1;
  }
  return 0;
}
