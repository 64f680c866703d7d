/* SPDX-License-Identifier: BSD-3-Clause */
/* Compiling a plan across ranks: every rank gathers every rank's recorded steps, then runs the
 * same checks on the same data, so all ranks reach the same verdict (and the same message):
 *   1. every recorded request is waited inside the plan;
 *   2. the collectives agree: same sequence, kinds, counts, dtypes, ops, roots;
 *   3. point-to-point matches under MPI's rules (core/match.c), each receive resolved to one
 *      source, tag and length, so replays exchange no envelopes;
 *   4. the groups can run: simulating the plan's execution model (plan.h) completes.
 * Wildcard receives are matched as if every receive were posted before any message arrived,
 * messages arriving in the order (sender's step, sender's rank): one legal MPI outcome,
 * fixed once for all replays. */
#include "plan_check.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "comm.h"
#include "dtype.h"
#include "error.h"
#include "match.h"
#include "oob.h"
#include "ops.h"
#include "plan_fuse.h"

/* One step as it travels between ranks. */
typedef struct {
  int32_t kind, coll, dtype, op, root, peer, tag, request;
  uint64_t count;
  int32_t reach, unused; /* COLL: this rank's fusion reach (plan_fuse.h) */
} wire_step_t;

typedef struct {
  int nranks;
  int *n;             /* steps per rank */
  wire_step_t **step; /* step[r][i] */
  int **match_rank;   /* the partner of a send or receive: rank and step */
  int **match_step;
  int **group;   /* segment number of each step (collectives and p2p groups) */
  int *unwaited; /* per rank: first step whose request is never waited, or -1 */
} plan_view_t;

/* The signature of a recorded collective, as GMPI_CHECK compares it. */
static gmpi_coll_sig_t step_sig(const wire_step_t *s) {
  return gmpi_coll_sig((gmpi_coll_kind_t)s->coll, s->count, (gmpi_dtype_t)s->dtype,
                       (gmpi_op_t)s->op, s->root);
}

/* Collectives agree when their signatures do (fields a collective does not use are ignored). */
static int sigs_differ(const wire_step_t *a, const wire_step_t *b) {
  gmpi_coll_sig_t x = step_sig(a), y = step_sig(b);
  return memcmp(&x, &y, sizeof(x)) != 0;
}

static void describe_step(char *buf, size_t len, const plan_view_t *v, int r, int i) {
  const wire_step_t *s = &v->step[r][i];
  const char *dt = gmpi_dtype_name((gmpi_dtype_t)s->dtype);
  char sig[128];
  switch (s->kind) {
  case PLAN_COLL: {
    gmpi_coll_sig_t cs = step_sig(s);
    gmpi_coll_sig_describe(sig, sizeof(sig), &cs);
    snprintf(buf, len, "rank %d step %d %s", r, i, sig);
    break;
  }
  case PLAN_SEND:
  case PLAN_RECV:
    snprintf(buf, len, "rank %d step %d %s %s rank %d tag %d (%llu %s)", r, i,
             s->kind == PLAN_SEND ? "isend" : "irecv", s->kind == PLAN_SEND ? "to" : "from",
             s->peer, s->tag, (unsigned long long)s->count, dt);
    break;
  default: snprintf(buf, len, "rank %d step %d wait", r, i); break;
  }
}

/* ---- 1 and 2: waits and collectives ---------------------------------------------------- */

static gmpi_status_t check_waits(const plan_view_t *v) {
  for (int r = 0; r < v->nranks; r++) {
    if (v->unwaited[r] < 0) continue;
    char d[160];
    describe_step(d, sizeof(d), v, r, v->unwaited[r]);
    return gmpi_error(GMPI_ERR_MISMATCH, "plan: %s is never waited inside the plan", d);
  }
  return GMPI_SUCCESS;
}

static int next_coll(const plan_view_t *v, int r, int from) {
  for (int i = from; i < v->n[r]; i++)
    if (v->step[r][i].kind == PLAN_COLL) return i;
  return -1;
}

static gmpi_status_t check_collectives(const plan_view_t *v) {
  int *at = calloc((size_t)v->nranks, sizeof(int));
  if (!at) return gmpi_error(GMPI_ERR_NO_MEMORY, "plan: no memory to compare collectives");
  gmpi_status_t st = GMPI_SUCCESS;
  for (int k = 0; st == GMPI_SUCCESS; k++) {
    for (int r = 0; r < v->nranks; r++)
      at[r] = next_coll(v, r, k ? at[r] + 1 : 0);
    for (int r = 1; r < v->nranks && st == GMPI_SUCCESS; r++) {
      char a[160], b[160], fields[64];
      if ((at[0] < 0) != (at[r] < 0)) {
        int has = at[0] >= 0 ? 0 : r;
        describe_step(a, sizeof(a), v, has, at[has]);
        st = gmpi_error(GMPI_ERR_MISMATCH,
                        "plan: collective #%d exists on rank %d (%s) but not "
                        "on rank %d",
                        k, has, a, has ? 0 : r);
      } else if (at[0] >= 0 && sigs_differ(&v->step[0][at[0]], &v->step[r][at[r]])) {
        describe_step(a, sizeof(a), v, 0, at[0]);
        describe_step(b, sizeof(b), v, r, at[r]);
        gmpi_coll_sig_t first = step_sig(&v->step[0][at[0]]), other = step_sig(&v->step[r][at[r]]);
        fields[0] = '\0';
        gmpi_coll_sig_diff(&first, &other, fields, sizeof(fields));
        st = gmpi_error(GMPI_ERR_MISMATCH, "plan: collective #%d differs (%s): %s; %s", k, fields,
                        a, b);
      }
    }
    if (at[0] < 0) break;
  }
  free(at);
  return st;
}

/* ---- 3: point-to-point matching --------------------------------------------------------- */

typedef struct {
  gmpi_match_msg_t m; /* first */
  int rank, step;
} plan_msg_t;

typedef struct {
  gmpi_match_recv_t m; /* first */
  int step;
} plan_recv_t;

static int msg_order(const void *x, const void *y) {
  const plan_msg_t *a = x, *b = y;
  if (a->step != b->step) return a->step < b->step ? -1 : 1;
  return a->rank < b->rank ? -1 : a->rank > b->rank;
}

static gmpi_status_t unmatched(const plan_view_t *v, int r, int i, const char *why) {
  char d[160];
  describe_step(d, sizeof(d), v, r, i);
  return gmpi_error(GMPI_ERR_MISMATCH, "plan: %s %s", d, why);
}

/* The message of (s, si) met the receive (r, ri): compatible? */
static gmpi_status_t pair_up(plan_view_t *v, int s, int si, int r, int ri) {
  const wire_step_t *snd = &v->step[s][si], *rcv = &v->step[r][ri];
  v->match_rank[s][si] = r, v->match_step[s][si] = ri;
  v->match_rank[r][ri] = s, v->match_step[r][ri] = si;
  char a[160], b[160];
  describe_step(a, sizeof(a), v, s, si);
  describe_step(b, sizeof(b), v, r, ri);
  if (snd->dtype != rcv->dtype)
    return gmpi_error(GMPI_ERR_MISMATCH, "plan: %s is matched by %s: dtypes differ", a, b);
  if (snd->count > rcv->count)
    return gmpi_error(GMPI_ERR_MISMATCH,
                      "plan: %s is matched by %s: the message is longer "
                      "than the receive (truncation)",
                      a, b);
  return GMPI_SUCCESS;
}

static gmpi_status_t match_receiver(plan_view_t *v, int r) {
  int nrecv = 0, nmsg = 0;
  for (int i = 0; i < v->n[r]; i++)
    nrecv += v->step[r][i].kind == PLAN_RECV;
  for (int s = 0; s < v->nranks; s++)
    for (int i = 0; i < v->n[s]; i++)
      nmsg += v->step[s][i].kind == PLAN_SEND && v->step[s][i].peer == r;
  plan_recv_t *recvs = calloc((size_t)nrecv + 1, sizeof(*recvs));
  plan_msg_t *msgs = calloc((size_t)nmsg + 1, sizeof(*msgs));
  gmpi_status_t st = GMPI_SUCCESS;
  if (!recvs || !msgs) {
    st = gmpi_error(GMPI_ERR_NO_MEMORY, "plan: no memory to match messages");
    goto free_all;
  }
  gmpi_match_t m = {0};
  for (int i = 0, k = 0; i < v->n[r]; i++) {
    const wire_step_t *w = &v->step[r][i];
    if (w->kind != PLAN_RECV) continue;
    recvs[k] = (plan_recv_t){.m = {.source = w->peer, .tag = w->tag}, .step = i};
    gmpi_match_post(&m, &recvs[k++].m); /* nothing has arrived: every receive is posted */
  }
  for (int s = 0, k = 0; s < v->nranks; s++)
    for (int i = 0; i < v->n[s]; i++) {
      const wire_step_t *w = &v->step[s][i];
      if (w->kind != PLAN_SEND || w->peer != r) continue;
      msgs[k++] =
          (plan_msg_t){.m = {.source = s, .tag = w->tag, .bytes = w->count, .dtype = w->dtype},
                       .rank = s,
                       .step = i};
    }
  qsort(msgs, (size_t)nmsg, sizeof(*msgs), msg_order);
  for (int k = 0; k < nmsg && st == GMPI_SUCCESS; k++) {
    plan_recv_t *got = (plan_recv_t *)gmpi_match_arrive(&m, &msgs[k].m);
    if (!got)
      st = unmatched(v, msgs[k].rank, msgs[k].step, "has no matching receive");
    else
      st = pair_up(v, msgs[k].rank, msgs[k].step, r, got->step);
  }
  if (st == GMPI_SUCCESS && m.posted_head)
    st = unmatched(v, r, ((plan_recv_t *)m.posted_head)->step, "has no matching send");
free_all:
  free(recvs);
  free(msgs);
  return st;
}

/* ---- 4: can the groups run? ------------------------------------------------------------- */

/* Segments per rank: a collective, or the p2p steps between two boundaries. seg_coll[s] is
 * the collective number of segment s, or -1 for a p2p group; seg_first[s] its first step
 * (a segment's steps are contiguous). Returns the segment count. */
static int assign_groups(plan_view_t *v, int r, int *seg_coll, int *seg_first) {
  int seg = -1, open = 0, k = 0;
  for (int i = 0; i < v->n[r]; i++) {
    const wire_step_t *w = &v->step[r][i];
    if (w->kind == PLAN_COLL) {
      seg_coll[++seg] = k++;
      seg_first[seg] = i;
      open = 0;
    } else if (w->kind == PLAN_WAIT) {
      open = 0;
    } else if (!open) {
      seg_coll[++seg] = -1;
      seg_first[seg] = i;
      open = 1;
    }
    v->group[r][i] = seg;
  }
  return seg + 1;
}

typedef struct {
  int *nseg, **seg_coll, *cur;
  char **done;     /* per step: its p2p operation has met its partner */
  int **seg_first; /* per segment: its first step, so a look at one segment costs its size */
} sched_t;

/* Pair up operations whose partners are active now. */
static int meet(plan_view_t *v, sched_t *s, int r) {
  int all_done = 1;
  for (int i = s->seg_first[r][s->cur[r]]; i < v->n[r] && v->group[r][i] == s->cur[r]; i++) {
    int kind = v->step[r][i].kind;
    if (kind != PLAN_SEND && kind != PLAN_RECV) continue;
    int q = v->match_rank[r][i], qi = v->match_step[r][i];
    if (!s->done[r][i] && s->cur[q] < s->nseg[q] && v->group[q][qi] == s->cur[q])
      s->done[r][i] = s->done[q][qi] = 1;
    all_done &= s->done[r][i];
  }
  return all_done;
}

/* Run the execution model until it finishes or sticks; returns 1 when finished. */
static int run_model(plan_view_t *v, sched_t *s) {
  int p = v->nranks;
  for (int moved = 1; moved;) {
    moved = 0;
    for (int r = 0; r < p; r++)
      if (s->cur[r] < s->nseg[r] && s->seg_coll[r][s->cur[r]] < 0 && meet(v, s, r))
        s->cur[r]++, moved = 1;
    int k = s->cur[0] < s->nseg[0] ? s->seg_coll[0][s->cur[0]] : -1, all = k >= 0;
    for (int r = 1; r < p && all; r++)
      all = s->cur[r] < s->nseg[r] && s->seg_coll[r][s->cur[r]] == k;
    if (all)
      for (int r = 0; r < p; r++)
        s->cur[r]++, moved = 1;
  }
  for (int r = 0; r < p; r++)
    if (s->cur[r] < s->nseg[r]) return 0;
  return 1;
}

static gmpi_status_t stuck(plan_view_t *v, sched_t *s) {
  for (int r = 0; r < v->nranks; r++) {
    if (s->cur[r] >= s->nseg[r]) continue;
    for (int i = 0; i < v->n[r]; i++) {
      int kind = v->step[r][i].kind;
      if (v->group[r][i] != s->cur[r] || kind == PLAN_WAIT || (kind != PLAN_COLL && s->done[r][i]))
        continue;
      char a[160], b[160] = "the other ranks to reach it";
      describe_step(a, sizeof(a), v, r, i);
      if (kind != PLAN_COLL)
        describe_step(b, sizeof(b), v, v->match_rank[r][i], v->match_step[r][i]);
      return gmpi_error(GMPI_ERR_MISMATCH,
                        "plan: cannot complete when each rank's point-to-point steps between "
                        "two boundaries run as one group: %s waits for %s, which never runs "
                        "at the same time",
                        a, b);
    }
  }
  return gmpi_error(GMPI_ERR_INTERNAL, "plan: schedule stuck without a culprit");
}

static gmpi_status_t schedule(plan_view_t *v, int *nseg) {
  int p = v->nranks;
  sched_t s = {nseg, calloc((size_t)p, sizeof(int *)), calloc((size_t)p, sizeof(int)),
               calloc((size_t)p, sizeof(char *)), calloc((size_t)p, sizeof(int *))};
  gmpi_status_t st = GMPI_SUCCESS;
  for (int r = 0; r < p && s.seg_coll && s.done && s.seg_first; r++) {
    s.seg_coll[r] = calloc((size_t)v->n[r] + 1, sizeof(int));
    s.seg_first[r] = calloc((size_t)v->n[r] + 1, sizeof(int));
    s.done[r] = calloc((size_t)v->n[r] + 1, 1);
    if (!s.seg_coll[r] || !s.done[r] || !s.seg_first[r]) break;
    nseg[r] = assign_groups(v, r, s.seg_coll[r], s.seg_first[r]);
  }
  int ok = s.seg_coll && s.cur && s.done && s.seg_first;
  for (int r = 0; r < p && ok; r++)
    ok = s.seg_coll[r] && s.done[r] && s.seg_first[r];
  if (!ok)
    st = gmpi_error(GMPI_ERR_NO_MEMORY, "plan: no memory to schedule");
  else if (!run_model(v, &s))
    st = stuck(v, &s);
  for (int r = 0; r < p; r++) {
    if (s.seg_coll) free(s.seg_coll[r]);
    if (s.done) free(s.done[r]);
    if (s.seg_first) free(s.seg_first[r]);
  }
  free(s.seg_coll);
  free(s.done);
  free(s.seg_first);
  free(s.cur);
  return st;
}

/* ---- gathering and the verdict ---------------------------------------------------------- */

/* Collective k may share a launch with k+1 when no rank has point-to-point steps between:
 * on every rank, the next step after collective k that is not a wait is a collective. One pass
 * per rank, not a search per collective, so compiling stays linear in the plan's length. */
static void mark_fusable(const plan_view_t *v, gmpi_plan_step_t *steps, int n) {
  int ncoll = 0;
  for (int i = 0; i < n; i++)
    ncoll += steps[i].kind == PLAN_COLL;
  char *fuse = malloc((size_t)ncoll + 1);
  if (!fuse) return; /* fusing nothing is always correct */
  memset(fuse, 1, (size_t)ncoll + 1);
  for (int r = 0; r < v->nranks; r++) {
    int last = -1, pending = 0; /* last collective seen; nothing but waits since it */
    for (int j = 0, k = 0; j < v->n[r]; j++) {
      int kind = v->step[r][j].kind;
      if (kind == PLAN_WAIT) continue;
      if (kind == PLAN_COLL) {
        last = k++;
        pending = 1;
        continue;
      }
      if (pending && last < ncoll) fuse[last] = 0; /* point to point follows collective last */
      pending = 0;
    }
    if (pending && last >= 0 && last < ncoll) fuse[last] = 0; /* nothing follows it */
  }
  for (int i = 0, k = 0; i < n; i++)
    if (steps[i].kind == PLAN_COLL) steps[i].fuse_next = fuse[k++];
  free(fuse);
}

/* Fusion runs, the same on every rank: each collective's reach is the least over the ranks
 * (collectives are matched by their order, checked equal above). */
static void fuse(const plan_view_t *v, gmpi_plan_step_t *steps, int n) {
  int ncoll = 0;
  for (int i = 0; i < n; i++)
    ncoll += steps[i].kind == PLAN_COLL;
  uint8_t *least = malloc((size_t)ncoll + 1), *reach = calloc((size_t)n + 1, 1);
  if (least && reach) {
    memset(least, 255, (size_t)ncoll + 1);
    for (int r = 0; r < v->nranks; r++)
      for (int j = 0, k = 0; j < v->n[r] && k < ncoll; j++)
        if (v->step[r][j].kind == PLAN_COLL) {
          int32_t got = v->step[r][j].reach;
          least[k] = got < least[k] ? (uint8_t)(got < 0 ? 0 : got) : least[k];
          k++;
        }
    for (int i = 0, k = 0; i < n; i++)
      if (steps[i].kind == PLAN_COLL) reach[i] = least[k++];
  } /* without memory no reach: nothing fuses, which is always correct */
  gmpi_plan_fuse_runs(steps, n, v->nranks, least && reach ? reach : NULL);
  free(least);
  free(reach);
}

static wire_step_t to_wire(const gmpi_plan_step_t *s) {
  wire_step_t w;
  memset(&w, 0, sizeof(w));
  w.kind = s->kind;
  w.request = s->request;
  w.root = -1;
  w.op = -1;
  if (s->kind == PLAN_COLL) {
    w.coll = s->coll.kind;
    w.dtype = s->coll.dtype;
    w.count = s->coll.count;
    if (gmpi_coll_has_op(s->coll.kind)) w.op = s->coll.op;
    if (gmpi_coll_has_root(s->coll.kind)) w.root = s->coll.root;
  } else if (s->kind != PLAN_WAIT) {
    w.dtype = s->p2p.dtype;
    w.count = s->p2p.count;
    w.peer = s->p2p.peer;
    w.tag = s->p2p.tag;
  }
  return w;
}

static void free_view(plan_view_t *v) {
  for (int r = 0; r < v->nranks; r++) {
    if (v->match_rank) free(v->match_rank[r]);
    if (v->match_step) free(v->match_step[r]);
    if (v->group) free(v->group[r]);
  }
  free(v->match_rank);
  free(v->match_step);
  free(v->group);
  free(v->step);
  free(v->n);
  free(v->unwaited);
}

/* What each rank sends ahead of its steps. pack_bytes: GMPI_PLAN_PACK_BYTES, which decides how
 * a fused run is moved and so must agree (a rank packing a run its peers move as separate calls
 * would hang or mix their data). 16 bytes: the steps after it stay 8-byte aligned. */
typedef struct {
  int32_t n, unwaited;
  uint64_t pack_bytes;
} wire_head_t;

/* Rank r's piece of the gathered blob: its header read, its length checked against the steps it
 * says it holds (another rank's data is input: never indexed past what arrived). */
static gmpi_status_t read_piece(plan_view_t *v, int r, const char *at, size_t len,
                                wire_head_t *head) {
  if (len < sizeof(*head))
    return gmpi_error(GMPI_ERR_INTERNAL, "plan: rank %d sent %zu bytes, less than a header", r,
                      len);
  memcpy(head, at, sizeof(*head));
  if (head->n < 0 || (size_t)head->n != (len - sizeof(*head)) / sizeof(wire_step_t) ||
      (len - sizeof(*head)) % sizeof(wire_step_t))
    return gmpi_error(GMPI_ERR_INTERNAL, "plan: rank %d sent %zu bytes for %d steps", r, len,
                      head->n);
  v->n[r] = head->n;
  v->unwaited[r] = head->unwaited;
  v->step[r] = (wire_step_t *)(at + sizeof(*head)); /* 8-byte aligned: offsets are too */
  v->match_rank[r] = calloc((size_t)head->n + 1, sizeof(int));
  v->match_step[r] = calloc((size_t)head->n + 1, sizeof(int));
  v->group[r] = calloc((size_t)head->n + 1, sizeof(int));
  if (!v->match_rank[r] || !v->match_step[r] || !v->group[r])
    return gmpi_error(GMPI_ERR_NO_MEMORY, "plan: no memory for the gathered plan");
  return GMPI_SUCCESS;
}

static gmpi_status_t same_pack_bytes(int r, uint64_t theirs, uint64_t mine) {
  if (theirs == mine) return GMPI_SUCCESS;
  char t[32] = "unset", m[32] = "unset";
  if (theirs != (uint64_t)GMPI_PLAN_PACK_BACKEND) snprintf(t, sizeof(t), "%" PRIu64, theirs);
  if (mine != (uint64_t)GMPI_PLAN_PACK_BACKEND) snprintf(m, sizeof(m), "%" PRIu64, mine);
  return gmpi_error(GMPI_ERR_MISMATCH,
                    "plan: GMPI_PLAN_PACK_BYTES is %s on rank %d and %s here: it must be the "
                    "same on every rank",
                    t, r, m);
}

/* Gather everything (one allgatherv: a header, then the steps). */
static gmpi_status_t gather_view(gmpi_comm_t comm, const gmpi_plan_step_t *steps, int n,
                                 int unwaited, const uint8_t *reach, plan_view_t *v, void **blob) {
  wire_head_t head = {n, unwaited, (uint64_t)comm->cfg.plan_pack_bytes};
  size_t bytes = sizeof(head) + (size_t)n * sizeof(wire_step_t);
  char *mine = malloc(bytes);
  if (!mine) return gmpi_error(GMPI_ERR_NO_MEMORY, "plan: no memory for %d steps", n);
  memcpy(mine, &head, sizeof(head));
  for (int i = 0; i < n; i++) {
    wire_step_t w = to_wire(&steps[i]);
    w.reach = reach[i];
    memcpy(mine + sizeof(head) + (size_t)i * sizeof(w), &w, sizeof(w));
  }
  size_t *offs = NULL;
  gmpi_status_t st = comm->oob.ops->allgatherv(comm, mine, bytes, blob, &offs);
  free(mine);
  if (st != GMPI_SUCCESS) return st;
  int p = comm->size;
  v->nranks = p;
  v->n = calloc((size_t)p, sizeof(int));
  v->unwaited = calloc((size_t)p, sizeof(int));
  v->step = calloc((size_t)p, sizeof(*v->step));
  v->match_rank = calloc((size_t)p, sizeof(int *));
  v->match_step = calloc((size_t)p, sizeof(int *));
  v->group = calloc((size_t)p, sizeof(int *));
  if (!v->n || !v->unwaited || !v->step || !v->match_rank || !v->match_step || !v->group)
    st = gmpi_error(GMPI_ERR_NO_MEMORY, "plan: no memory for the gathered plan");
  for (int r = 0; r < p && st == GMPI_SUCCESS; r++) {
    wire_head_t theirs;
    st = read_piece(v, r, (char *)*blob + offs[r], offs[r + 1] - offs[r], &theirs);
    if (st == GMPI_SUCCESS) st = same_pack_bytes(r, theirs.pack_bytes, head.pack_bytes);
  }
  free(offs);
  return st;
}

gmpi_status_t gmpi_plan_check(gmpi_comm_t comm, gmpi_plan_step_t *steps, int n, int unwaited,
                              int *n_groups) {
  plan_view_t v;
  memset(&v, 0, sizeof(v));
  void *blob = NULL;
  int *nseg = calloc((size_t)comm->size, sizeof(int));
  uint8_t *reach = calloc((size_t)n + 1, 1);
  gmpi_status_t st =
      nseg && reach ? GMPI_SUCCESS : gmpi_error(GMPI_ERR_NO_MEMORY, "plan: no memory");
  if (st == GMPI_SUCCESS) gmpi_plan_fuse_reach(steps, n, comm->size, comm->cfg.plan_fuse, reach);
  if (st == GMPI_SUCCESS) st = gather_view(comm, steps, n, unwaited, reach, &v, &blob);
  if (st == GMPI_SUCCESS) st = check_waits(&v);
  if (st == GMPI_SUCCESS) st = check_collectives(&v);
  for (int r = 0; r < comm->size && st == GMPI_SUCCESS; r++)
    st = match_receiver(&v, r);
  if (st == GMPI_SUCCESS) st = schedule(&v, nseg);
  if (st == GMPI_SUCCESS) { /* our steps learn their partners and groups */
    int me = comm->rank;
    mark_fusable(&v, steps, n);
    fuse(&v, steps, n);
    for (int i = 0; i < n; i++) {
      steps[i].group = v.group[me][i];
      if (steps[i].kind != PLAN_SEND && steps[i].kind != PLAN_RECV) continue;
      const wire_step_t *other = &v.step[v.match_rank[me][i]][v.match_step[me][i]];
      const wire_step_t *send = steps[i].kind == PLAN_SEND ? &v.step[me][i] : other;
      steps[i].peer = v.match_rank[me][i];
      steps[i].tag = send->tag;
      steps[i].bytes = send->count * gmpi_dtype_size((gmpi_dtype_t)send->dtype);
    }
    *n_groups = nseg[me];
  }
  free_view(&v);
  free(blob);
  free(nseg);
  free(reach);
  return st;
}
