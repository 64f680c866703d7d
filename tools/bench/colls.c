/* SPDX-License-Identifier: BSD-3-Clause */
/* One table entry per collective: name, shape, busbw factor (nccl-tests' formulas), the gmpi
 * call, and how to fill inputs and expected outputs. Values come from tests/test_values.h, so
 * every reduction result is exact and compared bit for bit. */
#include <string.h>

#include "../../tests/test_values.h"
#include "bench.h"

static double factor_one(int n) {
  (void)n;
  return 1.0;
}
static double factor_allreduce(int n) { return 2.0 * (n - 1) / n; }
static double factor_gather(int n) { return (double)(n - 1) / n; }

static size_t es(const bench_ctx_t *c) { return gmpi_dtype_size(c->dtype); }

static void shape_flat(const bench_ctx_t *c, size_t bytes, bench_shape_t *s) {
  size_t n = bytes / es(c);
  *s = (bench_shape_t){n, n, n, n * es(c)};
}
/* allgather: count per rank; size is the gathered buffer */
static void shape_allgather(const bench_ctx_t *c, size_t bytes, bench_shape_t *s) {
  size_t n = bytes / es(c) / (size_t)c->size;
  *s = (bench_shape_t){n, n, n * (size_t)c->size, n * (size_t)c->size * es(c)};
}
static void shape_reduce_scatter(const bench_ctx_t *c, size_t bytes, bench_shape_t *s) {
  size_t n = bytes / es(c) / (size_t)c->size;
  *s = (bench_shape_t){n, n * (size_t)c->size, n, n * (size_t)c->size * es(c)};
}
static void shape_alltoall(const bench_ctx_t *c, size_t bytes, bench_shape_t *s) {
  size_t n = bytes / es(c) / (size_t)c->size;
  *s = (bench_shape_t){n, n * (size_t)c->size, n * (size_t)c->size, n * (size_t)c->size * es(c)};
}

/* gather: count per rank; size is the gathered buffer at the root */
#define shape_gather shape_allgather
/* scatter: count per rank; size is the root's buffer */
static void shape_scatter(const bench_ctx_t *c, size_t bytes, bench_shape_t *s) {
  size_t n = bytes / es(c) / (size_t)c->size;
  *s = (bench_shape_t){n, n * (size_t)c->size, n, n * (size_t)c->size * es(c)};
}

static gmpi_status_t run_allreduce(bench_ctx_t *c, const bench_shape_t *s) {
  return gmpi_allreduce(c->send, c->recv, s->count, c->dtype, c->op, c->comm);
}
static gmpi_status_t run_bcast(bench_ctx_t *c, const bench_shape_t *s) {
  return gmpi_bcast(c->recv, s->count, c->dtype, c->root, c->comm);
}
static gmpi_status_t run_reduce(bench_ctx_t *c, const bench_shape_t *s) {
  return gmpi_reduce(c->send, c->recv, s->count, c->dtype, c->op, c->root, c->comm);
}
static gmpi_status_t run_allgather(bench_ctx_t *c, const bench_shape_t *s) {
  return gmpi_allgather(c->send, c->recv, s->count, c->dtype, c->comm);
}
static gmpi_status_t run_reduce_scatter(bench_ctx_t *c, const bench_shape_t *s) {
  return gmpi_reduce_scatter(c->send, c->recv, s->count, c->dtype, c->op, c->comm);
}
static gmpi_status_t run_alltoall(bench_ctx_t *c, const bench_shape_t *s) {
  return gmpi_alltoall(c->send, c->recv, s->count, c->dtype, c->comm);
}
static gmpi_status_t run_gather(bench_ctx_t *c, const bench_shape_t *s) {
  return gmpi_gather(c->send, c->recv, s->count, c->dtype, c->root, c->comm);
}
static gmpi_status_t run_scatter(bench_ctx_t *c, const bench_shape_t *s) {
  return gmpi_scatter(c->send, c->recv, s->count, c->dtype, c->root, c->comm);
}
static gmpi_status_t run_allgatherv(bench_ctx_t *c, const bench_shape_t *s) {
  return gmpi_allgatherv(c->send, s->count, c->recv, c->vcounts, c->vdispls, c->dtype, c->comm);
}
static gmpi_status_t run_gatherv(bench_ctx_t *c, const bench_shape_t *s) {
  return gmpi_gatherv(c->send, s->count, c->recv, c->vcounts, c->vdispls, c->dtype, c->root,
                      c->comm);
}
static gmpi_status_t run_scatterv(bench_ctx_t *c, const bench_shape_t *s) {
  return gmpi_scatterv(c->send, c->vcounts, c->vdispls, c->recv, s->count, c->dtype, c->root,
                       c->comm);
}
static gmpi_status_t run_alltoallv(bench_ctx_t *c, const bench_shape_t *s) {
  (void)s;
  return gmpi_alltoallv(c->send, c->vcounts, c->vdispls, c->recv, c->vcounts, c->vdispls, c->dtype,
                        c->comm);
}
static gmpi_status_t run_reduce_scatterv(bench_ctx_t *c, const bench_shape_t *s) {
  (void)s;
  return gmpi_reduce_scatterv(c->send, c->recv, c->vcounts, c->dtype, c->op, c->comm);
}

/* ---- the nonblocking forms (--nonblocking): started here, waited by the caller ---------- */
typedef gmpi_request_t *req_t;
static gmpi_status_t start_allreduce(bench_ctx_t *c, const bench_shape_t *s, req_t r) {
  return gmpi_iallreduce(c->send, c->recv, s->count, c->dtype, c->op, c->comm, r);
}
static gmpi_status_t start_bcast(bench_ctx_t *c, const bench_shape_t *s, req_t r) {
  return gmpi_ibcast(c->recv, s->count, c->dtype, c->root, c->comm, r);
}
static gmpi_status_t start_reduce(bench_ctx_t *c, const bench_shape_t *s, req_t r) {
  return gmpi_ireduce(c->send, c->recv, s->count, c->dtype, c->op, c->root, c->comm, r);
}
static gmpi_status_t start_allgather(bench_ctx_t *c, const bench_shape_t *s, req_t r) {
  return gmpi_iallgather(c->send, c->recv, s->count, c->dtype, c->comm, r);
}
static gmpi_status_t start_reduce_scatter(bench_ctx_t *c, const bench_shape_t *s, req_t r) {
  return gmpi_ireduce_scatter(c->send, c->recv, s->count, c->dtype, c->op, c->comm, r);
}
static gmpi_status_t start_alltoall(bench_ctx_t *c, const bench_shape_t *s, req_t r) {
  return gmpi_ialltoall(c->send, c->recv, s->count, c->dtype, c->comm, r);
}
static gmpi_status_t start_gather(bench_ctx_t *c, const bench_shape_t *s, req_t r) {
  return gmpi_igather(c->send, c->recv, s->count, c->dtype, c->root, c->comm, r);
}
static gmpi_status_t start_scatter(bench_ctx_t *c, const bench_shape_t *s, req_t r) {
  return gmpi_iscatter(c->send, c->recv, s->count, c->dtype, c->root, c->comm, r);
}
static gmpi_status_t start_allgatherv(bench_ctx_t *c, const bench_shape_t *s, req_t r) {
  return gmpi_iallgatherv(c->send, s->count, c->recv, c->vcounts, c->vdispls, c->dtype, c->comm, r);
}
static gmpi_status_t start_gatherv(bench_ctx_t *c, const bench_shape_t *s, req_t r) {
  return gmpi_igatherv(c->send, s->count, c->recv, c->vcounts, c->vdispls, c->dtype, c->root,
                       c->comm, r);
}
static gmpi_status_t start_scatterv(bench_ctx_t *c, const bench_shape_t *s, req_t r) {
  return gmpi_iscatterv(c->send, c->vcounts, c->vdispls, c->recv, s->count, c->dtype, c->root,
                        c->comm, r);
}
static gmpi_status_t start_alltoallv(bench_ctx_t *c, const bench_shape_t *s, req_t r) {
  (void)s;
  return gmpi_ialltoallv(c->send, c->vcounts, c->vdispls, c->recv, c->vcounts, c->vdispls, c->dtype,
                         c->comm, r);
}
/* NULL where a collective has no nonblocking form: reduce_scatterv (MPI has none either). */

static gmpi_status_t run_sendrecv(bench_ctx_t *c, const bench_shape_t *s) {
  int next = (c->rank + 1) % c->size, prev = (c->rank + c->size - 1) % c->size;
  return gmpi_sendrecv(c->send, s->count, c->dtype, next, 0, c->recv, s->count, c->dtype, prev, 0,
                       c->comm, NULL);
}

/* Inputs and expectations. bcast's input is its buffer (host_in goes to recv on the root). */
static void fill_reduction(bench_ctx_t *c, const bench_shape_t *s) {
  gmpi_dtype_t d = c->dtype;
  T_TILE(d, c->host_in, s->count, t_input(d, c->op, c->rank, i));
  T_TILE(d, c->host_want, s->count, t_reduced(d, c->op, c->size, i));
}
static void fill_bcast(bench_ctx_t *c, const bench_shape_t *s) {
  gmpi_dtype_t d = c->dtype;
  T_TILE(d, c->host_want, s->count, t_input(d, GMPI_SUM, c->root, i));
  if (c->rank == c->root)
    memcpy(c->host_in, c->host_want, s->count * es(c));
  else
    T_TILE(d, c->host_in, s->count, t_input(d, GMPI_SUM, c->rank + 50, i));
}
static void fill_allgather(bench_ctx_t *c, const bench_shape_t *s) {
  gmpi_dtype_t d = c->dtype;
  size_t n = s->count, b = n * es(c);
  T_TILE(d, c->host_in, n, t_input(d, GMPI_SUM, c->rank, i));
  for (int r = 0; r < c->size; r++)
    T_TILE(d, c->host_want + (size_t)r * b, n, t_input(d, GMPI_SUM, r, i));
}
static void fill_reduce_scatter(bench_ctx_t *c, const bench_shape_t *s) {
  gmpi_dtype_t d = c->dtype;
  T_TILE(d, c->host_in, s->send_elems, t_input(d, c->op, c->rank, i));
  for (size_t j = 0; j < s->count; j++)
    t_store(d, c->host_want, j, t_reduced(d, c->op, c->size, (size_t)c->rank * s->count + j));
}
static void fill_alltoall(bench_ctx_t *c, const bench_shape_t *s) {
  gmpi_dtype_t d = c->dtype;
  size_t n = s->count, b = n * es(c);
  for (int p = 0; p < c->size; p++) {
    T_TILE(d, c->host_in + (size_t)p * b, n, t_input(d, GMPI_SUM, c->rank * 7 + p, i));
    T_TILE(d, c->host_want + (size_t)p * b, n, t_input(d, GMPI_SUM, p * 7 + c->rank, i));
  }
}
/* Equal blocks for the v-variants: count per rank, block r at r*count. */
static void equal_blocks(bench_ctx_t *c, size_t count) {
  for (int r = 0; r < c->size; r++) {
    c->vcounts[r] = count;
    c->vdispls[r] = (size_t)r * count;
    c->vcounts_int[r] = (int)count;
    c->vdispls_int[r] = (int)((size_t)r * count);
  }
}
static void fill_gather(bench_ctx_t *c, const bench_shape_t *s) {
  equal_blocks(c, s->count);
  fill_allgather(c, s); /* the root gets every block; others are not checked */
}
static void fill_scatter(bench_ctx_t *c, const bench_shape_t *s) {
  gmpi_dtype_t d = c->dtype;
  size_t n = s->count, b = n * es(c);
  equal_blocks(c, n);
  for (int p = 0; p < c->size; p++)
    T_TILE(d, c->host_in + (size_t)p * b, n, t_input(d, GMPI_SUM, c->rank * 7 + p, i));
  T_TILE(d, c->host_want, n, t_input(d, GMPI_SUM, c->root * 7 + c->rank, i));
}
static void fill_v_alltoall(bench_ctx_t *c, const bench_shape_t *s) {
  equal_blocks(c, s->count);
  fill_alltoall(c, s);
}
static void fill_v_allgather(bench_ctx_t *c, const bench_shape_t *s) {
  equal_blocks(c, s->count);
  fill_allgather(c, s);
}
static void fill_v_reduce_scatter(bench_ctx_t *c, const bench_shape_t *s) {
  equal_blocks(c, s->count);
  fill_reduce_scatter(c, s);
}

static void fill_sendrecv(bench_ctx_t *c, const bench_shape_t *s) {
  gmpi_dtype_t d = c->dtype;
  int prev = (c->rank + c->size - 1) % c->size;
  T_TILE(d, c->host_in, s->count, t_input(d, GMPI_SUM, c->rank, i));
  T_TILE(d, c->host_want, s->count, t_input(d, GMPI_SUM, prev, i));
}

const bench_coll_t bench_colls[BENCH_COLL_COUNT] = {
    [BENCH_ALLREDUCE] = {BENCH_ALLREDUCE, "allreduce", 1, 0, factor_allreduce, shape_flat,
                         run_allreduce, start_allreduce, fill_reduction},
    [BENCH_BCAST] = {BENCH_BCAST, "bcast", 0, 1, factor_one, shape_flat, run_bcast, start_bcast,
                     fill_bcast},
    [BENCH_REDUCE] = {BENCH_REDUCE, "reduce", 1, 1, factor_one, shape_flat, run_reduce,
                      start_reduce, fill_reduction},
    [BENCH_ALLGATHER] = {BENCH_ALLGATHER, "allgather", 0, 0, factor_gather, shape_allgather,
                         run_allgather, start_allgather, fill_allgather},
    [BENCH_REDUCE_SCATTER] = {BENCH_REDUCE_SCATTER, "reduce_scatter", 1, 0, factor_gather,
                              shape_reduce_scatter, run_reduce_scatter, start_reduce_scatter,
                              fill_reduce_scatter},
    [BENCH_ALLTOALL] = {BENCH_ALLTOALL, "alltoall", 0, 0, factor_gather, shape_alltoall,
                        run_alltoall, start_alltoall, fill_alltoall},
    [BENCH_GATHER] = {BENCH_GATHER, "gather", 0, 1, factor_gather, shape_gather, run_gather,
                      start_gather, fill_gather},
    [BENCH_SCATTER] = {BENCH_SCATTER, "scatter", 0, 1, factor_gather, shape_scatter, run_scatter,
                       start_scatter, fill_scatter},
    [BENCH_ALLGATHERV] = {BENCH_ALLGATHERV, "allgatherv", 0, 0, factor_gather, shape_allgather,
                          run_allgatherv, start_allgatherv, fill_v_allgather},
    [BENCH_GATHERV] = {BENCH_GATHERV, "gatherv", 0, 1, factor_gather, shape_gather, run_gatherv,
                       start_gatherv, fill_gather},
    [BENCH_SCATTERV] = {BENCH_SCATTERV, "scatterv", 0, 1, factor_gather, shape_scatter,
                        run_scatterv, start_scatterv, fill_scatter},
    [BENCH_ALLTOALLV] = {BENCH_ALLTOALLV, "alltoallv", 0, 0, factor_gather, shape_alltoall,
                         run_alltoallv, start_alltoallv, fill_v_alltoall},
    [BENCH_REDUCE_SCATTERV] = {BENCH_REDUCE_SCATTERV, "reduce_scatterv", 1, 0, factor_gather,
                               shape_reduce_scatter, run_reduce_scatterv, NULL,
                               fill_v_reduce_scatter},
    [BENCH_SENDRECV] = {BENCH_SENDRECV, "sendrecv", 0, 0, factor_one, shape_flat, run_sendrecv,
                        NULL, fill_sendrecv},
};

long bench_count_wrong(const bench_ctx_t *c, size_t elems) {
  size_t e = es(c);
  long wrong = 0;
  for (size_t i = 0; i < elems; i++)
    wrong += memcmp(c->host_got + i * e, c->host_want + i * e, e) != 0;
  return wrong;
}
