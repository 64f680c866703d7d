/* SPDX-License-Identifier: BSD-3-Clause */
/* gather, scatter and the v-variants (allgatherv, gatherv, scatterv, alltoallv,
 * reduce_scatterv): every root, uneven counts including zeros, blocks laid out in reverse rank
 * order with gaps, in place and out of place, several dtypes, one large case (~100k elements).
 * Every byte of every receive buffer is checked on every rank: blocks hold the sender's data,
 * gaps and the buffers of ranks that receive nothing keep their sentinel. Buffers live where
 * the backend moves data (device memory on cuda). */
#include "test_values.h"

static int rank, size;
static gmpi_comm_t comm;

#define MAXR     64
#define SENTINEL 0xEE
static const gmpi_dtype_t movers[] = {GMPI_INT32, GMPI_FLOAT64, GMPI_INT8, GMPI_FLOAT16};
#define N_MOVERS ((int)(sizeof(movers) / sizeof(movers[0])))

/* Byte k of element i of the data rank r contributes to call `salt`. */
static unsigned char pat(int r, size_t i, size_t k, int salt) {
  return (unsigned char)(r * 37 + (int)(i * 11 + k * 5) + salt * 3 + 1);
}
static void put_block(unsigned char *buf, size_t at, size_t n, size_t es, int r, int salt) {
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < es; k++)
      buf[(at + i) * es + k] = pat(r, i, k, salt);
}
static unsigned char *sentinels(size_t bytes) {
  unsigned char *h = t_host(bytes);
  memset(h, SENTINEL, bytes ? bytes : 1);
  return h;
}
static void *to_dev(const void *host, size_t bytes) {
  void *d = t_alloc(bytes);
  t_put(d, host, bytes);
  return d;
}
/* The device buffer holds exactly want (bytes), else one failure naming the first byte. */
static void expect_bytes(const char *what, const void *dev, const unsigned char *want,
                         size_t bytes) {
  unsigned char *got = t_host(bytes);
  t_get(got, dev, bytes);
  for (size_t b = 0; b < bytes; b++)
    if (got[b] != want[b]) {
      T_FAIL_("%s: byte %zu of %zu is 0x%02x, want 0x%02x", what, b, bytes, got[b], want[b]);
      break;
    }
  free(got);
}

/* Per-rank blocks: counts (some 0) and displacements laying rank size-1 first, 2 elements of
 * gap after each block, so order and gaps are both checked. */
typedef struct {
  size_t counts[MAXR], displs[MAXR], span;
} layout_t;
static layout_t layout(size_t scale) {
  layout_t l;
  size_t at = 1;
  for (int r = size - 1; r >= 0; r--) {
    l.counts[r] = (size_t)((r * 3 + 1) % 4) * scale;
    l.displs[r] = at;
    at += l.counts[r] + 2;
  }
  l.span = at;
  return l;
}

static void name_case(char *buf, size_t len, const char *call, gmpi_dtype_t d, int root,
                      int in_place, size_t scale) {
  snprintf(buf, len, "%s %s root %d %s x%zu", call, gmpi_dtype_name(d), root,
           in_place ? "in place" : "out of place", scale);
}

/* ---- gather and scatter ------------------------------------------------------------------ */

static void gather_case(gmpi_dtype_t d, int root, int in_place) {
  size_t es = gmpi_dtype_size(d), n = 5, all = n * (size_t)size * es;
  int at_root = rank == root;
  unsigned char *mine = t_host(n * es), *want = sentinels(all), *init = sentinels(all);
  put_block(mine, 0, n, es, rank, 1);
  if (at_root)
    for (int r = 0; r < size; r++)
      put_block(want, (size_t)r * n, n, es, r, 1);
  if (in_place && at_root) put_block(init, (size_t)rank * n, n, es, rank, 1);
  void *recv = to_dev(init, all), *send = in_place && at_root ? recv : to_dev(mine, n * es);
  T_OK(gmpi_gather(send, recv, n, d, root, comm));
  char what[96];
  name_case(what, sizeof(what), "gather", d, root, in_place, 1);
  expect_bytes(what, recv, want, all); /* untouched off the root */
  if (send != recv) t_free(send);
  t_free(recv);
  free(mine);
  free(want);
  free(init);
}

static void scatter_case(gmpi_dtype_t d, int root, int in_place) {
  size_t es = gmpi_dtype_size(d), n = 4, all = n * (size_t)size * es;
  int at_root = rank == root;
  unsigned char *blocks = sentinels(all), *want = t_host(n * es);
  for (int r = 0; r < size; r++)
    put_block(blocks, (size_t)r * n, n, es, r, 2);
  put_block(want, 0, n, es, rank, 2);
  void *send = to_dev(blocks, all);
  void *recv = in_place && at_root ? send : to_dev(want, 0 * es + 1);
  if (recv != send) {
    t_free(recv);
    unsigned char *s = sentinels(n * es);
    recv = to_dev(s, n * es);
    free(s);
  }
  T_OK(gmpi_scatter(send, recv, n, d, root, comm));
  char what[96];
  name_case(what, sizeof(what), "scatter", d, root, in_place, 1);
  if (recv == send)
    expect_bytes(what, send, blocks, all); /* the root's buffer keeps every block */
  else
    expect_bytes(what, recv, want, n * es);
  if (recv != send) t_free(recv);
  t_free(send);
  free(blocks);
  free(want);
}

/* ---- allgatherv and gatherv ------------------------------------------------------------- */

static void gatherv_case(gmpi_dtype_t d, int root, int in_place, size_t scale) {
  int all_gather = root < 0, gets = all_gather || rank == root;
  layout_t l = layout(scale);
  size_t es = gmpi_dtype_size(d), n = l.counts[rank], bytes = l.span * es;
  unsigned char *mine = t_host(n * es), *want = sentinels(bytes), *init = sentinels(bytes);
  put_block(mine, 0, n, es, rank, 3);
  if (gets)
    for (int r = 0; r < size; r++)
      put_block(want, l.displs[r], l.counts[r], es, r, 3);
  int place = in_place && gets;
  if (place) put_block(init, l.displs[rank], n, es, rank, 3);
  void *recv = to_dev(init, bytes), *send = place ? recv : to_dev(mine, n * es);
  size_t junk[MAXR];
  memset(junk, 0x5a, sizeof(junk)); /* root-only arrays are not read elsewhere */
  int off_root = !all_gather && rank != root;
  if (all_gather)
    T_OK(gmpi_allgatherv(send, n, recv, l.counts, l.displs, d, comm));
  else
    T_OK(gmpi_gatherv(send, n, recv, off_root ? junk : l.counts, off_root ? junk : l.displs, d,
                      root, comm));
  char what[96];
  name_case(what, sizeof(what), all_gather ? "allgatherv" : "gatherv", d, root, in_place, scale);
  expect_bytes(what, recv, want, bytes);
  if (send != recv) t_free(send);
  t_free(recv);
  free(mine);
  free(want);
  free(init);
}

/* ---- scatterv ----------------------------------------------------------------------------- */

static void scatterv_case(gmpi_dtype_t d, int root, int in_place, size_t scale) {
  layout_t l = layout(scale);
  size_t es = gmpi_dtype_size(d), n = l.counts[rank], bytes = l.span * es;
  int place = in_place && rank == root;
  unsigned char *blocks = sentinels(bytes), *want = t_host(n * es), *init = sentinels(n * es);
  for (int r = 0; r < size; r++)
    put_block(blocks, l.displs[r], l.counts[r], es, r, 4);
  put_block(want, 0, n, es, rank, 4);
  void *send = to_dev(blocks, bytes), *recv = place ? send : to_dev(init, n * es);
  size_t junk[MAXR];
  memset(junk, 0x5a, sizeof(junk)); /* root-only arrays are not read elsewhere */
  int off_root = rank != root;
  T_OK(gmpi_scatterv(send, off_root ? junk : l.counts, off_root ? junk : l.displs, recv, n, d, root,
                     comm));
  char what[96];
  name_case(what, sizeof(what), "scatterv", d, root, in_place, scale);
  if (place)
    expect_bytes(what, send, blocks, bytes);
  else
    expect_bytes(what, recv, want, n * es);
  if (!place) t_free(recv);
  t_free(send);
  free(blocks);
  free(want);
  free(init);
}

/* ---- alltoallv ---------------------------------------------------------------------------- */

/* Rank a sends (a + b) % 3 * scale elements to rank b: symmetric, so b expects as much. */
static size_t pair_count(int a, int b, size_t scale) { return (size_t)((a + b) % 3) * scale; }

static void alltoallv_case(gmpi_dtype_t d, int in_place, size_t scale) {
  size_t es = gmpi_dtype_size(d), sc[MAXR], sd[MAXR], rc[MAXR], rd[MAXR], so = 0, ro = 1;
  for (int p = size - 1; p >= 0; p--) { /* receive blocks in reverse order, with gaps */
    rc[p] = pair_count(p, rank, scale);
    rd[p] = ro;
    ro += rc[p] + 1;
  }
  for (int p = 0; p < size; p++) {
    sc[p] = pair_count(rank, p, scale);
    sd[p] = so;
    so += sc[p];
  }
  unsigned char *out = t_host(so * es + 1), *want = sentinels(ro * es), *init = sentinels(ro * es);
  for (int p = 0; p < size; p++) { /* the block for p is salted with p */
    put_block(out, sd[p], sc[p], es, rank, 10 + p);
    put_block(want, rd[p], rc[p], es, p, 10 + rank);
    if (in_place) put_block(init, rd[p], rc[p], es, rank, 10 + p); /* sent from recvbuf */
  }
  void *recv = to_dev(init, ro * es), *send = in_place ? recv : to_dev(out, so * es + 1);
  if (in_place)
    T_OK(gmpi_alltoallv(recv, NULL, NULL, recv, rc, rd, d, comm));
  else
    T_OK(gmpi_alltoallv(send, sc, sd, recv, rc, rd, d, comm));
  char what[96];
  name_case(what, sizeof(what), "alltoallv", d, -1, in_place, scale);
  expect_bytes(what, recv, want, ro * es);
  if (send != recv) t_free(send);
  t_free(recv);
  free(out);
  free(want);
  free(init);
}

/* ---- reduce_scatterv ---------------------------------------------------------------------- */

static void reduce_scatterv_case(gmpi_dtype_t d, gmpi_op_t op, int in_place, size_t scale) {
  layout_t l = layout(scale);
  size_t es = gmpi_dtype_size(d), total = 0, off = 0;
  for (int r = 0; r < size; r++) {
    if (r < rank) off += l.counts[r];
    total += l.counts[r];
  }
  size_t n = l.counts[rank];
  char *in = t_host(total * es), *want = t_host(n * es), *got = t_host(n * es);
  T_TILE(d, in, total, t_input(d, op, rank, i));
  for (size_t j = 0; j < n; j++)
    t_store(d, want, j, t_reduced(d, op, size, off + j));
  void *send = to_dev(in, total * es), *recv = in_place ? send : t_alloc(n * es);
  T_OK(gmpi_reduce_scatterv(send, recv, l.counts, d, op, comm));
  t_get(got, recv, n * es);
  char what[96];
  snprintf(what, sizeof(what), "reduce_scatterv %s %s %s x%zu", gmpi_dtype_name(d),
           gmpi_op_name(op), in_place ? "in place" : "out of place", scale);
  t_check_buffer(what, d, got, want, n);
  if (!in_place) t_free(recv);
  t_free(send);
  free(in);
  free(want);
  free(got);
}

int main(int argc, char **argv) {
  comm = t_init(&argc, &argv);
  T_OK(gmpi_comm_rank(comm, &rank));
  T_OK(gmpi_comm_size(comm, &size));
  if (size > MAXR) return t_skip("gatherv", "more than 64 ranks");
  for (int m = 0; m < N_MOVERS; m++) {
    gmpi_dtype_t d = movers[m];
    for (int in_place = 0; in_place < 2; in_place++) {
      for (int root = 0; root < size; root++) {
        gather_case(d, root, in_place);
        scatter_case(d, root, in_place);
        gatherv_case(d, root, in_place, 1);
        scatterv_case(d, root, in_place, 1);
      }
      gatherv_case(d, -1, in_place, 1); /* allgatherv */
      alltoallv_case(d, in_place, 1);
    }
  }
  for (int in_place = 0; in_place < 2; in_place++) { /* ~100k elements in all */
    gatherv_case(GMPI_INT32, -1, in_place, 12500);
    gatherv_case(GMPI_INT32, size - 1, in_place, 12500);
    scatterv_case(GMPI_INT32, 0, in_place, 12500);
    alltoallv_case(GMPI_INT32, in_place, 12500);
    reduce_scatterv_case(GMPI_INT32, GMPI_SUM, in_place, 12500);
  }
  for (int in_place = 0; in_place < 2; in_place++) {
    reduce_scatterv_case(GMPI_INT32, GMPI_SUM, in_place, 3);
    reduce_scatterv_case(GMPI_FLOAT32, GMPI_MAX, in_place, 5);
    reduce_scatterv_case(GMPI_FLOAT64, GMPI_AVG, in_place, 7);
    reduce_scatterv_case(GMPI_INT16, GMPI_BXOR, in_place, 2); /* a fallback kernel on cuda */
  }
  return t_finish("gather, scatter and the v-variants");
}
