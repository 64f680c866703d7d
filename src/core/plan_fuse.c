/* SPDX-License-Identifier: BSD-3-Clause */
/* Plan fusion. A plan is recorded once and compiled collectively, so gmpi sees the whole
 * sequence before it runs: consecutive small collectives that nothing orders between them can
 * run as one call over a packed buffer -- what PyTorch's DDP does by bucketing gradients, with
 * no reshaping by the user. One call pays the collective's latency once instead of per
 * collective.
 *
 * A run is a maximal sequence of collectives of one kind (allreduce, bcast, allgather or
 * reduce_scatter), dtype, op and root, each at most GMPI_FUSE_STEP_BYTES and together at most
 * GMPI_FUSE_RUN_BYTES, such that on every rank
 *   - no point-to-point step comes between two of them (fuse_next, plan_check.c), and
 *   - no collective of the run reads or writes memory another one of the run writes (packing
 *     reads every input before the call and writes every output after it, which would break
 *     such a dependency).
 * Buffers differ between ranks, so the second rule is decided per rank (reach) and folded over
 * the ranks with the rest of the plan (the least reach wins): every rank forms the same runs. */
#include "plan_fuse.h"

#include "config.h"
#include "dtype.h"

static int fusable_kind(const gmpi_coll_args_t *a) {
  return a->kind == GMPI_COLL_ALLREDUCE || a->kind == GMPI_COLL_BCAST ||
         a->kind == GMPI_COLL_ALLGATHER || a->kind == GMPI_COLL_REDUCE_SCATTER;
}

/* Packed in rows of one per rank: ranks x the run's elements (see gmpi_plan_run_slices). */
static int by_rank(gmpi_coll_kind_t kind) {
  return kind == GMPI_COLL_ALLGATHER || kind == GMPI_COLL_REDUCE_SCATTER;
}

static size_t coll_bytes(const gmpi_coll_args_t *a) { return a->count * gmpi_dtype_size(a->dtype); }

/* One run may hold both: same kind, dtype, and op (allreduce, reduce_scatter) or root (bcast). */
static int alike(const gmpi_coll_args_t *a, const gmpi_coll_args_t *b) {
  if (a->kind != b->kind || a->dtype != b->dtype) return 0;
  if (a->kind == GMPI_COLL_BCAST) return a->root == b->root;
  return a->kind == GMPI_COLL_ALLGATHER || a->op == b->op;
}

static int overlap(const void *p, size_t np, const void *q, size_t nq) {
  const char *a = p, *b = q;
  return np && nq && a < b + nq && b < a + np;
}

/* The memory a collective reads and the memory it writes. A bcast's one buffer counts as both
 * (read on the root, written elsewhere); an allgather writes, a reduce_scatter reads, a block
 * per rank. */
typedef struct {
  const void *read, *write;
  size_t read_bytes, write_bytes;
} regions_t;

static regions_t regions(const gmpi_coll_args_t *a, int nranks) {
  size_t n = coll_bytes(a), all = n * (size_t)nranks;
  regions_t r = {a->sendbuf, a->recvbuf, n, n};
  if (a->kind == GMPI_COLL_BCAST) r.read = a->recvbuf;
  if (a->kind == GMPI_COLL_ALLGATHER) r.write_bytes = all;
  if (a->kind == GMPI_COLL_REDUCE_SCATTER) r.read_bytes = all;
  return r;
}

/* Does one of them write what the other reads or writes? */
static int depend(const gmpi_coll_args_t *a, const gmpi_coll_args_t *b, int nranks) {
  regions_t x = regions(a, nranks), y = regions(b, nranks);
  return overlap(x.write, x.write_bytes, y.read, y.read_bytes) ||
         overlap(y.write, y.write_bytes, x.read, x.read_bytes) ||
         overlap(x.write, x.write_bytes, y.write, y.write_bytes);
}

static int small_fusable(const gmpi_coll_args_t *a) {
  return fusable_kind(a) && a->count > 0 && coll_bytes(a) <= GMPI_FUSE_STEP_BYTES;
}

void gmpi_plan_fuse_reach(const gmpi_plan_step_t *steps, int n, int nranks, int enabled,
                          uint8_t *reach) {
  /* Window of the collectives before the current one (their step indices), oldest first. */
  int window[GMPI_FUSE_MAX_STEPS];
  int len = 0; /* reach of the previous collective + 1 = collectives usable before this one */
  int prev = -1;
  for (int i = 0; i < n; i++) {
    reach[i] = 0;
    if (steps[i].kind != PLAN_COLL) continue;
    const gmpi_coll_args_t *a = &steps[i].coll;
    int usable = enabled && small_fusable(a) && prev >= 0 && small_fusable(&steps[prev].coll) &&
                 alike(&steps[prev].coll, a);
    if (!usable) len = 0;
    /* Every pair before us in the window is independent already; check us against each,
     * newest first: the first dependency cuts the window there. */
    int keep = 0;
    while (keep < len && !depend(&steps[window[len - 1 - keep]].coll, a, nranks))
      keep++;
    if (keep < len) { /* drop the older part, which now ends at a dependency */
      for (int j = 0; j < keep; j++)
        window[j] = window[len - keep + j];
      len = keep;
    }
    reach[i] = (uint8_t)len;
    if (len == GMPI_FUSE_MAX_STEPS - 1) { /* full: the oldest leaves */
      for (int j = 1; j < len; j++)
        window[j - 1] = window[j];
      len--;
    }
    window[len++] = i;
    prev = i;
  }
}

/* Why collective i does not join the run of collective prev (NULL: it does). */
static const char *why_apart(const gmpi_plan_step_t *steps, int prev, int i, int run_steps,
                             size_t run_bytes, size_t add_bytes, uint8_t reach) {
  const gmpi_coll_args_t *a = &steps[i].coll;
  if (!fusable_kind(a)) return "not fused: only allreduce, bcast, allgather, reduce_scatter are";
  if (a->count == 0) return "not fused: no elements";
  if (coll_bytes(a) > GMPI_FUSE_STEP_BYTES) return "not fused: over 256 KiB (GMPI_FUSE_STEP_BYTES)";
  if (prev < 0) return "starts a run (first collective)";
  if (!small_fusable(&steps[prev].coll)) return "starts a run (the collective before is not fused)";
  if (!alike(&steps[prev].coll, a))
    return "starts a run (kind, dtype, op or root differs from the one before)";
  if (!steps[prev].fuse_next) return "starts a run (point to point between, on some rank)";
  if (reach < run_steps)
    return "starts a run (its buffers depend on the run's, on some rank, or GMPI_PLAN_FUSE=0)";
  if (run_steps >= GMPI_FUSE_MAX_STEPS || run_bytes + add_bytes > GMPI_FUSE_RUN_BYTES)
    return "starts a run (the previous run is full)";
  return NULL;
}

void gmpi_plan_fuse_runs(gmpi_plan_step_t *steps, int n, int nranks, const uint8_t *reach) {
  int first = -1, prev = -1, run_steps = 0;
  size_t run_bytes = 0;
  for (int i = 0; i < n; i++) {
    gmpi_plan_step_t *s = &steps[i];
    if (s->kind != PLAN_COLL) continue;
    /* what it adds to the packed buffer: a block per rank row for allgather, reduce_scatter */
    size_t add = coll_bytes(&s->coll) * (by_rank(s->coll.kind) ? (size_t)nranks : 1);
    s->fuse_why = why_apart(steps, prev, i, run_steps, run_bytes, add, reach ? reach[i] : 0);
    if (s->fuse_why) { /* a new run, of one so far */
      first = i;
      run_steps = 0;
      run_bytes = 0;
      s->run_len = 1;
      s->run_count = 0;
    }
    s->run_first = first;
    s->run_offset = steps[first].run_count;
    steps[first].run_count += s->coll.count;
    if (!s->fuse_why) steps[first].run_len++;
    run_steps++;
    run_bytes += add;
    prev = i;
  }
}

gmpi_coll_args_t gmpi_plan_fused_args(const gmpi_plan_step_t *first, void *packed) {
  gmpi_coll_args_t a = first->coll;
  a.sendbuf = packed;
  a.recvbuf = packed;
  a.count = first->run_count;
  return a;
}

size_t gmpi_plan_run_bytes(const gmpi_plan_step_t *first, int nranks) {
  size_t rows = by_rank(first->coll.kind) ? (size_t)nranks : 1;
  return rows * first->run_count * gmpi_dtype_size(first->coll.dtype);
}

gmpi_plan_rows_t gmpi_plan_run_rows(const gmpi_plan_step_t *first, int rank, int nranks) {
  gmpi_plan_rows_t r = {first->run_count * gmpi_dtype_size(first->coll.dtype), 1, 0, 1, 0};
  if (first->coll.kind == GMPI_COLL_ALLGATHER) { /* ours into our row, every row out */
    r.pack_row = rank;
    r.unpack_rows = nranks;
  } else if (first->coll.kind == GMPI_COLL_REDUCE_SCATTER) { /* every block in, row 0 out */
    r.pack_rows = nranks;
  }
  return r;
}

/* Collective s's slice on this rank. */
static gmpi_plan_slice_t step_slice(const gmpi_plan_step_t *s, int rank) {
  const gmpi_coll_args_t *a = &s->coll;
  size_t es = gmpi_dtype_size(a->dtype), bytes = a->count * es;
  gmpi_plan_slice_t sl = {a->sendbuf, a->recvbuf, s->run_offset * es, bytes};
  if (a->kind == GMPI_COLL_BCAST) { /* the root packs, the others unpack */
    sl.in = rank == a->root ? a->recvbuf : NULL;
    sl.out = rank == a->root ? NULL : a->recvbuf;
  }
  if (a->kind == GMPI_COLL_ALLGATHER && a->sendbuf == a->recvbuf) /* in place: at our slot */
    sl.in = (const char *)a->recvbuf + (size_t)rank * bytes;
  return sl;
}

int gmpi_plan_run_slices(const gmpi_plan_step_t *steps, int n, int first, int rank,
                         gmpi_plan_slice_t *out) {
  int got = 0;
  for (int i = first; i < n && got < steps[first].run_len; i++)
    if (steps[i].kind == PLAN_COLL && steps[i].run_first == first)
      out[got++] = step_slice(&steps[i], rank);
  return got;
}

void gmpi_plan_unfuse_run(gmpi_plan_step_t *steps, int n, int first, const char *why) {
  int left = steps[first].run_len;
  for (int i = first; i < n && left > 0; i++) {
    gmpi_plan_step_t *s = &steps[i];
    if (s->kind != PLAN_COLL || s->run_first != first) continue;
    s->run_len = 1;
    s->run_first = i;
    s->run_offset = 0;
    s->run_count = s->coll.count;
    s->fuse_why = why;
    left--;
  }
}

void gmpi_plan_pack_limit(gmpi_plan_step_t *steps, int n, int nranks, size_t configured,
                          size_t backend_limit) {
  size_t limit = configured == GMPI_PLAN_PACK_BACKEND ? backend_limit : configured;
  for (int i = 0; i < n; i++) {
    const gmpi_plan_step_t *s = &steps[i];
    if (s->kind == PLAN_COLL && s->run_len > 1 && gmpi_plan_run_bytes(s, nranks) > limit)
      gmpi_plan_unfuse_run(steps, n, i, "run not packed: over GMPI_PLAN_PACK_BYTES");
  }
}
