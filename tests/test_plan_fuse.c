/* SPDX-License-Identifier: BSD-3-Clause */
/* Plan fusion (core/plan_fuse.c): a replay equals the eager calls, value for value on every
 * rank, for sequences that fuse and sequences that must not -- a collective reading another's
 * result, in place, mixed dtypes and ops, point to point between, buffers that overlap on one
 * rank only, a collective too large -- and gmpi_plan_dump says what was fused and why not.
 * With GMPI_PLAN_FUSE=0 (ctest variant) nothing fuses, with GMPI_PLAN_PACK_BYTES=0 (another)
 * runs form but none is packed (the dump says why), and the values are the same. Every backend
 * packs (cuda: pack kernel, one NCCL call, unpack kernel), except cuda's runs of a dtype and op
 * NCCL lacks. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <stdlib.h>
#include <string.h>

#include "test_values.h"

/* fuse_on: runs form; pack_on: they are packed; packs_gathered: so are those of a dtype and op
 * NCCL lacks (not on cuda's device buffers, where they are gathered and reduced by gmpi) */
static int rank, size, fuse_on, pack_on, packs_gathered;
static gmpi_comm_t comm;

#define SMALL 6     /* elements of each small collective */
#define MANY  100   /* small collectives in a fusable run */
#define BIG   70000 /* elements of a collective too large to fuse (280 KB of float32) */
#define BYTES 4096  /* of the byte buffers (1- and 2-byte elements) */

/* A recorded sequence writes only into out (and in, where in place); both are bufs_t. */
typedef struct {
  float *in, *out;
  int32_t *iin, *iout;
  double *din, *dout;
  uint8_t *bin, *bout;
} bufs_t;

static size_t nf(void) { return (size_t)MANY * SMALL + BIG + 64; }

static void bufs_alloc(bufs_t *b) {
  b->in = t_alloc(nf() * sizeof(float));
  b->out = t_alloc(nf() * sizeof(float));
  b->iin = t_alloc(MANY * SMALL * sizeof(int32_t));
  b->iout = t_alloc(MANY * SMALL * sizeof(int32_t));
  b->din = t_alloc(MANY * SMALL * sizeof(double));
  b->dout = t_alloc(MANY * SMALL * sizeof(double));
  b->bin = t_alloc(BYTES);
  b->bout = t_alloc(BYTES);
}

static void bufs_free(bufs_t *b) {
  t_free(b->in), t_free(b->out), t_free(b->iin), t_free(b->iout), t_free(b->din), t_free(b->dout);
  t_free(b->bin), t_free(b->bout);
}

/* Small integers, different per rank and replay: every sum and product is exact. */
static void fill(bufs_t *b, int it) {
  size_t n = nf(), m = MANY * SMALL;
  float *f = t_host(n * sizeof(float));
  int32_t *i32 = t_host(m * sizeof(int32_t));
  double *d = t_host(m * sizeof(double));
  uint8_t *u8 = t_host(BYTES);
  for (size_t i = 0; i < BYTES; i++)
    u8[i] = (uint8_t)((rank * 5 + (int)i * 3 + it) % 7);
  for (size_t i = 0; i < n; i++)
    f[i] = (float)((rank * 5 + (int)i + it * 3) % 7);
  for (size_t i = 0; i < m; i++) {
    i32[i] = (rank * 3 + (int)i + it) % 11 - 5;
    d[i] = (double)((rank + (int)i * 2 + it) % 9);
  }
  t_put(b->in, f, n * sizeof(float));
  t_put(b->out, f, n * sizeof(float));
  t_put(b->iin, i32, m * sizeof(int32_t));
  t_put(b->iout, i32, m * sizeof(int32_t));
  t_put(b->din, d, m * sizeof(double));
  t_put(b->dout, d, m * sizeof(double));
  t_put(b->bin, u8, BYTES);
  t_put(b->bout, u8, BYTES);
  free(f), free(i32), free(d), free(u8);
}

typedef void (*seq_fn)(bufs_t *b);

/* 100 independent small allreduces, then 100 small bcasts from the last rank: two runs. */
static void seq_independent(bufs_t *b) {
  for (int k = 0; k < MANY; k++)
    T_OK(
        gmpi_allreduce(b->in + k * SMALL, b->out + k * SMALL, SMALL, GMPI_FLOAT32, GMPI_SUM, comm));
  for (int k = 0; k < MANY; k++)
    T_OK(gmpi_bcast(b->iout + k * SMALL, SMALL, GMPI_INT32, size - 1, comm));
}

/* Each allreduce reads the one before's result: nothing may fuse with its predecessor. */
static void seq_chain(bufs_t *b) {
  T_OK(gmpi_allreduce(b->in, b->out, SMALL, GMPI_FLOAT32, GMPI_MAX, comm));
  for (int k = 1; k < 20; k++)
    T_OK(gmpi_allreduce(b->out + (k - 1) * SMALL, b->out + k * SMALL, SMALL, GMPI_FLOAT32, GMPI_MAX,
                        comm));
}

/* In place, alternating dtypes and ops (runs of one each), then same-kind pairs in place. */
static void seq_mixed_in_place(bufs_t *b) {
  for (int k = 0; k < 30; k++) {
    T_OK(gmpi_allreduce(b->iout + k * SMALL, b->iout + k * SMALL, SMALL, GMPI_INT32, GMPI_SUM,
                        comm));
    T_OK(gmpi_allreduce(b->dout + k * SMALL, b->dout + k * SMALL, SMALL, GMPI_FLOAT64,
                        k % 2 ? GMPI_MAX : GMPI_PROD, comm));
  }
  for (int k = 30; k < MANY; k++)
    T_OK(gmpi_allreduce(b->dout + k * SMALL, b->dout + k * SMALL, SMALL, GMPI_FLOAT64, GMPI_MIN,
                        comm));
}

/* Point to point between collectives: the runs stop at it. */
static void seq_p2p_between(bufs_t *b) {
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  gmpi_request_t r[2];
  for (int k = 0; k < 10; k++)
    T_OK(
        gmpi_allreduce(b->in + k * SMALL, b->out + k * SMALL, SMALL, GMPI_FLOAT32, GMPI_SUM, comm));
  T_OK(gmpi_irecv(b->out + 50 * SMALL, SMALL, GMPI_FLOAT32, left, 3, comm, &r[0]));
  T_OK(gmpi_isend(b->in + 60 * SMALL, SMALL, GMPI_FLOAT32, right, 3, comm, &r[1]));
  T_OK(gmpi_waitall(2, r, NULL));
  for (int k = 10; k < 20; k++)
    T_OK(
        gmpi_allreduce(b->in + k * SMALL, b->out + k * SMALL, SMALL, GMPI_FLOAT32, GMPI_SUM, comm));
}

/* On rank 0 only, the second allreduce's input overlaps the first's output: no rank may fuse
 * them (the ranks would call different collectives), and the third joins nothing before it. */
static void seq_overlap_one_rank(bufs_t *b) {
  float *second_in = rank == 0 ? b->out + 2 : b->in + SMALL;
  T_OK(gmpi_allreduce(b->in, b->out, SMALL, GMPI_FLOAT32, GMPI_SUM, comm));
  T_OK(gmpi_allreduce(second_in, b->out + 2 * SMALL, SMALL, GMPI_FLOAT32, GMPI_SUM, comm));
  T_OK(gmpi_allreduce(b->in + 3 * SMALL, b->out + 3 * SMALL, SMALL, GMPI_FLOAT32, GMPI_SUM, comm));
}

/* Runs of each form a reduction takes on cuda: an average (NCCL's sum, then gmpi's division,
 * here over the packed buffer), int16 sums, which NCCL lacks, and complex sums (pairs of
 * floats). Each run is 240 bytes. On cuda the int16 run is not packed: it comes between two
 * packed runs, whose slices (one table, run after run) must not shift by it. */
static void seq_reduction_forms(bufs_t *b) {
  for (int k = 0; k < 10; k++)
    T_OK(
        gmpi_allreduce(b->in + k * SMALL, b->out + k * SMALL, SMALL, GMPI_FLOAT32, GMPI_AVG, comm));
  for (int k = 0; k < 10; k++)
    T_OK(gmpi_allreduce(b->iin + k * SMALL, b->iout + k * SMALL, 2 * SMALL, GMPI_INT16, GMPI_SUM,
                        comm));
  for (int k = 10; k < 20; k++)
    T_OK(gmpi_allreduce(b->in + k * SMALL, b->out + k * SMALL, SMALL / 2, GMPI_COMPLEX64, GMPI_SUM,
                        comm));
}

/* Allgathers, then reduce_scatters (sums), each kind one run whatever its in-place form: packed
 * in one row per rank. The in-place reduce_scatters work in `in` (not compared: what they leave
 * outside their result is undefined, and differs between forms), and a third run of allgathers
 * brings their results into `out`. Then pairs that must not fuse: each reads what the one before
 * wrote in the last rank's block, which a test of count elements alone would miss. */
static void seq_gather_scatter(bufs_t *b) {
  size_t row = (size_t)SMALL * (size_t)size; /* an allgather's output, a reduce_scatter's input */
  for (int k = 0; k < 20; k++)
    T_OK(gmpi_allgather(b->in + k * SMALL, b->out + k * row, SMALL, GMPI_FLOAT32, comm));
  for (int k = 20; k < 30; k++) /* in place: our block already at our slot */
    T_OK(gmpi_allgather(b->out + k * row, b->out + k * row, SMALL, GMPI_FLOAT32, comm));
  for (int k = 0; k < 20; k++)
    T_OK(gmpi_reduce_scatter(b->in + k * row, b->out + 2000 + k * SMALL, SMALL, GMPI_FLOAT32,
                             GMPI_SUM, comm));
  float *mpi = b->in + 10000, *nccl = b->in + 10000 + 10 * row;
  for (int k = 0; k < 10; k++) { /* MPI's in place (result at the start), then NCCL's (at ours) */
    T_OK(gmpi_reduce_scatter(mpi + k * row, mpi + k * row, SMALL, GMPI_FLOAT32, GMPI_SUM, comm));
    float *at = nccl + k * row;
    T_OK(gmpi_reduce_scatter(at, at + rank * SMALL, SMALL, GMPI_FLOAT32, GMPI_SUM, comm));
  }
  for (int k = 0; k < 10; k++) {
    T_OK(gmpi_allgather(mpi + k * row, b->out + 3000 + k * row, SMALL, GMPI_FLOAT32, comm));
    T_OK(gmpi_allgather(nccl + k * row + rank * SMALL, b->out + 4000 + k * row, SMALL, GMPI_FLOAT32,
                        comm));
  }
  float *last = b->out + 5000 + (size - 1) * SMALL; /* the last rank's block of the output */
  T_OK(gmpi_allgather(b->in, b->out + 5000, SMALL, GMPI_FLOAT32, comm));
  T_OK(gmpi_allgather(last, b->out + 6000, SMALL, GMPI_FLOAT32, comm));
  T_OK(gmpi_reduce_scatter(b->in, b->out + 7000, SMALL, GMPI_FLOAT32, GMPI_SUM, comm));
  T_OK(gmpi_reduce_scatter(b->out + 7000 - (size - 1) * SMALL, b->out + 8000, SMALL, GMPI_FLOAT32,
                           GMPI_SUM, comm));
}

/* Element sizes and layouts the runs above leave out, each a run that packs on every backend:
 * int8 sums at odd counts (slices at odd offsets: cuda's byte-wise copy), float16 allgathers
 * whose rows are 54 bytes (rows at offsets that are not multiples of 4), some in place, int8
 * reduce_scatters, uint8 bcasts from rank 0, complex128 sums (16-byte elements: pairs of
 * float64), int32 averages (an integer division over the packed buffer), float32 average
 * reduce_scatters (the division on this rank's row before its copy to row 0). */
static void seq_sizes(bufs_t *b) {
  uint8_t *in = b->bin, *out = b->bout;
  size_t at = 0, half = 2, row = 3 * half * (size_t)size;
  for (int k = 0; k < 12; k++) { /* counts 1, 3, 5, 7 */
    size_t n = 1 + 2 * (size_t)(k % 4);
    T_OK(gmpi_allreduce(in + at, out + at, n, GMPI_INT8, GMPI_SUM, comm));
    at += n;
  }
  for (int k = 0; k < 9; k++) { /* every third in place: our block already at our slot */
    uint8_t *to = out + 256 + (size_t)k * row;
    const uint8_t *from = k % 3 == 2 ? to : in + 256 + (size_t)k * 3 * half;
    T_OK(gmpi_allgather(from, to, 3, GMPI_FLOAT16, comm));
  }
  for (int k = 0; k < 6; k++)
    T_OK(gmpi_reduce_scatter(in + 1024 + (size_t)k * 5 * (size_t)size, out + 1024 + (size_t)k * 5,
                             5, GMPI_INT8, GMPI_SUM, comm));
  for (int k = 0; k < 6; k++)
    T_OK(gmpi_bcast(out + 2048 + (size_t)k * 7, 7, GMPI_UINT8, 0, comm));
  for (int k = 0; k < 10; k++) /* 1 to 3 complex128 */
    T_OK(gmpi_allreduce(b->din + k * SMALL, b->dout + k * SMALL, 1 + (size_t)(k % 3),
                        GMPI_COMPLEX128, GMPI_SUM, comm));
  for (int k = 0; k < 10; k++) /* every other in place */
    T_OK(gmpi_allreduce(k % 2 ? b->iout + k * SMALL : b->iin + k * SMALL, b->iout + k * SMALL,
                        SMALL, GMPI_INT32, GMPI_AVG, comm));
  size_t frow = (size_t)SMALL * (size_t)size;
  for (int k = 0; k < 10; k++)
    T_OK(gmpi_reduce_scatter(b->in + 20000 + k * frow, b->out + 20000 + k * SMALL, SMALL,
                             GMPI_FLOAT32, GMPI_AVG, comm));
}

/* A collective over 256 KiB between small ones: not fused, and it splits the run. */
static void seq_big_between(bufs_t *b) {
  for (int k = 0; k < 5; k++)
    T_OK(
        gmpi_allreduce(b->in + k * SMALL, b->out + k * SMALL, SMALL, GMPI_FLOAT32, GMPI_SUM, comm));
  size_t at = (size_t)MANY * SMALL;
  T_OK(gmpi_allreduce(b->in + at, b->out + at, BIG, GMPI_FLOAT32, GMPI_SUM, comm));
  for (int k = 5; k < 10; k++)
    T_OK(
        gmpi_allreduce(b->in + k * SMALL, b->out + k * SMALL, SMALL, GMPI_FLOAT32, GMPI_SUM, comm));
}

static void compare(const char *what, bufs_t *e, bufs_t *p) {
  size_t n = nf(), m = MANY * SMALL;
  float *ef = t_host(n * sizeof(float)), *pf = t_host(n * sizeof(float));
  t_get(ef, e->out, n * sizeof(float));
  t_get(pf, p->out, n * sizeof(float));
  t_check_buffer(what, GMPI_FLOAT32, pf, ef, n);
  int32_t *ei = t_host(m * sizeof(int32_t)), *pi = t_host(m * sizeof(int32_t));
  t_get(ei, e->iout, m * sizeof(int32_t));
  t_get(pi, p->iout, m * sizeof(int32_t));
  t_check_buffer(what, GMPI_INT32, pi, ei, m);
  double *ed = t_host(m * sizeof(double)), *pd = t_host(m * sizeof(double));
  t_get(ed, e->dout, m * sizeof(double));
  t_get(pd, p->dout, m * sizeof(double));
  t_check_buffer(what, GMPI_FLOAT64, pd, ed, m);
  uint8_t *eb = t_host(BYTES), *pb = t_host(BYTES);
  t_get(eb, e->bout, BYTES);
  t_get(pb, p->bout, BYTES);
  t_check_buffer(what, GMPI_UINT8, pb, eb, BYTES);
  free(ef), free(pf), free(ei), free(pi), free(ed), free(pd), free(eb), free(pb);
}

/* How many times gmpi_plan_dump's text holds word. */
static int dump_count(gmpi_plan_t plan, const char *word) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  T_TRUE(f != NULL);
  T_OK(gmpi_plan_dump(plan, f));
  fclose(f);
  int n = 0;
  for (const char *at = text; (at = strstr(at, word)) != NULL; at += strlen(word))
    n++;
  free(text);
  return n;
}

/* Record seq, replay it 5 times with new inputs against the eager calls, and check that the
 * dump shows `runs` fused runs, fused_word among them, where the backend packs and fusion is
 * on (none otherwise). */
static void plan_equals_eager(const char *what, seq_fn seq, const char *fused_word, int runs) {
  bufs_t e, p;
  bufs_alloc(&e);
  bufs_alloc(&p);
  gmpi_plan_t plan = NULL;
  T_OK(gmpi_plan_begin(comm));
  seq(&p);
  T_OK(gmpi_plan_end(comm, &plan));
  for (int it = 0; it < 5; it++) {
    fill(&e, it);
    fill(&p, it);
    seq(&e);
    T_OK(gmpi_plan_run(plan));
    compare(what, &e, &p);
  }
  int expect = fuse_on && pack_on ? runs : 0;
  int got = dump_count(plan, "fused, packed");
  int why_missing = fuse_on && !pack_on && runs && dump_count(plan, "run not packed") < 1;
  if (got != expect || why_missing || (fused_word && expect && dump_count(plan, fused_word) < 1)) {
    if (rank == 0) gmpi_plan_dump(plan, stderr);
    T_FAIL_("%s: %d fused runs in the dump, expected %d%s%s", what, got, expect,
            fused_word ? " including " : "", fused_word ? fused_word : "");
  }
  T_OK(gmpi_plan_free(&plan));
  bufs_free(&e);
  bufs_free(&p);
}

/* GMPI_PLAN_PACK_BYTES decides how every rank moves a fused run, so a plan compiled where it
 * differs fails on every rank, naming the variable (rank 0 sets it to 0, the others keep
 * theirs; a comm reads it at its gmpi_init). */
static void pack_bytes_disagree(void) {
  if (size < 2) return;
  char *saved = getenv("GMPI_PLAN_PACK_BYTES") ? strdup(getenv("GMPI_PLAN_PACK_BYTES")) : NULL;
  if (rank == 0) setenv("GMPI_PLAN_PACK_BYTES", saved && !strcmp(saved, "0") ? "4096" : "0", 1);
  gmpi_comm_t c = NULL;
  T_OK(gmpi_init(MPI_COMM_WORLD, &c));
  if (saved)
    setenv("GMPI_PLAN_PACK_BYTES", saved, 1);
  else
    unsetenv("GMPI_PLAN_PACK_BYTES");
  free(saved);
  float *x = t_alloc(4 * sizeof(float));
  gmpi_plan_t plan = NULL;
  T_OK(gmpi_plan_begin(c));
  T_OK(gmpi_allreduce(x, x, 2, GMPI_FLOAT32, GMPI_SUM, c));
  T_OK(gmpi_allreduce(x + 2, x + 2, 2, GMPI_FLOAT32, GMPI_SUM, c));
  T_EQ_INT(gmpi_plan_end(c, &plan), GMPI_ERR_MISMATCH);
  T_ERROR_MENTIONS("GMPI_PLAN_PACK_BYTES");
  T_EQ_PTR(plan, NULL);
  t_free(x);
  T_OK(gmpi_finalize(&c));
}

int main(int argc, char **argv) {
  comm = t_init(&argc, &argv);
  gmpi_comm_rank(comm, &rank);
  gmpi_comm_size(comm, &size);
  const char *env = getenv("GMPI_PLAN_FUSE");
  fuse_on = !(env && strcmp(env, "0") == 0);
  gmpi_backend_t backend;
  T_OK(gmpi_comm_backend(comm, &backend));
  const char *pack = getenv("GMPI_PLAN_PACK_BYTES");
  pack_on = !(pack && strcmp(pack, "0") == 0);
  packs_gathered = backend == GMPI_BACKEND_CPU || getenv("GMPI_TEST_HOST_BUFFERS") != NULL;
  /* 100 x 6 float32 and 100 x 6 int32 */
  plan_equals_eager("independent allreduces and bcasts", seq_independent,
                    "(100 fused, packed, 2400 B)", 2);
  plan_equals_eager("a chain of dependent allreduces", seq_chain, NULL, 0);
  /* 30 int32 + 30 float64 alternating never fuse; the 70 float64 MIN in place fuse once */
  plan_equals_eager("mixed dtypes and ops, in place", seq_mixed_in_place,
                    "(70 fused, packed, 3360 B)", 1);
  plan_equals_eager("point to point between", seq_p2p_between, "(10 fused, packed, 240 B)", 2);
  /* allreduces 2 and 3 may fuse (2's input overlaps 1's output on rank 0 only) */
  plan_equals_eager("overlap on one rank", seq_overlap_one_rank, "(2 fused, packed, 48 B)", 1);
  plan_equals_eager("a large collective between", seq_big_between, "(5 fused, packed, 120 B)", 2);
  plan_equals_eager("an average, complex sums, int16 sums", seq_reduction_forms,
                    "(10 fused, packed, 240 B)", 2 + packs_gathered);
  char rows[64]; /* 40 reduce_scatters of 6 float32 per rank */
  snprintf(rows, sizeof(rows), "(40 fused, packed, %d B)", 40 * SMALL * 4 * size);
  plan_equals_eager("allgathers and reduce_scatters, in place or not", seq_gather_scatter, rows, 3);
  /* 12 int8 sums of 1, 3, 5, 7 elements: 48 bytes */
  plan_equals_eager("1-, 2- and 16-byte elements, integer averages", seq_sizes,
                    "(12 fused, packed, 48 B)", 7);
  pack_bytes_disagree();
  return t_finish("plan fusion");
}
