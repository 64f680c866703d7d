/* SPDX-License-Identifier: BSD-3-Clause */
/* Modes other than eager, and the baseline registry. Plan mode records plan_ops calls of the
 * collective once per row and comm (baselines may run gmpi on a comm of their own) and replays
 * the plan; its time is divided by plan_ops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct {
  gmpi_comm_t comm;
  const bench_coll_t *coll;
  size_t count;
  gmpi_plan_t plan;
} plan_cache_t;

/* One plan per comm: gmpi's and each memory baseline's (memkind.c), alternating round by round. */
#define PLAN_COMMS 4
static plan_cache_t caches[PLAN_COMMS];

/* The comm's entry (the first free one when it has none; the last as a last resort). */
static plan_cache_t *cache_of(gmpi_comm_t comm) {
  for (int i = 0; i < PLAN_COMMS; i++)
    if (caches[i].comm == comm || !caches[i].comm) return &caches[i];
  return &caches[PLAN_COMMS - 1];
}

/* The bytes between the buffers of two recorded calls when each gets its own slice of the
 * send and receive buffers -- as a model's gradients each have their own -- or 0 under
 * --plan-buffers shared or when the buffers are too small for plan_ops slices (then every call
 * reuses the same buffers, and each depends on the one before: a plan cannot fuse them). */
size_t bench_plan_slice_bytes(const bench_ctx_t *c, const bench_shape_t *s) {
  if (c->plan_shared) return 0;
  size_t es = gmpi_dtype_size(c->dtype);
  size_t most = s->send_elems > s->recv_elems ? s->send_elems : s->recv_elems;
  size_t slice = (most * es + 255) / 256 * 256,
         cap = c->send_cap < c->recv_cap ? c->send_cap : c->recv_cap;
  return slice && slice * (size_t)c->plan_ops <= cap ? slice : 0;
}

static int build_plan(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s,
                      plan_cache_t *cache) {
  gmpi_plan_free(&cache->plan);
  cache->comm = c->comm;
  size_t slice = bench_plan_slice_bytes(c, s);
  void *send = c->send, *recv = c->recv;
  if (c->rank == 0)
    printf("# plan of %d calls of %zu bytes: %s\n", c->plan_ops, s->bytes,
           slice            ? "each call its own buffers"
           : c->plan_shared ? "every call the same buffers (--plan-buffers shared: none fuses)"
                            : "every call the same buffers (too small for a slice each: raise "
                              "--maxbytes)");
  gmpi_status_t st = gmpi_plan_begin(c->comm);
  for (int i = 0; i < c->plan_ops && st == GMPI_SUCCESS; i++) {
    c->send = (char *)send + (size_t)i * slice; /* slice 0: the same buffers */
    c->recv = (char *)recv + (size_t)i * slice;
    st = coll->run(c, s);
  }
  c->send = send, c->recv = recv; /* results are checked in the first call's buffers */
  gmpi_status_t end = gmpi_plan_end(c->comm, &cache->plan);
  if (st == GMPI_SUCCESS) st = end;
  if (st != GMPI_SUCCESS) {
    fprintf(stderr, "[rank %d] recording a %s plan failed: %s\n", c->rank, coll->name,
            gmpi_last_error());
    return 1;
  }
  cache->coll = coll;
  cache->count = s->count;
  return 0;
}

/* One "operation" in plan mode is one replay of plan_ops calls: times are per replay and the
 * table divides by plan_ops. */
int bench_plan_impl(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s) {
  plan_cache_t *cache = cache_of(c->comm);
  if ((cache->comm != c->comm || cache->coll != coll || cache->count != s->count || !cache->plan) &&
      build_plan(c, coll, s, cache))
    return 1;
  gmpi_status_t st = gmpi_plan_run(cache->plan);
  if (st != GMPI_SUCCESS)
    fprintf(stderr, "[rank %d] plan replay failed: %s\n", c->rank, gmpi_last_error());
  return st != GMPI_SUCCESS;
}

#ifndef GMPI_BENCH_CUDA
void bench_sync(bench_ctx_t *c) { (void)c; }
void bench_cuda_teardown(void) {}

int bench_stream_impl(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s) {
  (void)coll;
  (void)s;
  if (c->rank == 0) fprintf(stderr, "gmpi-bench: --mode stream needs the cuda backend\n");
  return 1;
}
#endif

/* "eager": gmpi's own eager call, the baseline of plan and stream modes. */
static int eager_available(const bench_ctx_t *c, char *why, size_t len) {
  (void)why;
  (void)len;
  (void)c;
  return 1;
}
static int eager_run(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s) {
  void *user_stream = NULL;
  if (c->mode == MODE_STREAM) { /* eager means blocking: leave stream-ordered mode meanwhile */
    gmpi_comm_stream(c->comm, &user_stream);
    gmpi_comm_set_stream(c->comm, NULL);
  }
  gmpi_status_t st = coll->run(c, s);
  if (user_stream) gmpi_comm_set_stream(c->comm, user_stream);
  return st != GMPI_SUCCESS;
}
static const bench_baseline_t bench_baseline_eager = {"eager", eager_available, eager_run, 0, NULL};

/* "checked": the same gmpi call on a second comm made with GMPI_CHECK=1, so the cost of the
 * cross-rank signature check shows in the same run. Made on first use (collective: every rank
 * asks for baselines in the same order). */
static gmpi_comm_t checked_comm;

static int checked_available(const bench_ctx_t *c, char *why, size_t len) {
  (void)c;
  if (checked_comm) return 1;
  setenv("GMPI_CHECK", "1", 1);
  gmpi_status_t st = gmpi_init(MPI_COMM_WORLD, &checked_comm);
  unsetenv("GMPI_CHECK");
  if (st != GMPI_SUCCESS) snprintf(why, len, "gmpi_init with GMPI_CHECK=1: %s", gmpi_last_error());
  return st == GMPI_SUCCESS;
}

static int checked_run(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s) {
  gmpi_comm_t mine = c->comm;
  c->comm = checked_comm;
  gmpi_status_t st = coll->run(c, s);
  c->comm = mine;
  return st != GMPI_SUCCESS;
}
static const bench_baseline_t bench_baseline_checked = {"checked", checked_available, checked_run,
                                                        0, NULL};

void bench_modes_teardown(void) {
  for (int i = 0; i < PLAN_COMMS; i++) /* before their comms are finalized */
    gmpi_plan_free(&caches[i].plan);
  gmpi_finalize(&checked_comm);
}

const bench_baseline_t *bench_find_baseline(const char *name) {
  static const bench_baseline_t *const all[] = {
      &bench_baseline_eager,     &bench_baseline_checked,   &bench_baseline_mpi,
#ifdef GMPI_BENCH_CUDA
      &bench_baseline_nccl,      &bench_baseline_ncclevent, &bench_baseline_staged,
      &bench_baseline_graph,
#endif
      &bench_baseline_ncclalloc, &bench_baseline_ncclreg,   &bench_baseline_ncclwin,
  };
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    if (!strcmp(all[i]->name, name)) return all[i];
  return NULL;
}
