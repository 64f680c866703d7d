/* SPDX-License-Identifier: BSD-3-Clause */
/* Plan fusion. A plan is recorded once and compiled collectively, so gmpi sees the whole
 * sequence before it runs: consecutive small collectives that nothing orders between them can
 * run as one call over a packed buffer -- what PyTorch's DDP does by bucketing gradients, with
 * no reshaping by the user. One call pays the collective's latency once instead of per
 * collective.
 *
 * A run is a maximal sequence of collectives of one kind (allreduce, or bcast), dtype, op and
 * root, each at most GMPI_FUSE_STEP_BYTES and together at most GMPI_FUSE_RUN_BYTES, such that
 * on every rank
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
  return a->kind == GMPI_COLL_ALLREDUCE || a->kind == GMPI_COLL_BCAST;
}

static size_t coll_bytes(const gmpi_coll_args_t *a) { return a->count * gmpi_dtype_size(a->dtype); }

/* One run may hold both: same kind, dtype, and op (allreduce) or root (bcast). */
static int alike(const gmpi_coll_args_t *a, const gmpi_coll_args_t *b) {
  if (a->kind != b->kind || a->dtype != b->dtype) return 0;
  return a->kind == GMPI_COLL_ALLREDUCE ? a->op == b->op : a->root == b->root;
}

static int overlap(const void *p, size_t np, const void *q, size_t nq) {
  const char *a = p, *b = q;
  return np && nq && a < b + nq && b < a + np;
}

/* Does one of them write what the other reads or writes? A bcast's one buffer counts as both
 * read and written (read on the root, written elsewhere). */
static int depend(const gmpi_coll_args_t *a, const gmpi_coll_args_t *b) {
  size_t na = coll_bytes(a), nb = coll_bytes(b);
  const void *ra = a->kind == GMPI_COLL_BCAST ? a->recvbuf : a->sendbuf;
  const void *rb = b->kind == GMPI_COLL_BCAST ? b->recvbuf : b->sendbuf;
  return overlap(a->recvbuf, na, rb, nb) || overlap(b->recvbuf, nb, ra, na) ||
         overlap(a->recvbuf, na, b->recvbuf, nb);
}

static int small_fusable(const gmpi_coll_args_t *a) {
  return fusable_kind(a) && a->count > 0 && coll_bytes(a) <= GMPI_FUSE_STEP_BYTES;
}

void gmpi_plan_fuse_reach(const gmpi_plan_step_t *steps, int n, int enabled, uint8_t *reach) {
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
    while (keep < len && !depend(&steps[window[len - 1 - keep]].coll, a))
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
                             size_t run_bytes, uint8_t reach) {
  const gmpi_coll_args_t *a = &steps[i].coll;
  if (!fusable_kind(a)) return "not fused: only allreduce and bcast are";
  if (a->count == 0) return "not fused: no elements";
  if (coll_bytes(a) > GMPI_FUSE_STEP_BYTES) return "not fused: over 256 KiB (GMPI_FUSE_STEP_BYTES)";
  if (prev < 0) return "starts a run (first collective)";
  if (!small_fusable(&steps[prev].coll)) return "starts a run (the collective before is not fused)";
  if (!alike(&steps[prev].coll, a))
    return "starts a run (kind, dtype, op or root differs from the one before)";
  if (!steps[prev].fuse_next) return "starts a run (point to point between, on some rank)";
  if (reach < run_steps)
    return "starts a run (its buffers depend on the run's, on some rank, or GMPI_PLAN_FUSE=0)";
  if (run_steps >= GMPI_FUSE_MAX_STEPS || run_bytes + coll_bytes(a) > GMPI_FUSE_RUN_BYTES)
    return "starts a run (the previous run is full)";
  return NULL;
}

void gmpi_plan_fuse_runs(gmpi_plan_step_t *steps, int n, const uint8_t *reach) {
  int first = -1, prev = -1, run_steps = 0;
  size_t run_bytes = 0;
  for (int i = 0; i < n; i++) {
    gmpi_plan_step_t *s = &steps[i];
    if (s->kind != PLAN_COLL) continue;
    s->fuse_why = why_apart(steps, prev, i, run_steps, run_bytes, reach ? reach[i] : 0);
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
    run_bytes += coll_bytes(&s->coll);
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

size_t gmpi_plan_run_bytes(const gmpi_plan_step_t *first) {
  return first->run_count * gmpi_dtype_size(first->coll.dtype);
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

void gmpi_plan_pack_limit(gmpi_plan_step_t *steps, int n, size_t configured, size_t backend_limit) {
  size_t limit = configured == GMPI_PLAN_PACK_BACKEND ? backend_limit : configured;
  for (int i = 0; i < n; i++) {
    const gmpi_plan_step_t *s = &steps[i];
    if (s->kind == PLAN_COLL && s->run_len > 1 && gmpi_plan_run_bytes(s) > limit)
      gmpi_plan_unfuse_run(steps, n, i, "run not packed: over GMPI_PLAN_PACK_BYTES");
  }
}
