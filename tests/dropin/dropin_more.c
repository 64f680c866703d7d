/* SPDX-License-Identifier: BSD-3-Clause */
/* What a review of the layer found missing or wrong, as a plain MPI program: MPI_Ibsend and
 * MPI_Bsend_init (buffered sends that must still meet the comm's one matching engine), a
 * buffered send still in flight when its communicator is freed, MPI_Sendrecv_replace with a
 * strided type (the holes keep their values), MPI_Request_get_status polling, MPI_Scan,
 * MPI_Exscan, MPI_Iscan and MPI_Iexscan (staged on device memory), and fresh buffers filled by
 * an unsynchronized copy and passed at once. Values are checked on every rank. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dropin_util.h"

enum { BIG = 1 << 18 }; /* ints: 1 MiB, above any eager limit */

static int *ints(int base, size_t n) {
  int *h = host_alloc(n * sizeof(int));
  for (size_t i = 0; i < n; i++)
    h[i] = base + (int)(i % 1000);
  return h;
}

/* A buffered send completes at once and its buffer may be rewritten before the receive. */
static void ibsend_and_bsend_init(void) {
  int *h = ints(100 * d_rank(), BIG), *want = ints(100 * d_prev(), BIG);
  void *s = mem_dup_p2p(h, BIG * sizeof(int)), *r = mem_alloc_p2p(BIG * sizeof(int));
  int attach = 2 * (BIG * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
  void *att = host_alloc((size_t)attach);
  D_MPI(MPI_Buffer_attach(att, attach));
  MPI_Request q;
  D_MPI(MPI_Ibsend(s, BIG, MPI_INT, d_next(), 40, MPI_COMM_WORLD, &q));
  D_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
  mem_set(s, 0, BIG * sizeof(int)); /* the message must carry the old values */
  D_MPI(MPI_Recv(r, BIG, MPI_INT, d_prev(), 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  mem_get(h, r, BIG * sizeof(int));
  d_check_int("ibsend", h, want, BIG);
  mem_put(s, want, BIG * sizeof(int)); /* now send the neighbour's pattern on */
  D_MPI(MPI_Bsend_init(s, BIG, MPI_INT, d_next(), 41, MPI_COMM_WORLD, &q));
  /* One start: Open MPI 4.1.4 itself corrupts the second start of a persistent buffered send
   * (241 wrong ints of 1 MiB to self, plain MPI, no layer). */
  for (int round = 0; round < 1; round++) {
    D_MPI(MPI_Start(&q));
    D_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    D_MPI(MPI_Recv(r, BIG, MPI_INT, d_prev(), 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    int *want2 = ints(100 * ((d_rank() + 2 * d_size() - 2) % d_size()), BIG);
    mem_get(h, r, BIG * sizeof(int));
    d_check_int("bsend_init", h, want2, BIG);
    free(want2);
  }
  D_MPI(MPI_Request_free(&q));
  D_MPI(MPI_Buffer_detach(&att, &attach));
  free(att);
  free(h);
  free(want);
  mem_free(s);
  mem_free(r);
}

/* MPI_Bsend on a duplicate, received, then the duplicate freed at once: the send's completion
 * is the layer's to finish first (repeated: whether the receiver has the data before the sender
 * frees the comm is a race). */
static void bsend_then_free(void) {
  MPI_Comm dup;
  D_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  int *h = ints(7 + d_rank(), BIG), *want = ints(7 + d_prev(), BIG);
  void *s = mem_dup_p2p(h, BIG * sizeof(int)), *r = mem_alloc_p2p(BIG * sizeof(int));
  int attach = BIG * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
  void *att = host_alloc((size_t)attach);
  D_MPI(MPI_Buffer_attach(att, attach));
  D_MPI(MPI_Bsend(s, BIG, MPI_INT, d_next(), 1, dup));
  D_MPI(MPI_Recv(r, BIG, MPI_INT, d_prev(), 1, dup, MPI_STATUS_IGNORE));
  D_MPI(MPI_Comm_free(&dup));
  mem_get(h, r, BIG * sizeof(int));
  d_check_int("bsend, then comm_free", h, want, BIG);
  D_MPI(MPI_Buffer_detach(&att, &attach));
  free(att);
  free(h);
  free(want);
  mem_free(s);
  mem_free(r);
}

/* Fresh buffers (the layer asks gmpi what they are in calls of their own before the operation)
 * filled by an unsynchronized copy (mem_put_unsynced) and passed at once to MPI_Sendrecv and
 * MPI_Allreduce (1 MiB: a copy long enough to be overtaken). */
static void copy_then_move(void) {
  for (int round = 0; round < 3; round++) {
    int *h = ints(11 * (round + 1) + d_rank(), BIG), *want = ints(11 * (round + 1) + d_prev(), BIG);
    void *s = mem_alloc_p2p(BIG * sizeof(int)), *r = mem_alloc_p2p(BIG * sizeof(int));
    mem_put_unsynced(s, h, BIG * sizeof(int));
    D_MPI(MPI_Sendrecv(s, BIG, MPI_INT, d_next(), 8, r, BIG, MPI_INT, d_prev(), 8, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE));
    mem_get(h, r, BIG * sizeof(int));
    d_check_int("unsynced copy, then sendrecv", h, want, BIG);
    void *a = mem_alloc(BIG * sizeof(int)), *b = mem_alloc(BIG * sizeof(int));
    for (int i = 0; i < BIG; i++)
      h[i] = round + 1;
    mem_put_unsynced(a, h, BIG * sizeof(int));
    D_MPI(MPI_Allreduce(a, b, BIG, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    mem_get(h, b, BIG * sizeof(int));
    for (int i = 0; i < BIG; i++)
      want[i] = (round + 1) * d_size();
    d_check_int("unsynced copy, then allreduce", h, want, BIG);
    D_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* every peer has read s before it goes */
    free(h);
    free(want);
    mem_free(s);
    mem_free(r);
    mem_free(a);
    mem_free(b);
  }
}

/* Every second int of six replaced by the previous rank's; the others keep their values. */
static void sendrecv_replace_holes(void) {
  int h[6], want[6];
  for (int i = 0; i < 6; i++) {
    h[i] = 1000 * d_rank() + i;
    want[i] = i % 2 ? h[i] : 1000 * d_prev() + i;
  }
  void *b = mem_dup_p2p(h, sizeof(h));
  MPI_Datatype vec;
  D_MPI(MPI_Type_vector(3, 1, 2, MPI_INT, &vec));
  D_MPI(MPI_Type_commit(&vec));
  MPI_Status st;
  D_MPI(MPI_Sendrecv_replace(b, 1, vec, d_next(), 5, d_prev(), 5, MPI_COMM_WORLD, &st));
  D_EQ_INT(st.MPI_SOURCE, d_prev());
  D_EQ_INT(st.MPI_TAG, 5);
  mem_get(h, b, sizeof(h));
  d_check_int("sendrecv_replace with holes", h, want, 6);
  D_MPI(MPI_Type_free(&vec));
  mem_free(b);
}

/* MPI_Request_get_status polled until the message is in, without waiting. */
static void request_get_status(void) {
  int v = 50 + d_rank(), got = -1;
  void *s = mem_dup_p2p(&v, sizeof(v)), *r = mem_alloc_p2p(sizeof(v));
  MPI_Request q;
  D_MPI(MPI_Irecv(r, 1, MPI_INT, d_prev(), 6, MPI_COMM_WORLD, &q));
  D_MPI(MPI_Send(s, 1, MPI_INT, d_next(), 6, MPI_COMM_WORLD));
  int flag = 0;
  double start = MPI_Wtime();
  while (!flag && !d_poll_expired(start))
    D_MPI(MPI_Request_get_status(q, &flag, MPI_STATUS_IGNORE));
  D_EQ_INT(flag, 1);
  D_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
  mem_get(&got, r, sizeof(got));
  D_EQ_INT(got, 50 + d_prev());
  mem_free(s);
  mem_free(r);
}

/* Inclusive and exclusive prefix sums over the ranks, 1000 elements; blocking, or posted and
 * waited (MPI_Iscan, MPI_Iexscan). */
static void prefix_sum(int nonblocking, int exclusive, const void *s, void *r, int n) {
  MPI_Request q = MPI_REQUEST_NULL;
  if (!nonblocking && !exclusive) D_MPI(MPI_Scan(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  if (!nonblocking && exclusive) D_MPI(MPI_Exscan(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  if (nonblocking && !exclusive) D_MPI(MPI_Iscan(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q));
  if (nonblocking && exclusive) D_MPI(MPI_Iexscan(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q));
  if (nonblocking) D_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
}

static void scans(int nonblocking) {
  enum { N = 1000 };
  int *h = ints(d_rank() + 1, N), *want = host_alloc(N * sizeof(int));
  void *s = mem_dup(h, N * sizeof(int)), *r = mem_alloc(N * sizeof(int));
  prefix_sum(nonblocking, 0, s, r, N);
  for (int i = 0; i < N; i++) {
    want[i] = 0;
    for (int k = 0; k <= d_rank(); k++)
      want[i] += k + 1 + i % 1000;
  }
  mem_get(h, r, N * sizeof(int));
  d_check_int(nonblocking ? "iscan" : "scan", h, want, N);
  prefix_sum(nonblocking, 1, s, r, N);
  if (d_rank() > 0) { /* rank 0's result is undefined */
    for (int i = 0; i < N; i++)
      want[i] -= d_rank() + 1 + i % 1000;
    mem_get(h, r, N * sizeof(int));
    d_check_int(nonblocking ? "iexscan" : "exscan", h, want, N);
  }
  free(h);
  free(want);
  mem_free(s);
  mem_free(r);
}

int main(int argc, char **argv) {
  d_init(&argc, &argv, "dropin_more", D_SCOPE_COLL);
  ibsend_and_bsend_init();
  for (int round = 0; round < 20; round++)
    bsend_then_free();
  copy_then_move();
  sendrecv_replace_holes();
  request_get_status();
  scans(0);
  scans(1);
  return d_finish();
}
