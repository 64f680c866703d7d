/* SPDX-License-Identifier: BSD-3-Clause */
/* Nonblocking collectives on mem_alloc buffers, many outstanding at once: each round starts
 * Iallreduce, Ibcast, Ireduce, Iallgather, Ialltoall, Ibarrier, Igather and Iscatter (two of
 * some, with different roots), optionally with Isend/Irecv of a large message in the middle of
 * the array, and completes them all with one MPI_Waitall (or, in one round, MPI_Wait in reverse
 * order, or an MPI_Testall loop). Rounds run out of place and in place (MPI_IN_PLACE), small and
 * ~100k elements, with roots moving from round to round. A last round does the v-variants and
 * the reduce-scatters: Igatherv, Iscatterv, Iallgatherv, Ialltoallv, Ireduce_scatter,
 * Ireduce_scatter_block. Every element is checked on every rank that receives it.
 * Runs at any size, 1 included. In a mixed-memory run collective buffers are device memory on
 * every rank; the ring message's buffers use the rank's parity kind. */
#include "dropin_util.h"

#define LARGE   100003
#define P2P_BIG ((size_t)(1 << 20) / sizeof(int) + 7)

/* One started operation: what it receives into and what that must hold when it completes. */
typedef struct {
  const char *what;
  int is_dbl;
  void *send, *recv; /* mem_alloc buffers (or NULL) */
  void *want;        /* host: expected contents of recv; NULL: nothing to check on this rank */
  size_t n;          /* elements of want */
  int *arrays[4];    /* counts/displacements that must live until completion */
} slot_t;

#define MAX_SLOTS 24
typedef struct {
  slot_t slot[MAX_SLOTS];
  MPI_Request req[MAX_SLOTS];
  int n;
  int round; /* for messages */
} round_t;

/* Element i of what src contributes for dst (for ring messages, dst is the tag); exact in int
 * and double. */
static int ival(int src, int dst, size_t i) { return src * 1000000 + dst * 1000 + (int)(i % 997); }
static double dval(int src, int dst, size_t i) { return ival(src, dst, i) + 0.25; }

static size_t esize(int is_dbl) { return is_dbl ? sizeof(double) : sizeof(int); }

/* Host array: elements [at, at+n) of h hold the block src sends to dst. */
static void put_block(int is_dbl, void *h, size_t at, int src, int dst, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (is_dbl)
      ((double *)h)[at + i] = dval(src, dst, i);
    else
      ((int *)h)[at + i] = ival(src, dst, i);
  }
}

static void *mem_block(int is_dbl, int src, int dst, size_t n) {
  void *h = host_alloc(n * esize(is_dbl));
  put_block(is_dbl, h, 0, src, dst, n);
  void *m = mem_dup(h, n * esize(is_dbl));
  free(h);
  return m;
}

/* A fresh slot in the round; its request is r->req[index]. */
static slot_t *slot_new(round_t *r, const char *what, int is_dbl, MPI_Request **req) {
  if (r->n == MAX_SLOTS) {
    D_FAIL("too many operations in one round");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  slot_t *s = &r->slot[r->n];
  memset(s, 0, sizeof *s);
  s->what = what;
  s->is_dbl = is_dbl;
  *req = &r->req[r->n++];
  return s;
}

/* ---- the operations --------------------------------------------------------------------- */

/* Sum over ranks of (rank+1) * (i % 101 + 1). */
static void start_iallreduce(round_t *r, size_t n, int in_place) {
  MPI_Request *req;
  slot_t *s = slot_new(r, in_place ? "iallreduce in place" : "iallreduce", 0, &req);
  int p = d_size(), *in = host_alloc(n * sizeof(int)), *want = host_alloc(n * sizeof(int));
  for (size_t i = 0; i < n; i++) {
    in[i] = (d_rank() + 1) * (int)(i % 101 + 1);
    want[i] = p * (p + 1) / 2 * (int)(i % 101 + 1);
  }
  s->recv = mem_dup(in, n * sizeof(int));
  if (!in_place) {
    s->send = s->recv;
    s->recv = mem_alloc(n * sizeof(int));
  }
  s->want = want;
  s->n = n;
  free(in);
  D_MPI(MPI_Iallreduce(in_place ? MPI_IN_PLACE : s->send, s->recv, (int)n, MPI_INT, MPI_SUM,
                       MPI_COMM_WORLD, req));
}

static void start_ibcast(round_t *r, size_t n, int root) {
  MPI_Request *req;
  slot_t *s = slot_new(r, "ibcast", 1, &req);
  s->recv = d_rank() == root ? mem_block(1, root, 0, n) : mem_alloc(n * sizeof(double));
  if (d_rank() != root) mem_set(s->recv, 0, n * sizeof(double));
  s->want = host_alloc(n * sizeof(double));
  put_block(1, s->want, 0, root, 0, n);
  s->n = n;
  D_MPI(MPI_Ibcast(s->recv, (int)n, MPI_DOUBLE, root, MPI_COMM_WORLD, req));
}

/* MAX over ranks of ival(rank, 0, i): the last rank's value. In place: MPI_IN_PLACE at the root,
 * a NULL receive buffer elsewhere. */
static void start_ireduce(round_t *r, size_t n, int root, int in_place) {
  MPI_Request *req;
  slot_t *s = slot_new(r, in_place ? "ireduce in place" : "ireduce", 0, &req);
  int me = d_rank();
  s->send = mem_block(0, me, 0, n);
  if (me == root) {
    s->recv = in_place ? s->send : mem_alloc(n * sizeof(int));
    if (in_place) s->send = NULL;
    s->want = host_alloc(n * sizeof(int));
    put_block(0, s->want, 0, d_size() - 1, 0, n);
    s->n = n;
  } else if (!in_place) {
    s->recv = mem_alloc(n * sizeof(int)); /* insignificant, but passed */
  }
  const void *sendarg = (in_place && me == root) ? MPI_IN_PLACE : s->send;
  D_MPI(MPI_Ireduce(sendarg, s->recv, (int)n, MPI_INT, MPI_MAX, root, MPI_COMM_WORLD, req));
}

static void start_iallgather(round_t *r, size_t n, int in_place) {
  MPI_Request *req;
  slot_t *s = slot_new(r, in_place ? "iallgather in place" : "iallgather", 0, &req);
  int p = d_size(), me = d_rank();
  size_t total = n * (size_t)p;
  s->want = host_alloc(total * sizeof(int));
  for (int q = 0; q < p; q++)
    put_block(0, s->want, n * (size_t)q, q, 0, n);
  int *init = host_alloc(total * sizeof(int));
  if (in_place) put_block(0, init, n * (size_t)me, me, 0, n);
  s->recv = mem_dup(init, total * sizeof(int));
  free(init);
  s->send = in_place ? NULL : mem_block(0, me, 0, n);
  s->n = total;
  D_MPI(MPI_Iallgather(in_place ? MPI_IN_PLACE : s->send, (int)n, MPI_INT, s->recv, (int)n, MPI_INT,
                       MPI_COMM_WORLD, req));
}

static void start_ialltoall(round_t *r, size_t n, int in_place) {
  MPI_Request *req;
  slot_t *s = slot_new(r, in_place ? "ialltoall in place" : "ialltoall", 0, &req);
  int p = d_size(), me = d_rank();
  size_t total = n * (size_t)p;
  int *out = host_alloc(total * sizeof(int));
  s->want = host_alloc(total * sizeof(int));
  for (int j = 0; j < p; j++) {
    put_block(0, out, n * (size_t)j, me, j, n);
    put_block(0, s->want, n * (size_t)j, j, me, n);
  }
  s->recv = in_place ? mem_dup(out, total * sizeof(int)) : mem_alloc(total * sizeof(int));
  s->send = in_place ? NULL : mem_dup(out, total * sizeof(int));
  s->n = total;
  free(out);
  D_MPI(MPI_Ialltoall(in_place ? MPI_IN_PLACE : s->send, (int)n, MPI_INT, s->recv, (int)n, MPI_INT,
                      MPI_COMM_WORLD, req));
}

static void start_ibarrier(round_t *r) {
  MPI_Request *req;
  slot_new(r, "ibarrier", 0, &req);
  D_MPI(MPI_Ibarrier(MPI_COMM_WORLD, req));
}

/* Igather of doubles; the receive buffer exists at the root only. */
static void start_igather(round_t *r, size_t n, int root, int in_place) {
  MPI_Request *req;
  slot_t *s = slot_new(r, in_place ? "igather in place" : "igather", 1, &req);
  int p = d_size(), me = d_rank();
  size_t total = n * (size_t)p;
  int root_in_place = in_place && me == root;
  if (me == root) {
    double *init = host_alloc(total * sizeof(double));
    if (in_place) put_block(1, init, n * (size_t)me, me, 0, n);
    s->recv = mem_dup(init, total * sizeof(double));
    free(init);
    s->want = host_alloc(total * sizeof(double));
    for (int q = 0; q < p; q++)
      put_block(1, s->want, n * (size_t)q, q, 0, n);
    s->n = total;
  }
  s->send = root_in_place ? NULL : mem_block(1, me, 0, n);
  D_MPI(MPI_Igather(root_in_place ? MPI_IN_PLACE : s->send, (int)n, MPI_DOUBLE, s->recv, (int)n,
                    MPI_DOUBLE, root, MPI_COMM_WORLD, req));
}

/* Iscatter of ints; in place the root keeps its block in its send buffer (nothing to check). */
static void start_iscatter(round_t *r, size_t n, int root, int in_place) {
  MPI_Request *req;
  slot_t *s = slot_new(r, in_place ? "iscatter in place" : "iscatter", 0, &req);
  int p = d_size(), me = d_rank();
  int root_in_place = in_place && me == root;
  if (me == root) {
    int *image = host_alloc(n * (size_t)p * sizeof(int));
    for (int q = 0; q < p; q++)
      put_block(0, image, n * (size_t)q, root, q, n);
    s->send = mem_dup(image, n * (size_t)p * sizeof(int));
    free(image);
  }
  if (!root_in_place) {
    s->recv = mem_alloc(n * sizeof(int));
    mem_set(s->recv, 0, n * sizeof(int));
    s->want = host_alloc(n * sizeof(int));
    put_block(0, s->want, 0, root, me, n);
    s->n = n;
  }
  D_MPI(MPI_Iscatter(s->send, (int)n, MPI_INT, root_in_place ? MPI_IN_PLACE : s->recv, (int)n,
                     MPI_INT, root, MPI_COMM_WORLD, req));
}

/* A large point-to-point message around the ring, in the same array as the collectives. */
static void start_ring(round_t *r, int tag) {
  MPI_Request *rreq, *sreq;
  slot_t *rs = slot_new(r, "irecv among collectives", 0, &rreq);
  rs->recv = mem_alloc_p2p(P2P_BIG * sizeof(int));
  rs->want = host_alloc(P2P_BIG * sizeof(int));
  put_block(0, rs->want, 0, d_prev(), tag, P2P_BIG);
  rs->n = P2P_BIG;
  D_MPI(MPI_Irecv(rs->recv, (int)P2P_BIG, MPI_INT, d_prev(), tag, MPI_COMM_WORLD, rreq));
  slot_t *ss = slot_new(r, "isend among collectives", 0, &sreq);
  int *h = host_alloc(P2P_BIG * sizeof(int));
  put_block(0, h, 0, d_rank(), tag, P2P_BIG);
  ss->send = mem_dup_p2p(h, P2P_BIG * sizeof(int));
  free(h);
  D_MPI(MPI_Isend(ss->send, (int)P2P_BIG, MPI_INT, d_next(), tag, MPI_COMM_WORLD, sreq));
}

/* ---- v-variants ------------------------------------------------------------------------- */

/* count[q] elements for rank q (rank 1 none when there are two or more ranks), placed at
 * displ[q] after a gap of 2 elements; returns the span, gaps included. */
static size_t make_layout(size_t base, int **count, int **displ) {
  int p = d_size();
  *count = host_alloc(sizeof(int) * (size_t)p);
  *displ = host_alloc(sizeof(int) * (size_t)p);
  size_t at = 0;
  for (int q = 0; q < p; q++) {
    at += 2;
    (*count)[q] = (p > 1 && q == 1) ? 0 : (int)(base + (size_t)q);
    (*displ)[q] = (int)at;
    at += (size_t)(*count)[q];
  }
  return at + 2;
}

/* Host image of a displaced int buffer: -1 in the gaps, block q at displ[q] from src to dst
 * (a negative src or dst stands for q). */
static int *layout_image(const int *count, const int *displ, size_t span, int src, int dst) {
  int *h = host_alloc(span * sizeof(int));
  for (size_t i = 0; i < span; i++)
    h[i] = -1;
  for (int q = 0; q < d_size(); q++)
    put_block(0, h, (size_t)displ[q], src < 0 ? q : src, dst < 0 ? q : dst, (size_t)count[q]);
  return h;
}

/* A mem buffer of span ints, all -1 (gaps must keep that). */
static void *mem_blank(size_t span) {
  int *h = host_alloc(span * sizeof(int));
  for (size_t i = 0; i < span; i++)
    h[i] = -1;
  void *m = mem_dup(h, span * sizeof(int));
  free(h);
  return m;
}

static void start_igatherv(round_t *r, size_t base, int root) {
  MPI_Request *req;
  slot_t *s = slot_new(r, "igatherv (gaps untouched)", 0, &req);
  int *count, *displ, me = d_rank();
  size_t span = make_layout(base, &count, &displ);
  s->arrays[0] = count;
  s->arrays[1] = displ;
  s->send = mem_block(0, me, 0, (size_t)count[me]);
  if (me == root) {
    s->recv = mem_blank(span);
    s->want = layout_image(count, displ, span, -1, 0);
    s->n = span;
  }
  D_MPI(MPI_Igatherv(s->send, count[me], MPI_INT, s->recv, count, displ, MPI_INT, root,
                     MPI_COMM_WORLD, req));
}

static void start_iscatterv(round_t *r, size_t base, int root) {
  MPI_Request *req;
  slot_t *s = slot_new(r, "iscatterv", 0, &req);
  int *count, *displ, me = d_rank();
  size_t span = make_layout(base, &count, &displ);
  s->arrays[0] = count;
  s->arrays[1] = displ;
  if (me == root) {
    int *image = layout_image(count, displ, span, root, -1);
    s->send = mem_dup(image, span * sizeof(int));
    free(image);
  }
  size_t n = (size_t)count[me];
  s->recv = mem_alloc(n * sizeof(int));
  mem_set(s->recv, 0, n * sizeof(int));
  s->want = host_alloc(n * sizeof(int));
  put_block(0, s->want, 0, root, me, n);
  s->n = n;
  D_MPI(MPI_Iscatterv(s->send, count, displ, MPI_INT, s->recv, (int)n, MPI_INT, root,
                      MPI_COMM_WORLD, req));
}

static void start_iallgatherv(round_t *r, size_t base) {
  MPI_Request *req;
  slot_t *s = slot_new(r, "iallgatherv (gaps untouched)", 0, &req);
  int *count, *displ, me = d_rank();
  size_t span = make_layout(base, &count, &displ);
  s->arrays[0] = count;
  s->arrays[1] = displ;
  s->send = mem_block(0, me, 0, (size_t)count[me]);
  s->recv = mem_blank(span);
  s->want = layout_image(count, displ, span, -1, 0);
  s->n = span;
  D_MPI(MPI_Iallgatherv(s->send, count[me], MPI_INT, s->recv, count, displ, MPI_INT, MPI_COMM_WORLD,
                        req));
}

/* Elements src sends dst in Ialltoallv: unequal, some zero. */
static int a2av_count(size_t base, int src, int dst) {
  if (d_size() > 1 && (src + 2 * dst) % 3 == 2) return 0;
  return (int)base + (src * 2 + dst) % 5;
}

/* One side of an Ialltoallv: peer j's block at displ[j], blocks in reverse peer order with a
 * one-element gap before each. */
static size_t a2av_side(size_t base, int sending, int **count, int **displ) {
  int p = d_size(), me = d_rank();
  *count = host_alloc(sizeof(int) * (size_t)p);
  *displ = host_alloc(sizeof(int) * (size_t)p);
  size_t at = 0;
  for (int j = p - 1; j >= 0; j--) {
    at += 1;
    (*count)[j] = sending ? a2av_count(base, me, j) : a2av_count(base, j, me);
    (*displ)[j] = (int)at;
    at += (size_t)(*count)[j];
  }
  return at + 1;
}

static void start_ialltoallv(round_t *r, size_t base) {
  MPI_Request *req;
  slot_t *s = slot_new(r, "ialltoallv (gaps untouched)", 0, &req);
  int *sc, *sd, *rc, *rd, me = d_rank();
  size_t sspan = a2av_side(base, 1, &sc, &sd), rspan = a2av_side(base, 0, &rc, &rd);
  s->arrays[0] = sc;
  s->arrays[1] = sd;
  s->arrays[2] = rc;
  s->arrays[3] = rd;
  int *out = layout_image(sc, sd, sspan, me, -1);
  s->send = mem_dup(out, sspan * sizeof(int));
  free(out);
  s->recv = mem_blank(rspan);
  s->want = layout_image(rc, rd, rspan, -1, me);
  s->n = rspan;
  D_MPI(MPI_Ialltoallv(s->send, sc, sd, MPI_INT, s->recv, rc, rd, MPI_INT, MPI_COMM_WORLD, req));
}

/* Input element i of rank q: (q+1) * (i % 101 + 1); the sum over ranks is known. */
static void *sum_input(size_t n) {
  int *h = host_alloc(n * sizeof(int));
  for (size_t i = 0; i < n; i++)
    h[i] = (d_rank() + 1) * (int)(i % 101 + 1);
  void *m = mem_dup(h, n * sizeof(int));
  free(h);
  return m;
}

static int *sum_result(size_t first, size_t n) {
  int p = d_size(), *h = host_alloc(n * sizeof(int));
  for (size_t i = 0; i < n; i++)
    h[i] = p * (p + 1) / 2 * (int)((first + i) % 101 + 1);
  return h;
}

static void start_ireduce_scatter(round_t *r, size_t base) {
  MPI_Request *req;
  slot_t *s = slot_new(r, "ireduce_scatter", 0, &req);
  int *count, *displ, me = d_rank();
  make_layout(base, &count, &displ); /* only the counts are used */
  s->arrays[0] = count;
  size_t total = 0, first = 0;
  for (int q = 0; q < d_size(); q++) {
    if (q < me) first += (size_t)count[q];
    total += (size_t)count[q];
  }
  free(displ);
  s->send = sum_input(total);
  s->recv = mem_alloc((size_t)count[me] * sizeof(int));
  s->want = sum_result(first, (size_t)count[me]);
  s->n = (size_t)count[me];
  D_MPI(MPI_Ireduce_scatter(s->send, s->recv, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, req));
}

static void start_ireduce_scatter_block(round_t *r, size_t n) {
  MPI_Request *req;
  slot_t *s = slot_new(r, "ireduce_scatter_block", 0, &req);
  s->send = sum_input(n * (size_t)d_size());
  s->recv = mem_alloc(n * sizeof(int));
  s->want = sum_result(n * (size_t)d_rank(), n);
  s->n = n;
  D_MPI(MPI_Ireduce_scatter_block(s->send, s->recv, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, req));
}

/* ---- completing and checking a round ---------------------------------------------------- */

enum completion { WAITALL, WAIT_REVERSED, TESTALL };

static void complete(round_t *r, enum completion how) {
  if (how == WAITALL) {
    D_MPI(MPI_Waitall(r->n, r->req, MPI_STATUSES_IGNORE));
  } else if (how == WAIT_REVERSED) { /* MPI lets nonblocking collectives complete in any order */
    for (int k = r->n - 1; k >= 0; k--)
      D_MPI(MPI_Wait(&r->req[k], MPI_STATUS_IGNORE));
  } else {
    int flag = 0;
    double start = MPI_Wtime();
    while (!flag && !d_poll_expired(start))
      D_MPI(MPI_Testall(r->n, r->req, &flag, MPI_STATUSES_IGNORE));
    if (!flag) {
      D_FAIL("MPI_Testall never completed the round");
      D_MPI(MPI_Waitall(r->n, r->req, MPI_STATUSES_IGNORE));
    }
  }
  for (int k = 0; k < r->n; k++)
    D_TRUE(r->req[k] == MPI_REQUEST_NULL);
}

static void check_and_free(round_t *r) {
  for (int k = 0; k < r->n; k++) {
    slot_t *s = &r->slot[k];
    if (s->want) {
      void *got = mem_fetch(s->recv, s->n * esize(s->is_dbl));
      const char *label = d_label("round %d, operation %d: %s", r->round, k, s->what);
      if (s->is_dbl)
        d_check_dbl(label, got, s->want, s->n);
      else
        d_check_int(label, got, s->want, s->n);
      free(got);
    }
    if (s->recv != s->send) mem_free(s->recv);
    mem_free(s->send);
    free(s->want);
    for (int a = 0; a < 4; a++)
      free(s->arrays[a]);
  }
  r->n = 0;
}

/* The eight basic nonblocking collectives, two Iallreduce and two Ibcast among them, roots
 * shifted by round, optionally with a ring message in the middle of the array. */
static void basic_round(size_t n, int round, int in_place, int with_p2p, enum completion how) {
  int p = d_size();
  round_t r = {.n = 0, .round = round};
  start_iallreduce(&r, n, in_place);
  start_ibcast(&r, n, round % p);
  start_ireduce(&r, n, (round + 1) % p, in_place);
  if (with_p2p) start_ring(&r, round);
  start_iallgather(&r, n, in_place);
  start_ialltoall(&r, n, in_place);
  start_ibarrier(&r);
  start_igather(&r, n, (round + 2) % p, in_place);
  start_iscatter(&r, n, (round + 3) % p, in_place);
  start_iallreduce(&r, n + 1, !in_place);
  start_ibcast(&r, n, (round + 1) % p);
  complete(&r, how);
  check_and_free(&r);
}

static void v_round(size_t base, int round) {
  int p = d_size();
  round_t r = {.n = 0, .round = round};
  start_igatherv(&r, base, round % p);
  start_iscatterv(&r, base, (round + 1) % p);
  start_ring(&r, 100 + round);
  start_iallgatherv(&r, base);
  start_ialltoallv(&r, base);
  start_ireduce_scatter(&r, base);
  start_ireduce_scatter_block(&r, base);
  start_ibarrier(&r);
  complete(&r, WAITALL);
  check_and_free(&r);
}

int main(int argc, char **argv) {
  d_init(&argc, &argv, "dropin_nbc", D_SCOPE_COLL);
  const size_t sizes[] = {1, 7, LARGE};
  int round = 0;
  for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++)
    for (int in_place = 0; in_place < 2; in_place++)
      for (int with_p2p = 0; with_p2p < 2; with_p2p++)
        basic_round(sizes[c], round++, in_place, with_p2p, WAITALL);
  basic_round(7, round++, 0, 1, WAIT_REVERSED);
  basic_round(LARGE, round++, 1, 1, TESTALL);
  for (int k = 0; k < 8; k++)
    basic_round(3, round++, k % 2, 1, WAITALL); /* many small rounds */
  for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++)
    v_round(sizes[c], round++);
  return d_finish();
}
