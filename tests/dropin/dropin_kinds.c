/* SPDX-License-Identifier: BSD-3-Clause */
/* Collectives whose ranks pass buffers of different memory kinds in one call: in a mixed run
 * (DROPIN_MEMORY=mixed) every buffer here follows the rank's parity, even ranks device and odd
 * ranks host -- legal in a CUDA-aware MPI, and what MPICH's dtpools tests do (allred
 * -evenmemtype=device -oddmemtype=host). Through the layer that needs
 * GMPI_INTERPOSE_KINDS=mixed: the ranks agree on one route per call; without it the device
 * ranks wait in gmpi and the host ranks in MPI. On host or device memory alone (every rank one
 * kind) the same calls check the agreement costs nothing in results.
 *   Allreduce (in place too; SUM, and MAX on ints), Reduce to every root, Bcast from every root,
 *   Allgather, Gather and Scatter from every root, Alltoall, Reduce_scatter_block, Scan, and
 *   Iallreduce and Ibcast completed by MPI_Wait; MPI_INT and MPI_DOUBLE; 1, 7 and 4099 elements.
 * Runs at any size, 1 included.
 *
 * DROPIN_EXPECT_KINDS_REFUSED=1 instead checks the layer's default (GMPI_INTERPOSE_KINDS=uniform)
 * under GMPI_CHECK=1: a mixed-kind MPI_Allreduce returns an error on every rank rather than
 * waiting. Only a mixed run on a GPU mixes kinds, so elsewhere that part skips (77). */
#include "dropin_util.h"

static const size_t counts[] = {1, 7, 4099};
#define NCOUNTS  (sizeof counts / sizeof counts[0])
#define SENTINEL (-7.0)

/* ---- element types: MPI_INT and MPI_DOUBLE ------------------------------------------------ */

typedef struct {
  MPI_Datatype dt;
  const char *name;
  int is_int;
} etype_t;

static etype_t types[2];

static size_t esize(const etype_t *t) { return t->is_int ? sizeof(int) : sizeof(double); }

static void eset(const etype_t *t, void *b, size_t i, double v) {
  if (t->is_int)
    ((int *)b)[i] = (int)v;
  else
    ((double *)b)[i] = v;
}

/* What rank src contributes for rank dst at element i: exact in int and double, and sums of
 * four of them too; the doubles have a fraction. Grows with src (MPI_MAX is the last rank's). */
static double val(const etype_t *t, int src, int dst, size_t i) {
  return src * 100000.0 + dst * 1000.0 + (double)(i % 97) + (t->is_int ? 0.0 : 0.5);
}

/* Host array of n elements, element i f(i) through a callback's arguments. */
typedef double (*value_fn)(const etype_t *t, int a, int b, size_t i);

static void *host_values(const etype_t *t, size_t n, value_fn f, int a, int b) {
  void *h = host_alloc(n * esize(t));
  for (size_t i = 0; i < n; i++)
    eset(t, h, i, f(t, a, b, i));
  return h;
}

/* Blocks of n elements, block k from rank src for rank dst: by_src says whether k is the source
 * (what arrives at dst = me) or the destination (what rank src = me sends). */
static void *host_blocks(const etype_t *t, size_t n, int me, int by_src) {
  int size = d_size();
  void *h = host_alloc((size_t)size * n * esize(t));
  for (int k = 0; k < size; k++)
    for (size_t i = 0; i < n; i++)
      eset(t, h, (size_t)k * n + i, by_src ? val(t, k, me, i) : val(t, me, k, i));
  return h;
}

static double sentinel(const etype_t *t, int a, int b, size_t i) {
  (void)t, (void)a, (void)b, (void)i;
  return SENTINEL;
}

/* Sum over ranks lo..hi of val(src, dst, i). */
static void *host_sum(const etype_t *t, size_t n, int lo, int hi, int dst) {
  void *h = host_alloc(n * esize(t));
  for (size_t i = 0; i < n; i++) {
    double s = 0;
    for (int r = lo; r <= hi; r++)
      s += val(t, r, dst, i);
    eset(t, h, i, s);
  }
  return h;
}

/* A buffer of this rank's kind (the rank's parity in a mixed run) holding host's n elements. */
static void *mem_of(const etype_t *t, const void *host, size_t n) {
  return mem_dup_p2p(host, n * esize(t));
}

/* A buffer of this rank's kind filled with SENTINEL (what a receive must overwrite). */
static void *mem_sentinel(const etype_t *t, size_t n) {
  void *h = host_values(t, n, sentinel, 0, 0), *m = mem_of(t, h, n);
  free(h);
  return m;
}

/* n elements of mem equal want's: one failure naming the first wrong element, both values. */
static void check_at(const char *file, int line, const char *what, const etype_t *t,
                     const void *mem, const void *want, size_t n) {
  void *got = mem_fetch(mem, n * esize(t));
  if (t->is_int)
    d_check_int_at(file, line, what, got, want, n);
  else
    d_check_dbl_at(file, line, what, got, want, n);
  free(got);
}
#define check(...) check_at(__FILE__, __LINE__, __VA_ARGS__)

/* ---- the collectives ---------------------------------------------------------------------- */

static void allreduce(const etype_t *t, size_t n, int inplace) {
  int me = d_rank(), size = d_size();
  void *mine = host_values(t, n, val, me, 0);
  void *sb = inplace ? NULL : mem_of(t, mine, n);
  void *rb = inplace ? mem_of(t, mine, n) : mem_sentinel(t, n);
  D_MPI(MPI_Allreduce(inplace ? MPI_IN_PLACE : sb, rb, (int)n, t->dt, MPI_SUM, MPI_COMM_WORLD));
  void *want = host_sum(t, n, 0, size - 1, 0);
  check(d_label("allreduce %s n=%zu%s", t->name, n, inplace ? " in place" : ""), t, rb, want, n);
  mem_free(sb), mem_free(rb), free(mine), free(want);
}

/* MPI_MAX on ints: every element is the last rank's. */
static void allreduce_max(size_t n) {
  const etype_t *t = &types[0];
  int me = d_rank(), size = d_size();
  void *mine = host_values(t, n, val, me, 0), *want = host_values(t, n, val, size - 1, 0);
  void *sb = mem_of(t, mine, n), *rb = mem_of(t, mine, n);
  D_MPI(MPI_Allreduce(sb, rb, (int)n, t->dt, MPI_MAX, MPI_COMM_WORLD));
  check(d_label("allreduce MAX n=%zu", n), t, rb, want, n);
  mem_free(sb), mem_free(rb), free(mine), free(want);
}

static void reduce(const etype_t *t, size_t n, int root) {
  int me = d_rank(), size = d_size();
  void *mine = host_values(t, n, val, me, root), *init = host_values(t, n, sentinel, 0, 0);
  void *sb = mem_of(t, mine, n), *rb = mem_of(t, init, n);
  D_MPI(MPI_Reduce(sb, rb, (int)n, t->dt, MPI_SUM, root, MPI_COMM_WORLD));
  void *want = me == root ? host_sum(t, n, 0, size - 1, root) : init; /* elsewhere untouched */
  check(d_label("reduce %s n=%zu root=%d", t->name, n, root), t, rb, want, n);
  if (want != init) free(want);
  mem_free(sb), mem_free(rb), free(mine), free(init);
}

static void bcast(const etype_t *t, size_t n, int root) {
  int me = d_rank();
  void *want = host_values(t, n, val, root, 0);
  void *buf = me == root ? mem_of(t, want, n) : mem_sentinel(t, n);
  D_MPI(MPI_Bcast(buf, (int)n, t->dt, root, MPI_COMM_WORLD));
  check(d_label("bcast %s n=%zu root=%d", t->name, n, root), t, buf, want, n);
  mem_free(buf), free(want);
}

static void allgather(const etype_t *t, size_t n) {
  int me = d_rank(), size = d_size();
  void *mine = host_values(t, n, val, me, 0), *init = host_values(t, n * size, sentinel, 0, 0);
  void *sb = mem_of(t, mine, n), *rb = mem_of(t, init, n * size);
  D_MPI(MPI_Allgather(sb, (int)n, t->dt, rb, (int)n, t->dt, MPI_COMM_WORLD));
  void *want = host_blocks(t, n, 0, 1); /* block k: val(k, 0, i) */
  check(d_label("allgather %s n=%zu", t->name, n), t, rb, want, n * size);
  mem_free(sb), mem_free(rb), free(mine), free(init), free(want);
}

static void gather(const etype_t *t, size_t n, int root) {
  int me = d_rank(), size = d_size();
  void *mine = host_values(t, n, val, me, root), *init = host_values(t, n * size, sentinel, 0, 0);
  void *sb = mem_of(t, mine, n), *rb = me == root ? mem_of(t, init, n * size) : NULL;
  D_MPI(MPI_Gather(sb, (int)n, t->dt, rb, (int)n, t->dt, root, MPI_COMM_WORLD));
  if (me == root) {
    void *want = host_blocks(t, n, root, 1); /* block k: val(k, root, i) */
    check(d_label("gather %s n=%zu root=%d", t->name, n, root), t, rb, want, n * size);
    free(want);
  }
  mem_free(sb), mem_free(rb), free(mine), free(init);
}

static void scatter(const etype_t *t, size_t n, int root) {
  int me = d_rank();
  void *all = host_blocks(t, n, root, 0); /* block k: val(root, k, i) */
  void *sb = me == root ? mem_of(t, all, n * d_size()) : NULL;
  void *rb = mem_sentinel(t, n);
  D_MPI(MPI_Scatter(sb, (int)n, t->dt, rb, (int)n, t->dt, root, MPI_COMM_WORLD));
  void *want = host_values(t, n, val, root, me);
  check(d_label("scatter %s n=%zu root=%d", t->name, n, root), t, rb, want, n);
  mem_free(sb), mem_free(rb), free(all), free(want);
}

static void alltoall(const etype_t *t, size_t n) {
  int me = d_rank(), size = d_size();
  void *out = host_blocks(t, n, me, 0), *init = host_values(t, n * size, sentinel, 0, 0);
  void *sb = mem_of(t, out, n * size), *rb = mem_of(t, init, n * size);
  D_MPI(MPI_Alltoall(sb, (int)n, t->dt, rb, (int)n, t->dt, MPI_COMM_WORLD));
  void *want = host_blocks(t, n, me, 1);
  check(d_label("alltoall %s n=%zu", t->name, n), t, rb, want, n * size);
  mem_free(sb), mem_free(rb), free(out), free(init), free(want);
}

/* Block k of every rank's input reduced onto rank k. */
static void reduce_scatter_block(const etype_t *t, size_t n) {
  int me = d_rank(), size = d_size();
  void *out = host_blocks(t, n, me, 0);
  void *sb = mem_of(t, out, n * size), *rb = mem_sentinel(t, n);
  D_MPI(MPI_Reduce_scatter_block(sb, rb, (int)n, t->dt, MPI_SUM, MPI_COMM_WORLD));
  void *want = host_sum(t, n, 0, size - 1, me);
  check(d_label("reduce_scatter_block %s n=%zu", t->name, n), t, rb, want, n);
  mem_free(sb), mem_free(rb), free(out), free(want);
}

static void scan(const etype_t *t, size_t n) {
  int me = d_rank();
  void *mine = host_values(t, n, val, me, 0);
  void *sb = mem_of(t, mine, n), *rb = mem_sentinel(t, n);
  D_MPI(MPI_Scan(sb, rb, (int)n, t->dt, MPI_SUM, MPI_COMM_WORLD));
  void *want = host_sum(t, n, 0, me, 0);
  check(d_label("scan %s n=%zu", t->name, n), t, rb, want, n);
  mem_free(sb), mem_free(rb), free(mine), free(want);
}

/* Nonblocking: the layer must not wait for the other ranks when the call is made. */
static void iallreduce_ibcast(const etype_t *t, size_t n) {
  int me = d_rank(), size = d_size(), root = size - 1;
  void *mine = host_values(t, n, val, me, 0), *bval = host_values(t, n, val, root, 1);
  void *sb = mem_of(t, mine, n), *rb = mem_sentinel(t, n);
  void *bb = me == root ? mem_of(t, bval, n) : mem_sentinel(t, n);
  MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  D_MPI(MPI_Iallreduce(sb, rb, (int)n, t->dt, MPI_SUM, MPI_COMM_WORLD, &r[0]));
  D_MPI(MPI_Ibcast(bb, (int)n, t->dt, root, MPI_COMM_WORLD, &r[1]));
  D_MPI(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
  D_MPI(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
  void *want = host_sum(t, n, 0, size - 1, 0);
  check(d_label("iallreduce %s n=%zu", t->name, n), t, rb, want, n);
  check(d_label("ibcast %s n=%zu root=%d", t->name, n, root), t, bb, bval, n);
  mem_free(sb), mem_free(rb), mem_free(bb), free(mine), free(bval), free(want);
}

static void all_calls(const etype_t *t, size_t n) {
  allreduce(t, n, 0);
  allreduce(t, n, 1);
  for (int root = 0; root < d_size(); root++) {
    reduce(t, n, root);
    bcast(t, n, root);
    gather(t, n, root);
    scatter(t, n, root);
  }
  allgather(t, n);
  alltoall(t, n);
  reduce_scatter_block(t, n);
  scan(t, n);
  iallreduce_ibcast(t, n);
}

/* ---- refused: GMPI_INTERPOSE_KINDS=uniform under GMPI_CHECK=1 ------------------------------ */

/* A mixed-kind allreduce fails on every rank, with an error class, instead of waiting. */
static int refused(void) {
  const char *mode = getenv("DROPIN_MEMORY");
  if (!mode || strcmp(mode, "mixed") != 0 || d_size() < 2)
    return d_skip("DROPIN_EXPECT_KINDS_REFUSED=1 needs DROPIN_MEMORY=mixed and 2 or more ranks");
  MPI_Comm comm;
  D_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  D_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  const etype_t *t = &types[0];
  void *mine = host_values(t, 7, val, d_rank(), 0);
  void *buf = mem_of(t, mine, 7);
  int rc = MPI_Allreduce(MPI_IN_PLACE, buf, 7, t->dt, MPI_SUM, comm), cls = MPI_SUCCESS;
  if (rc != MPI_SUCCESS && MPI_Error_class(rc, &cls) != MPI_SUCCESS) cls = MPI_ERR_UNKNOWN;
  if (cls == MPI_SUCCESS)
    D_FAIL("a mixed-kind MPI_Allreduce returned %d (class %d), want an error class", rc, cls);
  D_MPI(MPI_Comm_free(&comm));
  mem_free(buf), free(mine);
  return d_finish();
}

int main(int argc, char **argv) {
  /* D_SCOPE_P2P: in a mixed run every buffer follows the rank's parity, collectives' too */
  d_init(&argc, &argv, "dropin_kinds", D_SCOPE_P2P);
  types[0] = (etype_t){MPI_INT, "MPI_INT", 1};
  types[1] = (etype_t){MPI_DOUBLE, "MPI_DOUBLE", 0};
  const char *refuse = getenv("DROPIN_EXPECT_KINDS_REFUSED");
  if (refuse && strcmp(refuse, "1") == 0) return refused();
  for (size_t c = 0; c < NCOUNTS; c++) {
    for (int k = 0; k < 2; k++)
      all_calls(&types[k], counts[c]);
    allreduce_max(counts[c]);
  }
  return d_finish();
}
