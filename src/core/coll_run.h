/* SPDX-License-Identifier: BSD-3-Clause */
/* A blocking collective's path from its public call to its engine, inline. Each public call
 * (src/api/coll.c) passes a constant kind, so the compiler keeps only that kind's case of the
 * in-place test, the extents and the checks: out of line, a small gmpi_bcast spent about 100
 * of its instructions choosing among kinds (docs/performance.md, "a seventh pass"). A
 * fixed-block collective whose arguments pass every check stays in this file's code; any
 * other (a v-form, a bad argument) goes to gmpi_coll_validate_asked (coll.c), which checks it
 * again and describes what is wrong, once. */
#ifndef GMPI_CORE_COLL_RUN_H
#define GMPI_CORE_COLL_RUN_H

#include <stdint.h>

#include "check.h"
#include "comm.h"
#include "dtype.h"
#include "flight.h"
#include "ops.h"
#include "plan.h"
#include "route.h"

/* Inlined at every call, whatever the compiler's size heuristics say: the point is that each
 * public call (and an engine's case for one kind, host_coll.c) gets its own copy, specialized
 * for its kind. */
#define GMPI_COLL_INLINE static inline __attribute__((always_inline))

/* Is this rank's part of a validated collective in place (the forms in gmpi.h)? Out of line
 * as gmpi_coll_in_place (ops.h), for callers whose kind varies and who are not on a small
 * call's path. */
GMPI_COLL_INLINE int gmpi_coll_in_place_inline(gmpi_comm_t comm, const gmpi_coll_args_t *a) {
  const char *s = a->sendbuf, *r = a->recvbuf;
  int me = comm->rank, root = comm->rank == a->root;
  size_t es = gmpi_dtype_elem_size(a->dtype), block = a->count * es;
  if (!s || !r) return s == r && s;
  switch (a->kind) {
  case GMPI_COLL_ALLREDUCE:
  case GMPI_COLL_ALLTOALL:
  case GMPI_COLL_ALLTOALLV:
  case GMPI_COLL_REDUCE_SCATTERV: return s == r;
  case GMPI_COLL_REDUCE: return root && s == r;
  case GMPI_COLL_BCAST: return 1;
  /* This rank's block already sits at its slot of recvbuf: sendbuf == recvbuf (MPI_IN_PLACE)
   * or sendbuf pointing at the slot (NCCL's form). */
  case GMPI_COLL_ALLGATHER: return s == r || s == r + (size_t)me * block;
  case GMPI_COLL_GATHER: return root && (s == r || s == r + (size_t)me * block);
  case GMPI_COLL_ALLGATHERV: return s == r || s == r + a->rdispls[me] * es;
  case GMPI_COLL_GATHERV: return root && (s == r || s == r + a->rdispls[me] * es);
  /* The root's block stays in sendbuf: recvbuf == sendbuf or recvbuf at the block. */
  case GMPI_COLL_SCATTER: return root && (r == s || r == s + (size_t)me * block);
  case GMPI_COLL_SCATTERV: return root && (r == s || r == s + a->sdispls[me] * es);
  /* The result at recvbuf == sendbuf (MPI) or at this rank's block of sendbuf (NCCL). */
  case GMPI_COLL_REDUCE_SCATTER: return s == r || r == s + (size_t)me * block;
  default: return 0;
  }
}

/* The bytes a fixed-block collective reads and writes on this rank: n is one block, all every
 * rank's blocks; rooted collectives' root-only buffers count at the root only. in_place is
 * left 0. {0, 0, 0} for the barrier and the v-forms, whose extents v_extent (coll.c) fills. */
GMPI_COLL_INLINE gmpi_coll_extent_t gmpi_coll_extent_fixed(gmpi_comm_t comm,
                                                           const gmpi_coll_args_t *a, size_t n,
                                                           size_t all) {
  int root = comm->rank == a->root;
  switch (a->kind) {
  case GMPI_COLL_ALLREDUCE: return (gmpi_coll_extent_t){n, n, 0};
  case GMPI_COLL_BCAST: return (gmpi_coll_extent_t){0, n, 0};
  case GMPI_COLL_REDUCE: return (gmpi_coll_extent_t){n, root ? n : 0, 0};
  case GMPI_COLL_ALLGATHER: return (gmpi_coll_extent_t){n, all, 0};
  case GMPI_COLL_REDUCE_SCATTER: return (gmpi_coll_extent_t){all, n, 0};
  case GMPI_COLL_ALLTOALL: return (gmpi_coll_extent_t){all, all, 0};
  case GMPI_COLL_GATHER: return (gmpi_coll_extent_t){n, root ? all : 0, 0};
  case GMPI_COLL_SCATTER: return (gmpi_coll_extent_t){root ? all : 0, n, 0};
  default: return (gmpi_coll_extent_t){0, 0, 0}; /* the barrier, the v-forms */
  }
}

static inline int gmpi_ranges_overlap(const void *a, size_t alen, const void *b, size_t blen) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return alen && blen && x < y + blen && y < x + alen;
}

/* 1 with *e filled when a is a fixed-block collective whose arguments pass every check of
 * gmpi_coll_validate_asked; 0 for anything else, left to it. */
GMPI_COLL_INLINE int gmpi_coll_passes(gmpi_comm_t comm, const gmpi_coll_args_t *a,
                                      gmpi_coll_extent_t *e) {
  size_t n, all;
  if (gmpi_coll_varies(a->kind) || !gmpi_dtype_in_range(a->dtype)) return 0;
  if (gmpi_coll_has_op(a->kind) && !gmpi_op_applies(a->dtype, a->op)) return 0;
  if (gmpi_coll_has_root(a->kind) && (a->root < 0 || a->root >= comm->size)) return 0;
  if (__builtin_mul_overflow(a->count, gmpi_dtype_elem_size(a->dtype), &n) ||
      __builtin_mul_overflow(n, (size_t)comm->size, &all))
    return 0;
  *e = gmpi_coll_extent_fixed(comm, a, n, all);
  e->in_place = gmpi_coll_in_place_inline(comm, a);
  if (e->send_bytes && !a->sendbuf && !e->in_place) return 0;
  if (e->recv_bytes && !a->recvbuf) return 0;
  return e->in_place || !gmpi_ranges_overlap(a->sendbuf, e->send_bytes, a->recvbuf, e->recv_bytes);
}

/* Validate a collective's arguments on this rank, filling the extents: every check, each
 * failure described (coll.c). */
gmpi_status_t gmpi_coll_validate_asked(gmpi_comm_t comm, const gmpi_coll_args_t *a,
                                       gmpi_coll_extent_t *ext);
/* The same, a passing fixed-block collective decided inline. */
GMPI_COLL_INLINE gmpi_status_t gmpi_coll_validate(gmpi_comm_t comm, const gmpi_coll_args_t *a,
                                                  gmpi_coll_extent_t *ext) {
  if (gmpi_coll_passes(comm, a, ext)) return GMPI_SUCCESS;
  return gmpi_coll_validate_asked(comm, a, ext);
}

/* A collective this rank refused with st (its arguments, or its route): under GMPI_CHECK it
 * still meets the other ranks' exchange (coll.c); returns st. */
gmpi_status_t gmpi_coll_refused(gmpi_comm_t comm, const gmpi_coll_args_t *a, gmpi_status_t st,
                                int counted, int nonblocking);

/* Validate, then record (plan), check (GMPI_CHECK) and run a blocking collective. */
GMPI_COLL_INLINE gmpi_status_t gmpi_coll_run(gmpi_comm_t comm, const gmpi_coll_args_t *a) {
  /* The kind read once: past a call that receives a, the compiler reads a->kind again, and
   * the name and root tests below would look up a table instead of being constants. */
  const gmpi_coll_kind_t kind = a->kind;
  gmpi_coll_extent_t ext;
  gmpi_status_t st = gmpi_coll_validate(comm, a, &ext);
  if (st != GMPI_SUCCESS) return gmpi_coll_refused(comm, a, st, 0, 0);
  if (comm->rec) return gmpi_plan_record_coll(comm, a);
  comm->coll_seq++;
  uint64_t seq = gmpi_flight_start(&comm->flight, gmpi_coll_name(kind), a->count,
                                   gmpi_coll_has_root(kind) ? a->root : -1, -1);
  const gmpi_engine_t *engine = NULL;
  st = gmpi_route_coll(comm, a, &ext, &engine);
  if (st != GMPI_SUCCESS) gmpi_coll_refused(comm, a, st, 1, 0);
  if (st == GMPI_SUCCESS && comm->cfg.check)
    st = gmpi_check_coll(comm, a, engine == &comm->device_engine);
  if (st == GMPI_SUCCESS) st = gmpi_route_fence(comm, engine);
  if (st == GMPI_SUCCESS) st = engine->coll->run(comm, engine->coll_state, a);
  gmpi_flight_end(&comm->flight, seq, st);
  if (st == GMPI_ERR_TIMEOUT || st == GMPI_ERR_MISMATCH)
    gmpi_flight_dump(&comm->flight, gmpi_strerror(st));
  return st;
}

#endif
