#include <stdint.h>

#include "check.h"
#include "comm.h"
#include "dtype.h"
#include "error.h"
#include "ops.h"
#include "plan.h"
#include "route.h"
#include "wait.h"

typedef struct {
  const char *name;
  int has_root, has_op;
} coll_info_t;

static const coll_info_t coll_info[GMPI_COLL_KIND_COUNT] = {
    [GMPI_COLL_ALLREDUCE] = {"allreduce", 0, 1},
    [GMPI_COLL_BCAST] = {"bcast", 1, 0},
    [GMPI_COLL_REDUCE] = {"reduce", 1, 1},
    [GMPI_COLL_ALLGATHER] = {"allgather", 0, 0},
    [GMPI_COLL_REDUCE_SCATTER] = {"reduce_scatter", 0, 1},
    [GMPI_COLL_ALLTOALL] = {"alltoall", 0, 0},
    [GMPI_COLL_BARRIER] = {"barrier", 0, 0},
};

const char *gmpi_coll_name(gmpi_coll_kind_t kind) {
  return (unsigned)kind < GMPI_COLL_KIND_COUNT ? coll_info[kind].name : "invalid";
}
int gmpi_coll_has_root(gmpi_coll_kind_t kind) { return coll_info[kind].has_root; }
int gmpi_coll_has_op(gmpi_coll_kind_t kind) { return coll_info[kind].has_op; }

gmpi_status_t gmpi_count_bytes(size_t count, gmpi_dtype_t dtype, size_t multiple, const char *arg,
                               size_t *bytes) {
  size_t es = gmpi_dtype_size(dtype);
  if (multiple && count > SIZE_MAX / es / multiple)
    return gmpi_error(GMPI_ERR_INVALID_ARG,
                      "argument '%s' = %zu is too large: %zu x %zu bytes "
                      "overflows size_t",
                      arg, count, multiple, es);
  *bytes = count * es * multiple;
  return GMPI_SUCCESS;
}

static gmpi_status_t check_dtype_op(const gmpi_coll_args_t *a) {
  if (!gmpi_dtype_in_range(a->dtype))
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'dtype' = %d is not a gmpi_dtype_t",
                      (int)a->dtype);
  if (!gmpi_coll_has_op(a->kind)) return GMPI_SUCCESS;
  if (!gmpi_op_in_range(a->op))
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'op' = %d is not a gmpi_op_t", (int)a->op);
  if (!gmpi_op_valid(a->dtype, a->op))
    return gmpi_error(GMPI_ERR_INVALID_ARG, "op %s is not defined on dtype %s (MPI's rules)",
                      gmpi_op_name(a->op), gmpi_dtype_name(a->dtype));
  return GMPI_SUCCESS;
}

/* Extents per kind; rank-dependent because reduce's recvbuf matters at the root only. */
static gmpi_status_t coll_extent(gmpi_comm_t comm, const gmpi_coll_args_t *a,
                                 gmpi_coll_extent_t *e) {
  size_t n = 0, all = 0;
  size_t p = (size_t)comm->size;
  GMPI_CHECK(gmpi_count_bytes(a->count, a->dtype, 1, "count", &n));
  GMPI_CHECK(gmpi_count_bytes(a->count, a->dtype, p, "count", &all));
  const char *s = a->sendbuf, *r = a->recvbuf;
  *e = (gmpi_coll_extent_t){0};
  switch (a->kind) {
  case GMPI_COLL_ALLREDUCE: *e = (gmpi_coll_extent_t){n, n, s == r}; break;
  case GMPI_COLL_BCAST: *e = (gmpi_coll_extent_t){0, n, 1}; break;
  case GMPI_COLL_REDUCE:
    *e = comm->rank == a->root ? (gmpi_coll_extent_t){n, n, s == r} : (gmpi_coll_extent_t){n, 0, 0};
    break;
  case GMPI_COLL_ALLGATHER:
    /* In place: this rank's block already sits at recvbuf + rank*count (sendbuf may point
     * there, as NCCL has it, or equal recvbuf, as MPI_IN_PLACE has it). */
    *e = (gmpi_coll_extent_t){n, all, s == r || (r && s == r + (size_t)comm->rank * n)};
    break;
  case GMPI_COLL_REDUCE_SCATTER:
    /* In place: recvbuf == sendbuf (MPI: result at the start) or sendbuf + rank*count (NCCL). */
    *e = (gmpi_coll_extent_t){all, n, s == r || (s && r == s + (size_t)comm->rank * n)};
    break;
  case GMPI_COLL_ALLTOALL: *e = (gmpi_coll_extent_t){all, all, s == r}; break;
  case GMPI_COLL_BARRIER:
  case GMPI_COLL_KIND_COUNT: break;
  }
  return GMPI_SUCCESS;
}

static int ranges_overlap(const void *a, size_t alen, const void *b, size_t blen) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return alen && blen && x < y + blen && y < x + alen;
}

gmpi_status_t gmpi_coll_validate(gmpi_comm_t comm, const gmpi_coll_args_t *a,
                                 gmpi_coll_extent_t *ext) {
  GMPI_CHECK(check_dtype_op(a));
  if (gmpi_coll_has_root(a->kind) && (a->root < 0 || a->root >= comm->size))
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'root' = %d is out of range [0, %d)", a->root,
                      comm->size);
  GMPI_CHECK(coll_extent(comm, a, ext));
  const char *send_name = a->kind == GMPI_COLL_BCAST ? "buf" : "sendbuf";
  if (ext->send_bytes && !a->sendbuf && !ext->in_place)
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument '%s' is NULL with count %zu > 0", send_name,
                      a->count);
  if (ext->recv_bytes && !a->recvbuf)
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument '%s' is NULL with count %zu > 0",
                      a->kind == GMPI_COLL_BCAST ? "buf" : "recvbuf", a->count);
  if (!ext->in_place && ranges_overlap(a->sendbuf, ext->send_bytes, a->recvbuf, ext->recv_bytes))
    return gmpi_error(GMPI_ERR_INVALID_ARG,
                      "sendbuf %p and recvbuf %p overlap but are not an in-place call", a->sendbuf,
                      a->recvbuf);
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_coll_run(gmpi_comm_t comm, const gmpi_coll_args_t *a) {
  gmpi_coll_extent_t ext;
  GMPI_CHECK(gmpi_coll_validate(comm, a, &ext));
  if (comm->rec) return gmpi_plan_record_coll(comm, a);
  comm->coll_seq++;
  uint64_t seq = gmpi_flight_start(&comm->flight, gmpi_coll_name(a->kind), a->count,
                                   gmpi_coll_has_root(a->kind) ? a->root : -1, -1);
  const gmpi_engine_t *engine = NULL;
  gmpi_status_t st = gmpi_route_coll(comm, a, &ext, &engine);
  if (st == GMPI_SUCCESS && comm->cfg.check) st = gmpi_check_coll(comm, a);
  if (st == GMPI_SUCCESS) st = gmpi_route_fence(comm, engine);
  if (st == GMPI_SUCCESS) st = engine->ops->coll(comm, engine->state, a);
  gmpi_flight_end(&comm->flight, seq, st);
  if (st == GMPI_ERR_TIMEOUT || st == GMPI_ERR_MISMATCH)
    gmpi_flight_dump(&comm->flight, gmpi_strerror(st));
  return st;
}
