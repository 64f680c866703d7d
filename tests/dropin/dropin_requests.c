/* SPDX-License-Identifier: BSD-3-Clause */
/* Request completion on mem_alloc buffers: one MPI_Waitall over receives, sends, an
 * MPI_Iallreduce, an MPI_Ibarrier and MPI_REQUEST_NULL entries, with the receive statuses
 * checked; MPI_Waitany, MPI_Waitsome, MPI_Testall, MPI_Testany, MPI_Testsome and MPI_Test
 * loops; MPI_Request_free on a send whose data still arrives; persistent requests started
 * several times; arrays of only null requests; MPI_STATUS(ES)_IGNORE.
 * Runs at any size (1 included). In a mixed-memory run the collective buffers are device memory
 * on every rank and the point-to-point buffers follow rank parity (even device, odd host), so
 * one request array mixes memory kinds. */
#include "dropin_util.h"

#define SMALL 3
#define LARGE ((size_t)(1 << 20) / sizeof(int) + 7) /* over 1 MiB */

/* Element i of the message src sends with tag. */
static int val(int src, int tag, size_t i) { return src * 1000000 + tag * 10007 + (int)(i % 9973); }

static void *msg_buf(size_t n, int src, int tag) {
  int *h = host_alloc(n * sizeof(int));
  for (size_t i = 0; i < n; i++)
    h[i] = val(src, tag, i);
  void *m = mem_dup_p2p(h, n * sizeof(int));
  free(h);
  return m;
}

static void check_msg(const char *what, const void *mem, size_t n, int src, int tag) {
  int *got = mem_fetch(mem, n * sizeof(int)), *want = host_alloc(n * sizeof(int));
  for (size_t i = 0; i < n; i++)
    want[i] = val(src, tag, i);
  d_check_int(d_label("%s (%zu ints from rank %d, tag %d)", what, n, src, tag), got, want, n);
  free(got);
  free(want);
}

#define check_status(st, src, tag, n) D_STATUS(st, MPI_INT, src, tag, n)

/* What MPI returns for a null request: source ANY_SOURCE, tag ANY_TAG, count 0. */
#define check_empty_status(st) D_STATUS(st, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, 0)

/* Iallreduce input of rank r: r + 1 + i % 101; the sum over ranks is known in closed form. */
static void *iallreduce_input(size_t n) {
  int *h = host_alloc(n * sizeof(int));
  for (size_t i = 0; i < n; i++)
    h[i] = d_rank() + 1 + (int)(i % 101);
  void *m = mem_dup(h, n * sizeof(int));
  free(h);
  return m;
}

static void check_iallreduce(const void *mem, size_t n) {
  int p = d_size(), *got = mem_fetch(mem, n * sizeof(int)), *want = host_alloc(n * sizeof(int));
  for (size_t i = 0; i < n; i++)
    want[i] = p * (p + 1) / 2 + p * (int)(i % 101);
  d_check_int("iallreduce in a request array", got, want, n);
  free(got);
  free(want);
}

/* One Waitall over everything: receives (one with ANY_SOURCE), sends, an Iallreduce, an
 * Ibarrier and null entries. Statuses of receives name the sender and tag; null entries get the
 * empty status. */
static void test_mixed_waitall(void) {
  enum { R1, NULL1, R2, COLL, S1, S2, NULL2, BARRIER, R3, S3, NREQ };
  size_t n[4] = {0, SMALL, LARGE, SMALL}; /* by tag */
  size_t nred = 1000;
  void *sbuf[4] = {0}, *rbuf[4] = {0};
  for (int tag = 1; tag <= 3; tag++) {
    sbuf[tag] = msg_buf(n[tag], d_rank(), tag);
    rbuf[tag] = mem_alloc_p2p(n[tag] * sizeof(int));
  }
  void *red = iallreduce_input(nred), *red_out = mem_alloc(nred * sizeof(int));
  MPI_Request req[NREQ];
  MPI_Status st[NREQ];
  req[NULL1] = req[NULL2] = MPI_REQUEST_NULL;
  D_MPI(MPI_Irecv(rbuf[1], (int)n[1], MPI_INT, d_prev(), 1, MPI_COMM_WORLD, &req[R1]));
  D_MPI(MPI_Irecv(rbuf[2], (int)n[2], MPI_INT, d_prev(), 2, MPI_COMM_WORLD, &req[R2]));
  D_MPI(MPI_Iallreduce(red, red_out, (int)nred, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req[COLL]));
  D_MPI(MPI_Isend(sbuf[1], (int)n[1], MPI_INT, d_next(), 1, MPI_COMM_WORLD, &req[S1]));
  D_MPI(MPI_Isend(sbuf[2], (int)n[2], MPI_INT, d_next(), 2, MPI_COMM_WORLD, &req[S2]));
  D_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &req[BARRIER]));
  D_MPI(MPI_Irecv(rbuf[3], (int)n[3], MPI_INT, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, &req[R3]));
  D_MPI(MPI_Isend(sbuf[3], (int)n[3], MPI_INT, d_next(), 3, MPI_COMM_WORLD, &req[S3]));
  D_MPI(MPI_Waitall(NREQ, req, st));
  for (int k = 0; k < NREQ; k++)
    D_TRUE(req[k] == MPI_REQUEST_NULL);
  check_status(&st[R1], d_prev(), 1, n[1]);
  check_status(&st[R2], d_prev(), 2, n[2]);
  check_status(&st[R3], d_prev(), 3, n[3]);
  check_empty_status(&st[NULL1]);
  check_empty_status(&st[NULL2]);
  for (int tag = 1; tag <= 3; tag++)
    check_msg("waitall receive", rbuf[tag], n[tag], d_prev(), tag);
  check_iallreduce(red_out, nred);
  for (int tag = 1; tag <= 3; tag++) {
    mem_free(sbuf[tag]);
    mem_free(rbuf[tag]);
  }
  mem_free(red);
  mem_free(red_out);
}

/* Every rank sends one message to every rank (itself too), tag 100 + sender; odd senders send
 * large ones. The receives sit in recv[1..size] behind a null entry at recv[0]; the sends are
 * returned separately and completed with MPI_Waitall(MPI_STATUSES_IGNORE) by the caller. */
typedef struct {
  int nrecv;
  MPI_Request *recv, *send;
  void **rbuf, **sbuf;
} exchange_t;

static size_t exchange_count(int src) { return src % 2 ? LARGE : SMALL + (size_t)src; }

static exchange_t exchange_start(void) {
  int p = d_size();
  exchange_t x = {p + 1, host_alloc(sizeof(MPI_Request) * (size_t)(p + 1)),
                  host_alloc(sizeof(MPI_Request) * (size_t)p),
                  host_alloc(sizeof(void *) * (size_t)p), host_alloc(sizeof(void *) * (size_t)p)};
  x.recv[0] = MPI_REQUEST_NULL;
  for (int src = 0; src < p; src++) {
    x.rbuf[src] = mem_alloc_p2p(exchange_count(src) * sizeof(int));
    D_MPI(MPI_Irecv(x.rbuf[src], (int)exchange_count(src), MPI_INT, src, 100 + src, MPI_COMM_WORLD,
                    &x.recv[src + 1]));
  }
  size_t n = exchange_count(d_rank());
  for (int dst = 0; dst < p; dst++) {
    x.sbuf[dst] = msg_buf(n, d_rank(), 100 + d_rank());
    D_MPI(
        MPI_Isend(x.sbuf[dst], (int)n, MPI_INT, dst, 100 + d_rank(), MPI_COMM_WORLD, &x.send[dst]));
  }
  return x;
}

/* Receive index k (k >= 1) completed with status st: right sender, right data. */
static void exchange_check_one(exchange_t *x, int k, const MPI_Status *st, const char *what) {
  int src = k - 1;
  if (k < 1 || k >= x->nrecv) {
    D_FAIL("%s: completed index %d is not a receive", what, k);
    return;
  }
  if (st) check_status(st, src, 100 + src, exchange_count(src));
  check_msg(what, x->rbuf[src], exchange_count(src), src, 100 + src);
}

static void exchange_finish(exchange_t *x) {
  /* Receives a failed loop left active are finished before their buffers go (no-op otherwise). */
  D_MPI(MPI_Waitall(x->nrecv, x->recv, MPI_STATUSES_IGNORE));
  D_MPI(MPI_Waitall(d_size(), x->send, MPI_STATUSES_IGNORE));
  for (int r = 0; r < d_size(); r++) {
    mem_free(x->rbuf[r]);
    mem_free(x->sbuf[r]);
  }
  free(x->recv);
  free(x->send);
  free(x->rbuf);
  free(x->sbuf);
}

/* MPI_Waitany until it answers MPI_UNDEFINED: every receive exactly once, never the null one. */
static void test_waitany(void) {
  exchange_t x = exchange_start();
  int *seen = host_alloc(sizeof(int) * (size_t)x.nrecv), done = 0;
  for (;;) {
    int idx = -1;
    MPI_Status st;
    D_MPI(MPI_Waitany(x.nrecv, x.recv, &idx, &st));
    if (idx == MPI_UNDEFINED) {
      check_empty_status(&st);
      break;
    }
    if (idx < 0 || idx >= x.nrecv || done++ > x.nrecv) {
      D_FAIL("MPI_Waitany returned index %d (array of %d)", idx, x.nrecv);
      break;
    }
    seen[idx]++;
    D_TRUE(x.recv[idx] == MPI_REQUEST_NULL);
    exchange_check_one(&x, idx, &st, "waitany");
  }
  for (int k = 0; k < x.nrecv; k++)
    D_EQ_INT(seen[k], k == 0 ? 0 : 1);
  free(seen);
  exchange_finish(&x);
}

/* MPI_Waitsome until outcount is MPI_UNDEFINED. */
static void test_waitsome(void) {
  exchange_t x = exchange_start();
  int *seen = host_alloc(sizeof(int) * (size_t)x.nrecv), rounds = 0;
  int *idx = host_alloc(sizeof(int) * (size_t)x.nrecv);
  MPI_Status *st = host_alloc(sizeof(MPI_Status) * (size_t)x.nrecv);
  for (;;) {
    int out = -1;
    D_MPI(MPI_Waitsome(x.nrecv, x.recv, &out, idx, st));
    if (out == MPI_UNDEFINED) break;
    if (out < 1 || out > x.nrecv || rounds++ > x.nrecv) {
      D_FAIL("MPI_Waitsome returned outcount %d (array of %d)", out, x.nrecv);
      break;
    }
    for (int j = 0; j < out; j++) {
      if (idx[j] < 0 || idx[j] >= x.nrecv) {
        D_FAIL("MPI_Waitsome index %d out of range", idx[j]);
        continue;
      }
      seen[idx[j]]++;
      exchange_check_one(&x, idx[j], &st[j], "waitsome");
    }
  }
  for (int k = 0; k < x.nrecv; k++)
    D_EQ_INT(seen[k], k == 0 ? 0 : 1);
  free(seen);
  free(idx);
  free(st);
  exchange_finish(&x);
}

/* MPI_Testany polled until it says flag with MPI_UNDEFINED (nothing active is left). */
static void test_testany(void) {
  exchange_t x = exchange_start();
  int *seen = host_alloc(sizeof(int) * (size_t)x.nrecv);
  double start = MPI_Wtime();
  for (;;) {
    int idx = -1, flag = 0;
    MPI_Status st;
    D_MPI(MPI_Testany(x.nrecv, x.recv, &idx, &flag, &st));
    if (flag && idx == MPI_UNDEFINED) {
      check_empty_status(&st);
      break;
    }
    if (flag) {
      if (idx < 0 || idx >= x.nrecv) {
        D_FAIL("MPI_Testany returned index %d", idx);
        break;
      }
      seen[idx]++;
      exchange_check_one(&x, idx, &st, "testany");
    } else if (d_poll_expired(start)) {
      D_FAIL("MPI_Testany: receives never completed");
      break;
    }
  }
  for (int k = 0; k < x.nrecv; k++)
    D_EQ_INT(seen[k], k == 0 ? 0 : 1);
  free(seen);
  exchange_finish(&x);
}

/* MPI_Testsome polled until outcount is MPI_UNDEFINED; statuses ignored, data checked. */
static void test_testsome(void) {
  exchange_t x = exchange_start();
  int *seen = host_alloc(sizeof(int) * (size_t)x.nrecv);
  int *idx = host_alloc(sizeof(int) * (size_t)x.nrecv);
  double start = MPI_Wtime();
  for (;;) {
    int out = -1;
    D_MPI(MPI_Testsome(x.nrecv, x.recv, &out, idx, MPI_STATUSES_IGNORE));
    if (out == MPI_UNDEFINED) break;
    for (int j = 0; j < out; j++) {
      if (idx[j] < 0 || idx[j] >= x.nrecv) {
        D_FAIL("MPI_Testsome index %d out of range", idx[j]);
        continue;
      }
      seen[idx[j]]++;
      exchange_check_one(&x, idx[j], NULL, "testsome");
    }
    if (out == 0 && d_poll_expired(start)) {
      D_FAIL("MPI_Testsome: receives never completed");
      break;
    }
  }
  for (int k = 0; k < x.nrecv; k++)
    D_EQ_INT(seen[k], k == 0 ? 0 : 1);
  free(seen);
  free(idx);
  exchange_finish(&x);
}

/* MPI_Testall polled over receives, sends, an Iallreduce and an Ibarrier; when it says done,
 * every request is null and the data is there. Run with statuses and with STATUSES_IGNORE. */
static void test_testall(int ignore_statuses) {
  enum { RS, RL, SS, SL, COLL, BARRIER, NULL1, NREQ };
  size_t nred = 100003;
  void *ss = msg_buf(SMALL, d_rank(), 5), *sl = msg_buf(LARGE, d_rank(), 6);
  void *rs = mem_alloc_p2p(SMALL * sizeof(int)), *rl = mem_alloc_p2p(LARGE * sizeof(int));
  void *red = iallreduce_input(nred), *red_out = mem_alloc(nred * sizeof(int));
  MPI_Request req[NREQ];
  MPI_Status st[NREQ];
  D_MPI(MPI_Irecv(rs, SMALL, MPI_INT, d_prev(), 5, MPI_COMM_WORLD, &req[RS]));
  D_MPI(MPI_Irecv(rl, (int)LARGE, MPI_INT, d_prev(), 6, MPI_COMM_WORLD, &req[RL]));
  D_MPI(MPI_Isend(ss, SMALL, MPI_INT, d_next(), 5, MPI_COMM_WORLD, &req[SS]));
  D_MPI(MPI_Isend(sl, (int)LARGE, MPI_INT, d_next(), 6, MPI_COMM_WORLD, &req[SL]));
  D_MPI(MPI_Iallreduce(red, red_out, (int)nred, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req[COLL]));
  D_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &req[BARRIER]));
  req[NULL1] = MPI_REQUEST_NULL;
  int flag = 0;
  double start = MPI_Wtime();
  while (!flag) {
    D_MPI(MPI_Testall(NREQ, req, &flag, ignore_statuses ? MPI_STATUSES_IGNORE : st));
    if (!flag && d_poll_expired(start)) {
      D_FAIL("MPI_Testall never completed");
      D_MPI(MPI_Waitall(NREQ, req, MPI_STATUSES_IGNORE)); /* finish anyway: buffers are freed */
      break;
    }
  }
  for (int k = 0; k < NREQ; k++)
    D_TRUE(req[k] == MPI_REQUEST_NULL);
  if (flag && !ignore_statuses) {
    check_status(&st[RS], d_prev(), 5, SMALL);
    check_status(&st[RL], d_prev(), 6, LARGE);
    check_empty_status(&st[NULL1]);
  }
  check_msg("testall small", rs, SMALL, d_prev(), 5);
  check_msg("testall large", rl, LARGE, d_prev(), 6);
  check_iallreduce(red_out, nred);
  void *bufs[] = {ss, sl, rs, rl, red, red_out};
  for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
    mem_free(bufs[k]);
}

/* MPI_Test polled on one large receive (send side: MPI_Wait with STATUS_IGNORE); MPI_Test on a
 * null request says done with the empty status. */
static void test_test(void) {
  void *sbuf = msg_buf(LARGE, d_rank(), 7), *rbuf = mem_alloc_p2p(LARGE * sizeof(int));
  MPI_Request rreq, sreq, null_req = MPI_REQUEST_NULL;
  MPI_Status st;
  D_MPI(MPI_Irecv(rbuf, (int)LARGE, MPI_INT, d_prev(), 7, MPI_COMM_WORLD, &rreq));
  D_MPI(MPI_Isend(sbuf, (int)LARGE, MPI_INT, d_next(), 7, MPI_COMM_WORLD, &sreq));
  int flag = 0;
  double start = MPI_Wtime();
  while (!flag && !d_poll_expired(start))
    D_MPI(MPI_Test(&rreq, &flag, &st));
  if (!flag) {
    D_FAIL("MPI_Test never completed the receive");
    D_MPI(MPI_Wait(&rreq, &st));
  }
  D_TRUE(rreq == MPI_REQUEST_NULL);
  check_status(&st, d_prev(), 7, LARGE);
  check_msg("test loop", rbuf, LARGE, d_prev(), 7);
  D_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
  flag = 0;
  D_MPI(MPI_Test(&null_req, &flag, &st));
  D_TRUE(flag);
  check_empty_status(&st);
  mem_free(sbuf);
  mem_free(rbuf);
}

/* MPI_Request_free right after MPI_Isend: the message is still delivered. The sender may only
 * reuse its buffer once it knows the receive finished, which the barrier tells it. */
static void test_request_free(size_t n) {
  void *sbuf = msg_buf(n, d_rank(), 8), *rbuf = mem_alloc_p2p(n * sizeof(int));
  MPI_Request req;
  MPI_Status st;
  D_MPI(MPI_Isend(sbuf, (int)n, MPI_INT, d_next(), 8, MPI_COMM_WORLD, &req));
  D_MPI(MPI_Request_free(&req));
  D_TRUE(req == MPI_REQUEST_NULL);
  D_MPI(MPI_Recv(rbuf, (int)n, MPI_INT, d_prev(), 8, MPI_COMM_WORLD, &st));
  check_status(&st, d_prev(), 8, n);
  check_msg("after MPI_Request_free", rbuf, n, d_prev(), 8);
  D_MPI(MPI_Barrier(MPI_COMM_WORLD));
  mem_free(sbuf);
  mem_free(rbuf);
}

/* Arrays holding only null requests complete at once, with the documented answers. */
static void test_all_null(void) {
  MPI_Request req[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  MPI_Status st[3];
  int idx = -1, out = -1, flag = 0, idxs[3];
  D_MPI(MPI_Waitall(3, req, st));
  for (int k = 0; k < 3; k++)
    check_empty_status(&st[k]);
  D_MPI(MPI_Waitany(3, req, &idx, &st[0]));
  D_EQ_INT(idx, MPI_UNDEFINED);
  D_MPI(MPI_Waitsome(3, req, &out, idxs, st));
  D_EQ_INT(out, MPI_UNDEFINED);
  D_MPI(MPI_Testall(3, req, &flag, MPI_STATUSES_IGNORE));
  D_TRUE(flag);
  flag = 0;
  D_MPI(MPI_Testany(3, req, &idx, &flag, MPI_STATUS_IGNORE));
  D_TRUE(flag);
  D_EQ_INT(idx, MPI_UNDEFINED);
  D_MPI(MPI_Waitall(0, NULL, MPI_STATUSES_IGNORE));
}

/* Persistent send and receive, started three times with new data each time (MPI_Startall);
 * the requests stay allocated between rounds and are freed at the end. */
static void test_persistent(size_t n) {
  void *sbuf = mem_alloc_p2p(n * sizeof(int)), *rbuf = mem_alloc_p2p(n * sizeof(int));
  MPI_Request req[2];
  MPI_Status st[2];
  D_MPI(MPI_Recv_init(rbuf, (int)n, MPI_INT, d_prev(), 9, MPI_COMM_WORLD, &req[0]));
  D_MPI(MPI_Send_init(sbuf, (int)n, MPI_INT, d_next(), 9, MPI_COMM_WORLD, &req[1]));
  for (int round = 0; round < 3; round++) {
    int *h = host_alloc(n * sizeof(int));
    for (size_t i = 0; i < n; i++)
      h[i] = val(d_rank(), round, i);
    mem_put(sbuf, h, n * sizeof(int));
    free(h);
    D_MPI(MPI_Startall(2, req));
    D_MPI(MPI_Waitall(2, req, st));
    D_TRUE(req[0] != MPI_REQUEST_NULL); /* persistent: inactive, not freed */
    check_status(&st[0], d_prev(), 9, n);
    check_msg("persistent receive", rbuf, n, d_prev(), round);
  }
  D_MPI(MPI_Request_free(&req[0]));
  D_MPI(MPI_Request_free(&req[1]));
  mem_free(sbuf);
  mem_free(rbuf);
}

/* Barrier after each test so wildcards never see the next test's messages. */
#define STEP(call)                                                                                 \
  do {                                                                                             \
    call;                                                                                          \
    D_MPI(MPI_Barrier(MPI_COMM_WORLD));                                                            \
  } while (0)

int main(int argc, char **argv) {
  d_init(&argc, &argv, "dropin_requests", D_SCOPE_COLL);
  STEP(test_mixed_waitall());
  STEP(test_waitany());
  STEP(test_waitsome());
  STEP(test_testany());
  STEP(test_testsome());
  STEP(test_testall(0));
  STEP(test_testall(1));
  STEP(test_test());
  STEP(test_request_free(SMALL));
  STEP(test_request_free(LARGE));
  STEP(test_all_null());
  STEP(test_persistent(SMALL));
  STEP(test_persistent(LARGE));
  return d_finish();
}
