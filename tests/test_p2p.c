/* SPDX-License-Identifier: BSD-3-Clause */
/* Point to point with MPI matching: per-dtype send/recv, wait, the Waitall exchange that
 * deadlocks naive NCCL code, out-of-order tags, wildcards with status, truncation, test
 * polling, self messages, zero-length and long messages. Values checked on every rank. */
#include "test_values.h"

static int rank, size;
static gmpi_comm_t comm;

/* Device (or host) buffer holding n elements of the pattern seed + i. */
static void *pattern_buf(gmpi_dtype_t d, size_t n, int seed) {
  size_t bytes = n * gmpi_dtype_size(d);
  char *host = t_host(bytes);
  T_TILE(d, host, n, t_input(d, GMPI_SUM, seed, i));
  void *dev = t_alloc(bytes);
  t_put(dev, host, bytes);
  free(host);
  return dev;
}

static void expect_pattern(const char *what, gmpi_dtype_t d, const void *dev, size_t n, int seed) {
  size_t bytes = n * gmpi_dtype_size(d);
  char *got = t_host(bytes), *want = t_host(bytes);
  t_get(got, dev, bytes);
  T_TILE(d, want, n, t_input(d, GMPI_SUM, seed, i));
  t_check_buffer(what, d, got, want, n);
  free(got);
  free(want);
}

static void ring_per_dtype(void) {
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  for (int d = 0; d < GMPI_DTYPE_COUNT; d++) {
    void *s = pattern_buf((gmpi_dtype_t)d, 7, rank), *r = t_alloc(7 * gmpi_dtype_size(d));
    gmpi_request_t req;
    gmpi_msg_status_t st;
    T_OK(gmpi_irecv(r, 7, (gmpi_dtype_t)d, prev, 5, comm, &req));
    T_OK(gmpi_send(s, 7, (gmpi_dtype_t)d, next, 5, comm));
    T_OK(gmpi_wait(&req, &st));
    T_EQ_PTR(req, NULL);
    T_EQ_INT(st.source, prev);
    T_EQ_INT(st.tag, 5);
    T_EQ_SIZE(st.count, 7);
    expect_pattern("ring send/recv", (gmpi_dtype_t)d, r, 7, prev);
    t_free(s);
    t_free(r);
  }
}

/* Pairs (0,1), (2,3)...; a rank without a partner (1 rank, odd sizes) plays both roles. */
static int partner(void) { return (rank ^ 1) < size ? rank ^ 1 : rank; }
static int sends_first(void) { return rank % 2 == 0 || partner() == rank; }
static int receives(void) { return rank % 2 == 1 || partner() == rank; }

/* rank 2k posts Irecv(41) then Isend(43); rank 2k+1 posts Isend(41) then Irecv(43). */
static void waitall_crossing_tags(size_t n) {
  int peer = partner(), alone = peer == rank;
  void *s = pattern_buf(GMPI_FLOAT32, n, rank), *r = t_alloc(n * 4), *r2 = t_alloc(n * 4);
  gmpi_request_t reqs[4] = {NULL, NULL, NULL, NULL};
  gmpi_msg_status_t st[4];
  if (rank % 2 == 0 || alone) {
    T_OK(gmpi_irecv(r, n, GMPI_FLOAT32, peer, 41, comm, &reqs[0]));
    T_OK(gmpi_isend(s, n, GMPI_FLOAT32, peer, 43, comm, &reqs[1]));
  }
  if (rank % 2 == 1 || alone) {
    T_OK(gmpi_isend(s, n, GMPI_FLOAT32, peer, 41, comm, &reqs[2]));
    T_OK(gmpi_irecv(alone ? r2 : r, n, GMPI_FLOAT32, peer, 43, comm, &reqs[3]));
  }
  T_OK(gmpi_waitall(4, reqs, st));
  for (int i = 0; i < 4; i++)
    T_EQ_PTR(reqs[i], NULL);
  for (int i = 0; i < 4; i += 3) {
    if (i == 0 && !(rank % 2 == 0 || alone)) continue;
    if (i == 3 && !(rank % 2 == 1 || alone)) continue;
    T_EQ_INT(st[i].source, peer);
    T_EQ_INT(st[i].tag, i == 0 ? 41 : 43);
    T_EQ_SIZE(st[i].count, n);
  }
  expect_pattern("waitall crossing tags", GMPI_FLOAT32, r, n, peer);
  if (alone) expect_pattern("waitall crossing tags (43)", GMPI_FLOAT32, r2, n, peer);
  t_free(s);
  t_free(r);
  t_free(r2);
}

/* Sender: tag 1 then tag 2. Receiver takes tag 2 first. Blocking sends when small (MPI's eager
 * buffering makes that legal in practice), nonblocking when large. */
static void out_of_order_tags(size_t n, int blocking) {
  int peer = partner();
  void *a = pattern_buf(GMPI_INT32, n, 10 + rank), *b = pattern_buf(GMPI_INT32, n, 20 + rank);
  void *ra = t_alloc(n * 4), *rb = t_alloc(n * 4);
  gmpi_request_t reqs[2] = {NULL, NULL};
  if (sends_first()) {
    if (blocking) {
      T_OK(gmpi_send(a, n, GMPI_INT32, peer, 1, comm));
      T_OK(gmpi_send(b, n, GMPI_INT32, peer, 2, comm));
    } else {
      T_OK(gmpi_isend(a, n, GMPI_INT32, peer, 1, comm, &reqs[0]));
      T_OK(gmpi_isend(b, n, GMPI_INT32, peer, 2, comm, &reqs[1]));
    }
  }
  if (receives()) {
    gmpi_msg_status_t st;
    T_OK(gmpi_recv(rb, n, GMPI_INT32, peer, 2, comm, &st));
    T_EQ_INT(st.tag, 2);
    T_OK(gmpi_recv(ra, n, GMPI_INT32, peer, 1, comm, &st));
    T_EQ_INT(st.tag, 1);
    expect_pattern("out-of-order tag 2", GMPI_INT32, rb, n, 20 + peer);
    expect_pattern("out-of-order tag 1", GMPI_INT32, ra, n, 10 + peer);
  }
  T_OK(gmpi_waitall(2, reqs, NULL));
  t_free(a);
  t_free(b);
  t_free(ra);
  t_free(rb);
}

/* Everyone sends to rank 0 (tag 100 + rank, rank+1 elements), rank 0 to itself too; rank 0
 * takes them with ANY_SOURCE / ANY_TAG and must learn source, tag and count from the status. */
static void wildcards(void) {
  void *s = pattern_buf(GMPI_INT64, (size_t)rank + 1, rank);
  gmpi_request_t req;
  T_OK(gmpi_isend(s, (size_t)rank + 1, GMPI_INT64, 0, 100 + rank, comm, &req));
  if (rank == 0) {
    int seen[64] = {0};
    void *r = t_alloc(64 * 8);
    for (int k = 0; k < size; k++) {
      gmpi_msg_status_t st = {-5, -5, 0};
      T_OK(gmpi_recv(r, 64, GMPI_INT64, GMPI_ANY_SOURCE, GMPI_ANY_TAG, comm, &st));
      T_TRUE(st.source >= 0 && st.source < size);
      if (st.source < 0 || st.source >= size) continue;
      seen[st.source]++;
      T_EQ_INT(st.tag, 100 + st.source);
      T_EQ_SIZE(st.count, (size_t)st.source + 1);
      expect_pattern("ANY_SOURCE payload", GMPI_INT64, r, (size_t)st.source + 1, st.source);
    }
    for (int k = 0; k < size; k++)
      T_EQ_INT(seen[k], 1);
    t_free(r);
  }
  T_OK(gmpi_wait(&req, NULL));
  t_free(s);
}

/* A message longer than the receive buffer is GMPI_ERR_TRUNCATE, the status naming it (source
 * and tag, count 0: MPI's), through gmpi_recv and through gmpi_waitall with an untruncated
 * receive beside it; the comm goes on working. */
static void truncation(void) {
  int peer = partner();
  void *s = pattern_buf(GMPI_FLOAT64, 10, rank), *r = t_alloc(10 * 8), *fits = t_alloc(10 * 8);
  gmpi_request_t reqs[4] = {NULL, NULL, NULL, NULL};
  if (sends_first())
    for (int i = 0; i < 4; i++)
      T_OK(gmpi_isend(s, 10, GMPI_FLOAT64, peer, 9, comm, &reqs[i]));
  if (receives()) {
    gmpi_msg_status_t st = {-5, -5, 99}, two[2] = {{-5, -5, 99}, {-5, -5, 99}};
    T_STATUS(gmpi_recv(r, 5, GMPI_FLOAT64, peer, 9, comm, &st), GMPI_ERR_TRUNCATE);
    T_ERROR_MENTIONS("longer");
    T_EQ_INT(st.source, peer); /* which message overflowed, as MPI says */
    T_EQ_INT(st.tag, 9);
    T_EQ_SIZE(st.count, 0);
    gmpi_request_t rr[2] = {NULL, NULL};
    T_OK(gmpi_irecv(fits, 10, GMPI_FLOAT64, peer, 9, comm, &rr[0]));
    T_OK(gmpi_irecv(r, 5, GMPI_FLOAT64, peer, 9, comm, &rr[1]));
    T_STATUS(gmpi_waitall(2, rr, two), GMPI_ERR_TRUNCATE);
    T_STATUS_IS(two[0], peer, 9, 10);
    T_STATUS_IS(two[1], peer, 9, 0);
    T_OK(gmpi_recv(r, 10, GMPI_FLOAT64, peer, 9, comm, &st));
    T_EQ_SIZE(st.count, 10);
    expect_pattern("after truncation", GMPI_FLOAT64, r, 10, peer);
  }
  T_OK(gmpi_waitall(4, reqs, NULL));
  t_free(s);
  t_free(r);
  t_free(fits);
}

/* A shorter message than the buffer is fine: count says how much came. */
static void shorter_message(void) {
  int peer = partner();
  void *s = pattern_buf(GMPI_UINT16, 3, rank), *r = t_alloc(50 * 2);
  gmpi_msg_status_t st;
  T_OK(gmpi_sendrecv(s, 3, GMPI_UINT16, peer, 4, r, 50, GMPI_UINT16, peer, 4, comm, &st));
  T_EQ_SIZE(st.count, 3);
  T_EQ_INT(st.source, peer);
  expect_pattern("shorter message", GMPI_UINT16, r, 3, peer);
  t_free(s);
  t_free(r);
}

/* Poll with gmpi_test until the message arrives (bounded by a generous number of polls). */
static void test_polling(void) {
  int peer = partner();
  void *out = pattern_buf(GMPI_UINT8, 33, rank), *in = t_alloc(33);
  gmpi_request_t req = NULL, sreq = NULL;
  if (receives()) T_OK(gmpi_irecv(in, 33, GMPI_UINT8, peer, 3, comm, &req));
  T_OK(gmpi_barrier(comm)); /* the sender starts only now: the first tests must say "not yet" */
  if (sends_first()) T_OK(gmpi_isend(out, 33, GMPI_UINT8, peer, 3, comm, &sreq));
  if (receives()) {
    int done = 0;
    gmpi_msg_status_t st;
    for (long polls = 0; !done && polls < 100000000L; polls++)
      T_OK(gmpi_test(&req, &done, &st));
    T_TRUE(done);
    T_EQ_PTR(req, NULL);
    T_EQ_SIZE(st.count, 33);
    expect_pattern("test polling", GMPI_UINT8, in, 33, peer);
  }
  T_OK(gmpi_wait(&sreq, NULL));
  t_free(out);
  t_free(in);
}

static void self_messages(void) {
  void *s = pattern_buf(GMPI_FLOAT16, 9, rank + 50), *r = t_alloc(9 * 2);
  gmpi_request_t req;
  gmpi_msg_status_t st;
  T_OK(gmpi_isend(s, 9, GMPI_FLOAT16, rank, 12, comm, &req));
  T_OK(gmpi_recv(r, 9, GMPI_FLOAT16, rank, 12, comm, &st));
  T_OK(gmpi_wait(&req, NULL));
  T_EQ_INT(st.source, rank);
  expect_pattern("self isend/recv", GMPI_FLOAT16, r, 9, rank + 50);
  /* blocking send to self first: buffered like MPI's eager protocol */
  T_OK(gmpi_send(s, 9, GMPI_FLOAT16, rank, 13, comm));
  T_OK(gmpi_recv(r, 9, GMPI_FLOAT16, GMPI_ANY_SOURCE, 13, comm, &st));
  T_EQ_INT(st.source, rank);
  expect_pattern("self send then recv", GMPI_FLOAT16, r, 9, rank + 50);
  /* receive posted first (any tag): the send is read from its own buffer by the receive,
   * so a blocking send to self returns once the receive has the data */
  gmpi_request_t rreq;
  void *r2 = t_alloc(9 * 2);
  T_OK(gmpi_irecv(r2, 9, GMPI_FLOAT16, rank, GMPI_ANY_TAG, comm, &rreq));
  T_OK(gmpi_send(s, 9, GMPI_FLOAT16, rank, 14, comm));
  T_OK(gmpi_wait(&rreq, &st));
  T_EQ_INT(st.tag, 14);
  expect_pattern("self irecv then send", GMPI_FLOAT16, r2, 9, rank + 50);
  /* sendrecv to self (its receive is posted before its send) */
  T_OK(gmpi_sendrecv(s, 9, GMPI_FLOAT16, rank, 15, r, 9, GMPI_FLOAT16, rank, 15, comm, &st));
  T_EQ_INT(st.source, rank);
  expect_pattern("self sendrecv", GMPI_FLOAT16, r, 9, rank + 50);
  /* the receive an eager-sized self send was posted against is cancelled before the send
   * reached it: the send still completes (gmpi keeps its copy) and a later receive gets it */
  int cancelled = 0;
  T_OK(gmpi_irecv(r2, 9, GMPI_FLOAT16, rank, 16, comm, &rreq));
  T_OK(gmpi_isend(s, 9, GMPI_FLOAT16, rank, 16, comm, &req));
  T_OK(gmpi_cancel(&rreq, &cancelled));
  if (!cancelled) T_OK(gmpi_wait(&rreq, &st)); /* matched first: it has the data */
  T_OK(gmpi_wait(&req, NULL));
  if (cancelled) T_OK(gmpi_recv(r2, 9, GMPI_FLOAT16, rank, 16, comm, &st));
  T_EQ_INT(st.tag, 16);
  expect_pattern("self send past a cancelled receive", GMPI_FLOAT16, r2, 9, rank + 50);
  t_free(r2);
  t_free(s);
  t_free(r);
}

static void zero_length(void) {
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  gmpi_msg_status_t st = {-5, -5, 99};
  T_OK(gmpi_sendrecv(NULL, 0, GMPI_BYTE, next, 0, NULL, 0, GMPI_BYTE, prev, 0, comm, &st));
  T_EQ_SIZE(st.count, 0);
  T_EQ_INT(st.source, prev);
  gmpi_request_t null_req = NULL;
  T_OK(gmpi_wait(&null_req, &st));
  T_EQ_INT(st.source, GMPI_ANY_SOURCE);
}

/* Sendrecv around the ring. */
static void sendrecv_ring(size_t n) {
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  void *s = pattern_buf(GMPI_COMPLEX128, n, rank), *r = t_alloc(n * 16);
  gmpi_msg_status_t st;
  T_OK(gmpi_sendrecv(s, n, GMPI_COMPLEX128, next, 77, r, n, GMPI_COMPLEX128, prev, 77, comm, &st));
  T_EQ_INT(st.source, prev);
  T_EQ_SIZE(st.count, n);
  expect_pattern("sendrecv ring", GMPI_COMPLEX128, r, n, prev);
  t_free(s);
  t_free(r);
}

/* A chain of sendrecvs with GMPI_PROC_NULL past its ends (a halo's edge ranks): rank r sends to
 * r + 1 and receives from r - 1, then the other way. An end's half to GMPI_PROC_NULL moves
 * nothing: its receive gets the empty status and leaves its buffer as it was; its send is the
 * call. Then both halves to GMPI_PROC_NULL: nothing moves, the empty status. */
static void sendrecv_chain_ends(size_t n) {
  int up = rank > 0 ? rank - 1 : GMPI_PROC_NULL, down = rank + 1 < size ? rank + 1 : GMPI_PROC_NULL;
  void *s = pattern_buf(GMPI_INT32, n, rank);
  void *r = pattern_buf(GMPI_INT32, n, 1000); /* what a receive from GMPI_PROC_NULL leaves */
  for (int pass = 0; pass < 2; pass++) {
    int to = pass ? up : down, from = pass ? down : up;
    gmpi_msg_status_t st = {-5, -5, 99};
    T_OK(gmpi_sendrecv(s, n, GMPI_INT32, to, 40 + pass, r, n, GMPI_INT32, from, 40 + pass, comm,
                       &st));
    if (from == GMPI_PROC_NULL) {
      T_STATUS_IS(st, GMPI_PROC_NULL, GMPI_ANY_TAG, 0);
      expect_pattern("receive from GMPI_PROC_NULL (untouched)", GMPI_INT32, r, n, 1000);
    } else {
      T_STATUS_IS(st, from, 40 + pass, n);
      expect_pattern("sendrecv along a chain", GMPI_INT32, r, n, from);
      t_free(r);
      r = pattern_buf(GMPI_INT32, n, 1000);
    }
  }
  gmpi_msg_status_t st = {-5, -5, 99};
  T_OK(gmpi_sendrecv(s, n, GMPI_INT32, GMPI_PROC_NULL, 42, r, n, GMPI_INT32, GMPI_PROC_NULL, 42,
                     comm, &st));
  T_STATUS_IS(st, GMPI_PROC_NULL, GMPI_ANY_TAG, 0);
  expect_pattern("sendrecv between GMPI_PROC_NULLs (untouched)", GMPI_INT32, r, n, 1000);
  T_OK(gmpi_barrier(comm)); /* every chain's messages taken before the next case */
  t_free(s);
  t_free(r);
}

/* A sendrecv whose message is longer than its receive buffer: GMPI_ERR_TRUNCATE on every rank,
 * the status naming the message (source and tag, count 0: MPI's), and the comm still works. */
static void sendrecv_truncation(void) {
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  void *s = pattern_buf(GMPI_FLOAT64, 10, rank), *r = t_alloc(10 * 8);
  gmpi_msg_status_t st = {-5, -5, 99};
  T_STATUS(gmpi_sendrecv(s, 10, GMPI_FLOAT64, next, 31, r, 5, GMPI_FLOAT64, prev, 31, comm, &st),
           GMPI_ERR_TRUNCATE);
  T_ERROR_MENTIONS("longer");
  T_EQ_INT(st.source, prev);
  T_EQ_INT(st.tag, 31);
  T_EQ_SIZE(st.count, 0);
  T_OK(gmpi_sendrecv(s, 10, GMPI_FLOAT64, next, 32, r, 10, GMPI_FLOAT64, prev, 32, comm, &st));
  T_EQ_SIZE(st.count, 10);
  expect_pattern("sendrecv after truncation", GMPI_FLOAT64, r, 10, prev);
  t_free(s);
  t_free(r);
}

/* Non-overtaking across the calls: an isend posted before a sendrecv to the same rank and tag
 * is received first, by the receive posted first. Nothing relies on buffering: every receive
 * is posted before the sendrecv waits. */
static void sendrecv_keeps_order(size_t n) {
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  void *a = pattern_buf(GMPI_INT32, n, rank), *b = pattern_buf(GMPI_INT32, n, rank + 100);
  void *x = t_alloc(n * 4), *y = t_alloc(n * 4);
  gmpi_request_t reqs[2] = {NULL, NULL};
  gmpi_msg_status_t st;
  T_OK(gmpi_irecv(x, n, GMPI_INT32, prev, 21, comm, &reqs[0]));
  T_OK(gmpi_isend(a, n, GMPI_INT32, next, 21, comm, &reqs[1]));
  T_OK(gmpi_sendrecv(b, n, GMPI_INT32, next, 21, y, n, GMPI_INT32, prev, 21, comm, &st));
  T_OK(gmpi_waitall(2, reqs, NULL));
  T_EQ_INT(st.source, prev);
  T_EQ_INT(st.tag, 21);
  expect_pattern("first message (isend)", GMPI_INT32, x, n, prev);
  expect_pattern("second message (sendrecv)", GMPI_INT32, y, n, prev + 100);
  t_free(a);
  t_free(b);
  t_free(x);
  t_free(y);
}

/* One message of n int32 each way between partners on c, in an order MPI's rules allow without
 * buffering: the receive is posted before the blocking send, or (pairs) one side sends first. */
static void exchange_on(gmpi_comm_t c, size_t n, int tag) {
  int peer = partner();
  void *s = pattern_buf(GMPI_INT32, n, rank), *r = t_alloc(n * 4);
  gmpi_request_t req = NULL;
  gmpi_msg_status_t st;
  if (peer == rank) {
    T_OK(gmpi_irecv(r, n, GMPI_INT32, peer, tag, c, &req));
    T_OK(gmpi_send(s, n, GMPI_INT32, peer, tag, c));
    T_OK(gmpi_wait(&req, &st));
  } else if (sends_first()) {
    T_OK(gmpi_send(s, n, GMPI_INT32, peer, tag, c));
    T_OK(gmpi_recv(r, n, GMPI_INT32, peer, tag, c, &st));
  } else {
    T_OK(gmpi_recv(r, n, GMPI_INT32, peer, tag, c, &st));
    T_OK(gmpi_send(s, n, GMPI_INT32, peer, tag, c));
  }
  T_EQ_INT(st.source, peer);
  T_EQ_SIZE(st.count, n);
  expect_pattern("exchange on a GMPI_SENDS_AS_MPI comm", GMPI_INT32, r, n, peer);
  /* and nonblocking, the sends posted first */
  gmpi_request_t reqs[2] = {NULL, NULL};
  T_OK(gmpi_isend(s, n, GMPI_INT32, peer, tag + 1, c, &reqs[0]));
  T_OK(gmpi_irecv(r, n, GMPI_INT32, peer, tag + 1, c, &reqs[1]));
  T_OK(gmpi_waitall(2, reqs, NULL));
  expect_pattern("isend/irecv on a GMPI_SENDS_AS_MPI comm", GMPI_INT32, r, n, peer);
  t_free(s);
  t_free(r);
}

/* The eager promise on c: a 12 KiB blocking send completes before its receive is posted (above
 * Open MPI's own eager size, 4 KiB): the sender sends it, then a note; the receiver takes the
 * note first. Without the promise the sender would wait in its send and never send the note. */
static void eager_before_receive(gmpi_comm_t c) {
  int peer = partner();
  if (peer == rank) return; /* self messages are gmpi's own: tested above */
  size_t n = 3072;
  void *s = pattern_buf(GMPI_INT32, n, rank), *r = t_alloc(n * 4);
  int got = -1;
  if (sends_first()) {
    int *note = t_alloc(sizeof(int)); /* the receiver's kind: kinds match apart by default */
    t_put(note, &rank, sizeof(int));
    T_OK(gmpi_send(s, n, GMPI_INT32, peer, 40, c));
    T_OK(gmpi_send(note, 1, GMPI_INT32, peer, 41, c));
    t_free(note);
  } else {
    int *hnote = t_alloc(sizeof(int));
    T_OK(gmpi_recv(hnote, 1, GMPI_INT32, peer, 41, c, NULL));
    t_get(&got, hnote, sizeof(int));
    T_EQ_INT(got, peer);
    T_OK(gmpi_recv(r, n, GMPI_INT32, peer, 40, c, NULL));
    expect_pattern("eager send received after the note", GMPI_INT32, r, n, peer);
    t_free(hnote);
  }
  t_free(s);
  t_free(r);
}

/* gmpi_comm_set_sends: a bad value is refused; the setting reads back and a dup inherits it; on
 * a comm whose sends complete as MPI's (no eager copy) every size below, at and above gmpi's
 * 16 KiB eager limit arrives intact, on it and on its dup; set back, the eager promise holds. */
static void sends_as_mpi(void) {
  gmpi_sends_t sends = (gmpi_sends_t)-1;
  T_STATUS(gmpi_comm_set_sends(comm, (gmpi_sends_t)5), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("'sends' = 5");
  T_OK(gmpi_comm_sends(comm, &sends));
  T_EQ_INT(sends, GMPI_SENDS_EAGER);
  T_STATUS(gmpi_comm_sends(comm, NULL), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("'sends' is NULL");
  gmpi_comm_t c = NULL, child = NULL;
  T_OK(gmpi_comm_dup(comm, &c));
  T_OK(gmpi_comm_set_sends(c, GMPI_SENDS_AS_MPI));
  T_OK(gmpi_comm_dup(c, &child));
  T_OK(gmpi_comm_sends(child, &sends));
  T_EQ_INT(sends, GMPI_SENDS_AS_MPI);
  const size_t counts[] = {2, 1536, 4096, 3072, 16384};
  for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
    exchange_on(c, counts[i], 10 + 2 * (int)i);
    exchange_on(child, counts[i], 10 + 2 * (int)i);
  }
  T_OK(gmpi_comm_set_sends(c, GMPI_SENDS_EAGER)); /* back, at any time */
  T_OK(gmpi_comm_sends(c, &sends));
  T_EQ_INT(sends, GMPI_SENDS_EAGER);
  exchange_on(c, 1536, 30);
  eager_before_receive(c);
  T_OK(gmpi_comm_free(&child));
  T_OK(gmpi_comm_free(&c));
}

static int envelope_engine(void) {
  const char *p2p = getenv("GMPI_P2P");
  return p2p && !strcmp(p2p, "envelope");
}

/* May gmpi watch a blocking MPI call of the program's on c? Not with an envelope engine in the
 * process (GMPI_P2P=envelope) or a device engine on c: they need this rank's progress. */
static int watch_expected(gmpi_comm_t c) {
  gmpi_backend_t backend = GMPI_BACKEND_CPU;
  T_OK(gmpi_comm_backend(c, &backend));
  return !envelope_engine() && backend == GMPI_BACKEND_CPU;
}

/* Is comm's host wire expected here? Not under GMPI_P2P=envelope or GMPI_CHECK=1. */
static int wire_expected(void) {
  const char *check = getenv("GMPI_CHECK");
  return !envelope_engine() && !(check && !strcmp(check, "1"));
}

/* gmpi_comm_watch_enter/exit on c: an exit with no enter and a second enter are refused; where
 * gmpi can watch (no envelope engine in the process) it says so. Returns *watched. */
static int watch_rules(gmpi_comm_t c) {
  int watched = -1, again = -1;
  T_STATUS(gmpi_comm_watch_exit(c), GMPI_ERR_STATE);
  T_ERROR_MENTIONS("inside no watched call");
  T_STATUS(gmpi_comm_watch_enter(c, "MPI_Recv", 4, 0, 1, -1, -1, NULL), GMPI_ERR_INVALID_ARG);
  T_OK(gmpi_comm_watch_enter(c, "MPI_Recv", 4, 0, 1, -1, -1, &watched));
  T_EQ_INT(watched, watch_expected(c));
  if (watched) {
    T_STATUS(gmpi_comm_watch_enter(c, "MPI_Send", 4, -1, -1, 0, 1, &again), GMPI_ERR_STATE);
    T_ERROR_MENTIONS("MPI_Recv");
    T_EQ_INT(again, 0);
    T_OK(gmpi_comm_watch_exit(c));
  }
  return watched;
}

/* gmpi_comm_host_wire: none on a comm with typed tags or eager sends; on a GMPI_TAGS_FULL,
 * GMPI_SENDS_AS_MPI comm (native engine, unchecked) MPI's own messages on the wire match gmpi's
 * host messages in order, both ways: a pair's sender sends gmpi, MPI, gmpi (one tag; MPI_INT
 * on the wire, bytes from gmpi), its receiver takes them with MPI, gmpi, MPI receives -- the
 * MPI calls inside gmpi's watch (gmpi_comm_watch_enter), as the drop-in layer makes them. */
static void host_wire(void) {
  MPI_Comm wire = MPI_COMM_WORLD;
  T_STATUS(gmpi_comm_host_wire(comm, NULL), GMPI_ERR_INVALID_ARG);
  T_OK(gmpi_comm_host_wire(comm, &wire));
  T_TRUE(wire == MPI_COMM_NULL); /* typed tags, eager sends */
  gmpi_comm_t c = NULL;
  T_OK(gmpi_comm_dup(comm, &c));
  T_OK(gmpi_comm_set_tags(c, GMPI_TAGS_FULL));
  T_OK(gmpi_comm_set_sends(c, GMPI_SENDS_AS_MPI));
  T_OK(gmpi_comm_host_wire(c, &wire));
  T_EQ_INT(wire != MPI_COMM_NULL, wire_expected());
  int peer = partner();
  int watched = watch_rules(c);
  if (wire != MPI_COMM_NULL && peer != rank) {
    int msg[3][4], got[3][4];
    memset(got, 0xff, sizeof(got));
    for (int k = 0; k < 3; k++)
      for (int i = 0; i < 4; i++)
        msg[k][i] = 100 * rank + 10 * k + i;
    MPI_Status ms;
    gmpi_msg_status_t gs;
    if (sends_first()) {
      T_OK(gmpi_send(msg[0], 4, GMPI_INT32, peer, 9, c));
      if (watched) T_OK(gmpi_comm_watch_enter(c, "MPI_Send", 4, -1, -1, peer, 9, &watched));
      T_TRUE(MPI_Send(msg[1], 4, MPI_INT, peer, 9, wire) == MPI_SUCCESS);
      if (watched) T_OK(gmpi_comm_watch_exit(c));
      T_OK(gmpi_send(msg[2], 4, GMPI_INT32, peer, 9, c));
    } else {
      if (watched) T_OK(gmpi_comm_watch_enter(c, "MPI_Recv", 4, peer, 9, -1, -1, &watched));
      T_TRUE(MPI_Recv(got[0], 4, MPI_INT, peer, 9, wire, &ms) == MPI_SUCCESS);
      if (watched) T_OK(gmpi_comm_watch_exit(c));
      T_EQ_INT(ms.MPI_SOURCE, peer);
      T_EQ_INT(ms.MPI_TAG, 9);
      T_OK(gmpi_recv(got[1], 4, GMPI_INT32, peer, 9, c, &gs));
      T_STATUS_IS(gs, peer, 9, 4);
      T_TRUE(MPI_Recv(got[2], 4, MPI_INT, peer, MPI_ANY_TAG, wire, &ms) == MPI_SUCCESS);
      for (int k = 0; k < 3; k++)
        for (int i = 0; i < 4; i++)
          T_EQ_INT(got[k][i], 100 * peer + 10 * k + i);
    }
  }
  T_OK(gmpi_comm_free(&c));
}

int main(int argc, char **argv) {
  comm = t_init(&argc, &argv);
  T_OK(gmpi_comm_rank(comm, &rank));
  T_OK(gmpi_comm_size(comm, &size));
  ring_per_dtype();
  waitall_crossing_tags(5);
  waitall_crossing_tags((size_t)1 << 20);
  out_of_order_tags(4, 1);
  out_of_order_tags((size_t)1 << 20, 0);
  wildcards();
  truncation();
  shorter_message();
  test_polling();
  self_messages();
  zero_length();
  sendrecv_ring(1000);
  sendrecv_ring((size_t)1 << 18);
  sendrecv_truncation();
  sendrecv_chain_ends(5);
  sendrecv_chain_ends((size_t)1 << 16);
  sendrecv_keeps_order(7);
  sendrecv_keeps_order((size_t)1 << 16);
  sends_as_mpi();
  host_wire();
  return t_finish("p2p");
}
