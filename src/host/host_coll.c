/* SPDX-License-Identifier: BSD-3-Clause */
/* Collectives on host buffers, blocking and nonblocking, through MPI.
 *
 * Blocking: every rank first passes an arrival gate -- a nonblocking barrier waited under
 * GMPI_TIMEOUT while driving gmpi's engines (or the GMPI_CHECK signature exchange, which gates
 * as well) -- then MPI's tuned blocking collective runs (see gated()). Nonblocking: the same
 * algorithm with each MPI call in its nonblocking form (MPI_COLL below), tested by gmpi's
 * waits, so no gate is needed. Both finish with the same after-work (an average's division, a
 * move, freeing what MPI read).
 *
 * Reductions longer than GMPI_MAX_CHUNK elements are split into several calls. Equal blocks
 * travel as bytes: one block of any size is one MPI type (gmpi_mpi_bytes_type). The v-variants
 * count in elements while MPI's int allows, and beyond that in a unit of bytes dividing the
 * whole layout (v_layout, own_block). */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../core/coll_run.h"
#include "../core/comm.h"
#include "../core/dtype.h"
#include "../core/envelope.h"
#include "../core/error.h"
#include "../core/ops.h"
#include "../core/park.h"
#include "../core/reduce.h"
#include "../core/request.h"
#include "../core/watchdog.h"
#include "../mpi/mpi_check.h"
#include "../mpi/oob.h"
#include "../mpi/types.h"
#include "host.h"

/* What is left once the MPI calls complete. Only the three fields after_clear sets are read
 * before being written (owned[] up to n_owned, the others once their buffer or size is set):
 * zeroing all of it twice per call was a sizable part of a small collective's own cost. */
typedef struct {
  void *divide_buf; /* AVG: divide divide_count elements by the comm size */
  size_t divide_count;
  void *move_to; /* NCCL-form in-place reduce_scatter: its result moves to recvbuf */
  const void *move_from;
  size_t move_bytes;
  void *owned[6]; /* staging copies and int arrays MPI reads until completion */
  int n_owned;
} coll_after_t;

static void after_clear(coll_after_t *after) {
  after->divide_buf = NULL;
  after->move_bytes = 0;
  after->n_owned = 0;
}

/* A nonblocking collective on host buffers: its MPI requests and after-work (req->be). */
typedef struct {
  MPI_Request *reqs;
  int n, cap;
  coll_after_t after;
  gmpi_dtype_t dtype;
  int nranks;
} icoll_t;

typedef struct {
  gmpi_comm_t comm;
  MPI_Comm mc;
  const gmpi_coll_args_t *a;
  size_t es;           /* element size */
  size_t chunk;        /* most elements per MPI reduction call */
  coll_after_t *after; /* NULL where nothing is left after the calls (run_without_after) */
  icoll_t *nb;         /* nonblocking: where MPI requests go; NULL: blocking calls */
} coll_ctx_t;

#define BYTES(ptr, elems, es) ((char *)(ptr) + (elems) * (es))

static inline coll_ctx_t ctx_of(gmpi_comm_t comm, gmpi_host_t *host, const gmpi_coll_args_t *a,
                                coll_after_t *after, icoll_t *nb) {
  return (coll_ctx_t){.comm = comm,
                      .mc = host->data,
                      .a = a,
                      .es = gmpi_dtype_elem_size(a->dtype),
                      .chunk = comm->cfg.max_chunk,
                      .after = after,
                      .nb = nb};
}

/* Room for one more request (nonzero when out of memory). */
static int nb_reserve(icoll_t *nb) {
  if (nb->n < nb->cap) return 0;
  int cap = nb->cap ? 2 * nb->cap : 4;
  MPI_Request *grown = realloc(nb->reqs, (size_t)cap * sizeof(*grown));
  if (!grown) return 1;
  nb->reqs = grown;
  nb->cap = cap;
  return 0;
}

/* One MPI collective: the blocking call, or its nonblocking form with the request kept in c->nb
 * (the same arguments, then the request). */
#define MPI_COLL(c, blocking, nonblocking, ...)                                                    \
  ((c)->nb ? (nb_reserve((c)->nb) ? MPI_ERR_NO_MEM                                                 \
                                  : nonblocking(__VA_ARGS__, &(c)->nb->reqs[(c)->nb->n++]))        \
           : blocking(__VA_ARGS__))

/* Memory MPI may read until the collective completes: freed by finish(). */
static gmpi_status_t keep(coll_ctx_t *c, void *ptr, size_t bytes, const char *what) {
  if (!ptr) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for %zu bytes of %s", bytes, what);
  c->after->owned[c->after->n_owned++] = ptr;
  return GMPI_SUCCESS;
}

/* A copy of bytes at src that lives until completion (in-place inputs MPI must not see change). */
static gmpi_status_t stage_copy(coll_ctx_t *c, const void *src, size_t bytes, const void **copy) {
  void *p = malloc(bytes ? bytes : 1);
  GMPI_CHECK(keep(c, p, bytes, "a staging copy"));
  if (bytes) memcpy(p, src, bytes);
  *copy = p;
  return GMPI_SUCCESS;
}

static void finish(coll_after_t *after, gmpi_dtype_t dtype, int nranks) {
  if (after->divide_buf) gmpi_host_divide(dtype, after->divide_buf, after->divide_count, nranks);
  if (after->move_bytes) memmove(after->move_to, after->move_from, after->move_bytes);
  for (int i = 0; i < after->n_owned; i++)
    free(after->owned[i]);
  after_clear(after);
}

/* A collective that failed before any call started: no results to finish, only memory. */
static void drop(coll_after_t *after) {
  after->divide_buf = NULL;
  after->move_bytes = 0;
  finish(after, GMPI_BYTE, 1);
}

/* An average's division, once its sums are in buf. Without after-work (run_without_after,
 * which takes no average) nothing is tested. */
static void divide_after(coll_ctx_t *c, void *buf, size_t count) {
  if (!c->after || c->a->op != GMPI_AVG) return;
  c->after->divide_buf = buf;
  c->after->divide_count = count;
}

/* ---- reductions -------------------------------------------------------------------------- */

/* An allreduce's (all) or reduce's MPI calls, as every chunk makes them: MPI's type and op,
 * whether this rank gets the result, and whether it is in place there. `all` is a constant at
 * every call: each kind's case gets its own code (the root's test, the call, the name). */
typedef struct {
  MPI_Datatype type;
  MPI_Op op;
  int gets_result, in_place;
} reduction_t;

GMPI_COLL_INLINE reduction_t reduction_of(gmpi_comm_t comm, const gmpi_coll_args_t *a, int all) {
  int gets_result = all || comm->rank == a->root;
  return (reduction_t){gmpi_mpi_dtype(a->dtype), gmpi_mpi_op(a->dtype, a->op), gets_result,
                       gets_result && a->sendbuf == a->recvbuf};
}

/* The MPI call for len elements from element off of an allreduce (all) or reduce. */
GMPI_COLL_INLINE int reduce_call(coll_ctx_t *c, const reduction_t *r, int all, size_t off,
                                 int len) {
  const gmpi_coll_args_t *a = c->a;
  const void *s = r->in_place ? MPI_IN_PLACE : BYTES(a->sendbuf, off, c->es);
  void *d = r->gets_result ? BYTES(a->recvbuf, off, c->es) : NULL;
  if (all) return MPI_COLL(c, PMPI_Allreduce, PMPI_Iallreduce, s, d, len, r->type, r->op, c->mc);
  return MPI_COLL(c, PMPI_Reduce, PMPI_Ireduce, s, d, len, r->type, r->op, a->root, c->mc);
}

/* Allreduce (all) or reduce to the root, in chunks of at most c->chunk elements. One chunk,
 * the common case, is one call with no loop around it: a small reduction's latency is a few
 * hundred instructions, and the loop's bookkeeping was a tenth of them. */
GMPI_COLL_INLINE gmpi_status_t reduce_chunks(coll_ctx_t *c, int all) {
  const gmpi_coll_args_t *a = c->a;
  const char *name = all ? "MPI_Allreduce" : "MPI_Reduce";
  reduction_t r = reduction_of(c->comm, a, all);
  if (a->count && a->count <= c->chunk) {
    GMPI_CHECK(gmpi_mpi_check(reduce_call(c, &r, all, 0, (int)a->count), name));
  } else {
    for (size_t off = 0; off < a->count; off += c->chunk) {
      int len = (int)(a->count - off < c->chunk ? a->count - off : c->chunk);
      GMPI_CHECK(gmpi_mpi_check(reduce_call(c, &r, all, off, len), name));
    }
  }
  if (r.gets_result) divide_after(c, a->recvbuf, a->count);
  return GMPI_SUCCESS;
}

GMPI_COLL_INLINE gmpi_status_t run_allreduce(coll_ctx_t *c) { return reduce_chunks(c, 1); }
GMPI_COLL_INLINE gmpi_status_t run_reduce(coll_ctx_t *c) { return reduce_chunks(c, 0); }

/* Reduce-scatter as one reduce per destination rank, chunk by chunk: for blocks beyond one MPI
 * count. counts[r] elements of block r start at the sum of the counts before it. */
static gmpi_status_t reduce_per_root(coll_ctx_t *c, const char *send, const size_t *counts) {
  const gmpi_coll_args_t *a = c->a;
  MPI_Datatype t = gmpi_mpi_dtype(a->dtype);
  MPI_Op op = gmpi_mpi_op(a->dtype, a->op);
  size_t start = 0;
  for (int root = 0; root < c->comm->size; start += counts[root], root++) {
    for (size_t off = 0; off < counts[root]; off += c->chunk) {
      int len = (int)(counts[root] - off < c->chunk ? counts[root] - off : c->chunk);
      const char *s = BYTES(send, start + off, c->es);
      void *d = root == c->comm->rank ? BYTES(a->recvbuf, off, c->es) : NULL;
      GMPI_MPI_CHECK(MPI_COLL(c, PMPI_Reduce, PMPI_Ireduce, s, d, len, t, op, root, c->mc));
    }
  }
  return GMPI_SUCCESS;
}

/* The same block size everywhere (reduce_scatter), as per-rank counts. */
static gmpi_status_t equal_counts(coll_ctx_t *c, size_t count, const size_t **counts) {
  size_t *v = malloc((size_t)c->comm->size * sizeof(*v));
  GMPI_CHECK(keep(c, v, (size_t)c->comm->size * sizeof(*v), "block counts"));
  for (int r = 0; r < c->comm->size; r++)
    v[r] = count;
  *counts = v;
  return GMPI_SUCCESS;
}

static gmpi_status_t run_reduce_scatter(coll_ctx_t *c) {
  const gmpi_coll_args_t *a = c->a;
  size_t block = a->count * c->es, all = block * (size_t)c->comm->size;
  int mpi_in_place = a->sendbuf == a->recvbuf;
  int nccl_in_place =
      !mpi_in_place && a->recvbuf == BYTES(a->sendbuf, (size_t)c->comm->rank, block);
  divide_after(c, a->recvbuf, a->count);
  if (a->count > c->chunk) {
    const void *send = a->sendbuf;
    const size_t *counts;
    if (mpi_in_place || nccl_in_place) GMPI_CHECK(stage_copy(c, a->sendbuf, all, &send));
    GMPI_CHECK(equal_counts(c, a->count, &counts));
    return reduce_per_root(c, send, counts);
  }
  /* NCCL-style in place: reduce in MPI's in-place form, then move the result to its slot. */
  void *out = nccl_in_place ? (void *)a->sendbuf : a->recvbuf;
  GMPI_MPI_CHECK(MPI_COLL(c, PMPI_Reduce_scatter_block, PMPI_Ireduce_scatter_block,
                          (mpi_in_place || nccl_in_place) ? MPI_IN_PLACE : a->sendbuf, out,
                          (int)a->count, gmpi_mpi_dtype(a->dtype), gmpi_mpi_op(a->dtype, a->op),
                          c->mc));
  if (nccl_in_place) {
    c->after->move_to = a->recvbuf;
    c->after->move_from = out;
    c->after->move_bytes = block;
  }
  return GMPI_SUCCESS;
}

/* An int copy of counts (each <= limit), kept until completion; NULL when any is larger. */
static int *int_counts(coll_ctx_t *c, const size_t *counts, size_t limit) {
  int p = c->comm->size;
  for (int r = 0; r < p; r++)
    if (counts[r] > limit) return NULL;
  int *v = malloc((size_t)p * sizeof(*v));
  if (keep(c, v, (size_t)p * sizeof(*v), "MPI counts") != GMPI_SUCCESS) return NULL;
  for (int r = 0; r < p; r++)
    v[r] = (int)counts[r];
  return v;
}

static gmpi_status_t run_reduce_scatterv(coll_ctx_t *c) {
  const gmpi_coll_args_t *a = c->a;
  size_t total = 0, limit = c->chunk < INT_MAX ? c->chunk : INT_MAX;
  for (int r = 0; r < c->comm->size; r++)
    total += a->recvcounts[r];
  divide_after(c, a->recvbuf, a->recvcounts[c->comm->rank]);
  int in_place = a->sendbuf == a->recvbuf;
  int *counts = total <= limit ? int_counts(c, a->recvcounts, limit) : NULL;
  if (counts) /* every rank has the same recvcounts, so every rank takes this branch */
    return gmpi_mpi_check(MPI_COLL(c, PMPI_Reduce_scatter, PMPI_Ireduce_scatter,
                                   in_place ? MPI_IN_PLACE : a->sendbuf, a->recvbuf, counts,
                                   gmpi_mpi_dtype(a->dtype), gmpi_mpi_op(a->dtype, a->op), c->mc),
                          "MPI_Reduce_scatter");
  const void *send = a->sendbuf;
  if (in_place) GMPI_CHECK(stage_copy(c, a->sendbuf, total * c->es, &send));
  return reduce_per_root(c, send, a->recvcounts);
}

/* ---- data movement ----------------------------------------------------------------------- */

/* One block of `bytes` as an MPI (type, count). Types may be freed once the call is posted. */
typedef struct {
  MPI_Datatype type;
  int count;
} bytes_t;

static gmpi_status_t block_of(coll_ctx_t *c, size_t bytes, bytes_t *b) {
  return gmpi_mpi_bytes_type(bytes, c->chunk, &b->type, &b->count);
}

GMPI_COLL_INLINE gmpi_status_t run_bcast(coll_ctx_t *c) {
  bytes_t b;
  GMPI_CHECK(block_of(c, c->a->count * c->es, &b));
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_MPI_CHECK_GOTO(
      MPI_COLL(c, PMPI_Bcast, PMPI_Ibcast, c->a->recvbuf, b.count, b.type, c->a->root, c->mc), st,
      release_type);
release_type:
  gmpi_mpi_type_release(&b.type);
  return st;
}

/* Allgather, gather and scatter: equal blocks, MPI_IN_PLACE where this rank's call is. */
GMPI_COLL_INLINE gmpi_status_t run_blocks(coll_ctx_t *c) {
  const gmpi_coll_args_t *a = c->a;
  int in_place = gmpi_coll_in_place_inline(c->comm, a);
  const void *s = in_place && a->kind != GMPI_COLL_SCATTER ? MPI_IN_PLACE : a->sendbuf;
  void *r = in_place && a->kind == GMPI_COLL_SCATTER ? MPI_IN_PLACE : a->recvbuf;
  bytes_t b;
  GMPI_CHECK(block_of(c, a->count * c->es, &b));
  int rc = MPI_SUCCESS;
  if (a->kind == GMPI_COLL_ALLGATHER)
    rc =
        MPI_COLL(c, PMPI_Allgather, PMPI_Iallgather, s, b.count, b.type, r, b.count, b.type, c->mc);
  else if (a->kind == GMPI_COLL_GATHER)
    rc = MPI_COLL(c, PMPI_Gather, PMPI_Igather, s, b.count, b.type, r, b.count, b.type, a->root,
                  c->mc);
  else
    rc = MPI_COLL(c, PMPI_Scatter, PMPI_Iscatter, s, b.count, b.type, r, b.count, b.type, a->root,
                  c->mc);
  gmpi_mpi_type_release(&b.type);
  return gmpi_mpi_check(rc, gmpi_coll_name(a->kind));
}

GMPI_COLL_INLINE gmpi_status_t run_alltoall(coll_ctx_t *c) {
  const gmpi_coll_args_t *a = c->a;
  size_t block = a->count * c->es, all = block * (size_t)c->comm->size;
  const void *send = a->sendbuf;
  /* in place: MPI's in-place alltoall is not everywhere; send from a copy */
  if (a->sendbuf == a->recvbuf && all) GMPI_CHECK(stage_copy(c, a->sendbuf, all, &send));
  bytes_t b;
  GMPI_CHECK(block_of(c, block, &b));
  int rc = MPI_COLL(c, PMPI_Alltoall, PMPI_Ialltoall, send, b.count, b.type, a->recvbuf, b.count,
                    b.type, c->mc);
  gmpi_mpi_type_release(&b.type);
  return gmpi_mpi_check(rc, "MPI_Alltoall");
}

static size_t gcd(size_t x, size_t y) {
  while (y) {
    size_t t = x % y;
    x = y;
    y = t;
  }
  return x;
}

/* The MPI type a v-variant counts in: the dtype's own MPI type -- elements -- while every
 * count and displacement fits MPI's int. That is the same type on every rank, which Open MPI
 * needs: it sizes an allgatherv by the *send* type to pick its algorithm, so ranks sending in
 * different types pick different algorithms and hang. Beyond INT_MAX elements the unit is the
 * largest number of bytes dividing every block and offset of the layout. */
typedef struct {
  MPI_Datatype type;
  size_t bytes; /* the unit's size */
  int owned;    /* made here: freed once the call is posted (MPI keeps what it needs) */
} unit_t;

static unit_t elem_unit(const coll_ctx_t *c) {
  return (unit_t){gmpi_mpi_dtype(c->a->dtype), c->es, 0};
}

static void unit_release(unit_t *u) {
  if (u->owned) PMPI_Type_free(&u->type);
  u->owned = 0;
}

static gmpi_status_t bytes_unit(size_t bytes, unit_t *u) {
  *u = (unit_t){MPI_BYTE, bytes, 0};
  if (bytes <= 1) return GMPI_SUCCESS;
  int n;
  GMPI_CHECK(gmpi_mpi_bytes_type(bytes, INT_MAX, &u->type, &n));
  u->owned = u->type != MPI_BYTE;
  if (u->owned) return GMPI_SUCCESS; /* a struct of exactly `bytes` */
  GMPI_CHECK(gmpi_mpi_check(PMPI_Type_contiguous(n, MPI_BYTE, &u->type), "MPI_Type_contiguous"));
  u->owned = 1;
  return gmpi_mpi_check(PMPI_Type_commit(&u->type), "MPI_Type_commit");
}

/* One side of a v-variant: its unit and its int counts and displacements in that unit. */
typedef struct {
  unit_t unit;
  int *counts, *displs;
} v_layout_t;

static gmpi_status_t v_layout(coll_ctx_t *c, const size_t *counts, const size_t *displs,
                              const char *arg, v_layout_t *out) {
  int p = c->comm->size;
  size_t most = 0, common = 0;
  for (int r = 0; r < p; r++) {
    most = counts[r] > most ? counts[r] : most;
    most = displs[r] > most ? displs[r] : most;
    common = gcd(gcd(common, counts[r] * c->es), displs[r] * c->es);
  }
  out->unit = elem_unit(c);
  if (most > INT_MAX) {
    common = common ? common : 1;
    if (most * c->es / common > INT_MAX)
      return gmpi_error(GMPI_ERR_UNSUPPORTED,
                        "%s: the blocks of '%s' and their displacements have no common size that "
                        "brings them under MPI's int counts (largest %zu elements, common unit "
                        "%zu bytes)",
                        gmpi_coll_name(c->a->kind), arg, most, common);
    GMPI_CHECK(bytes_unit(common, &out->unit));
  }
  int *v = malloc(2 * (size_t)p * sizeof(*v));
  gmpi_status_t st = keep(c, v, 2 * (size_t)p * sizeof(*v), "MPI counts");
  if (st != GMPI_SUCCESS) {
    unit_release(&out->unit);
    return st;
  }
  for (int r = 0; r < p; r++) {
    v[r] = (int)(counts[r] * c->es / out->unit.bytes);
    v[p + r] = (int)(displs[r] * c->es / out->unit.bytes);
  }
  out->counts = v;
  out->displs = v + p;
  return GMPI_SUCCESS;
}

/* This rank's own block of n elements: in elements when they fit (the type every rank uses),
 * else in the layout's unit when it has one that divides it, else one byte struct. */
static gmpi_status_t own_block(const coll_ctx_t *c, size_t n, const v_layout_t *layout, int *count,
                               unit_t *u) {
  size_t bytes = n * c->es;
  if (n <= INT_MAX) {
    *u = elem_unit(c);
    *count = (int)n;
    return GMPI_SUCCESS;
  }
  if (layout && bytes % layout->unit.bytes == 0 && bytes / layout->unit.bytes <= INT_MAX) {
    *u = layout->unit;
    u->owned = 0; /* the layout's */
    *count = (int)(bytes / layout->unit.bytes);
    return GMPI_SUCCESS;
  }
  GMPI_CHECK(gmpi_mpi_bytes_type(bytes, INT_MAX, &u->type, count));
  u->bytes = bytes;
  u->owned = u->type != MPI_BYTE;
  return GMPI_SUCCESS;
}

/* Allgatherv and gatherv: this rank's block, the gatherer's layout. */
static gmpi_status_t run_gatherv(coll_ctx_t *c) {
  const gmpi_coll_args_t *a = c->a;
  int gathers = a->kind == GMPI_COLL_ALLGATHERV || c->comm->rank == a->root;
  int in_place = gmpi_coll_in_place(c->comm, a);
  v_layout_t r = {{MPI_BYTE, 1, 0}, NULL, NULL};
  if (gathers) GMPI_CHECK(v_layout(c, a->recvcounts, a->rdispls, "recvcounts", &r));
  unit_t s;
  int n;
  gmpi_status_t st = own_block(c, a->count, gathers ? &r : NULL, &n, &s);
  if (st != GMPI_SUCCESS) goto release_layout;
  const void *from = in_place ? MPI_IN_PLACE : a->sendbuf;
  int rc = a->kind == GMPI_COLL_ALLGATHERV
               ? MPI_COLL(c, PMPI_Allgatherv, PMPI_Iallgatherv, from, n, s.type, a->recvbuf,
                          r.counts, r.displs, r.unit.type, c->mc)
               : MPI_COLL(c, PMPI_Gatherv, PMPI_Igatherv, from, n, s.type, a->recvbuf, r.counts,
                          r.displs, r.unit.type, a->root, c->mc);
  unit_release(&s);
  st = gmpi_mpi_check(rc, gmpi_coll_name(a->kind));
release_layout:
  unit_release(&r.unit);
  return st;
}

static gmpi_status_t run_scatterv(coll_ctx_t *c) {
  const gmpi_coll_args_t *a = c->a;
  int root = c->comm->rank == a->root;
  v_layout_t s = {{MPI_BYTE, 1, 0}, NULL, NULL};
  if (root) GMPI_CHECK(v_layout(c, a->sendcounts, a->sdispls, "sendcounts", &s));
  unit_t r;
  int n;
  gmpi_status_t st = own_block(c, a->count, root ? &s : NULL, &n, &r);
  if (st != GMPI_SUCCESS) goto release_layout;
  void *to = gmpi_coll_in_place(c->comm, a) ? MPI_IN_PLACE : a->recvbuf;
  st = gmpi_mpi_check(MPI_COLL(c, PMPI_Scatterv, PMPI_Iscatterv, a->sendbuf, s.counts, s.displs,
                               s.unit.type, to, n, r.type, a->root, c->mc),
                      "MPI_Scatterv");
  unit_release(&r);
release_layout:
  unit_release(&s.unit);
  return st;
}

static gmpi_status_t run_alltoallv(coll_ctx_t *c) {
  const gmpi_coll_args_t *a = c->a;
  const void *send = a->sendbuf;
  const size_t *sc = a->sendcounts, *sd = a->sdispls;
  if (a->sendbuf == a->recvbuf) { /* in place: send from a copy, laid out as the receive */
    sc = a->recvcounts;
    sd = a->rdispls;
    GMPI_CHECK(stage_copy(c, a->recvbuf, gmpi_layout_span(c->comm->size, sc, sd) * c->es, &send));
  }
  v_layout_t s = {{MPI_BYTE, 1, 0}, NULL, NULL}, r = {{MPI_BYTE, 1, 0}, NULL, NULL};
  gmpi_status_t st = v_layout(c, sc, sd, "sendcounts", &s);
  if (st == GMPI_SUCCESS) st = v_layout(c, a->recvcounts, a->rdispls, "recvcounts", &r);
  if (st == GMPI_SUCCESS)
    st = gmpi_mpi_check(MPI_COLL(c, PMPI_Alltoallv, PMPI_Ialltoallv, send, s.counts, s.displs,
                                 s.unit.type, a->recvbuf, r.counts, r.displs, r.unit.type, c->mc),
                        "MPI_Alltoallv");
  unit_release(&s.unit);
  unit_release(&r.unit);
  return st;
}

static gmpi_status_t run_barrier(coll_ctx_t *c) {
  if (!c->nb) return GMPI_SUCCESS; /* the arrival gate was the barrier */
  return gmpi_mpi_check(MPI_COLL(c, PMPI_Barrier, PMPI_Ibarrier, c->mc), "MPI_Ibarrier");
}

typedef gmpi_status_t (*coll_fn_t)(coll_ctx_t *c);
static const coll_fn_t coll_table[GMPI_COLL_KIND_COUNT] = {
    [GMPI_COLL_ALLREDUCE] = run_allreduce,
    [GMPI_COLL_BCAST] = run_bcast,
    [GMPI_COLL_REDUCE] = run_reduce,
    [GMPI_COLL_ALLGATHER] = run_blocks,
    [GMPI_COLL_REDUCE_SCATTER] = run_reduce_scatter,
    [GMPI_COLL_ALLTOALL] = run_alltoall,
    [GMPI_COLL_BARRIER] = run_barrier,
    [GMPI_COLL_GATHER] = run_blocks,
    [GMPI_COLL_SCATTER] = run_blocks,
    [GMPI_COLL_ALLGATHERV] = run_gatherv,
    [GMPI_COLL_GATHERV] = run_gatherv,
    [GMPI_COLL_SCATTERV] = run_scatterv,
    [GMPI_COLL_ALLTOALLV] = run_alltoallv,
    [GMPI_COLL_REDUCE_SCATTERV] = run_reduce_scatterv,
};

/* How a blocking collective on host buffers runs, decided alike on every rank from what the
 * ranks of a comm share (its configuration, and whether it has envelope engines):
 *  - MPI's blocking call, under the watchdog (core/watchdog.h) -- the default: MPI's speed,
 *    and a call that cannot complete ends the job with a diagnosis after GMPI_TIMEOUT;
 *  - polled (GMPI_TIMEOUT_ACTION=status): MPI's nonblocking call waited by gmpi, which returns
 *    GMPI_ERR_TIMEOUT, at the cost of Open MPI's slower nonblocking collectives;
 *  - behind an arrival gate, when the comm has envelope engines (GMPI_P2P=envelope, a device
 *    engine): a rank blocked inside MPI cannot drive them, and a peer's gmpi_send may wait on
 *    them before it can join the collective -- both would wait forever.
 *    The gate is a nonblocking barrier polled while driving every engine: once it completes
 *    every rank has entered it, so every peer's earlier sends have completed, and past it each
 *    rank runs only this collective's MPI calls, which wait on no engine. Under GMPI_CHECK the
 *    signature exchange is a polled allgather and gates the same way.
 * Not covered: GMPI_TIMEOUT=0 on a native-MPI comm of a process whose other comms (another
 * backend) have engines. */
static int gated(gmpi_comm_t comm) {
  return comm->host_engine.p2p == &gmpi_p2p_envelope || comm->device_engine.p2p;
}

static int polled(gmpi_comm_t comm) {
  return comm->cfg.timeout_s > 0 && comm->cfg.timeout_action == GMPI_TIMEOUT_STATUS;
}

static gmpi_status_t barrier_wait(gmpi_comm_t comm, gmpi_host_t *host, const char *what) {
  MPI_Request r;
  GMPI_MPI_CHECK(PMPI_Ibarrier(host->data, &r));
  return gmpi_mpi_wait(comm, 1, &r, MPI_STATUSES_IGNORE, what);
}

/* Every rank has reached this plan replay, or GMPI_ERR_TIMEOUT. A replay's collectives are
 * blocking calls: gated where engines need it, and where the caller wants a status. */
gmpi_status_t gmpi_host_gate(gmpi_comm_t comm, gmpi_host_t *host) {
  if (!gated(comm) && !polled(comm)) return GMPI_SUCCESS;
  return barrier_wait(comm, host, "the arrival gate");
}

/* GMPI_TIMEOUT_ACTION=status: the nonblocking form, waited (bounded, driving every engine). */
static gmpi_status_t run_polled(gmpi_comm_t comm, gmpi_host_t *host, const gmpi_coll_args_t *a);

static inline gmpi_status_t run_blocking(gmpi_comm_t comm, gmpi_host_t *host,
                                         const gmpi_coll_args_t *a);

/* The commonest collectives when nothing is left to do once their MPI calls return: an
 * allreduce or reduce that is not an average, a bcast, allgather, gather or scatter, an
 * alltoall not in place (that one sends from a copy). Their run_* functions register no
 * after-work in these cases, so they run here with no coll_after_t (c.after NULL) and skip
 * run_blocking's setup and finish, which a small collective's latency (every rank's) would
 * pay for nothing. The MPI calls are run_calls' own. kind is a's, a constant at every call.
 * Returns 0 having done nothing for any other; 1 having run it, its status in *st. */
GMPI_COLL_INLINE int run_without_after(gmpi_comm_t comm, gmpi_host_t *host,
                                       const gmpi_coll_args_t *a, gmpi_coll_kind_t kind,
                                       gmpi_status_t *st) {
  coll_ctx_t c = ctx_of(comm, host, a, NULL, NULL);
  switch (kind) {
  case GMPI_COLL_ALLREDUCE:
    if (a->op == GMPI_AVG) return 0;
    *st = run_allreduce(&c);
    return 1;
  case GMPI_COLL_REDUCE:
    if (a->op == GMPI_AVG) return 0;
    *st = run_reduce(&c);
    return 1;
  case GMPI_COLL_BCAST: *st = run_bcast(&c); return 1;
  case GMPI_COLL_ALLGATHER:
  case GMPI_COLL_GATHER:
  case GMPI_COLL_SCATTER: *st = run_blocks(&c); return 1;
  case GMPI_COLL_ALLTOALL:
    if (a->sendbuf == a->recvbuf) return 0;
    *st = run_alltoall(&c);
    return 1;
  default: return 0;
  }
}

/* MPI's blocking calls inside the watchdog's mark. kind is a's: a constant in each kind's
 * function below, which then holds only its own case, name and frame. */
GMPI_COLL_INLINE gmpi_status_t run_watched_kind(gmpi_comm_t comm, gmpi_host_t *host,
                                                const gmpi_coll_args_t *a, gmpi_coll_kind_t kind) {
  gmpi_watch_enter(&comm->watch, gmpi_coll_name(kind), a->count);
  gmpi_status_t st = GMPI_SUCCESS;
  if (kind == GMPI_COLL_BARRIER)
    st = gmpi_mpi_check(PMPI_Barrier(host->data), "MPI_Barrier");
  else if (!run_without_after(comm, host, a, kind, &st))
    st = run_blocking(comm, host, a);
  gmpi_watch_exit(&comm->watch);
  return st;
}

/* One function for each kind run_without_after takes, one for the others (whose kind is read
 * from a): one function for every kind, switching on it, cost a small reduce about 25
 * instructions (its frame, the switch, the name's lookup). */
#define WATCHED(name, kind)                                                                        \
  static gmpi_status_t name(gmpi_comm_t comm, gmpi_host_t *host, const gmpi_coll_args_t *a) {      \
    return run_watched_kind(comm, host, a, kind);                                                  \
  }
WATCHED(watched_allreduce, GMPI_COLL_ALLREDUCE)
WATCHED(watched_bcast, GMPI_COLL_BCAST)
WATCHED(watched_reduce, GMPI_COLL_REDUCE)
WATCHED(watched_allgather, GMPI_COLL_ALLGATHER)
WATCHED(watched_alltoall, GMPI_COLL_ALLTOALL)
WATCHED(watched_barrier, GMPI_COLL_BARRIER)
WATCHED(watched_gather, GMPI_COLL_GATHER)
WATCHED(watched_scatter, GMPI_COLL_SCATTER)
WATCHED(watched_other, a->kind)
#undef WATCHED

typedef gmpi_status_t (*watched_fn_t)(gmpi_comm_t comm, gmpi_host_t *host,
                                      const gmpi_coll_args_t *a);
static const watched_fn_t watched_table[GMPI_COLL_KIND_COUNT] = {
    [GMPI_COLL_ALLREDUCE] = watched_allreduce,  [GMPI_COLL_BCAST] = watched_bcast,
    [GMPI_COLL_REDUCE] = watched_reduce,        [GMPI_COLL_ALLGATHER] = watched_allgather,
    [GMPI_COLL_REDUCE_SCATTER] = watched_other, [GMPI_COLL_ALLTOALL] = watched_alltoall,
    [GMPI_COLL_BARRIER] = watched_barrier,      [GMPI_COLL_GATHER] = watched_gather,
    [GMPI_COLL_SCATTER] = watched_scatter,      [GMPI_COLL_ALLGATHERV] = watched_other,
    [GMPI_COLL_GATHERV] = watched_other,        [GMPI_COLL_SCATTERV] = watched_other,
    [GMPI_COLL_ALLTOALLV] = watched_other,      [GMPI_COLL_REDUCE_SCATTERV] = watched_other,
};

/* a's kind was validated (gmpi_coll_run, or a plan's recording). */
static gmpi_status_t run_watched(gmpi_comm_t comm, gmpi_host_t *host, const gmpi_coll_args_t *a) {
  return watched_table[a->kind](comm, host, a);
}

/* A gated comm's blocking collective: every rank's arrival first (the polled barrier above),
 * then the watched call -- none when the collective is the barrier itself. Under GMPI_CHECK the
 * signature exchange already was the arrival. */
__attribute__((noinline)) static gmpi_status_t run_gated(gmpi_comm_t comm, gmpi_host_t *host,
                                                         const gmpi_coll_args_t *a) {
  if (!comm->cfg.check || a->kind == GMPI_COLL_BARRIER) {
    GMPI_CHECK(barrier_wait(comm, host, gmpi_coll_name(a->kind)));
    if (a->kind == GMPI_COLL_BARRIER) return GMPI_SUCCESS;
  }
  return run_watched(comm, host, a);
}

/* Each case a tail call: this function keeps no frame of its own (one cost a small collective
 * about 17 instructions). */
gmpi_status_t gmpi_host_coll(gmpi_comm_t comm, gmpi_host_t *host, const gmpi_coll_args_t *a) {
  if (polled(comm)) return run_polled(comm, host, a);
  if (gated(comm)) return run_gated(comm, host, a);
  return run_watched(comm, host, a);
}

gmpi_status_t gmpi_host_coll_past_gate(gmpi_comm_t comm, gmpi_host_t *host,
                                       const gmpi_coll_args_t *a) {
  if (polled(comm)) return run_polled(comm, host, a);
  return run_watched(comm, host, a);
}

/* Run a's calls: blocking ones when nb is NULL, else their nonblocking forms kept in nb. */
static inline gmpi_status_t run_calls(gmpi_comm_t comm, gmpi_host_t *host,
                                      const gmpi_coll_args_t *a, coll_after_t *after, icoll_t *nb) {
  coll_ctx_t c = ctx_of(comm, host, a, after, nb);
  return coll_table[a->kind](&c);
}

/* Run a's blocking calls, then what is left once they complete (the file's head). Static, so
 * that a small collective's path through this engine is one frame. */
static inline gmpi_status_t run_blocking(gmpi_comm_t comm, gmpi_host_t *host,
                                         const gmpi_coll_args_t *a) {
  coll_after_t after;
  after_clear(&after);
  gmpi_status_t st = run_calls(comm, host, a, &after, NULL);
  if (st != GMPI_SUCCESS)
    drop(&after);
  else
    finish(&after, a->dtype, comm->size);
  return st;
}

/* ---- nonblocking ------------------------------------------------------------------------- */

/* Start a's MPI calls in their nonblocking form; *out holds them and the after-work. On an
 * error with calls already started, *out stays set (they still use its memory). */
static gmpi_status_t start_calls(gmpi_comm_t comm, gmpi_host_t *host, const gmpi_coll_args_t *a,
                                 icoll_t **out) {
  icoll_t *nb = calloc(1, sizeof(*nb));
  *out = NULL;
  if (!nb) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a collective's requests");
  nb->dtype = a->dtype;
  nb->nranks = comm->size;
  gmpi_status_t st = run_calls(comm, host, a, &nb->after, nb);
  if (st != GMPI_SUCCESS && nb->n == 0) { /* nothing started: nothing in flight reads it */
    drop(&nb->after);
    free(nb->reqs);
    free(nb);
    return st;
  }
  *out = nb;
  return st;
}

/* Calls MPI may still be running (a timeout, an abandoned request): their memory is parked. */
static void park_calls(icoll_t *nb) {
  for (int i = 0; i < nb->after.n_owned; i++)
    gmpi_park(nb->after.owned[i]);
  gmpi_park(nb->reqs);
  gmpi_park(nb);
}

static void release_calls(icoll_t *nb) {
  finish(&nb->after, nb->dtype, nb->nranks);
  free(nb->reqs);
  free(nb);
}

gmpi_status_t gmpi_host_coll_start(gmpi_comm_t comm, gmpi_host_t *host, const gmpi_coll_args_t *a,
                                   gmpi_request_t req) {
  icoll_t *nb = NULL;
  gmpi_status_t st = start_calls(comm, host, a, &nb);
  /* Started in part: the started calls still read their buffers, so nb stays with req (an
   * error from a later test or wait ends the comm). */
  if (nb) req->be = nb;
  return st;
}

static gmpi_status_t run_polled(gmpi_comm_t comm, gmpi_host_t *host, const gmpi_coll_args_t *a) {
  icoll_t *nb = NULL;
  gmpi_status_t st = start_calls(comm, host, a, &nb);
  if (st == GMPI_SUCCESS)
    st = gmpi_mpi_wait(comm, nb->n, nb->reqs, MPI_STATUSES_IGNORE, gmpi_coll_name(a->kind));
  if (st != GMPI_SUCCESS) { /* started calls may still use nb */
    if (nb) park_calls(nb);
    return st;
  }
  release_calls(nb);
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_host_coll_test(gmpi_host_t *host, gmpi_request_t req, int *done) {
  (void)host;
  icoll_t *nb = req->be;
  int flag = 0;
  GMPI_MPI_CHECK(PMPI_Testall(nb->n, nb->reqs, &flag, MPI_STATUSES_IGNORE));
  *done = flag;
  if (!flag) return GMPI_SUCCESS;
  release_calls(nb);
  req->be = NULL;
  return GMPI_SUCCESS;
}

void gmpi_host_coll_abandon(gmpi_host_t *host, gmpi_request_t req) {
  (void)host;
  if (req->be) park_calls(req->be);
  /* MPI forbids freeing or cancelling a nonblocking collective's requests, and the transfer
   * may still read or write its buffers and staging: what it holds is left behind (the comm
   * has failed; docs/reliability.md). */
  req->be = NULL;
}
