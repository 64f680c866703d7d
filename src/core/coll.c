/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdint.h>

#include "check.h"
#include "coll_run.h"
#include "comm.h"
#include "dtype.h"
#include "error.h"
#include "ops.h"
#include "plan.h"
#include "request.h"
#include "route.h"
#include "wait.h"

gmpi_status_t gmpi_count_bytes_overflow(size_t count, gmpi_dtype_t dtype, size_t multiple,
                                        const char *arg) {
  return gmpi_error(GMPI_ERR_INVALID_ARG,
                    "argument '%s' = %zu is too large: %zu elements x %zu bytes%s overflows "
                    "size_t",
                    arg, count, count, gmpi_dtype_elem_size(dtype),
                    multiple == 1 ? "" : " x the number of ranks");
}

static gmpi_status_t check_dtype_op(const gmpi_coll_args_t *a) {
  if (!gmpi_dtype_in_range(a->dtype))
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'dtype' = %d is not a gmpi_dtype_t",
                      (int)a->dtype);
  if (!gmpi_coll_has_op(a->kind)) return GMPI_SUCCESS;
  if (!gmpi_op_in_range(a->op))
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'op' = %d is not a gmpi_op_t", (int)a->op);
  if (!gmpi_op_applies(a->dtype, a->op))
    return gmpi_error(GMPI_ERR_INVALID_ARG, "op %s is not defined on dtype %s (MPI's rules)",
                      gmpi_op_name(a->op), gmpi_dtype_name(a->dtype));
  return GMPI_SUCCESS;
}

/* The elements a per-rank block layout spans: max over ranks of displs[r] + counts[r] (displs
 * NULL: blocks back to back, the sum). arg names the counts in errors. */
static gmpi_status_t layout_span(const gmpi_coll_args_t *a, int nranks, const size_t *counts,
                                 const size_t *displs, const char *arg, size_t *bytes) {
  size_t span = 0, sum = 0;
  for (int r = 0; r < nranks; r++) {
    size_t start = displs ? displs[r] : sum;
    if (displs && counts[r] > SIZE_MAX - start) /* the displacement is what is out of bounds */
      return gmpi_error(GMPI_ERR_INVALID_ARG,
                        "argument '%s[%d]' = %zu is out of bounds: that displacement + %s[%d] = "
                        "%zu overflows size_t",
                        a->kind != GMPI_COLL_ALLTOALLV ? "displs"
                        : displs == a->rdispls         ? "rdispls"
                                                       : "sdispls",
                        r, start, arg, r, counts[r]);
    if (counts[r] > SIZE_MAX - start)
      return gmpi_error(GMPI_ERR_INVALID_ARG, "argument '%s[%d]' = %zu overflows size_t", arg, r,
                        counts[r]);
    sum += displs ? 0 : counts[r];
    if (counts[r] && start + counts[r] > span) span = start + counts[r];
  }
  return gmpi_count_bytes(span, a->dtype, 1, arg, bytes);
}

/* The arrays this rank reads, present. */
static gmpi_status_t need_array(const size_t *array, const char *arg) {
  if (!array) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument '%s' is NULL", arg);
  return GMPI_SUCCESS;
}

int gmpi_coll_in_place(gmpi_comm_t comm, const gmpi_coll_args_t *a) {
  return gmpi_coll_in_place_inline(comm, a);
}

/* Extents of the v-variants; the arrays this rank reads are checked present first. */
static gmpi_status_t v_extent(gmpi_comm_t comm, const gmpi_coll_args_t *a, size_t n,
                              gmpi_coll_extent_t *e) {
  int p = comm->size, root = comm->rank == a->root;
  switch (a->kind) {
  case GMPI_COLL_ALLGATHERV:
  case GMPI_COLL_GATHERV:
    e->send_bytes = n;
    if (a->kind == GMPI_COLL_GATHERV && !root) break;
    GMPI_CHECK(need_array(a->recvcounts, "recvcounts"));
    GMPI_CHECK(need_array(a->rdispls, "displs"));
    GMPI_CHECK(layout_span(a, p, a->recvcounts, a->rdispls, "recvcounts", &e->recv_bytes));
    break;
  case GMPI_COLL_SCATTERV:
    e->recv_bytes = n;
    if (!root) break;
    GMPI_CHECK(need_array(a->sendcounts, "sendcounts"));
    GMPI_CHECK(need_array(a->sdispls, "displs"));
    GMPI_CHECK(layout_span(a, p, a->sendcounts, a->sdispls, "sendcounts", &e->send_bytes));
    break;
  case GMPI_COLL_ALLTOALLV:
    GMPI_CHECK(need_array(a->recvcounts, "recvcounts"));
    GMPI_CHECK(need_array(a->rdispls, "rdispls"));
    GMPI_CHECK(layout_span(a, p, a->recvcounts, a->rdispls, "recvcounts", &e->recv_bytes));
    if (a->sendbuf == a->recvbuf) break; /* in place: sendcounts are not read */
    GMPI_CHECK(need_array(a->sendcounts, "sendcounts"));
    GMPI_CHECK(need_array(a->sdispls, "sdispls"));
    GMPI_CHECK(layout_span(a, p, a->sendcounts, a->sdispls, "sendcounts", &e->send_bytes));
    break;
  case GMPI_COLL_REDUCE_SCATTERV:
    GMPI_CHECK(need_array(a->recvcounts, "recvcounts"));
    GMPI_CHECK(layout_span(a, p, a->recvcounts, NULL, "recvcounts", &e->send_bytes));
    GMPI_CHECK(
        gmpi_count_bytes(a->recvcounts[comm->rank], a->dtype, 1, "recvcounts", &e->recv_bytes));
    break;
  default: break;
  }
  return GMPI_SUCCESS;
}

/* A rank's own block must say the same size on both sides, as MPI requires. */
static gmpi_status_t check_own_block(gmpi_comm_t comm, const gmpi_coll_args_t *a, int in_place) {
  int me = comm->rank;
  if (in_place) return GMPI_SUCCESS;
  const size_t *counts = NULL;
  const char *arg = "recvcounts";
  if (a->kind == GMPI_COLL_ALLGATHERV || (a->kind == GMPI_COLL_GATHERV && me == a->root))
    counts = a->recvcounts;
  if (a->kind == GMPI_COLL_SCATTERV && me == a->root) {
    counts = a->sendcounts;
    arg = "sendcounts";
  }
  if (!counts || counts[me] == a->count) return GMPI_SUCCESS;
  return gmpi_error(GMPI_ERR_INVALID_ARG,
                    "argument '%s[%d]' = %zu differs from this rank's own count %zu (rank %d's "
                    "block must have the same size on both sides)",
                    arg, me, counts[me], a->count, me);
}

/* Extents per kind; rank-dependent because rooted collectives' root-only buffers matter at the
 * root only. */
static gmpi_status_t coll_extent(gmpi_comm_t comm, const gmpi_coll_args_t *a,
                                 gmpi_coll_extent_t *e) {
  size_t n = 0, all = 0;
  GMPI_CHECK(gmpi_count_bytes(a->count, a->dtype, 1, "count", &n));
  GMPI_CHECK(gmpi_count_bytes(a->count, a->dtype, (size_t)comm->size, "count", &all));
  *e = gmpi_coll_extent_fixed(comm, a, n, all);
  if (gmpi_coll_varies(a->kind)) GMPI_CHECK(v_extent(comm, a, n, e));
  e->in_place = gmpi_coll_in_place(comm, a);
  return check_own_block(comm, a, e->in_place);
}

gmpi_status_t gmpi_coll_validate_asked(gmpi_comm_t comm, const gmpi_coll_args_t *a,
                                       gmpi_coll_extent_t *ext) {
  GMPI_CHECK(check_dtype_op(a));
  if (gmpi_coll_has_root(a->kind) && (a->root < 0 || a->root >= comm->size))
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'root' = %d is out of range [0, %d)", a->root,
                      comm->size);
  GMPI_CHECK(coll_extent(comm, a, ext));
  const char *send_name = a->kind == GMPI_COLL_BCAST ? "buf" : "sendbuf";
  if (ext->send_bytes && !a->sendbuf && !ext->in_place)
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument '%s' is NULL but %zu bytes are sent from it",
                      send_name, ext->send_bytes);
  if (ext->recv_bytes && !a->recvbuf)
    return gmpi_error(GMPI_ERR_INVALID_ARG,
                      "argument '%s' is NULL but %zu bytes are received into it",
                      a->kind == GMPI_COLL_BCAST ? "buf" : "recvbuf", ext->recv_bytes);
  if (!ext->in_place &&
      gmpi_ranges_overlap(a->sendbuf, ext->send_bytes, a->recvbuf, ext->recv_bytes))
    return gmpi_error(GMPI_ERR_INVALID_ARG,
                      "sendbuf %p and recvbuf %p overlap but are not an in-place call", a->sendbuf,
                      a->recvbuf);
  return GMPI_SUCCESS;
}

/* A collective this rank refused (its arguments): under GMPI_CHECK it still meets the others'
 * exchange (check.h) and counts the call as they do (counted: it has already). Ranks that went
 * ahead with a nonblocking one have started its data and fail their comm at the mismatch; so
 * does this rank then, so that every rank frees the comm alike (a healthy comm's free waits for
 * every rank to arrive, which failed ones do not). Returns st, its own error. */
gmpi_status_t gmpi_coll_refused(gmpi_comm_t comm, const gmpi_coll_args_t *a, gmpi_status_t st,
                                int counted, int nonblocking) {
  if (!comm->cfg.check || comm->rec) return st;
  if (!counted) comm->coll_seq++;
  if (gmpi_check_coll_refused(comm, a) && nonblocking) gmpi_comm_fail(comm, GMPI_ERR_MISMATCH);
  return st;
}

gmpi_status_t gmpi_coll_start(gmpi_comm_t comm, const gmpi_coll_args_t *a, gmpi_request_t *out) {
  gmpi_coll_extent_t ext;
  gmpi_status_t st = gmpi_coll_validate(comm, a, &ext);
  if (st == GMPI_SUCCESS && !out)
    st = gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'request' is NULL");
  if (st != GMPI_SUCCESS) return gmpi_coll_refused(comm, a, st, 0, 1);
  if (comm->rec) return gmpi_plan_record_coll_request(comm, a, out);
  gmpi_request_t req;
  st = gmpi_request_new_coll(comm, a, &req);
  if (st != GMPI_SUCCESS) return gmpi_coll_refused(comm, a, st, 0, 1);
  comm->coll_seq++;
  st = gmpi_route_coll(comm, a, &ext, &req->engine);
  if (st != GMPI_SUCCESS) gmpi_coll_refused(comm, a, st, 1, 1);
  /* GMPI_CHECK's exchange runs beside the data: waiting here for every rank to start would
   * deadlock programs MPI allows (docs/reliability.md). */
  if (st == GMPI_SUCCESS && comm->cfg.check)
    st = gmpi_check_coll_start(comm, a, req->engine == &comm->device_engine, &req->check);
  if (st == GMPI_SUCCESS) st = gmpi_route_fence(comm, req->engine);
  if (st == GMPI_SUCCESS) st = req->engine->coll->start(comm, req->engine->coll_state, a, req);
  if (st != GMPI_SUCCESS) {
    gmpi_check_coll_abandon(req->check);
    gmpi_request_discard(req, st);
    if (st == GMPI_ERR_TIMEOUT || st == GMPI_ERR_MISMATCH)
      gmpi_flight_dump(&comm->flight, gmpi_strerror(st));
    return st;
  }
  *out = req;
  return GMPI_SUCCESS;
}

size_t gmpi_layout_span(int nranks, const size_t *counts, const size_t *displs) {
  size_t span = 0;
  for (int r = 0; r < nranks; r++)
    if (counts[r] && displs[r] + counts[r] > span) span = displs[r] + counts[r];
  return span;
}

gmpi_coll_pair_t gmpi_coll_pair(gmpi_comm_t comm, const gmpi_coll_args_t *a, int peer) {
  int me = comm->rank, root = a->root, self = peer == me;
  int in_place = gmpi_coll_in_place(comm, a);
  size_t n = a->count;
  gmpi_coll_pair_t p = {0, 0, 0, 0};
  if (self && in_place) return p;
  switch (a->kind) {
  case GMPI_COLL_GATHER:
    if (peer == root) p.send_count = n;
    if (me == root) p = (gmpi_coll_pair_t){p.send_count, 0, n, (size_t)peer * n};
    break;
  case GMPI_COLL_SCATTER:
    if (me == root) p = (gmpi_coll_pair_t){n, (size_t)peer * n, 0, 0};
    if (peer == root) p.recv_count = n;
    break;
  case GMPI_COLL_ALLGATHERV:
    p = (gmpi_coll_pair_t){n, 0, a->recvcounts[peer], a->rdispls[peer]};
    break;
  case GMPI_COLL_GATHERV:
    if (peer == root) p.send_count = n;
    if (me == root) p = (gmpi_coll_pair_t){p.send_count, 0, a->recvcounts[peer], a->rdispls[peer]};
    break;
  case GMPI_COLL_SCATTERV:
    if (me == root) p = (gmpi_coll_pair_t){a->sendcounts[peer], a->sdispls[peer], 0, 0};
    if (peer == root) p.recv_count = n;
    break;
  case GMPI_COLL_ALLTOALLV:
    p.recv_count = a->recvcounts[peer];
    p.recv_displ = a->rdispls[peer];
    p.send_count = in_place ? p.recv_count : a->sendcounts[peer];
    p.send_displ = in_place ? p.recv_displ : a->sdispls[peer];
    break;
  default: break;
  }
  int gathers = a->kind == GMPI_COLL_GATHER || a->kind == GMPI_COLL_ALLGATHERV ||
                a->kind == GMPI_COLL_GATHERV;
  if (in_place && p.send_count && gathers) {
    /* An in-place gatherer sends its block from where it sits in recvbuf (MPI ignores
     * sendcount then: the block is recvcounts[me] long). */
    int v = a->kind == GMPI_COLL_ALLGATHERV || a->kind == GMPI_COLL_GATHERV;
    p.send_count = v ? a->recvcounts[me] : n;
    size_t own = v ? a->rdispls[me] : (size_t)me * n;
    p.send_displ = a->sendbuf == a->recvbuf ? own : 0;
  }
  return p;
}
