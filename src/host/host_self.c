/* SPDX-License-Identifier: BSD-3-Clause */
/* Messages to one's own rank in native mode, matched by gmpi instead of MPI: Open MPI 4.1's
 * self transport gets truncation wrong (reports success, or writes past the receive buffer).
 * MPI's matching rules hold: a receive takes the first queued message whose tag it matches
 * (send order), a message goes to the first pending receive that matches it (post order).
 * A message of at most GMPI_ENV_EAGER_BYTES is copied when queued, so its send completes at
 * once; a larger one stays in the sender's buffer and its send completes when a receive takes
 * it, like MPI's rendezvous (a blocking large self-send before its receive times out: MPI
 * calls that program unsafe). A message longer than the receive buffer writes nothing to it,
 * as in the envelope engine; the receive ends in GMPI_ERR_TRUNCATE, the send succeeds. */
#include <stdlib.h>
#include <string.h>

#include "../core/comm.h"
#include "../core/dtype.h"
#include "../core/envelope.h"
#include "../core/error.h"
#include "../core/request.h"
#include "../mpi/mpi_check.h"
#include "host_native.h"

static int tag_matches(int wanted, int tag) { return wanted == GMPI_ANY_TAG || wanted == tag; }

/* A self message's particulars, wherever its data lives. */
typedef struct {
  int tag;
  int dtype; /* the sender's */
  const void *data;
  size_t bytes;
} self_msg_view_t;

/* Give a self message to a receive: all of it, or nothing when it does not fit. */
static void deliver(const host_native_t *nat, gmpi_request_t recv, const self_msg_view_t *m) {
  host_req_t *cr = recv->be;
  int fits = m->bytes <= gmpi_p2p_bytes(&recv->args);
  int wanted = !nat->checked || m->dtype == (int)recv->args.dtype; /* else a mismatch */
  if (fits && wanted && m->bytes) memcpy(recv->args.buf, m->data, m->bytes);
  cr->end = (host_recv_end_t){.source = recv->comm->rank,
                              .tag = m->tag,
                              .bytes = m->bytes,
                              .truncated = !fits,
                              .mpi_rc = MPI_SUCCESS,
                              .checked = nat->checked,
                              .sender_dtype = m->dtype};
  cr->complete = 1;
}

static void complete_send(gmpi_request_t send) {
  host_req_t *cr = send->be;
  cr->queued = NULL;
  cr->complete = 1;
}

/* ---- receives waiting for a self message ------------------------------------------------- */

void gmpi_host_self_pending_add(host_native_t *nat, gmpi_request_t req) {
  host_req_t *cr = req->be;
  cr->pending = 1;
  cr->next_pending = NULL;
  *nat->pending_tail = req;
  nat->pending_tail = &cr->next_pending;
}

/* Remove the receive that *link points at from the list. */
static void unlink_pending(host_native_t *nat, gmpi_request_t *link) {
  host_req_t *cr = (*link)->be;
  *link = cr->next_pending;
  if (nat->pending_tail == &cr->next_pending) nat->pending_tail = link;
  cr->pending = 0;
  cr->next_pending = NULL;
}

void gmpi_host_self_pending_remove(host_native_t *nat, gmpi_request_t req) {
  host_req_t *cr = req->be;
  if (!cr || !cr->pending) return;
  for (gmpi_request_t *link = &nat->pending_head; *link;
       link = &((host_req_t *)(*link)->be)->next_pending)
    if (*link == req) {
      unlink_pending(nat, link);
      return;
    }
}

/* A pending ANY_SOURCE receive also waits in MPI. Take it back (gmpi_host_take_back): taken
 * means no remote message reached it, so a self message may have it (*claimed = 1); otherwise
 * MPI matched a remote message first, and the receive ends with that one (*claimed = 0). */
static gmpi_status_t claim_from_mpi(gmpi_request_t recv, int *claimed) {
  host_req_t *cr = recv->be;
  *claimed = 1;
  if (cr->mpi == MPI_REQUEST_NULL) return GMPI_SUCCESS; /* a receive from own rank only */
  GMPI_CHECK(gmpi_host_take_back(recv->comm, &cr->mpi, cr->type, claimed, &cr->end));
  if (*claimed) return GMPI_SUCCESS;
  if (cr->framed) gmpi_host_unframe(&cr->frame, &recv->args, &cr->end);
  cr->complete = 1;
  return GMPI_SUCCESS;
}

/* The first pending receive (post order) that takes a message with tag, out of the list; NULL
 * when none does. Receives that MPI matched meanwhile leave the list on the way. */
static gmpi_status_t take_pending_receive(host_native_t *nat, int tag, gmpi_request_t *found) {
  *found = NULL;
  gmpi_request_t *link = &nat->pending_head;
  while (*link) {
    gmpi_request_t recv = *link;
    if (!tag_matches(recv->args.tag, tag)) {
      link = &((host_req_t *)recv->be)->next_pending;
      continue;
    }
    int claimed;
    GMPI_CHECK(claim_from_mpi(recv, &claimed));
    unlink_pending(nat, link); /* *link is the next receive now */
    if (claimed) {
      *found = recv;
      return GMPI_SUCCESS;
    }
  }
  return GMPI_SUCCESS;
}

/* ---- the queue of unmatched self messages ------------------------------------------------ */

static gmpi_status_t enqueue(host_native_t *nat, gmpi_request_t send) {
  size_t bytes = gmpi_p2p_bytes(&send->args);
  host_self_msg_t *m = calloc(1, sizeof(*m));
  if (!m) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a message to self");
  m->tag = send->args.tag;
  m->bytes = bytes;
  m->elem_size = gmpi_dtype_size(send->args.dtype);
  m->dtype = (int)send->args.dtype;
  if (bytes > GMPI_ENV_EAGER_BYTES || send->args.sync) {
    m->send = send; /* the data stays in the sender's buffer until a receive takes it */
    ((host_req_t *)send->be)->queued = m;
  } else if (bytes) {
    m->copy = malloc(bytes);
    if (!m->copy) {
      free(m);
      return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for an eager message to self");
    }
    memcpy(m->copy, send->args.buf, bytes);
  }
  if (!m->send) complete_send(send);
  *nat->self_tail = m;
  nat->self_tail = &m->next;
  return GMPI_SUCCESS;
}

/* Remove the message that *link points at from the queue and free it. */
static void drop_msg(host_native_t *nat, host_self_msg_t **link) {
  host_self_msg_t *m = *link;
  *link = m->next;
  if (nat->self_tail == &m->next) nat->self_tail = link;
  free(m->copy);
  free(m);
}

gmpi_status_t gmpi_host_self_send(host_native_t *nat, gmpi_request_t req) {
  gmpi_request_t recv;
  GMPI_CHECK(take_pending_receive(nat, req->args.tag, &recv));
  if (!recv) return enqueue(nat, req);
  const gmpi_p2p_args_t *a = &req->args;
  deliver(nat, recv, &(self_msg_view_t){a->tag, (int)a->dtype, a->buf, gmpi_p2p_bytes(a)});
  complete_send(req);
  return GMPI_SUCCESS;
}

void gmpi_host_self_take(host_native_t *nat, gmpi_request_t req, int *matched) {
  *matched = 0;
  for (host_self_msg_t **link = &nat->self_head; *link; link = &(*link)->next) {
    host_self_msg_t *m = *link;
    if (!tag_matches(req->args.tag, m->tag)) continue;
    deliver(nat, req,
            &(self_msg_view_t){m->tag, m->dtype, m->send ? m->send->args.buf : m->copy, m->bytes});
    if (m->send) complete_send(m->send);
    drop_msg(nat, link);
    *matched = 1;
    return;
  }
}

void gmpi_host_self_forget_send(host_native_t *nat, gmpi_request_t req) {
  host_req_t *cr = req->be;
  if (!cr || !cr->queued) return;
  for (host_self_msg_t **link = &nat->self_head; *link; link = &(*link)->next)
    if (*link == cr->queued) {
      drop_msg(nat, link);
      break;
    }
  cr->queued = NULL;
}

void gmpi_host_self_free_all(host_native_t *nat) {
  while (nat->self_head) {
    if (nat->self_head->send) ((host_req_t *)nat->self_head->send->be)->queued = NULL;
    drop_msg(nat, &nat->self_head);
  }
  while (nat->pending_head)
    unlink_pending(nat, &nat->pending_head);
}

void gmpi_host_self_probe(host_native_t *nat, int me, int tag, int *flag,
                          gmpi_msg_status_t *status) {
  *flag = 0;
  for (host_self_msg_t *m = nat->self_head; m; m = m->next) {
    if (!tag_matches(tag, m->tag)) continue;
    *status = (gmpi_msg_status_t){me, m->tag, m->bytes / m->elem_size};
    *flag = 1;
    return;
  }
}
