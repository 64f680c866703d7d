/* SPDX-License-Identifier: BSD-3-Clause */
/* Blocking collectives on mem_alloc buffers, in place (MPI_IN_PLACE wherever MPI allows it) and
 * out of place, every element of every result checked against values computed from the
 * contributing rank and the index:
 *   Allreduce over 12 types and every predefined arithmetic, logical and bitwise op that MPI
 *   defines for the type; Reduce to every root; Bcast from every root; Allgather, Allgatherv
 *   (unequal counts, a zero count, gaps between blocks that must stay untouched); Gather,
 *   Gatherv, Scatter, Scatterv from every root (buffers, counts and displacements that only the
 *   root reads are NULL elsewhere, as many programs pass them); Reduce_scatter (unequal counts),
 *   Reduce_scatter_block; Alltoall; Alltoallv (unequal and zero counts, gaps); Barrier.
 * Counts: empty, 1, 7 and about 100k elements. Runs at any size, 1 included. In a mixed-memory
 * run every rank uses device buffers (collectives need one kind everywhere). */
#include "dropin_util.h"

#include <stdint.h>

#define LARGE 100003
static const size_t counts[] = {1, 7, LARGE};
#define NCOUNTS  (sizeof counts / sizeof counts[0])
#define SENTINEL (-7) /* what gaps and unwritten blocks hold */

/* ---- element types ---------------------------------------------------------------------- */

typedef struct {
  MPI_Datatype dt;
  const char *name;
  size_t size;
  int is_int, is_signed;
  void (*set)(void *buf, size_t i, long long v);
  double (*get)(const void *buf, size_t i);
} ctype_t;

#define ACCESSORS(tag, ctype)                                                                      \
  static void set_##tag(void *b, size_t i, long long v) { ((ctype *)b)[i] = (ctype)v; }            \
  static double get_##tag(const void *b, size_t i) { return (double)((const ctype *)b)[i]; }
ACCESSORS(int, int)
ACCESSORS(unsigned, unsigned)
ACCESSORS(long, long)
ACCESSORS(ulong, unsigned long)
ACCESSORS(llong, long long)
ACCESSORS(short, short)
ACCESSORS(schar, signed char)
ACCESSORS(uchar, unsigned char)
ACCESSORS(int64, int64_t)
ACCESSORS(uint64, uint64_t)
ACCESSORS(float, float)
ACCESSORS(double, double)

static ctype_t types[12];
static int ntypes;
static const ctype_t *T_INT, *T_DBL;

/* At run time: MPI_INT and friends need not be constant expressions. */
static void init_types(void) {
#define TYPE(mpi, tag, ctype, is_int, is_signed)                                                   \
  types[ntypes++] = (ctype_t){mpi, #mpi, sizeof(ctype), is_int, is_signed, set_##tag, get_##tag}
  TYPE(MPI_INT, int, int, 1, 1);
  TYPE(MPI_UNSIGNED, unsigned, unsigned, 1, 0);
  TYPE(MPI_LONG, long, long, 1, 1);
  TYPE(MPI_UNSIGNED_LONG, ulong, unsigned long, 1, 0);
  TYPE(MPI_LONG_LONG, llong, long long, 1, 1);
  TYPE(MPI_SHORT, short, short, 1, 1);
  TYPE(MPI_SIGNED_CHAR, schar, signed char, 1, 1);
  TYPE(MPI_UNSIGNED_CHAR, uchar, unsigned char, 1, 0);
  TYPE(MPI_INT64_T, int64, int64_t, 1, 1);
  TYPE(MPI_UINT64_T, uint64, uint64_t, 1, 0);
  TYPE(MPI_FLOAT, float, float, 0, 1);
  TYPE(MPI_DOUBLE, double, double, 0, 1);
#undef TYPE
  T_INT = &types[0];
  T_DBL = &types[ntypes - 1];
}

/* Host array of n elements of t, every one set to v. */
static void *host_filled(const ctype_t *t, size_t n, long long v) {
  void *h = host_alloc(n * t->size);
  for (size_t i = 0; i < n; i++)
    t->set(h, i, v);
  return h;
}

/* got[i] == want[i] for i in [0, n); one failure for the whole array. */
static void check_typed_at(const char *file, int line, const char *what, const ctype_t *t,
                           const void *got, const void *want, size_t n) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++)
    if (t->get(got, i) != t->get(want, i) && bad++ == 0) first = i;
  if (bad)
    d_fail_at(file, line, "%s (%s): %zu of %zu wrong, first [%zu]: got %.17g, want %.17g", what,
              t->name, bad, n, first, t->get(got, first), t->get(want, first));
}

/* Fetch n elements of mem and compare them with want. */
static void check_mem_at(const char *file, int line, const char *what, const ctype_t *t,
                         const void *mem, const void *want, size_t n) {
  void *got = mem_fetch(mem, n * t->size);
  check_typed_at(file, line, what, t, got, want, n);
  free(got);
}

#define check_typed(...) check_typed_at(__FILE__, __LINE__, __VA_ARGS__)
#define check_mem(...)   check_mem_at(__FILE__, __LINE__, __VA_ARGS__)

/* ---- data-movement values --------------------------------------------------------------- */

/* Element i of what rank src contributes for rank dst (dst unused where everyone gets the same).
 * Small enough for int and exact in double. */
static long long mval(int src, int dst, size_t i) {
  return (long long)src * 100000 + dst * 1000 + (long long)(i % 997);
}

/* Host array: block from src to dst, n elements, placed at want + at. */
static void put_block(const ctype_t *t, void *host, size_t at, int src, int dst, size_t n) {
  for (size_t i = 0; i < n; i++)
    t->set(host, at + i, mval(src, dst, i));
}

/* A device-or-host buffer with the block from src to dst. */
static void *mem_block(const ctype_t *t, int src, int dst, size_t n) {
  void *h = host_alloc(n * t->size);
  put_block(t, h, 0, src, dst, n);
  void *m = mem_dup(h, n * t->size);
  free(h);
  return m;
}

/* ---- reductions ------------------------------------------------------------------------- */

enum op_kind { SUM, PROD, MAX, MIN, LAND, LOR, LXOR, BAND, BOR, BXOR, NOPS };
static const char *op_names[NOPS] = {"SUM", "PROD", "MAX",  "MIN", "LAND",
                                     "LOR", "LXOR", "BAND", "BOR", "BXOR"};
static MPI_Op mpi_op(enum op_kind k) {
  MPI_Op ops[NOPS] = {MPI_SUM, MPI_PROD, MPI_MAX,  MPI_MIN, MPI_LAND,
                      MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};
  return ops[k];
}
static int is_logical(enum op_kind k) { return k == LAND || k == LOR || k == LXOR; }
/* MPI defines logical and bitwise ops for integer types only. */
static int op_allowed(enum op_kind k, const ctype_t *t) { return t->is_int || k <= MIN; }

/* Rank r's element i for op k: small values whose reduction over up to 120 ranks fits every type
 * (signed char included) and is exact in float. */
static long long gen(enum op_kind k, int is_signed, int r, size_t i) {
  int p = d_size();
  long long m, v;
  switch (k) {
  case SUM:
    m = 120 / p + 1;
    v = (long long)((r * 7 + i * 3) % (size_t)m);
    return is_signed ? v - m / 2 : v;
  case PROD:
    if (is_signed && (r + 2 * i) % 7 == 3) return -1;
    return (r < 6 && (r + i) % 3 == 0) ? 2 : 1;
  case MAX:
  case MIN: return (long long)((r * 13 + i * 7) % 121) - (is_signed ? 60 : 0);
  case LAND: /* 0 on at most one rank, or none; the nonzero values are all above 1, so MIN or
              * BAND cannot pass for LAND */
    return (r + i) % (size_t)(p + 1) ? 2 + (long long)((r * 3 + i) % 5) : 0;
  case LOR: return (r + i) % (size_t)(p + 1) == 0 ? 2 : 0; /* nonzero on at most one rank */
  case LXOR: return (long long)((r * 5 + i) % 3);
  case BAND: return 0x7f & ~(1 << ((r + i) % 7)); /* every rank clears one bit */
  case BOR: return 1 << ((r * 3 + i) % 7);
  case BXOR: return (long long)((r * 37 + i * 11) % 128);
  default: return 0;
  }
}

static long long fold(enum op_kind k, long long a, long long b) {
  switch (k) {
  case SUM: return a + b;
  case PROD: return a * b;
  case MAX: return a > b ? a : b;
  case MIN: return a < b ? a : b;
  case LAND: return a && b;
  case LOR: return a || b;
  case LXOR: return !a != !b;
  case BAND: return a & b;
  case BOR: return a | b;
  case BXOR: return a ^ b;
  default: return 0;
  }
}

/* Rank r's input: elements first .. first+n-1 of its contribution. */
static void *reduce_input_host(const ctype_t *t, enum op_kind k, int r, size_t first, size_t n) {
  void *h = host_alloc(n * t->size);
  for (size_t i = 0; i < n; i++)
    t->set(h, i, gen(k, t->is_signed, r, first + i));
  return h;
}

/* Elements first .. first+n-1 of mem hold the reduction over all ranks. With one rank a logical
 * op's result may be the input itself (MPI applies no op to a single value), so only its truth is
 * compared; with more, logical results must be exactly 0 or 1. */
static void check_reduced_at(const char *file, int line, const char *what, const ctype_t *t,
                             enum op_kind k, const void *mem, size_t first, size_t n) {
  void *got = mem_fetch(mem, n * t->size);
  size_t bad = 0, at = 0;
  double gv = 0, wv = 0;
  for (size_t i = 0; i < n; i++) {
    long long want = gen(k, t->is_signed, 0, first + i);
    for (int r = 1; r < d_size(); r++)
      want = fold(k, want, gen(k, t->is_signed, r, first + i));
    double g = t->get(got, i);
    int ok = (is_logical(k) && d_size() == 1) ? (g != 0) == (want != 0) : g == (double)want;
    if (!ok && bad++ == 0) at = i, gv = g, wv = (double)want;
  }
  if (bad)
    d_fail_at(file, line, "%s (%s %s): %zu of %zu wrong, first [%zu]: got %.17g, want %.17g", what,
              t->name, op_names[k], bad, n, at, gv, wv);
  free(got);
}

#define check_reduced(...) check_reduced_at(__FILE__, __LINE__, __VA_ARGS__)

static void test_allreduce(const ctype_t *t, enum op_kind k, size_t n, int in_place) {
  void *in = reduce_input_host(t, k, d_rank(), 0, n);
  void *recv = mem_alloc(n * t->size), *send = NULL;
  if (in_place) {
    mem_put(recv, in, n * t->size);
  } else {
    send = mem_dup(in, n * t->size);
    mem_set(recv, 0, n * t->size);
  }
  D_MPI(MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, (int)n, t->dt, mpi_op(k),
                      MPI_COMM_WORLD));
  check_reduced(d_label("allreduce%s n=%zu", in_place ? " in place" : "", n), t, k, recv, 0, n);
  if (send) { /* the send buffer is input only */
    void *after = mem_fetch(send, n * t->size);
    check_typed(d_label("allreduce n=%zu: send buffer unchanged", n), t, after, in, n);
    free(after);
  }
  free(in);
  mem_free(send);
  mem_free(recv);
}

/* Reduce to root. Out of place every rank passes a receive buffer; in place the root passes
 * MPI_IN_PLACE and the others pass NULL as the (insignificant) receive buffer. */
static void test_reduce(const ctype_t *t, enum op_kind k, size_t n, int root, int in_place) {
  int me = d_rank();
  void *in = reduce_input_host(t, k, me, 0, n);
  void *data = mem_dup(in, n * t->size);
  void *recv = NULL;
  if (!in_place || me == root) recv = in_place ? data : mem_alloc(n * t->size);
  const void *sendarg = (in_place && me == root) ? MPI_IN_PLACE : data;
  D_MPI(MPI_Reduce(sendarg, recv, (int)n, t->dt, mpi_op(k), root, MPI_COMM_WORLD));
  if (me == root)
    check_reduced(d_label("reduce%s n=%zu root=%d", in_place ? " in place" : "", n, root), t, k,
                  recv, 0, n);
  if (recv != data) mem_free(recv);
  mem_free(data);
  free(in);
}

/* Reduce_scatter with unequal counts (rank 1 gets none when there are two or more ranks);
 * in place the whole input sits in the receive buffer and the result lands at its start. */
static void test_reduce_scatter(const ctype_t *t, enum op_kind k, size_t base, int in_place) {
  int p = d_size(), me = d_rank();
  int *rc = host_alloc(sizeof(int) * (size_t)p);
  size_t total = 0, first = 0;
  for (int r = 0; r < p; r++) {
    rc[r] = (p > 1 && r == 1) ? 0 : (int)(base + 3 * (size_t)r);
    if (r < me) first += (size_t)rc[r];
    total += (size_t)rc[r];
  }
  void *in = reduce_input_host(t, k, me, 0, total);
  void *send = in_place ? NULL : mem_dup(in, total * t->size);
  void *recv = in_place ? mem_dup(in, total * t->size) : mem_alloc((size_t)rc[me] * t->size);
  D_MPI(MPI_Reduce_scatter(in_place ? MPI_IN_PLACE : send, recv, rc, t->dt, mpi_op(k),
                           MPI_COMM_WORLD));
  check_reduced(d_label("reduce_scatter%s base=%zu", in_place ? " in place" : "", base), t, k, recv,
                first, (size_t)rc[me]);
  free(in);
  free(rc);
  mem_free(send);
  mem_free(recv);
}

static void test_reduce_scatter_block(const ctype_t *t, enum op_kind k, size_t n, int in_place) {
  size_t total = n * (size_t)d_size();
  void *in = reduce_input_host(t, k, d_rank(), 0, total);
  void *send = in_place ? NULL : mem_dup(in, total * t->size);
  void *recv = in_place ? mem_dup(in, total * t->size) : mem_alloc(n * t->size);
  D_MPI(MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : send, recv, (int)n, t->dt, mpi_op(k),
                                 MPI_COMM_WORLD));
  check_reduced(d_label("reduce_scatter_block%s n=%zu", in_place ? " in place" : "", n), t, k, recv,
                n * (size_t)d_rank(), n);
  free(in);
  mem_free(send);
  mem_free(recv);
}

/* ---- rooted and all-to-all data movement ------------------------------------------------ */

static void test_bcast(const ctype_t *t, size_t n, int root) {
  void *buf = d_rank() == root ? mem_block(t, root, 0, n) : mem_alloc(n * t->size);
  if (d_rank() != root) mem_set(buf, 0, n * t->size);
  D_MPI(MPI_Bcast(buf, (int)n, t->dt, root, MPI_COMM_WORLD));
  void *want = host_alloc(n * t->size);
  put_block(t, want, 0, root, 0, n);
  check_mem(d_label("bcast n=%zu root=%d", n, root), t, buf, want, n);
  free(want);
  mem_free(buf);
}

/* Allgather: block r of the result is rank r's contribution. */
static void test_allgather(const ctype_t *t, size_t n, int in_place) {
  int p = d_size(), me = d_rank();
  size_t total = n * (size_t)p;
  void *init = host_filled(t, total, SENTINEL), *want = host_alloc(total * t->size);
  for (int r = 0; r < p; r++)
    put_block(t, want, n * (size_t)r, r, 0, n);
  if (in_place) put_block(t, init, n * (size_t)me, me, 0, n);
  void *recv = mem_dup(init, total * t->size);
  void *send = in_place ? NULL : mem_block(t, me, 0, n);
  D_MPI(MPI_Allgather(in_place ? MPI_IN_PLACE : send, (int)n, t->dt, recv, (int)n, t->dt,
                      MPI_COMM_WORLD));
  check_mem(d_label("allgather%s n=%zu", in_place ? " in place" : "", n), t, recv, want, total);
  free(init);
  free(want);
  mem_free(send);
  mem_free(recv);
}

/* Unequal counts (rank 1 contributes nothing when there are two or more ranks) at displacements
 * that leave GAP elements before, between and after the blocks. */
#define GAP 3
typedef struct {
  int *count, *displ;
  size_t total; /* elements the displaced buffer spans, gaps included */
} layout_t;

static layout_t layout_make(size_t base, int salt) {
  int p = d_size();
  layout_t l = {host_alloc(sizeof(int) * (size_t)p), host_alloc(sizeof(int) * (size_t)p), GAP};
  for (int r = 0; r < p; r++) {
    l.count[r] = (p > 1 && r == 1) ? 0 : (int)(base + (size_t)((r * 5 + salt) % 4));
    l.displ[r] = (int)l.total;
    l.total += (size_t)l.count[r] + GAP;
  }
  return l;
}

static void layout_free(layout_t *l) {
  free(l->count);
  free(l->displ);
}

/* Host image of a displaced buffer: block r from src_of(r) to dst_of(r), sentinel elsewhere. */
static void *layout_image(const ctype_t *t, const layout_t *l, int fixed_src, int fixed_dst) {
  void *h = host_filled(t, l->total, SENTINEL);
  for (int r = 0; r < d_size(); r++)
    put_block(t, h, (size_t)l->displ[r], fixed_src < 0 ? r : fixed_src,
              fixed_dst < 0 ? r : fixed_dst, (size_t)l->count[r]);
  return h;
}

static void test_allgatherv(const ctype_t *t, size_t base, int in_place) {
  int me = d_rank();
  layout_t l = layout_make(base, 0);
  void *want = layout_image(t, &l, -1, 0); /* block r comes from rank r */
  void *init = host_filled(t, l.total, SENTINEL);
  if (in_place) put_block(t, init, (size_t)l.displ[me], me, 0, (size_t)l.count[me]);
  void *recv = mem_dup(init, l.total * t->size);
  void *send = in_place ? NULL : mem_block(t, me, 0, (size_t)l.count[me]);
  D_MPI(MPI_Allgatherv(in_place ? MPI_IN_PLACE : send, l.count[me], t->dt, recv, l.count, l.displ,
                       t->dt, MPI_COMM_WORLD));
  check_mem(d_label("allgatherv%s base=%zu (gaps untouched)", in_place ? " in place" : "", base), t,
            recv, want, l.total);
  free(want);
  free(init);
  mem_free(send);
  mem_free(recv);
  layout_free(&l);
}

/* Gather: only the root has a receive buffer (NULL elsewhere). */
static void test_gather(const ctype_t *t, size_t n, int root, int in_place) {
  int p = d_size(), me = d_rank();
  size_t total = n * (size_t)p;
  void *recv = NULL, *want = NULL;
  if (me == root) {
    void *init = host_filled(t, total, SENTINEL);
    if (in_place) put_block(t, init, n * (size_t)me, me, 0, n);
    recv = mem_dup(init, total * t->size);
    free(init);
    want = host_alloc(total * t->size);
    for (int r = 0; r < p; r++)
      put_block(t, want, n * (size_t)r, r, 0, n);
  }
  int root_in_place = in_place && me == root;
  void *send = root_in_place ? NULL : mem_block(t, me, 0, n);
  D_MPI(MPI_Gather(root_in_place ? MPI_IN_PLACE : send, (int)n, t->dt, recv, (int)n, t->dt, root,
                   MPI_COMM_WORLD));
  if (me == root)
    check_mem(d_label("gather%s n=%zu root=%d", in_place ? " in place" : "", n, root), t, recv,
              want, total);
  free(want);
  mem_free(send);
  mem_free(recv);
}

/* Gatherv: counts, displacements and the receive buffer exist at the root only. */
static void test_gatherv(const ctype_t *t, size_t base, int root, int in_place) {
  int me = d_rank();
  layout_t l = layout_make(base, root);
  void *recv = NULL, *want = NULL;
  if (me == root) {
    void *init = host_filled(t, l.total, SENTINEL);
    if (in_place) put_block(t, init, (size_t)l.displ[me], me, 0, (size_t)l.count[me]);
    recv = mem_dup(init, l.total * t->size);
    free(init);
    want = layout_image(t, &l, -1, 0);
  }
  int root_in_place = in_place && me == root;
  void *send = root_in_place ? NULL : mem_block(t, me, 0, (size_t)l.count[me]);
  D_MPI(MPI_Gatherv(root_in_place ? MPI_IN_PLACE : send, l.count[me], t->dt, recv,
                    me == root ? l.count : NULL, me == root ? l.displ : NULL, t->dt, root,
                    MPI_COMM_WORLD));
  if (me == root)
    check_mem(d_label("gatherv%s base=%zu root=%d (gaps untouched)", in_place ? " in place" : "",
                      base, root),
              t, recv, want, l.total);
  free(want);
  mem_free(send);
  mem_free(recv);
  layout_free(&l);
}

/* Scatter: block r of the root's buffer goes to rank r; in place the root's own block stays in
 * its send buffer. The send buffer is NULL off the root. */
static void test_scatter(const ctype_t *t, size_t n, int root, int in_place) {
  int p = d_size(), me = d_rank();
  size_t total = n * (size_t)p;
  void *send = NULL, *image = NULL;
  if (me == root) {
    image = host_alloc(total * t->size);
    for (int r = 0; r < p; r++)
      put_block(t, image, n * (size_t)r, root, r, n);
    send = mem_dup(image, total * t->size);
  }
  int root_in_place = in_place && me == root;
  void *recv = root_in_place ? NULL : mem_alloc(n * t->size);
  if (recv) mem_set(recv, 0, n * t->size);
  D_MPI(MPI_Scatter(send, (int)n, t->dt, root_in_place ? MPI_IN_PLACE : recv, (int)n, t->dt, root,
                    MPI_COMM_WORLD));
  if (recv) {
    void *want = host_alloc(n * t->size);
    put_block(t, want, 0, root, me, n);
    check_mem(d_label("scatter%s n=%zu root=%d", in_place ? " in place" : "", n, root), t, recv,
              want, n);
    free(want);
  } else {
    check_mem(d_label("scatter in place n=%zu: root's send buffer unchanged", n), t, send, image,
              total);
  }
  free(image);
  mem_free(send);
  mem_free(recv);
}

static void test_scatterv(const ctype_t *t, size_t base, int root, int in_place) {
  int me = d_rank();
  layout_t l = layout_make(base, root + 1);
  void *send = NULL, *image = NULL;
  if (me == root) {
    image = layout_image(t, &l, root, -1); /* block r goes to rank r */
    send = mem_dup(image, l.total * t->size);
  }
  int root_in_place = in_place && me == root;
  size_t n = (size_t)l.count[me];
  void *recv = root_in_place ? NULL : mem_alloc(n * t->size);
  if (recv) mem_set(recv, 0, n * t->size);
  D_MPI(MPI_Scatterv(send, me == root ? l.count : NULL, me == root ? l.displ : NULL, t->dt,
                     root_in_place ? MPI_IN_PLACE : recv, (int)n, t->dt, root, MPI_COMM_WORLD));
  if (recv) {
    void *want = host_alloc(n * t->size);
    put_block(t, want, 0, root, me, n);
    check_mem(d_label("scatterv%s base=%zu root=%d", in_place ? " in place" : "", base, root), t,
              recv, want, n);
    free(want);
  } else {
    check_mem(d_label("scatterv in place base=%zu: root's send buffer unchanged", base), t, send,
              image, l.total);
  }
  free(image);
  mem_free(send);
  mem_free(recv);
  layout_free(&l);
}

/* Alltoall: block j of rank r's send buffer is mval(r, j, .); in place it starts in recv. */
static void test_alltoall(const ctype_t *t, size_t n, int in_place) {
  int p = d_size(), me = d_rank();
  size_t total = n * (size_t)p;
  void *out = host_alloc(total * t->size), *want = host_alloc(total * t->size);
  for (int j = 0; j < p; j++) {
    put_block(t, out, n * (size_t)j, me, j, n);
    put_block(t, want, n * (size_t)j, j, me, n);
  }
  void *send = in_place ? NULL : mem_dup(out, total * t->size);
  void *recv = in_place ? mem_dup(out, total * t->size) : mem_alloc(total * t->size);
  D_MPI(MPI_Alltoall(in_place ? MPI_IN_PLACE : send, (int)n, t->dt, recv, (int)n, t->dt,
                     MPI_COMM_WORLD));
  check_mem(d_label("alltoall%s n=%zu", in_place ? " in place" : "", n), t, recv, want, total);
  free(out);
  free(want);
  mem_free(send);
  mem_free(recv);
}

/* Elements src sends to dst in Alltoallv: unequal, some zero. In place MPI needs what j sends
 * to me to equal what I send to j, so that variant uses a symmetric count. */
static int a2av_count(size_t base, int src, int dst, int symmetric) {
  int a = symmetric ? (src + dst) : (src * 3 + dst * 5);
  if (d_size() > 1 && a % 4 == 3) return 0;
  return (int)base + a % 7;
}

/* Counts and displacements (with gaps) of one side: peer j at displ[j]; total spans the gaps. */
static layout_t a2av_layout(size_t base, int sending, int symmetric) {
  int p = d_size(), me = d_rank();
  layout_t l = {host_alloc(sizeof(int) * (size_t)p), host_alloc(sizeof(int) * (size_t)p), GAP};
  for (int j = p - 1; j >= 0; j--) { /* blocks in reverse peer order: displs need not ascend */
    l.count[j] = sending ? a2av_count(base, me, j, symmetric) : a2av_count(base, j, me, symmetric);
    l.displ[j] = (int)l.total;
    l.total += (size_t)l.count[j] + GAP;
  }
  return l;
}

static void test_alltoallv(const ctype_t *t, size_t base, int in_place) {
  int p = d_size(), me = d_rank();
  layout_t sl = a2av_layout(base, 1, in_place), rl = a2av_layout(base, 0, in_place);
  void *out = host_filled(t, sl.total, SENTINEL), *want = host_filled(t, rl.total, SENTINEL);
  for (int j = 0; j < p; j++) {
    put_block(t, out, (size_t)sl.displ[j], me, j, (size_t)sl.count[j]);
    put_block(t, want, (size_t)rl.displ[j], j, me, (size_t)rl.count[j]);
  }
  /* The receive buffer starts as the sentinel (gaps must keep it); in place it also holds, at
   * peer j's block, what goes to j. */
  void *init = host_filled(t, rl.total, SENTINEL);
  if (in_place)
    for (int j = 0; j < p; j++)
      put_block(t, init, (size_t)rl.displ[j], me, j, (size_t)rl.count[j]);
  void *recv = mem_dup(init, rl.total * t->size);
  void *send = in_place ? NULL : mem_dup(out, sl.total * t->size);
  free(init);
  D_MPI(MPI_Alltoallv(in_place ? MPI_IN_PLACE : send, sl.count, sl.displ, t->dt, recv, rl.count,
                      rl.displ, t->dt, MPI_COMM_WORLD));
  check_mem(d_label("alltoallv%s base=%zu (gaps untouched)", in_place ? " in place" : "", base), t,
            recv, want, rl.total);
  free(out);
  free(want);
  mem_free(send);
  mem_free(recv);
  layout_free(&sl);
  layout_free(&rl);
}

/* ---- drivers ---------------------------------------------------------------------------- */

static void all_allreduce(void) {
  for (size_t c = 0; c < NCOUNTS; c++)
    for (int ti = 0; ti < ntypes; ti++)
      for (int k = 0; k < NOPS; k++)
        if (op_allowed((enum op_kind)k, &types[ti]))
          for (int ip = 0; ip < 2; ip++)
            test_allreduce(&types[ti], (enum op_kind)k, counts[c], ip);
  test_allreduce(T_INT, SUM, 0, 0); /* empty */
  test_allreduce(T_DBL, MAX, 0, 1);
}

static void all_rooted(void) {
  /* A subset of types and ops: the reduction arithmetic itself is covered by all_allreduce. */
  const ctype_t *rt[] = {T_INT, T_DBL, &types[5] /* short */, &types[7] /* unsigned char */};
  enum op_kind rk[] = {SUM, MAX, PROD};
  for (int root = 0; root < d_size(); root++)
    for (size_t c = 0; c < NCOUNTS; c++)
      for (int ip = 0; ip < 2; ip++) {
        for (size_t ti = 0; ti < sizeof rt / sizeof rt[0]; ti++)
          for (size_t k = 0; k < sizeof rk / sizeof rk[0]; k++)
            test_reduce(rt[ti], rk[k], counts[c], root, ip);
        for (int dbl = 0; dbl < 2; dbl++) {
          const ctype_t *t = dbl ? T_DBL : T_INT;
          if (!ip) test_bcast(t, counts[c], root);
          test_gather(t, counts[c], root, ip);
          test_gatherv(t, counts[c], root, ip);
          test_scatter(t, counts[c], root, ip);
          test_scatterv(t, counts[c], root, ip);
        }
      }
}

static void all_unrooted(void) {
  for (size_t c = 0; c < NCOUNTS; c++)
    for (int ip = 0; ip < 2; ip++)
      for (int dbl = 0; dbl < 2; dbl++) {
        const ctype_t *t = dbl ? T_DBL : T_INT;
        test_allgather(t, counts[c], ip);
        test_allgatherv(t, counts[c], ip);
        test_alltoall(t, counts[c], ip);
        test_alltoallv(t, counts[c], ip);
        test_reduce_scatter(t, dbl ? MAX : SUM, counts[c], ip);
        test_reduce_scatter_block(t, dbl ? SUM : MIN, counts[c], ip);
      }
  test_reduce_scatter(&types[5] /* short */, SUM, 9, 0); /* a type NCCL does not have */
  test_reduce_scatter_block(&types[6] /* signed char */, PROD, 5, 1);
}

int main(int argc, char **argv) {
  d_init(&argc, &argv, "dropin_coll", D_SCOPE_COLL);
  init_types();
  all_allreduce();
  all_rooted();
  all_unrooted();
  for (int i = 0; i < 3; i++)
    D_MPI(MPI_Barrier(MPI_COMM_WORLD));
  return d_finish();
}
