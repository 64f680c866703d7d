/* SPDX-License-Identifier: BSD-3-Clause */
/* Point-to-point traffic patterns that break naive engines: both sides of a pair isend before
 * they irecv (64 MiB), rings of blocking eager sends before any receive, ANY_SOURCE from
 * several senders with non-overtaking, 1000 unexpected messages taken in reverse tag order,
 * self messages, host and device buffers on one comm, truncation followed by an intact
 * message, and sizes around the eager limit. Every case runs at 1..4 ranks (pairs (0,1),
 * (2,3); a rank without a partner talks to itself) and every rank checks what it received. */
#include "test_values.h"

/* The README documents that a blocking send of up to this many bytes completes with no
 * receive posted (gmpi's eager limit, like MPI libraries' eager protocol). */
#define EAGER_BYTES_DOCUMENTED 16384

static int rank, size;
static gmpi_comm_t comm;

/* Pairs (0,1), (2,3)...; a rank without a partner (1 rank, odd sizes) talks to itself. */
static int partner(void) { return (rank ^ 1) < size ? rank ^ 1 : rank; }
static int next_rank(void) { return (rank + 1) % size; }
static int prev_rank(void) { return (rank + size - 1) % size; }

/* Byte k of the message identified by seed: depends on both, so a message from the wrong
 * sender, with the wrong tag, or shifted by any offset does not compare equal. */
static uint8_t byte_of(uint32_t seed, size_t k) {
  uint32_t x = seed * 0x9E3779B1u + (uint32_t)k * 0x85EBCA77u + (uint32_t)(k >> 32);
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  return (uint8_t)x;
}

static uint32_t seed_of(int sender, int tag, int variant) {
  return (uint32_t)sender * 1000003u + (uint32_t)tag * 7919u + (uint32_t)variant * 104729u + 1u;
}

static void fill_host(void *host, size_t bytes, uint32_t seed) {
  for (size_t k = 0; k < bytes; k++)
    ((uint8_t *)host)[k] = byte_of(seed, k);
}

/* A backend buffer (device on cuda) of `bytes` holding the pattern of seed. */
static void *pattern_dev(size_t bytes, uint32_t seed) {
  uint8_t *host = t_host(bytes);
  fill_host(host, bytes, seed);
  void *dev = t_alloc(bytes);
  t_put(dev, host, bytes);
  free(host);
  return dev;
}

/* Compare host bytes with the pattern; the first difference is reported with both values. */
static int check_host(const char *what, const void *got, size_t bytes, uint32_t seed) {
  const uint8_t *g = got;
  for (size_t k = 0; k < bytes; k++) {
    uint8_t w = byte_of(seed, k);
    if (g[k] != w) {
      T_FAIL_("%s: byte %zu of %zu: got 0x%02x, want 0x%02x (seed %u)", what, k, bytes, g[k], w,
              seed);
      return 0;
    }
  }
  return 1;
}

static int check_dev(const char *what, const void *dev, size_t bytes, uint32_t seed) {
  uint8_t *host = t_host(bytes);
  t_get(host, dev, bytes);
  int ok = check_host(what, host, bytes, seed);
  free(host);
  return ok;
}

/* Status fields start as values no real receive reports, so every status check can fail. */
static gmpi_msg_status_t unset_status(void) { return (gmpi_msg_status_t){-7, -7, (size_t)-7}; }

/* ---- 1. both sides isend then irecv 64 MiB ------------------------------------------------ */
static void case_exchange_isend_first(void) {
  const size_t bytes = (size_t)64 << 20, n = bytes / 4;
  int peer = partner();
  void *s = pattern_dev(bytes, seed_of(rank, 11, 1)), *r = t_alloc(bytes);
  gmpi_request_t reqs[2] = {NULL, NULL};
  gmpi_msg_status_t st[2] = {unset_status(), unset_status()};
  T_OK(gmpi_isend(s, n, GMPI_FLOAT32, peer, 11, comm, &reqs[0]));
  T_OK(gmpi_irecv(r, n, GMPI_FLOAT32, peer, 11, comm, &reqs[1]));
  T_OK(gmpi_waitall(2, reqs, st));
  T_EQ_PTR(reqs[0], NULL);
  T_EQ_PTR(reqs[1], NULL);
  T_STATUS_IS(st[1], peer, 11, n);
  check_dev("exchange 64 MiB, isend before irecv", r, bytes, seed_of(peer, 11, 1));
  t_free(s);
  t_free(r);
}

/* ---- 2. rings of blocking sends before the receives (eager) -------------------------------- */
/* Every rank sends `msgs` messages (tags 20.., `bytes` each) to next with gmpi_send, then
 * receives prev's in reverse tag order. Completes only because each send is eager. */
static void ring_blocking(size_t bytes, gmpi_dtype_t d, int msgs) {
  int next = next_rank(), prev = prev_rank();
  size_t es = gmpi_dtype_size(d), n = bytes / es;
  void *s[4], *r[4];
  for (int m = 0; m < msgs; m++) {
    s[m] = pattern_dev(bytes, seed_of(rank, 20 + m, 2));
    r[m] = t_alloc(bytes);
  }
  int sent = 0;
  for (int m = 0; m < msgs; m++) {
    gmpi_status_t rc = gmpi_send(s[m], n, d, next, 20 + m, comm);
    T_OK(rc);
    if (rc != GMPI_SUCCESS) break; /* the comm is failed: nothing more can be checked */
    sent++;
  }
  for (int m = msgs - 1; m >= 0 && sent == msgs; m--) {
    gmpi_msg_status_t st = unset_status();
    T_OK(gmpi_recv(r[m], n, d, prev, 20 + m, comm, &st));
    T_STATUS_IS(st, prev, 20 + m, n);
  }
  char what[96];
  for (int m = 0; m < msgs; m++) {
    snprintf(what, sizeof(what), "blocking ring, %zu bytes, message %d of %d", bytes, m, msgs);
    if (sent == msgs) check_dev(what, r[m], bytes, seed_of(prev, 20 + m, 2));
    t_free(s[m]);
    t_free(r[m]);
  }
}

static void case_ring_blocking_eager(void) {
  ring_blocking(8 * 4, GMPI_INT32, 1);                  /* 8 elements */
  ring_blocking(8 * 4, GMPI_INT32, 4);                  /* 4 tags, received in reverse */
  ring_blocking(EAGER_BYTES_DOCUMENTED, GMPI_UINT8, 1); /* the largest documented size */
  ring_blocking(EAGER_BYTES_DOCUMENTED, GMPI_FLOAT32, 4);
}

/* ---- 3. ANY_SOURCE from up to 3 senders, non-overtaking ------------------------------------ */
#define FANIN_MSGS 10
static size_t fanin_count(int i) { return 2 + (size_t)(i % 5); } /* int32 elements */

static void case_any_source_fanin(void) {
  /* Senders: ranks 1..3 that exist; at 1 rank, rank 0 sends to itself. */
  int senders = size - 1 < 3 ? size - 1 : 3;
  int first = senders > 0 ? 1 : 0;
  if (senders == 0) senders = 1;
  int i_send = rank >= first && rank < first + senders;
  void *s[FANIN_MSGS] = {NULL};
  gmpi_request_t sreq[FANIN_MSGS] = {NULL};
  if (i_send)
    for (int i = 0; i < FANIN_MSGS; i++) {
      size_t n = fanin_count(i);
      s[i] = pattern_dev(n * 4, seed_of(rank, i, 3));
      T_OK(gmpi_isend(s[i], n, GMPI_INT32, 0, i, comm, &sreq[i]));
    }
  if (rank == 0) {
    int expect_next[4] = {0, 0, 0, 0};
    void *r = t_alloc(16 * 4);
    for (int k = 0; k < FANIN_MSGS * senders; k++) {
      gmpi_msg_status_t st = unset_status();
      T_OK(gmpi_recv(r, 16, GMPI_INT32, GMPI_ANY_SOURCE, GMPI_ANY_TAG, comm, &st));
      if (st.source < first || st.source >= first + senders) {
        T_FAIL_("ANY_SOURCE receive %d: status.source = %d, not a sender [%d, %d)", k, st.source,
                first, first + senders);
        continue;
      }
      /* non-overtaking: each sender's messages come in its send order, tag = sequence */
      int want = expect_next[st.source]++;
      T_EQ_INT(st.tag, want);
      T_EQ_SIZE(st.count, fanin_count(want));
      char what[80];
      snprintf(what, sizeof(what), "ANY_SOURCE from rank %d, message %d", st.source, want);
      check_dev(what, r, fanin_count(want) * 4, seed_of(st.source, want, 3));
    }
    for (int src = first; src < first + senders; src++)
      T_EQ_INT(expect_next[src], FANIN_MSGS);
    t_free(r);
  }
  if (i_send) {
    gmpi_msg_status_t st[FANIN_MSGS];
    T_OK(gmpi_waitall(FANIN_MSGS, sreq, st));
    for (int i = 0; i < FANIN_MSGS; i++) {
      T_EQ_PTR(sreq[i], NULL);
      t_free(s[i]);
    }
  }
}

/* ---- 4. 1000 unexpected messages --------------------------------------------------------- */
#define UNEXP_MSGS 1000
#define UNEXP_MAX  64 /* int32 elements */
static size_t unexp_count(int t) { return (size_t)((t * 37) % (UNEXP_MAX + 1)); } /* 0..64 */

/* Every rank isends 1000 messages (tags 0..999) to its partner, all ranks meet in a barrier,
 * then each receives its partner's: reverse tag order with specific tags, or ANY_TAG in send
 * order. Message t lands in slot t of one buffer, checked at the end. */
static void unexpected(int any_tag) {
  int peer = partner();
  size_t slot = UNEXP_MAX * 4, all = slot * UNEXP_MSGS;
  uint8_t *host = t_host(all);
  for (int t = 0; t < UNEXP_MSGS; t++)
    fill_host(host + t * slot, unexp_count(t) * 4, seed_of(rank, t, 4 + any_tag));
  char *s = t_alloc(all), *r = t_alloc(all);
  t_put(s, host, all);
  gmpi_request_t *reqs = calloc(UNEXP_MSGS, sizeof(*reqs));
  for (int t = 0; t < UNEXP_MSGS; t++)
    T_OK(gmpi_isend(s + t * slot, unexp_count(t), GMPI_INT32, peer, t, comm, &reqs[t]));
  T_OK(gmpi_barrier(comm));
  for (int k = 0; k < UNEXP_MSGS; k++) {
    int t = any_tag ? k : UNEXP_MSGS - 1 - k;
    gmpi_msg_status_t st = unset_status();
    T_OK(gmpi_recv(r + t * slot, UNEXP_MAX, GMPI_INT32, peer, any_tag ? GMPI_ANY_TAG : t, comm,
                   &st));
    T_STATUS_IS(st, peer, t, unexp_count(t));
  }
  T_OK(gmpi_waitall(UNEXP_MSGS, reqs, NULL));
  t_get(host, r, all);
  for (int t = 0; t < UNEXP_MSGS; t++) {
    char what[96];
    snprintf(what, sizeof(what), "unexpected message tag %d (%s)", t,
             any_tag ? "ANY_TAG, send order" : "reverse tag order");
    if (!check_host(what, host + t * slot, unexp_count(t) * 4, seed_of(peer, t, 4 + any_tag)))
      break;
  }
  free(reqs);
  free(host);
  t_free(s);
  t_free(r);
}

static void case_unexpected_1000(void) {
  unexpected(0);
  unexpected(1);
}

/* ---- 5. self messages ------------------------------------------------------------------- */
static void case_self(void) {
  const size_t n = 1000; /* float64: 8000 bytes */
  void *s = pattern_dev(n * 8, seed_of(rank, 50, 5)), *r = t_alloc(n * 8);
  gmpi_request_t reqs[2] = {NULL, NULL};
  gmpi_msg_status_t st[2] = {unset_status(), unset_status()};

  /* isend to self, then irecv */
  T_OK(gmpi_isend(s, n, GMPI_FLOAT64, rank, 50, comm, &reqs[0]));
  T_OK(gmpi_irecv(r, n, GMPI_FLOAT64, rank, 50, comm, &reqs[1]));
  T_OK(gmpi_waitall(2, reqs, st));
  T_STATUS_IS(st[1], rank, 50, n);
  check_dev("self: isend then irecv", r, n * 8, seed_of(rank, 50, 5));

  /* irecv, then a blocking send to self (large: the receive is already there) */
  const size_t big = (size_t)100 * 1024;
  void *bs = pattern_dev(big, seed_of(rank, 51, 5)), *br = t_alloc(big);
  gmpi_request_t req = NULL;
  gmpi_msg_status_t one = unset_status();
  T_OK(gmpi_irecv(br, big, GMPI_BYTE, rank, 51, comm, &req));
  T_OK(gmpi_send(bs, big, GMPI_BYTE, rank, 51, comm));
  T_OK(gmpi_wait(&req, &one));
  T_EQ_PTR(req, NULL);
  T_STATUS_IS(one, rank, 51, big);
  check_dev("self: irecv then blocking send (100 KiB)", br, big, seed_of(rank, 51, 5));

  /* ANY_SOURCE (and ANY_SOURCE + ANY_TAG) receives matching self messages */
  for (int k = 0; k < 2; k++) {
    one = unset_status();
    T_OK(gmpi_isend(s, 7, GMPI_FLOAT64, rank, 54 + k, comm, &req));
    T_OK(gmpi_recv(r, n, GMPI_FLOAT64, GMPI_ANY_SOURCE, k ? GMPI_ANY_TAG : 54 + k, comm, &one));
    T_OK(gmpi_wait(&req, NULL));
    T_STATUS_IS(one, rank, 54 + k, 7);
    check_dev(k ? "self: ANY_SOURCE + ANY_TAG" : "self: ANY_SOURCE", r, 7 * 8,
              seed_of(rank, 50, 5));
  }
  t_free(s);
  t_free(r);
  t_free(bs);
  t_free(br);
}

/* 5b. A blocking send to self before the receive exists completes because it is eager (up to
 * the documented size). Run late: a send that never completes fails the comm. */
static void case_self_blocking_eager(void) {
  const size_t sizes[2] = {8 * 4, EAGER_BYTES_DOCUMENTED};
  for (int k = 0; k < 2; k++) {
    void *es = pattern_dev(sizes[k], seed_of(rank, 52 + k, 5)), *er = t_alloc(sizes[k]);
    gmpi_msg_status_t one = unset_status();
    gmpi_status_t rc = gmpi_send(es, sizes[k] / 4, GMPI_INT32, rank, 52 + k, comm);
    T_OK(rc);
    if (rc == GMPI_SUCCESS) {
      T_OK(gmpi_recv(er, sizes[k] / 4, GMPI_INT32, rank, 52 + k, comm, &one));
      T_STATUS_IS(one, rank, 52 + k, sizes[k] / 4);
      char what[80];
      snprintf(what, sizeof(what), "self: blocking send of %zu bytes before the receive", sizes[k]);
      check_dev(what, er, sizes[k], seed_of(rank, 52 + k, 5));
    }
    t_free(es);
    t_free(er);
    if (rc != GMPI_SUCCESS) return; /* the comm is failed */
  }
}

/* ---- 6. host and device buffers interleaved on one comm ------------------------------------ */
/* Message k: host memory (malloc) with tag 61 when k is even, backend memory (t_alloc) with
 * tag 62 when odd; sizes cross the eager limit. Matching across memory kinds with one tag is
 * future work (issue 12), hence one tag per kind. */
#define MIXED_MSGS 8
static size_t mixed_bytes(int k) {
  static const size_t b[MIXED_MSGS] = {64, 4, 100 * 1024, 16 * 1024, 4096, 1 << 20, 0, 40};
  return b[k];
}

static void mixed_round(int recv_first) {
  int peer = partner();
  void *s[MIXED_MSGS], *r[MIXED_MSGS];
  gmpi_request_t reqs[2 * MIXED_MSGS] = {NULL};
  gmpi_msg_status_t st[2 * MIXED_MSGS];
  for (int k = 0; k < MIXED_MSGS; k++) {
    size_t b = mixed_bytes(k);
    uint32_t seed = seed_of(rank, k, 6 + recv_first);
    if (k % 2 == 0) {
      s[k] = t_host(b);
      fill_host(s[k], b, seed);
      r[k] = t_host(b);
    } else {
      s[k] = pattern_dev(b, seed);
      r[k] = t_alloc(b);
    }
  }
  for (int pass = 0; pass < 2; pass++) {
    int posting_recvs = (pass == 0) == (recv_first != 0);
    for (int k = 0; k < MIXED_MSGS; k++) {
      int tag = k % 2 ? 62 : 61;
      if (posting_recvs)
        T_OK(gmpi_irecv(r[k], mixed_bytes(k), GMPI_UINT8, peer, tag, comm, &reqs[k]));
      else
        T_OK(gmpi_isend(s[k], mixed_bytes(k), GMPI_UINT8, peer, tag, comm, &reqs[MIXED_MSGS + k]));
    }
  }
  for (int i = 0; i < 2 * MIXED_MSGS; i++)
    st[i] = unset_status();
  T_OK(gmpi_waitall(2 * MIXED_MSGS, reqs, st));
  for (int k = 0; k < MIXED_MSGS; k++) {
    char what[96];
    snprintf(what, sizeof(what), "mixed memory message %d (%s, %zu bytes, %s)", k,
             k % 2 ? "device" : "host", mixed_bytes(k), recv_first ? "recv first" : "send first");
    T_STATUS_IS(st[k], peer, k % 2 ? 62 : 61, mixed_bytes(k));
    uint32_t seed = seed_of(peer, k, 6 + recv_first);
    if (k % 2 == 0) {
      check_host(what, r[k], mixed_bytes(k), seed);
      free(s[k]);
      free(r[k]);
    } else {
      check_dev(what, r[k], mixed_bytes(k), seed);
      t_free(s[k]);
      t_free(r[k]);
    }
  }
}

static void case_host_device_mixed(void) {
  mixed_round(0);
  mixed_round(1);
}

/* ---- 7. truncation, then a message that must arrive intact --------------------------------- */
/* Each rank isends `unit`*10 then `unit`*5 elements with one tag to its partner; the partner
 * receives `unit`*4 (GMPI_ERR_TRUNCATE) then `unit`*5 (intact). posted_before: both receives
 * are posted before the partner sends (barrier in between); else the messages are sent first.
 * The truncated receive's buffer is the head of a 10-unit allocation whose tail holds a known
 * pattern: a receive that writes past its count is caught there (not as heap corruption). */
static void truncate_then_intact(gmpi_dtype_t d, size_t unit, int posted_before) {
  int peer = partner(), tag = 70 + posted_before;
  size_t es = gmpi_dtype_size(d), n10 = 10 * unit, n5 = 5 * unit, n4 = 4 * unit;
  uint32_t seed10 = seed_of(rank, tag, 70), seed5 = seed_of(rank, tag, 71);
  void *s10 = pattern_dev(n10 * es, seed10), *s5 = pattern_dev(n5 * es, seed5);
  uint32_t guard_seed = seed_of(rank, tag, 72);
  char *r4 = pattern_dev(n10 * es, guard_seed);
  void *r5 = t_alloc(n5 * es);
  gmpi_request_t sreq[2] = {NULL, NULL}, rreq[2] = {NULL, NULL};
  gmpi_msg_status_t st = unset_status();
  char what[96];
  snprintf(what, sizeof(what), "after truncation (%zu bytes, receive posted %s)", n5 * es,
           posted_before ? "before" : "after");
  if (posted_before) {
    T_OK(gmpi_irecv(r4, n4, d, peer, tag, comm, &rreq[0]));
    T_OK(gmpi_irecv(r5, n5, d, peer, tag, comm, &rreq[1]));
    T_OK(gmpi_barrier(comm));
    T_OK(gmpi_isend(s10, n10, d, peer, tag, comm, &sreq[0]));
    T_OK(gmpi_isend(s5, n5, d, peer, tag, comm, &sreq[1]));
    gmpi_msg_status_t named = unset_status();
    T_STATUS(gmpi_wait(&rreq[0], &named), GMPI_ERR_TRUNCATE);
    T_ERROR_MENTIONS("longer than the receive");
    T_EQ_PTR(rreq[0], NULL);
    T_STATUS_IS(named, peer, tag, 0); /* the one failure that writes a status: MPI's */
    T_OK(gmpi_wait(&rreq[1], &st));
  } else {
    T_OK(gmpi_isend(s10, n10, d, peer, tag, comm, &sreq[0]));
    T_OK(gmpi_isend(s5, n5, d, peer, tag, comm, &sreq[1]));
    T_OK(gmpi_barrier(comm));
    gmpi_msg_status_t named = unset_status();
    T_STATUS(gmpi_recv(r4, n4, d, peer, tag, comm, &named), GMPI_ERR_TRUNCATE);
    T_ERROR_MENTIONS("longer than the receive");
    T_STATUS_IS(named, peer, tag, 0); /* in native and envelope mode alike */
    T_OK(gmpi_recv(r5, n5, d, peer, tag, comm, &st));
  }
  T_STATUS_IS(st, peer, tag, n5);
  check_dev(what, r5, n5 * es, seed_of(peer, tag, 71));
  /* nothing beyond the truncated receive's count was written */
  uint8_t *host = t_host(n10 * es), *want = t_host(n10 * es);
  t_get(host, r4, n10 * es);
  fill_host(want, n10 * es, guard_seed);
  for (size_t k = n4 * es; k < n10 * es; k++)
    if (host[k] != want[k]) {
      T_FAIL_("truncated receive of %zu bytes (message %zu bytes, posted %s) wrote past its "
              "buffer: byte %zu changed from 0x%02x to 0x%02x",
              n4 * es, n10 * es, posted_before ? "before" : "after", k, want[k], host[k]);
      break;
    }
  free(host);
  free(want);
  T_OK(gmpi_waitall(2, sreq, NULL));
  t_free(s10);
  t_free(s5);
  t_free(r4);
  t_free(r5);
}

static void case_truncate_then_intact(void) {
  for (int before = 0; before < 2; before++) {
    truncate_then_intact(GMPI_FLOAT64, 1, before);  /* 10, 5, 4 elements */
    truncate_then_intact(GMPI_INT32, 2560, before); /* 100 KiB, 50 KiB; receive 40 KiB */
  }
}

/* ---- 8. sizes around the eager limit, wildcard receives ------------------------------------- */
#define SIZE_MSGS 7
typedef struct {
  gmpi_dtype_t d;
  size_t count;
} sized_t;
static const sized_t sizes8[SIZE_MSGS] = {
    {GMPI_INT32, 0},
    {GMPI_UINT8, 1},
    {GMPI_UINT8, EAGER_BYTES_DOCUMENTED - 1},
    {GMPI_UINT8, EAGER_BYTES_DOCUMENTED},
    {GMPI_UINT8, EAGER_BYTES_DOCUMENTED + 1},
    {GMPI_INT16, EAGER_BYTES_DOCUMENTED / 2 + 2}, /* 16 KiB + 4 bytes in 2-byte elements */
    {GMPI_FLOAT64, ((size_t)1 << 20) / 8},        /* 1 MiB */
};

/* Each rank isends the 7 sizes (tags 80..86) to its partner and receives its partner's with
 * ANY_SOURCE / ANY_TAG, in send order: status names the source, tag and count. recv_first:
 * the wildcard receives are all posted before the partner sends (barrier in between). */
static void sizes_round(int recv_first) {
  int peer = partner();
  void *s[SIZE_MSGS], *r[SIZE_MSGS];
  gmpi_request_t sreq[SIZE_MSGS] = {NULL}, rreq[SIZE_MSGS] = {NULL};
  gmpi_msg_status_t st[SIZE_MSGS];
  for (int k = 0; k < SIZE_MSGS; k++) {
    size_t b = sizes8[k].count * gmpi_dtype_size(sizes8[k].d);
    s[k] = pattern_dev(b, seed_of(rank, 80 + k, 8 + recv_first));
    r[k] = t_alloc(b);
    st[k] = unset_status();
  }
  if (recv_first) {
    for (int k = 0; k < SIZE_MSGS; k++)
      T_OK(gmpi_irecv(r[k], sizes8[k].count, sizes8[k].d, GMPI_ANY_SOURCE, GMPI_ANY_TAG, comm,
                      &rreq[k]));
    T_OK(gmpi_barrier(comm));
  }
  for (int k = 0; k < SIZE_MSGS; k++)
    T_OK(gmpi_isend(s[k], sizes8[k].count, sizes8[k].d, peer, 80 + k, comm, &sreq[k]));
  if (recv_first)
    T_OK(gmpi_waitall(SIZE_MSGS, rreq, st));
  else
    for (int k = 0; k < SIZE_MSGS; k++)
      T_OK(gmpi_recv(r[k], sizes8[k].count, sizes8[k].d, GMPI_ANY_SOURCE, GMPI_ANY_TAG, comm,
                     &st[k]));
  T_OK(gmpi_waitall(SIZE_MSGS, sreq, NULL));
  for (int k = 0; k < SIZE_MSGS; k++) {
    size_t b = sizes8[k].count * gmpi_dtype_size(sizes8[k].d);
    char what[96];
    snprintf(what, sizeof(what), "wildcard receive of %zu %s (%zu bytes, %s)", sizes8[k].count,
             gmpi_dtype_name(sizes8[k].d), b, recv_first ? "posted first" : "after the send");
    T_STATUS_IS(st[k], peer, 80 + k, sizes8[k].count);
    check_dev(what, r[k], b, seed_of(peer, 80 + k, 8 + recv_first));
    t_free(s[k]);
    t_free(r[k]);
  }
}

static void case_sizes_wildcard(void) {
  sizes_round(0);
  sizes_round(1);
}

/* Each case ends with a barrier, so no message of one case can meet a wildcard of the next.
 * The case name is printed on rank 0 before it runs: a hang or failure says where. Once the
 * comm has failed (a timeout) only gmpi_finalize is allowed, so the later cases do not run. */
static int comm_failed;
static void run(const char *name, void (*fn)(void)) {
  if (comm_failed) {
    T_FAIL_("case %s not run: the communicator failed in an earlier case", name);
    return;
  }
  int before = t_failures;
  if (rank == 0) {
    printf("case %s\n", name);
    fflush(stdout);
  }
  fn();
  gmpi_status_t st = gmpi_barrier(comm);
  T_OK(st);
  if (st != GMPI_SUCCESS) comm_failed = 1;
  if (t_failures != before) fprintf(stderr, "[rank %d] case %s FAILED\n", rank, name);
}

int main(int argc, char **argv) {
  comm = t_init(&argc, &argv);
  T_OK(gmpi_comm_rank(comm, &rank));
  T_OK(gmpi_comm_size(comm, &size));
  run("exchange_isend_first_64MiB", case_exchange_isend_first);
  run("any_source_fanin", case_any_source_fanin);
  run("unexpected_1000", case_unexpected_1000);
  run("self", case_self);
  run("host_device_mixed", case_host_device_mixed);
  run("truncate_then_intact", case_truncate_then_intact);
  run("sizes_wildcard", case_sizes_wildcard);
  /* Last: these rely on the eager guarantee; a send that never completes (GMPI_TIMEOUT) fails
   * the comm, and no case after it could run. */
  run("ring_blocking_eager", case_ring_blocking_eager);
  run("self_blocking_eager", case_self_blocking_eager);
  return t_finish("p2p_patterns");
}
