/* SPDX-License-Identifier: BSD-3-Clause */
/* The packed layout of plan fusion (core/plan_fuse.c), without MPI or a GPU: every rank of a
 * simulated comm (1 to 4, in this one process, each with buffers of its own) forms its runs,
 * packs its inputs by the slices and rows core hands a backend (plan_fuse.h: the contract the
 * cpu memcpy loop and the cuda pack kernel both follow), the run's one collective is simulated
 * in place on the packed buffers as gmpi_plan_fused_args describes it, and the unpacked outputs
 * must equal each collective computed alone -- for allreduce, bcast (either root), allgather
 * and reduce_scatter, every in-place form, element sizes 1, 2, 4, 8 and 16 and odd counts
 * (offsets that are not multiples of 4 or 16). Bytes around each output must stay untouched.
 * Reductions are byte-wise wrapping sums: they check where every byte goes, which is what the
 * layout decides. Also: runs split where buffers depend (on one rank only too), the run caps,
 * unfusing, and the pack limit. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_util.h"

#include "../src/core/config.h"
#include "../src/core/dtype.h"
#include "../src/core/ops.h"
#include "../src/core/plan.h"
#include "../src/core/plan_fuse.h"

#define MAX_RANKS 4
#define MAX_STEPS 400
#define GUARD     8 /* bytes checked untouched before and after every output */

/* in place: none, MPI's (sendbuf == recvbuf), NCCL's (allgather's sendbuf at our block of
 * recvbuf; reduce_scatter's recvbuf at our block of sendbuf) */
enum { SEPARATE, MPI_IN_PLACE_FORM, NCCL_IN_PLACE_FORM };

typedef struct {
  int nranks;
  int n; /* steps, the same sequence on every rank */
  gmpi_plan_step_t steps[MAX_RANKS][MAX_STEPS];
  char *arena[MAX_RANKS];
  size_t used, cap;
  /* per step: the bytes its output holds, and where it starts in each rank's arena */
  size_t out_at[MAX_STEPS][MAX_RANKS], out_bytes[MAX_STEPS];
} sim_t;

static void sim_init(sim_t *s, int nranks) {
  memset(s, 0, sizeof(*s));
  s->nranks = nranks;
  s->cap = 1 << 20;
  for (int r = 0; r < nranks; r++) {
    s->arena[r] = malloc(s->cap);
    for (size_t i = 0; i < s->cap; i++) /* inputs: different on every rank and byte */
      s->arena[r][i] = (char)(i * 7 + (size_t)r * 31 + i / 251);
  }
}

static void sim_free(sim_t *s) {
  for (int r = 0; r < s->nranks; r++)
    free(s->arena[r]);
}

/* bytes of the arena at the same offset on every rank, GUARD bytes clear around, starting at
 * an odd offset when odd is set (so no wide copy could be assumed) */
static size_t take(sim_t *s, size_t bytes, int odd) {
  size_t at = (s->used + GUARD + 15) / 16 * 16 + (odd ? 1 : 0);
  s->used = at + bytes + GUARD;
  if (s->used > s->cap) {
    fprintf(stderr, "unit_plan_fuse: arena too small\n");
    exit(1);
  }
  return at;
}

/* Append one collective on every rank; returns its step index. */
static int add(sim_t *s, gmpi_coll_kind_t kind, gmpi_dtype_t dtype, size_t count, int root,
               int form) {
  int i = s->n++, p = s->nranks;
  size_t n = count * gmpi_dtype_elem_size(dtype), all = n * (size_t)p;
  size_t in_bytes = kind == GMPI_COLL_REDUCE_SCATTER ? all : n;
  size_t out_bytes = kind == GMPI_COLL_ALLGATHER ? all : n;
  int odd = (i % 3) == 1;
  size_t in_at = 0, out_at;
  if (form == SEPARATE && kind != GMPI_COLL_BCAST) {
    in_at = take(s, in_bytes, odd);
    out_at = take(s, out_bytes, !odd);
  } else {
    out_at = take(s, in_bytes > out_bytes ? in_bytes : out_bytes, odd);
  }
  s->out_bytes[i] = out_bytes;
  for (int r = 0; r < p; r++) {
    gmpi_plan_step_t *st = &s->steps[r][i];
    memset(st, 0, sizeof(*st));
    st->kind = PLAN_COLL;
    st->fuse_next = 1;
    st->coll.kind = kind;
    st->coll.dtype = dtype;
    st->coll.count = count;
    st->coll.op = GMPI_SUM;
    st->coll.root = root;
    char *base = s->arena[r];
    st->coll.recvbuf = base + out_at;
    st->coll.sendbuf = form == SEPARATE && kind != GMPI_COLL_BCAST ? base + in_at : base + out_at;
    if (form == NCCL_IN_PLACE_FORM && kind == GMPI_COLL_ALLGATHER)
      st->coll.sendbuf = base + out_at + (size_t)r * n;
    if (form == NCCL_IN_PLACE_FORM && kind == GMPI_COLL_REDUCE_SCATTER)
      st->coll.recvbuf = base + out_at + (size_t)r * n;
    s->out_at[i][r] = (size_t)((char *)st->coll.recvbuf - base);
  }
  return i;
}

/* Every rank's reach, folded (the least), then the runs, as plan_check.c does. */
static void form_runs(sim_t *s, int enabled) {
  uint8_t reach[MAX_RANKS][MAX_STEPS], least[MAX_STEPS];
  memset(least, 255, sizeof(least));
  for (int r = 0; r < s->nranks; r++) {
    gmpi_plan_fuse_reach(s->steps[r], s->n, s->nranks, enabled, reach[r]);
    for (int i = 0; i < s->n; i++)
      least[i] = reach[r][i] < least[i] ? reach[r][i] : least[i];
  }
  for (int r = 0; r < s->nranks; r++)
    gmpi_plan_fuse_runs(s->steps[r], s->n, s->nranks, least);
  for (int r = 1; r < s->nranks; r++) /* every rank the same runs */
    for (int i = 0; i < s->n; i++) {
      CHECK_EQ(s->steps[r][i].run_len, s->steps[0][i].run_len);
      CHECK_EQ(s->steps[r][i].run_first, s->steps[0][i].run_first);
      CHECK_EQ(s->steps[r][i].run_offset, s->steps[0][i].run_offset);
      CHECK_EQ(s->steps[r][i].run_count, s->steps[0][i].run_count);
    }
}

/* The value each output must hold: every collective computed alone from the inputs. */
static void expected(const sim_t *s, int i, int r, char *want) {
  const gmpi_coll_args_t *me = &s->steps[r][i].coll;
  size_t n = me->count * gmpi_dtype_elem_size(me->dtype), p = (size_t)s->nranks;
  switch (me->kind) {
  case GMPI_COLL_ALLREDUCE:
    memset(want, 0, n);
    for (size_t q = 0; q < p; q++)
      for (size_t b = 0; b < n; b++)
        want[b] = (char)(want[b] + ((const char *)s->steps[q][i].coll.sendbuf)[b]);
    break;
  case GMPI_COLL_BCAST: memcpy(want, s->steps[me->root][i].coll.recvbuf, n); break;
  case GMPI_COLL_ALLGATHER:
    for (size_t q = 0; q < p; q++) {
      const gmpi_coll_args_t *a = &s->steps[q][i].coll;
      const char *in = a->sendbuf == a->recvbuf ? (const char *)a->recvbuf + q * n : a->sendbuf;
      memcpy(want + q * n, in, n);
    }
    break;
  case GMPI_COLL_REDUCE_SCATTER:
    memset(want, 0, n);
    for (size_t q = 0; q < p; q++)
      for (size_t b = 0; b < n; b++)
        want[b] = (char)(want[b] + ((const char *)s->steps[q][i].coll.sendbuf)[(size_t)r * n + b]);
    break;
  default: break;
  }
}

/* The contract of plan_fuse.h: slice rows at in (out) + k x bytes where rows > 1. */
static void copy_slice(char *packed, const gmpi_plan_rows_t *rows, const gmpi_plan_slice_t *sl,
                       int unpack) {
  int n = unpack ? rows->unpack_rows : rows->pack_rows;
  int row = unpack ? rows->unpack_row : rows->pack_row;
  for (int k = 0; k < n; k++) {
    char *at = packed + (size_t)(row + k) * rows->row_bytes + sl->offset;
    size_t user = n > 1 ? (size_t)k * sl->bytes : 0;
    if (!unpack && sl->in) memcpy(at, (const char *)sl->in + user, sl->bytes);
    if (unpack && sl->out) memcpy((char *)sl->out + user, at, sl->bytes);
  }
}

/* The run's one collective, in place on every rank's packed buffer (gmpi_plan_fused_args). */
static void fused_collective(const sim_t *s, int first, char **packed) {
  gmpi_coll_args_t a[MAX_RANKS];
  for (int r = 0; r < s->nranks; r++) {
    a[r] = gmpi_plan_fused_args(&s->steps[r][first], packed[r]);
    CHECK_EQ(a[r].sendbuf == packed[r] && a[r].recvbuf == packed[r], 1);
    CHECK_EQ(a[r].count, s->steps[r][first].run_count);
  }
  size_t n = a[0].count * gmpi_dtype_elem_size(a[0].dtype), p = (size_t)s->nranks;
  char *sum = calloc(p * n + 1, 1);
  switch (a[0].kind) {
  case GMPI_COLL_ALLREDUCE:
    for (size_t q = 0; q < p; q++)
      for (size_t b = 0; b < n; b++)
        sum[b] = (char)(sum[b] + packed[q][b]);
    for (size_t q = 0; q < p; q++)
      memcpy(packed[q], sum, n);
    break;
  case GMPI_COLL_BCAST:
    for (size_t q = 0; q < p; q++)
      if ((int)q != a[0].root) memcpy(packed[q], packed[a[0].root], n);
    break;
  case GMPI_COLL_ALLGATHER: /* rank q's input is its row q */
    for (size_t q = 0; q < p; q++)
      for (size_t o = 0; o < p; o++)
        if (o != q) memcpy(packed[o] + q * n, packed[q] + q * n, n);
    break;
  case GMPI_COLL_REDUCE_SCATTER: /* MPI's in place: rank r's result to its row 0 */
    for (size_t r = 0; r < p; r++)
      for (size_t q = 0; q < p; q++)
        for (size_t b = 0; b < n; b++)
          sum[r * n + b] = (char)(sum[r * n + b] + packed[q][r * n + b]);
    for (size_t r = 0; r < p; r++)
      memcpy(packed[r], sum + r * n, n);
    break;
  default: break;
  }
  free(sum);
}

/* Replay every run as a backend packing all of them would, then check every output. */
static void replay_and_check(sim_t *s, const char *what) {
  int p = s->nranks;
  char *want[MAX_STEPS][MAX_RANKS];
  for (int i = 0; i < s->n; i++)
    for (int r = 0; r < p; r++) {
      want[i][r] = malloc(s->out_bytes[i] + 1);
      expected(s, i, r, want[i][r]);
    }
  /* what lies around the outputs, to see nothing else was written */
  char *before[MAX_RANKS];
  for (int r = 0; r < p; r++) {
    before[r] = malloc(s->cap);
    memcpy(before[r], s->arena[r], s->cap);
  }
  for (int i = 0; i < s->n; i++) {
    const gmpi_plan_step_t *f = &s->steps[0][i];
    if (f->run_len == 0) continue; /* a later member: its run ran */
    char *packed[MAX_RANKS];
    size_t bytes = gmpi_plan_run_bytes(f, p);
    for (int r = 0; r < p; r++) {
      const gmpi_plan_step_t *fr = &s->steps[r][i];
      gmpi_plan_rows_t rows = gmpi_plan_run_rows(fr, r, p);
      size_t nrows =
          fr->coll.kind == GMPI_COLL_ALLGATHER || fr->coll.kind == GMPI_COLL_REDUCE_SCATTER
              ? (size_t)p
              : 1;
      CHECK_EQ(rows.row_bytes, fr->run_count * gmpi_dtype_elem_size(fr->coll.dtype));
      CHECK_EQ(bytes, nrows * rows.row_bytes);
      packed[r] = malloc(bytes + 1);
      memset(packed[r], 0xee, bytes); /* what the packed buffer held before */
      gmpi_plan_slice_t sl[GMPI_FUSE_MAX_STEPS];
      int k = gmpi_plan_run_slices(s->steps[r], s->n, i, r, sl);
      CHECK_EQ(k, fr->run_len);
      for (int j = 0; j < k; j++) {
        CHECK_EQ(sl[j].offset + sl[j].bytes <= rows.row_bytes, 1);
        copy_slice(packed[r], &rows, &sl[j], 0);
      }
    }
    fused_collective(s, i, packed);
    for (int r = 0; r < p; r++) {
      gmpi_plan_rows_t rows = gmpi_plan_run_rows(&s->steps[r][i], r, p);
      gmpi_plan_slice_t sl[GMPI_FUSE_MAX_STEPS];
      int k = gmpi_plan_run_slices(s->steps[r], s->n, i, r, sl);
      for (int j = 0; j < k; j++)
        copy_slice(packed[r], &rows, &sl[j], 1);
      free(packed[r]);
    }
  }
  for (int i = 0; i < s->n; i++)
    for (int r = 0; r < p; r++) {
      const char *got = s->arena[r] + s->out_at[i][r];
      if (memcmp(got, want[i][r], s->out_bytes[i]) != 0) {
        failures++;
        fprintf(stderr, "FAIL %s: %d ranks, step %d (%s, %s x %zu) on rank %d: wrong output\n",
                what, p, i, gmpi_coll_name(s->steps[r][i].coll.kind),
                gmpi_dtype_name(s->steps[r][i].coll.dtype), s->steps[r][i].coll.count, r);
      }
      const char *was = before[r] + s->out_at[i][r];
      if (memcmp(got - GUARD, was - GUARD, GUARD) != 0 ||
          memcmp(got + s->out_bytes[i], was + s->out_bytes[i], GUARD) != 0) {
        failures++;
        fprintf(stderr, "FAIL %s: %d ranks, step %d on rank %d: bytes around the output written\n",
                what, p, i, r);
      }
      free(want[i][r]);
    }
  for (int r = 0; r < p; r++)
    free(before[r]);
}

static const gmpi_dtype_t sized[] = {GMPI_INT8,    GMPI_FLOAT16, GMPI_BFLOAT16,
                                     GMPI_FLOAT32, GMPI_FLOAT64, GMPI_COMPLEX128};
static const size_t counts[] = {3, 1, 5, 2, 7, 16};

/* One run of each kind and element size, every in-place form mixed in: each must fuse whole. */
static void layouts(int nranks) {
  static sim_t s;
  const gmpi_coll_kind_t kinds[] = {GMPI_COLL_ALLREDUCE, GMPI_COLL_BCAST, GMPI_COLL_ALLGATHER,
                                    GMPI_COLL_REDUCE_SCATTER};
  for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
    for (size_t d = 0; d < sizeof(sized) / sizeof(sized[0]); d++)
      for (int root = 0; root < (kinds[k] == GMPI_COLL_BCAST ? nranks : 1); root++) {
        sim_init(&s, nranks);
        int forms = kinds[k] == GMPI_COLL_ALLGATHER || kinds[k] == GMPI_COLL_REDUCE_SCATTER ? 3 : 2;
        for (int c = 0; c < 12; c++)
          add(&s, kinds[k], sized[d], counts[c % 6], root, c % forms);
        form_runs(&s, 1);
        CHECK_EQ(s.steps[0][0].run_len, 12);
        size_t total = 0;
        for (int c = 0; c < 12; c++) {
          CHECK_EQ(s.steps[0][c].run_first, 0);
          if (c) CHECK_EQ(s.steps[0][c].run_len, 0); /* members: the backends skip them */
          CHECK_EQ(s.steps[0][c].run_offset, total);
          total += counts[c % 6];
        }
        CHECK_EQ(s.steps[0][0].run_count, total);
        char what[96];
        snprintf(what, sizeof(what), "%s of %s, root %d", gmpi_coll_name(kinds[k]),
                 gmpi_dtype_name(sized[d]), root);
        replay_and_check(&s, what);
        sim_free(&s);
      }
}

/* A collective reading what the one before wrote starts a run; so does one whose buffers
 * depend on one rank only (the least reach wins); the values stay right. */
static void dependencies(int nranks) {
  static sim_t s;
  sim_init(&s, nranks);
  int a = add(&s, GMPI_COLL_ALLGATHER, GMPI_FLOAT32, 3, 0, SEPARATE);
  int b = add(&s, GMPI_COLL_ALLGATHER, GMPI_FLOAT32, 3, 0, SEPARATE);
  /* b reads the last rank's block of a's output (beyond a's first count elements) */
  size_t n = 3 * sizeof(float);
  for (int r = 0; r < nranks; r++)
    s.steps[r][b].coll.sendbuf = (char *)s.steps[r][a].coll.recvbuf + (size_t)(nranks - 1) * n;
  int c = add(&s, GMPI_COLL_ALLGATHER, GMPI_FLOAT32, 5, 0, SEPARATE);
  int d = add(&s, GMPI_COLL_ALLGATHER, GMPI_FLOAT32, 2, 0, SEPARATE);
  /* on the last rank only, d writes where c reads */
  gmpi_plan_step_t *dl = &s.steps[nranks - 1][d];
  size_t d_at = (size_t)((char *)s.steps[nranks - 1][c].coll.sendbuf - s.arena[nranks - 1]);
  dl->coll.recvbuf = s.arena[nranks - 1] + d_at;
  form_runs(&s, 1);
  CHECK_EQ(s.steps[0][a].run_len, 1);
  CHECK_EQ(s.steps[0][b].run_len, 2); /* b and c */
  CHECK_EQ(s.steps[0][c].run_first, b);
  CHECK_EQ(s.steps[0][d].run_first, d);
  CHECK_EQ(s.steps[0][d].fuse_why != NULL, 1);
  sim_free(&s);
  /* two writing the same memory: their order matters (one kernel would copy both at once) */
  sim_init(&s, nranks);
  int w1 = add(&s, GMPI_COLL_ALLREDUCE, GMPI_FLOAT64, 4, 0, SEPARATE);
  int w2 = add(&s, GMPI_COLL_ALLREDUCE, GMPI_FLOAT64, 4, 0, SEPARATE);
  for (int r = 0; r < nranks; r++)
    s.steps[r][w2].coll.recvbuf = (char *)s.steps[r][w1].coll.recvbuf + 8;
  form_runs(&s, 1);
  CHECK_EQ(s.steps[0][w2].run_first, w2);
  sim_free(&s);
  /* only alike collectives share a run: kind, dtype, op (reductions), root (bcast) */
  sim_init(&s, nranks);
  add(&s, GMPI_COLL_ALLREDUCE, GMPI_INT32, 2, 0, SEPARATE);
  int max = add(&s, GMPI_COLL_ALLREDUCE, GMPI_INT32, 2, 0, SEPARATE);
  int dt = add(&s, GMPI_COLL_ALLREDUCE, GMPI_UINT32, 2, 0, SEPARATE);
  int kind = add(&s, GMPI_COLL_BCAST, GMPI_UINT32, 2, 0, SEPARATE);
  int root = add(&s, GMPI_COLL_BCAST, GMPI_UINT32, 2, nranks - 1, SEPARATE);
  int same = add(&s, GMPI_COLL_BCAST, GMPI_UINT32, 2, nranks - 1, SEPARATE);
  for (int r = 0; r < nranks; r++) {
    s.steps[r][max].coll.op = GMPI_MAX;
    s.steps[r][dt].coll.op = GMPI_MAX;
  }
  form_runs(&s, 1);
  CHECK_EQ(s.steps[0][max].run_first, max);
  CHECK_EQ(s.steps[0][dt].run_first, dt);
  CHECK_EQ(s.steps[0][kind].run_first, kind);
  CHECK_EQ(s.steps[0][root].run_first, nranks > 1 ? root : kind);
  CHECK_EQ(s.steps[0][same].run_first, s.steps[0][root].run_first);
  sim_free(&s);
  /* fusion off: every collective alone, and the values the same */
  sim_init(&s, nranks);
  for (int i = 0; i < 5; i++)
    add(&s, GMPI_COLL_REDUCE_SCATTER, GMPI_INT8, 3, 0, i % 3);
  form_runs(&s, 0);
  for (int i = 0; i < 5; i++)
    CHECK_EQ(s.steps[0][i].run_len, 1);
  replay_and_check(&s, "fusion off");
  sim_free(&s);
}

/* Distinct blocks far apart, never read: only the fusion's bookkeeping sees them. */
static void *fake_address(size_t block) {
  return (void *)(uintptr_t)(((uintptr_t)1 << 32) + block * 64 * GMPI_FUSE_STEP_BYTES);
}

/* At most GMPI_FUSE_MAX_STEPS collectives and GMPI_FUSE_RUN_BYTES packed (ranks x for the row
 * kinds); unfusing a run leaves collectives of one; the pack limit unfuses larger runs only. */
static void caps_and_limits(int nranks) {
  static sim_t s;
  sim_init(&s, nranks);
  for (int i = 0; i < 300; i++)
    add(&s, GMPI_COLL_ALLREDUCE, GMPI_UINT8, 1, 0, i % 2);
  form_runs(&s, 1);
  CHECK_EQ(s.steps[0][0].run_len, GMPI_FUSE_MAX_STEPS);
  CHECK_EQ(s.steps[0][GMPI_FUSE_MAX_STEPS].run_len, 300 - GMPI_FUSE_MAX_STEPS);
  replay_and_check(&s, "runs of the most steps");
  sim_free(&s);
  /* pointers only (nothing is copied): 256 KiB allgathers fill a run at 8 MiB / ranks */
  static gmpi_plan_step_t st[64];
  memset(st, 0, sizeof(st));
  size_t elems = GMPI_FUSE_STEP_BYTES / 4;
  for (int i = 0; i < 64; i++) {
    st[i].kind = PLAN_COLL;
    st[i].fuse_next = 1;
    st[i].coll = (gmpi_coll_args_t){.kind = GMPI_COLL_ALLGATHER,
                                    .sendbuf = fake_address((size_t)i * 2),
                                    .recvbuf = fake_address((size_t)i * 2 + 1),
                                    .count = elems,
                                    .dtype = GMPI_FLOAT32};
  }
  uint8_t reach[64];
  gmpi_plan_fuse_reach(st, 64, nranks, 1, reach);
  gmpi_plan_fuse_runs(st, 64, nranks, reach);
  int per_run = (int)(GMPI_FUSE_RUN_BYTES / (GMPI_FUSE_STEP_BYTES * (size_t)nranks));
  CHECK_EQ(st[0].run_len, per_run > 64 ? 64 : per_run);
  CHECK_EQ(gmpi_plan_run_bytes(&st[0], nranks) <= GMPI_FUSE_RUN_BYTES, 1);
  /* a limit below the first run's bytes unfuses it, and only runs above it */
  size_t first_bytes = gmpi_plan_run_bytes(&st[0], nranks);
  gmpi_plan_pack_limit(st, 64, nranks, first_bytes - 1, 0);
  CHECK_EQ(st[0].run_len, 1);
  CHECK_EQ(st[1].run_len, 1);
  CHECK_EQ(st[1].run_first, 1);
  CHECK_EQ(st[1].run_offset, 0);
  CHECK_EQ(st[1].run_count, elems);
  CHECK_EQ(st[1].fuse_why != NULL, 1);
  /* GMPI_PLAN_PACK_BYTES unset: the backend's limit; 0: nothing packed (runs formed anew,
   * from steps as recorded: run_len 0) */
  for (int i = 0; i < 64; i++)
    st[i].run_len = 0;
  gmpi_plan_fuse_runs(st, 64, nranks, reach);
  gmpi_plan_pack_limit(st, 64, nranks, GMPI_PLAN_PACK_BACKEND, GMPI_FUSE_RUN_BYTES);
  CHECK_EQ(st[0].run_len, per_run > 64 ? 64 : per_run);
  gmpi_plan_pack_limit(st, 64, nranks, 0, GMPI_FUSE_RUN_BYTES);
  for (int i = 0; i < 64; i++)
    CHECK_EQ(st[i].run_len, 1);
}

int main(void) {
  for (int p = 1; p <= MAX_RANKS; p++) {
    layouts(p);
    dependencies(p);
    caps_and_limits(p);
  }
  printf("unit_plan_fuse: %s (%d failed checks)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
