/* SPDX-License-Identifier: BSD-3-Clause */
#include "comm.h"
#include "dtype.h"
#include "error.h"
#include "ops.h"
#include "progress.h"
#include "request.h"
#include "route.h"
#include "wait.h"

static gmpi_status_t check_peer(gmpi_comm_t comm, const gmpi_p2p_args_t *a) {
  int is_recv = a->dir == GMPI_P2P_RECV;
  const char *name = is_recv ? "source" : "dest";
  if ((is_recv && a->peer == GMPI_ANY_SOURCE) || a->peer == GMPI_PROC_NULL) return GMPI_SUCCESS;
  if (a->peer < 0 || a->peer >= comm->size)
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument '%s' = %d is out of range [0, %d)%s", name,
                      a->peer, comm->size,
                      is_recv ? ", not GMPI_ANY_SOURCE and not GMPI_PROC_NULL"
                              : " and not GMPI_PROC_NULL");
  return GMPI_SUCCESS;
}

/* The names of an operation's arguments in errors: a plain call's, or one half of
 * gmpi_sendrecv's (whose parameters say which half they belong to). */
typedef struct {
  const char *buf, *count, *dtype, *tag;
} p2p_names_t;
static const p2p_names_t plain_names = {"buf", "count", "dtype", "tag"};
static const p2p_names_t send_half = {"sendbuf", "sendcount", "sendtype", "sendtag"};
static const p2p_names_t recv_half = {"recvbuf", "recvcount", "recvtype", "recvtag"};

static gmpi_status_t check_tag(gmpi_comm_t comm, const gmpi_p2p_args_t *a, const char *name) {
  int is_recv = a->dir == GMPI_P2P_RECV;
  if (is_recv && a->tag == GMPI_ANY_TAG) return GMPI_SUCCESS;
  if (a->tag < 0 || a->tag > comm->tag_ub)
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument '%s' = %d is out of range [0, %d]%s", name,
                      a->tag, comm->tag_ub, is_recv ? " and not GMPI_ANY_TAG" : "");
  return GMPI_SUCCESS;
}

static gmpi_status_t validate(gmpi_comm_t comm, const gmpi_p2p_args_t *a, const p2p_names_t *n) {
  if (!gmpi_dtype_in_range(a->dtype))
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument '%s' = %d is not a gmpi_dtype_t", n->dtype,
                      (int)a->dtype);
  size_t bytes = 0;
  GMPI_CHECK(gmpi_count_bytes(a->count, a->dtype, 1, n->count, &bytes));
  if (bytes && !a->buf)
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument '%s' is NULL with %s %zu > 0", n->buf,
                      n->count, a->count);
  GMPI_CHECK(check_peer(comm, a));
  return check_tag(comm, a, n->tag);
}

gmpi_status_t gmpi_p2p_validate(gmpi_comm_t comm, const gmpi_p2p_args_t *a) {
  return validate(comm, a, &plain_names);
}

/* One look on each engine of the comm: host messages, then device ones. */
static gmpi_status_t probe_engines(gmpi_comm_t comm, int source, int tag, int *flag,
                                   gmpi_msg_status_t *status) {
  const gmpi_engine_t *engines[2] = {&comm->host_engine, &comm->device_engine};
  *flag = 0;
  for (int i = 0; i < 2 && !*flag; i++)
    if (engines[i]->p2p && engines[i]->p2p->probe)
      GMPI_CHECK(engines[i]->p2p->probe(engines[i]->p2p_state, comm, source, tag, flag, status));
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_p2p_probe(gmpi_comm_t comm, int source, int tag, int wait, int *flag,
                             gmpi_msg_status_t *status) {
  gmpi_p2p_args_t a = {.dir = GMPI_P2P_RECV, .dtype = GMPI_BYTE, .peer = source, .tag = tag};
  GMPI_CHECK(check_peer(comm, &a));
  GMPI_CHECK(check_tag(comm, &a, "tag"));
  if (comm->rec)
    return gmpi_error(GMPI_ERR_STATE, "cannot probe while the communicator records a plan");
  gmpi_msg_status_t found = gmpi_proc_null_status();
  int got = source == GMPI_PROC_NULL; /* MPI: a probe of PROC_NULL finds an empty message */
  gmpi_deadline_t d;
  gmpi_deadline_start(&d, comm->cfg.timeout_s);
  while (!got) {
    GMPI_CHECK(probe_engines(comm, source, tag, &got, &found));
    if (got) break;
    if (!wait) {
      gmpi_progress_all(); /* an iprobe loop is the caller's wait */
      break;
    }
    if (gmpi_deadline_poll(&d))
      return gmpi_error(GMPI_ERR_TIMEOUT,
                        "no message from %s%d with tag %d arrived within GMPI_TIMEOUT = %g s "
                        "(nothing was received; the communicator stays usable)",
                        source == GMPI_ANY_SOURCE ? "any source " : "rank ", source, tag,
                        comm->cfg.timeout_s);
  }
  if (flag) *flag = got;
  if (got && status) *status = found;
  return GMPI_SUCCESS;
}

/* Self messages and wildcard sources are matched with gmpi's own queues: never an exchange. */
static int other_rank(gmpi_comm_t comm, int peer) { return peer >= 0 && peer != comm->rank; }

/* "rank N", or GMPI_PROC_NULL's name, into buf. */
static const char *peer_text(int peer, char *buf, size_t cap) {
  if (peer == GMPI_PROC_NULL) return "GMPI_PROC_NULL";
  snprintf(buf, cap, "rank %d", peer);
  return buf;
}

static gmpi_status_t exchange_expired(gmpi_comm_t comm, uint64_t seq, const gmpi_p2p_args_t *send,
                                      const gmpi_p2p_args_t *recv) {
  char to[24], from[24];
  gmpi_comm_fail(comm, GMPI_ERR_TIMEOUT);
  gmpi_flight_end(&comm->flight, seq, GMPI_ERR_TIMEOUT);
  gmpi_flight_dump(&comm->flight, "timeout");
  return gmpi_error(GMPI_ERR_TIMEOUT,
                    "sendrecv to %s (tag %d, %zu elements) and from %s (tag %d, %zu elements) did "
                    "not complete within GMPI_TIMEOUT = %g s; the communicator is now failed",
                    peer_text(send->peer, to, sizeof(to)), send->tag, send->count,
                    peer_text(recv->peer, from, sizeof(from)), recv->tag, recv->count,
                    comm->cfg.timeout_s);
}

/* A half with GMPI_PROC_NULL moves nothing (MPI's rule): the other half runs alone, as a
 * blocking send or receive would, and a receive from GMPI_PROC_NULL reads as an empty message
 * from it (a halo exchange's edge ranks, every step). */
static const gmpi_p2p_args_t *moving_half(const gmpi_p2p_args_t *a) {
  return a->peer == GMPI_PROC_NULL ? NULL : a;
}

gmpi_status_t gmpi_p2p_exchange(gmpi_comm_t comm, const gmpi_p2p_args_t *send,
                                const gmpi_p2p_args_t *recv, gmpi_msg_status_t *status, int *ran) {
  *ran = 0;
  GMPI_CHECK(validate(comm, send, &send_half)); /* errors say which half */
  GMPI_CHECK(validate(comm, recv, &recv_half));
  const gmpi_p2p_args_t *s = moving_half(send), *r = moving_half(recv);
  if (comm->rec || send->sync || (!s && !r) || (s && !other_rank(comm, s->peer)) ||
      (r && !other_rank(comm, r->peer)))
    return GMPI_SUCCESS;
  const gmpi_engine_t *engine = NULL;
  if (s && r)
    GMPI_CHECK(gmpi_route_p2p_pair(comm, s, r, &engine));
  else
    GMPI_CHECK(gmpi_route_p2p_buf(comm, (s ? s : r)->buf, &engine));
  if (!engine || !engine->p2p->exchange) return GMPI_SUCCESS;
  *ran = 1;
  comm->p2p_started = 1;
  const gmpi_p2p_args_t *named = r ? r : s;
  uint64_t seq =
      gmpi_flight_start(&comm->flight, "sendrecv", named->count, named->peer, named->tag);
  gmpi_status_t st = engine->p2p->exchange(engine->p2p_state, comm, s, r, status);
  if (st == GMPI_ERR_TIMEOUT) return exchange_expired(comm, seq, send, recv);
  gmpi_flight_end(&comm->flight, seq, st);
  if (st == GMPI_SUCCESS && !r && status) *status = gmpi_proc_null_status();
  return st;
}

static gmpi_status_t single_expired(gmpi_comm_t comm, uint64_t seq, const gmpi_p2p_args_t *a) {
  int is_send = a->dir == GMPI_P2P_SEND;
  gmpi_comm_fail(comm, GMPI_ERR_TIMEOUT);
  gmpi_flight_end(&comm->flight, seq, GMPI_ERR_TIMEOUT);
  gmpi_flight_dump(&comm->flight, "timeout");
  return gmpi_error(GMPI_ERR_TIMEOUT,
                    "%s %s rank %d (tag %d, %zu elements) did not complete within GMPI_TIMEOUT "
                    "= %g s; the communicator is now failed",
                    is_send ? "isend" : "irecv", is_send ? "to" : "from", a->peer, a->tag, a->count,
                    comm->cfg.timeout_s);
}

gmpi_status_t gmpi_p2p_single(gmpi_comm_t comm, const gmpi_p2p_args_t *a, gmpi_msg_status_t *status,
                              int *ran) {
  *ran = 0;
  GMPI_CHECK(validate(comm, a, &plain_names));
  if (comm->rec || !other_rank(comm, a->peer)) return GMPI_SUCCESS;
  const gmpi_engine_t *engine = NULL;
  GMPI_CHECK(gmpi_route_p2p_buf(comm, a->buf, &engine));
  if (!engine->p2p->exchange) return GMPI_SUCCESS;
  *ran = 1;
  comm->p2p_started = 1;
  int is_send = a->dir == GMPI_P2P_SEND;
  /* named as the request path names them: traces and timeouts read the same either way */
  uint64_t seq =
      gmpi_flight_start(&comm->flight, is_send ? "isend" : "irecv", a->count, a->peer, a->tag);
  gmpi_status_t st = engine->p2p->exchange(engine->p2p_state, comm, is_send ? a : NULL,
                                           is_send ? NULL : a, status);
  if (st == GMPI_ERR_TIMEOUT) return single_expired(comm, seq, a);
  gmpi_flight_end(&comm->flight, seq, st);
  return st;
}
