/* SPDX-License-Identifier: BSD-3-Clause */
/* Point-to-point semantics on mem_alloc buffers: blocking and nonblocking sends and receives
 * of ints and doubles, small (one element) and large (over 1 MiB, past any eager limit);
 * tag matching out of order; MPI_ANY_SOURCE / MPI_ANY_TAG with the status filled in;
 * non-overtaking between a large and a small message; MPI_Get_count; Sendrecv and
 * Sendrecv_replace in a ring; Probe / Iprobe sized receives; receives longer than the message;
 * messages to self; MPI_PROC_NULL (alone and at a chain's ends); empty messages.
 * Every exchange is legal MPI: a blocking send only ever waits for a receive that is already
 * posted or is about to be posted by a partner that does not wait on us. Runs at any size,
 * 1 included (the ring is then a rank talking to itself). In DROPIN_MEMORY=mixed even ranks
 * use device buffers and odd ranks host buffers, so messages cross memory kinds. */
#include "dropin_util.h"

#define LARGE_BYTES ((size_t)1 << 20) /* plus a few elements: above any eager limit */

typedef struct {
  int is_dbl;
  MPI_Datatype dt;
  size_t esize;
  const char *name;
} elem_t;

static elem_t elem(int is_dbl) {
  elem_t e = {is_dbl, is_dbl ? MPI_DOUBLE : MPI_INT, is_dbl ? sizeof(double) : sizeof(int),
              is_dbl ? "double" : "int"};
  return e;
}

/* A large count for this element type: a little over 1 MiB, and not a round number. */
static size_t large_count(elem_t e) { return LARGE_BYTES / e.esize + 5; }

/* Element i of the message src sends with tag: distinct per sender, tag and index. */
static int ival(int src, int tag, size_t i) {
  return src * 1000000 + tag * 10007 + (int)(i % 9973);
}
static double dval(int src, int tag, size_t i) {
  return src * 1000003.0 + tag * 1009.0 + (double)(i % 100003) + 0.5;
}

static void fill_host(elem_t e, void *host, size_t n, int src, int tag) {
  for (size_t i = 0; i < n; i++) {
    if (e.is_dbl)
      ((double *)host)[i] = dval(src, tag, i);
    else
      ((int *)host)[i] = ival(src, tag, i);
  }
}

/* A device-or-host buffer of cap elements holding the first n of message (src, tag). */
static void *make_msg(elem_t e, size_t n, size_t cap, int src, int tag) {
  void *host = host_alloc(cap * e.esize);
  fill_host(e, host, n, src, tag);
  void *mem = mem_dup(host, cap * e.esize);
  free(host);
  return mem;
}

/* The first n elements of mem hold message (src, tag). */
static void expect_msg(const char *what, elem_t e, const void *mem, size_t n, int src, int tag) {
  void *got = mem_fetch(mem, n * e.esize);
  void *want = host_alloc(n * e.esize);
  fill_host(e, want, n, src, tag);
  const char *label = d_label("%s (%s x %zu from rank %d, tag %d)", what, e.name, n, src, tag);
  if (e.is_dbl)
    d_check_dbl(label, got, want, n);
  else
    d_check_int(label, got, want, n);
  free(got);
  free(want);
}

/* Bytes from first to first+n of mem are all fill (never written by a receive). */
static void expect_untouched(const char *what, const void *mem, size_t first, size_t n, int fill) {
  unsigned char *got = mem_fetch((const char *)mem + first, n);
  unsigned char *want = host_alloc(n);
  memset(want, fill, n);
  d_check_bytes(what, got, want, n);
  free(got);
  free(want);
}

#define expect_status(st, e, src, tag, count) D_STATUS(st, (e).dt, src, tag, count)

/* Ring: Irecv from prev, blocking Send to next (every receive is posted before any send). */
static void test_irecv_send(elem_t e, size_t n) {
  int tag = 1;
  void *sbuf = make_msg(e, n, n, d_rank(), tag);
  void *rbuf = mem_alloc(n * e.esize);
  MPI_Request req;
  MPI_Status st;
  D_MPI(MPI_Irecv(rbuf, (int)n, e.dt, d_prev(), tag, MPI_COMM_WORLD, &req));
  D_MPI(MPI_Send(sbuf, (int)n, e.dt, d_next(), tag, MPI_COMM_WORLD));
  D_MPI(MPI_Wait(&req, &st));
  D_TRUE(req == MPI_REQUEST_NULL);
  expect_status(&st, e, d_prev(), tag, n);
  expect_msg("irecv+send", e, rbuf, n, d_prev(), tag);
  mem_free(sbuf);
  mem_free(rbuf);
}

/* Ring: Isend to next, blocking Recv from prev. */
static void test_isend_recv(elem_t e, size_t n) {
  int tag = 2;
  void *sbuf = make_msg(e, n, n, d_rank(), tag);
  void *rbuf = mem_alloc(n * e.esize);
  MPI_Request req;
  MPI_Status st;
  D_MPI(MPI_Isend(sbuf, (int)n, e.dt, d_next(), tag, MPI_COMM_WORLD, &req));
  D_MPI(MPI_Recv(rbuf, (int)n, e.dt, d_prev(), tag, MPI_COMM_WORLD, &st));
  expect_status(&st, e, d_prev(), tag, n);
  D_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
  expect_msg("isend+recv", e, rbuf, n, d_prev(), tag);
  mem_free(sbuf);
  mem_free(rbuf);
}

/* Blocking Send and Recv only, between pairs (0,1), (2,3)...: the even rank sends first and the
 * odd one receives first, so neither depends on buffering. An unpaired last rank sits out. */
static void test_blocking_pairs(elem_t e, size_t n) {
  int partner = d_rank() ^ 1;
  if (partner >= d_size()) return;
  int tag = 3;
  void *sbuf = make_msg(e, n, n, d_rank(), tag);
  void *rbuf = mem_alloc(n * e.esize);
  MPI_Status st;
  if (d_rank() % 2 == 0) {
    D_MPI(MPI_Send(sbuf, (int)n, e.dt, partner, tag, MPI_COMM_WORLD));
    D_MPI(MPI_Recv(rbuf, (int)n, e.dt, partner, tag, MPI_COMM_WORLD, &st));
  } else {
    D_MPI(MPI_Recv(rbuf, (int)n, e.dt, partner, tag, MPI_COMM_WORLD, &st));
    D_MPI(MPI_Send(sbuf, (int)n, e.dt, partner, tag, MPI_COMM_WORLD));
  }
  expect_status(&st, e, partner, tag, n);
  expect_msg("blocking pair", e, rbuf, n, partner, tag);
  mem_free(sbuf);
  mem_free(rbuf);
}

/* Tags 3, 2, 1 sent (Isend), received in the order 1, 2, 3 with blocking receives. */
static void test_tag_order(elem_t e, size_t n) {
  void *sbuf[3], *rbuf[3];
  MPI_Request req[3];
  for (int k = 0; k < 3; k++) {
    int tag = 3 - k;
    sbuf[k] = make_msg(e, n, n, d_rank(), tag);
    D_MPI(MPI_Isend(sbuf[k], (int)n, e.dt, d_next(), tag, MPI_COMM_WORLD, &req[k]));
  }
  for (int tag = 1; tag <= 3; tag++) {
    MPI_Status st;
    rbuf[tag - 1] = mem_alloc(n * e.esize);
    D_MPI(MPI_Recv(rbuf[tag - 1], (int)n, e.dt, d_prev(), tag, MPI_COMM_WORLD, &st));
    expect_status(&st, e, d_prev(), tag, n);
    expect_msg("tags out of order", e, rbuf[tag - 1], n, d_prev(), tag);
  }
  D_MPI(MPI_Waitall(3, req, MPI_STATUSES_IGNORE));
  for (int k = 0; k < 3; k++) {
    mem_free(sbuf[k]);
    mem_free(rbuf[k]);
  }
}

/* Every rank (0 included) sends to rank 0 with tag 10+rank; rank 0 receives them all with
 * ANY_SOURCE and ANY_TAG and tells the senders apart by the status alone. */
static void test_any_source_any_tag(elem_t e, size_t n) {
  int tag = 10 + d_rank();
  void *sbuf = make_msg(e, n, n, d_rank(), tag);
  MPI_Request req;
  D_MPI(MPI_Isend(sbuf, (int)n, e.dt, 0, tag, MPI_COMM_WORLD, &req));
  if (d_rank() == 0) {
    int *seen = host_alloc(sizeof(int) * (size_t)d_size());
    void *rbuf = mem_alloc(n * e.esize);
    for (int k = 0; k < d_size(); k++) {
      MPI_Status st;
      D_MPI(MPI_Recv(rbuf, (int)n, e.dt, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
      int src = st.MPI_SOURCE;
      if (src < 0 || src >= d_size()) {
        D_FAIL("ANY_SOURCE receive: status.MPI_SOURCE %d out of range", src);
        continue;
      }
      seen[src]++;
      expect_status(&st, e, src, 10 + src, n);
      expect_msg("any source, any tag", e, rbuf, n, src, 10 + src);
    }
    for (int r = 0; r < d_size(); r++)
      D_EQ_INT(seen[r], 1);
    mem_free(rbuf);
    free(seen);
  }
  D_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
  mem_free(sbuf);
}

/* Ring with one wildcard at a time: ANY_SOURCE with a tag, then a source with ANY_TAG. */
static void test_one_wildcard(elem_t e, size_t n) {
  for (int wild_source = 0; wild_source < 2; wild_source++) {
    int tag = 30 + wild_source;
    void *sbuf = make_msg(e, n, n, d_rank(), tag);
    void *rbuf = mem_alloc(n * e.esize);
    MPI_Request req;
    MPI_Status st;
    D_MPI(MPI_Irecv(rbuf, (int)n, e.dt, wild_source ? MPI_ANY_SOURCE : d_prev(),
                    wild_source ? tag : MPI_ANY_TAG, MPI_COMM_WORLD, &req));
    D_MPI(MPI_Send(sbuf, (int)n, e.dt, d_next(), tag, MPI_COMM_WORLD));
    D_MPI(MPI_Wait(&req, &st));
    expect_status(&st, e, d_prev(), tag, n);
    expect_msg(wild_source ? "ANY_SOURCE" : "ANY_TAG", e, rbuf, n, d_prev(), tag);
    mem_free(sbuf);
    mem_free(rbuf);
  }
}

/* Two messages with one tag from one sender are received in the order sent, even when one is
 * large (rendezvous) and the other small (eager). Receives are posted before the sends
 * (preposted) or after a barrier that follows them (likely unexpected); sources are prev or
 * ANY_SOURCE. Both receive buffers can hold the large message. */
static void test_non_overtaking(elem_t e, int big_first, int preposted, int any_source) {
  size_t nbig = large_count(e), nsmall = 1;
  size_t n[2] = {big_first ? nbig : nsmall, big_first ? nsmall : nbig};
  int tag = 40;
  int src = any_source ? MPI_ANY_SOURCE : d_prev();
  void *sbuf[2], *rbuf[2];
  MPI_Request sreq[2], rreq[2];
  MPI_Status st[2];
  for (int k = 0; k < 2; k++) {
    sbuf[k] = make_msg(e, n[k], n[k], d_rank(), k); /* the values say which message it is */
    rbuf[k] = mem_alloc(nbig * e.esize);
  }
  if (preposted)
    for (int k = 0; k < 2; k++)
      D_MPI(MPI_Irecv(rbuf[k], (int)nbig, e.dt, src, tag, MPI_COMM_WORLD, &rreq[k]));
  D_MPI(MPI_Barrier(MPI_COMM_WORLD));
  for (int k = 0; k < 2; k++)
    D_MPI(MPI_Isend(sbuf[k], (int)n[k], e.dt, d_next(), tag, MPI_COMM_WORLD, &sreq[k]));
  if (preposted) {
    D_MPI(MPI_Waitall(2, rreq, st));
  } else {
    D_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int k = 0; k < 2; k++)
      D_MPI(MPI_Recv(rbuf[k], (int)nbig, e.dt, src, tag, MPI_COMM_WORLD, &st[k]));
  }
  for (int k = 0; k < 2; k++) {
    expect_status(&st[k], e, d_prev(), tag, n[k]);
    expect_msg("non-overtaking", e, rbuf[k], n[k], d_prev(), k);
  }
  D_MPI(MPI_Waitall(2, sreq, MPI_STATUSES_IGNORE));
  for (int k = 0; k < 2; k++) {
    mem_free(sbuf[k]);
    mem_free(rbuf[k]);
  }
}

/* A receive of cap elements gets a message of n < cap: Get_count says n and the tail of the
 * buffer keeps its old bytes. n == 0 is an empty message. */
static void test_short_message(elem_t e, size_t n, size_t cap) {
  int tag = 50;
  void *sbuf = make_msg(e, n, n, d_rank(), tag);
  void *rbuf = mem_alloc(cap * e.esize);
  mem_set(rbuf, 0x5a, cap * e.esize);
  MPI_Request req;
  MPI_Status st;
  D_MPI(MPI_Irecv(rbuf, (int)cap, e.dt, d_prev(), tag, MPI_COMM_WORLD, &req));
  D_MPI(MPI_Send(sbuf, (int)n, e.dt, d_next(), tag, MPI_COMM_WORLD));
  D_MPI(MPI_Wait(&req, &st));
  expect_status(&st, e, d_prev(), tag, n);
  expect_msg("short message", e, rbuf, n, d_prev(), tag);
  expect_untouched("tail after a short message", rbuf, n * e.esize, (cap - n) * e.esize, 0x5a);
  mem_free(sbuf);
  mem_free(rbuf);
}

/* MPI_Sendrecv to next from prev, then MPI_Sendrecv_replace the same way. */
static void test_sendrecv_ring(elem_t e, size_t n) {
  int tag = 60;
  void *sbuf = make_msg(e, n, n, d_rank(), tag);
  void *rbuf = mem_alloc(n * e.esize);
  MPI_Status st;
  D_MPI(MPI_Sendrecv(sbuf, (int)n, e.dt, d_next(), tag, rbuf, (int)n, e.dt, d_prev(), tag,
                     MPI_COMM_WORLD, &st));
  expect_status(&st, e, d_prev(), tag, n);
  expect_msg("sendrecv", e, rbuf, n, d_prev(), tag);
  /* sbuf still holds this rank's message: send it on and get prev's in its place. */
  D_MPI(MPI_Sendrecv_replace(sbuf, (int)n, e.dt, d_next(), tag + 1, d_prev(), tag + 1,
                             MPI_COMM_WORLD, &st));
  expect_status(&st, e, d_prev(), tag + 1, n);
  expect_msg("sendrecv_replace", e, sbuf, n, d_prev(), tag);
  mem_free(sbuf);
  mem_free(rbuf);
}

/* A halo exchange down a chain of ranks, no wrap-around: MPI_Sendrecv to the rank below from
 * the one above, then back up, MPI_PROC_NULL past either end. Each rank gets its neighbours'
 * messages; an end's receive from MPI_PROC_NULL gets an empty status and leaves its buffer
 * alone. */
static void test_sendrecv_chain(elem_t e, size_t n) {
  int tag = 70, me = d_rank(), last = d_size() - 1;
  int up = me > 0 ? me - 1 : MPI_PROC_NULL, down = me < last ? me + 1 : MPI_PROC_NULL;
  void *sbuf = make_msg(e, n, n, me, tag);
  void *rbuf = mem_alloc(n * e.esize);
  MPI_Status st;
  for (int way = 0; way < 2; way++) {
    int to = way ? up : down, from = way ? down : up;
    mem_set(rbuf, 0x33, n * e.esize);
    D_MPI(MPI_Sendrecv(sbuf, (int)n, e.dt, to, tag, rbuf, (int)n, e.dt, from, tag, MPI_COMM_WORLD,
                       &st));
    if (from == MPI_PROC_NULL) {
      expect_status(&st, e, MPI_PROC_NULL, MPI_ANY_TAG, 0);
      expect_untouched("sendrecv from MPI_PROC_NULL", rbuf, 0, n * e.esize, 0x33);
    } else {
      expect_status(&st, e, from, tag, n);
      expect_msg(way ? "sendrecv up the chain" : "sendrecv down the chain", e, rbuf, n, from, tag);
    }
  }
  mem_free(sbuf);
  mem_free(rbuf);
}

/* Each rank sends a message whose length only the sender knows; the receiver learns it from
 * MPI_Probe (or an MPI_Iprobe loop), allocates exactly that, and receives. */
static void test_probe(elem_t e, int large, int use_iprobe) {
  size_t base = large ? large_count(e) : 5;
  size_t n = base + 3 * (size_t)d_rank(), prev_n = base + 3 * (size_t)d_prev();
  int tag = 70 + d_rank() % 7, prev_tag = 70 + d_prev() % 7;
  void *sbuf = make_msg(e, n, n, d_rank(), tag);
  MPI_Request req;
  MPI_Status st;
  D_MPI(MPI_Isend(sbuf, (int)n, e.dt, d_next(), tag, MPI_COMM_WORLD, &req));
  if (use_iprobe) {
    int flag = 0;
    double start = MPI_Wtime();
    while (!flag && !d_poll_expired(start))
      D_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
    if (!flag) D_FAIL("MPI_Iprobe never found the message from rank %d", d_prev());
  } else {
    D_MPI(MPI_Probe(d_prev(), MPI_ANY_TAG, MPI_COMM_WORLD, &st));
  }
  expect_status(&st, e, d_prev(), prev_tag, prev_n);
  int count = 0;
  D_MPI(MPI_Get_count(&st, e.dt, &count));
  if (count < 0 || (size_t)count != prev_n) count = (int)prev_n; /* already reported */
  void *rbuf = mem_alloc((size_t)count * e.esize);
  MPI_Status rst;
  D_MPI(MPI_Recv(rbuf, count, e.dt, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &rst));
  expect_status(&rst, e, d_prev(), prev_tag, prev_n);
  expect_msg(use_iprobe ? "iprobe-sized receive" : "probe-sized receive", e, rbuf, prev_n, d_prev(),
             prev_tag);
  D_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
  mem_free(sbuf);
  mem_free(rbuf);
}

/* A rank sends to itself: Isend then Recv, and Irecv then a blocking Send. */
static void test_self(elem_t e, size_t n) {
  int me = d_rank(), tag = 80;
  void *sbuf = make_msg(e, n, n, me, tag);
  void *rbuf = mem_alloc(n * e.esize);
  MPI_Request req;
  MPI_Status st;
  D_MPI(MPI_Isend(sbuf, (int)n, e.dt, me, tag, MPI_COMM_WORLD, &req));
  D_MPI(MPI_Recv(rbuf, (int)n, e.dt, me, tag, MPI_COMM_WORLD, &st));
  D_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
  expect_status(&st, e, me, tag, n);
  expect_msg("self isend+recv", e, rbuf, n, me, tag);

  mem_set(rbuf, 0, n * e.esize);
  D_MPI(MPI_Irecv(rbuf, (int)n, e.dt, me, tag + 1, MPI_COMM_WORLD, &req));
  D_MPI(MPI_Send(sbuf, (int)n, e.dt, me, tag + 1, MPI_COMM_WORLD));
  D_MPI(MPI_Wait(&req, &st));
  expect_status(&st, e, me, tag + 1, n);
  expect_msg("self irecv+send", e, rbuf, n, me, tag);
  mem_free(sbuf);
  mem_free(rbuf);
}

/* MPI_PROC_NULL: sends succeed at once, receives succeed with an empty status and leave the
 * buffer alone. */
static void test_proc_null(elem_t e) {
  size_t n = 4;
  void *buf = mem_alloc(n * e.esize);
  mem_set(buf, 0x33, n * e.esize);
  MPI_Request req;
  MPI_Status st;
  D_MPI(MPI_Send(buf, (int)n, e.dt, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
  D_MPI(MPI_Isend(buf, (int)n, e.dt, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &req));
  D_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
  D_MPI(MPI_Recv(buf, (int)n, e.dt, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st));
  expect_status(&st, e, MPI_PROC_NULL, MPI_ANY_TAG, 0);
  D_MPI(MPI_Irecv(buf, (int)n, e.dt, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &req));
  D_MPI(MPI_Wait(&req, &st));
  expect_status(&st, e, MPI_PROC_NULL, MPI_ANY_TAG, 0);
  expect_untouched("receive from MPI_PROC_NULL", buf, 0, n * e.esize, 0x33);
  mem_free(buf);
}

/* One test at a time: the barrier after each keeps a wildcard receive or probe in one test from
 * seeing a message that a faster rank already sent for the next. */
#define STEP(call)                                                                                 \
  do {                                                                                             \
    call;                                                                                          \
    D_MPI(MPI_Barrier(MPI_COMM_WORLD));                                                            \
  } while (0)

static void run_all(elem_t e) {
  size_t sizes[2] = {1, large_count(e)};
  for (int s = 0; s < 2; s++) {
    size_t n = sizes[s];
    STEP(test_irecv_send(e, n));
    STEP(test_isend_recv(e, n));
    STEP(test_blocking_pairs(e, n));
    STEP(test_tag_order(e, n));
    STEP(test_any_source_any_tag(e, n));
    STEP(test_one_wildcard(e, n));
    STEP(test_sendrecv_ring(e, n));
    STEP(test_sendrecv_chain(e, n));
    STEP(test_self(e, n));
    STEP(test_probe(e, s, 0));
    STEP(test_probe(e, s, 1));
  }
  for (int big_first = 0; big_first < 2; big_first++)
    for (int preposted = 0; preposted < 2; preposted++)
      for (int any = 0; any < 2; any++)
        STEP(test_non_overtaking(e, big_first, preposted, any));
  STEP(test_short_message(e, 3, 10));
  STEP(test_short_message(e, 0, 10));
  STEP(test_short_message(e, large_count(e), 2 * large_count(e)));
  STEP(test_proc_null(e));
}

int main(int argc, char **argv) {
  d_init(&argc, &argv, "dropin_p2p", D_SCOPE_P2P);
  run_all(elem(0));
  run_all(elem(1));
  return d_finish();
}
