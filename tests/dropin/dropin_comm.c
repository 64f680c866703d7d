/* SPDX-License-Identifier: BSD-3-Clause */
/* Communicators: MPI_Comm_dup, MPI_Comm_split (by parity with reversed keys, and with
 * MPI_UNDEFINED), MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), MPI_Comm_create (even ranks; the
 * others get MPI_COMM_NULL) and MPI_Comm_free. On each new communicator: its rank and size, an
 * allreduce and a point-to-point ring on mem_alloc buffers, with the expected values worked out
 * from the members' MPI_COMM_WORLD ranks (group translation, not data movement).
 * Isolation: a message on a duplicate never matches a receive on the parent, even a wildcard one
 * posted first. Nonblocking collectives on two communicators started in opposite orders on
 * alternate ranks (legal MPI) complete. Many duplicates made and freed, one at a time and several
 * alive at once. Runs at any size, 1 included. In a mixed-memory run collective buffers are device
 * memory on every rank; ring and isolation messages use the rank's parity kind. */
#include "dropin_util.h"

#define NRED  1000
#define LARGE ((size_t)(1 << 20) / sizeof(int) + 7) /* a message over 1 MiB */

/* World ranks of c's members, indexed by rank in c (free() it). */
static int *world_ranks(MPI_Comm c, int csize) {
  MPI_Group g, wg;
  int *in = host_alloc(sizeof(int) * (size_t)csize), *out = host_alloc(sizeof(int) * (size_t)csize);
  for (int i = 0; i < csize; i++)
    in[i] = i;
  D_MPI(MPI_Comm_group(c, &g));
  D_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));
  D_MPI(MPI_Group_translate_ranks(g, csize, in, wg, out));
  D_MPI(MPI_Group_free(&g));
  D_MPI(MPI_Group_free(&wg));
  free(in);
  return out;
}

/* Allreduce on c: member with world rank w gives (w + 1) * (i % 13 + 1). */
static void check_allreduce(MPI_Comm c, const char *what, const int *wr, int csize, size_t n) {
  int *h = host_alloc(n * sizeof(int)), *want = host_alloc(n * sizeof(int)), wsum = 0;
  for (int q = 0; q < csize; q++)
    wsum += wr[q] + 1;
  for (size_t i = 0; i < n; i++) {
    h[i] = (d_rank() + 1) * (int)(i % 13 + 1);
    want[i] = wsum * (int)(i % 13 + 1);
  }
  void *send = mem_dup(h, n * sizeof(int)), *recv = mem_alloc(n * sizeof(int));
  D_MPI(MPI_Allreduce(send, recv, (int)n, MPI_INT, MPI_SUM, c));
  mem_get(h, recv, n * sizeof(int));
  d_check_int(what, h, want, n);
  free(h);
  free(want);
  mem_free(send);
  mem_free(recv);
}

/* Ring on c: each member sends its world rank, spread over n ints, to the next member. */
static void check_ring(MPI_Comm c, const char *what, const int *wr, int crank, int csize,
                       size_t n) {
  int next = (crank + 1) % csize, prev = (crank + csize - 1) % csize;
  int *h = host_alloc(n * sizeof(int)), *want = host_alloc(n * sizeof(int));
  for (size_t i = 0; i < n; i++) {
    h[i] = d_rank() * 1000 + (int)(i % 1000);
    want[i] = wr[prev] * 1000 + (int)(i % 1000);
  }
  void *send = mem_dup_p2p(h, n * sizeof(int)), *recv = mem_alloc_p2p(n * sizeof(int));
  MPI_Request req[2];
  MPI_Status st[2];
  D_MPI(MPI_Irecv(recv, (int)n, MPI_INT, prev, 5, c, &req[0]));
  D_MPI(MPI_Isend(send, (int)n, MPI_INT, next, 5, c, &req[1]));
  D_MPI(MPI_Waitall(2, req, st));
  D_EQ_INT(st[0].MPI_SOURCE, prev);
  D_EQ_INT(st[0].MPI_TAG, 5);
  mem_get(h, recv, n * sizeof(int));
  d_check_int(what, h, want, n);
  free(h);
  free(want);
  mem_free(send);
  mem_free(recv);
}

/* The communicator works: allreduce and ring (small and large) give the values its members'
 * world ranks predict; expect_rank/expect_size are checked when not negative. */
static void check_comm(MPI_Comm c, const char *what, int expect_rank, int expect_size, int large) {
  int crank = -1, csize = 0;
  D_MPI(MPI_Comm_rank(c, &crank));
  D_MPI(MPI_Comm_size(c, &csize));
  if (expect_rank >= 0) D_EQ_INT(crank, expect_rank);
  if (expect_size >= 0) D_EQ_INT(csize, expect_size);
  if (csize < 1 || crank < 0 || crank >= csize) {
    D_FAIL("%s: rank %d of %d makes no sense", what, crank, csize);
    return;
  }
  int *wr = world_ranks(c, csize);
  D_EQ_INT(wr[crank], d_rank());
  check_allreduce(c, what, wr, csize, NRED);
  check_ring(c, what, wr, crank, csize, 3);
  if (large) {
    check_allreduce(c, what, wr, csize, 100003);
    check_ring(c, what, wr, crank, csize, LARGE);
  }
  D_MPI(MPI_Barrier(c));
  free(wr);
}

static void test_dup(void) {
  MPI_Comm dup = MPI_COMM_NULL;
  int cmp = -1;
  D_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  D_MPI(MPI_Comm_compare(dup, MPI_COMM_WORLD, &cmp));
  D_EQ_INT(cmp, MPI_CONGRUENT);
  check_comm(dup, "dup of world", d_rank(), d_size(), 1);
  D_MPI(MPI_Comm_free(&dup));
  D_TRUE(dup == MPI_COMM_NULL);
}

/* Split by parity with key = -rank: each half in reverse world order. */
static void test_split_parity(void) {
  int me = d_rank(), p = d_size(), color = me % 2, size = 0, rank = 0;
  for (int q = 0; q < p; q++)
    if (q % 2 == color) {
      size++;
      if (q > me) rank++; /* higher world ranks come first */
    }
  MPI_Comm half = MPI_COMM_NULL;
  D_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, -me, &half));
  check_comm(half, "split by parity, reversed keys", rank, size, 1);
  /* A duplicate of the split one: nested derivation works too. */
  MPI_Comm dup = MPI_COMM_NULL;
  D_MPI(MPI_Comm_dup(half, &dup));
  check_comm(dup, "dup of a split comm", rank, size, 0);
  D_MPI(MPI_Comm_free(&dup));
  D_MPI(MPI_Comm_free(&half));
}

/* Ranks with rank % 3 == 2 pass MPI_UNDEFINED and get MPI_COMM_NULL; the rest keep world order. */
static void test_split_undefined(void) {
  int me = d_rank(), out = me % 3 == 2, size = 0, rank = 0;
  for (int q = 0; q < d_size(); q++)
    if (q % 3 != 2) {
      size++;
      if (q < me) rank++;
    }
  MPI_Comm c = MPI_COMM_NULL;
  D_MPI(MPI_Comm_split(MPI_COMM_WORLD, out ? MPI_UNDEFINED : 0, me, &c));
  if (out) {
    D_TRUE(c == MPI_COMM_NULL);
    return;
  }
  D_TRUE(c != MPI_COMM_NULL);
  if (c == MPI_COMM_NULL) return;
  check_comm(c, "split with MPI_UNDEFINED", rank, size, 0);
  D_MPI(MPI_Comm_free(&c));
}

/* Ranks sharing memory with this one (every rank when the job runs on one host). */
static void test_split_shared(void) {
  MPI_Comm node = MPI_COMM_NULL;
  D_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d_rank(), MPI_INFO_NULL, &node));
  D_TRUE(node != MPI_COMM_NULL);
  if (node == MPI_COMM_NULL) return;
  int size = 0;
  D_MPI(MPI_Comm_size(node, &size));
  D_TRUE(size >= 1 && size <= d_size());
  check_comm(node, "split_type shared", -1, -1, 1);
  D_MPI(MPI_Comm_free(&node));
}

/* MPI_Comm_create from the group of even world ranks: odd ranks get MPI_COMM_NULL. */
static void test_create_even(void) {
  int p = d_size(), me = d_rank(), neven = (p + 1) / 2;
  int *evens = host_alloc(sizeof(int) * (size_t)neven);
  for (int i = 0; i < neven; i++)
    evens[i] = 2 * i;
  MPI_Group world, even;
  D_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
  D_MPI(MPI_Group_incl(world, neven, evens, &even));
  MPI_Comm c = MPI_COMM_NULL;
  D_MPI(MPI_Comm_create(MPI_COMM_WORLD, even, &c));
  if (me % 2) {
    D_TRUE(c == MPI_COMM_NULL);
  } else {
    D_TRUE(c != MPI_COMM_NULL);
    if (c != MPI_COMM_NULL) {
      check_comm(c, "comm_create (even ranks)", me / 2, neven, 1);
      D_MPI(MPI_Comm_free(&c));
    }
  }
  D_MPI(MPI_Group_free(&even));
  D_MPI(MPI_Group_free(&world));
  free(evens);
}

/* The receive on the parent (ANY_TAG, and ANY_SOURCE when wild) is posted before the one on the
 * duplicate, and the duplicate's message is sent first; each still gets its own message. */
static void test_dup_isolation(MPI_Comm parent, const char *what, size_t n, int wild) {
  int crank, csize;
  D_MPI(MPI_Comm_rank(parent, &crank));
  D_MPI(MPI_Comm_size(parent, &csize));
  int next = (crank + 1) % csize, prev = (crank + csize - 1) % csize;
  MPI_Comm dup;
  D_MPI(MPI_Comm_dup(parent, &dup));
  int *h = host_alloc(n * sizeof(int)), *want = host_alloc(n * sizeof(int));
  void *sbuf[2], *rbuf[2]; /* [0]: parent, [1]: duplicate */
  for (int k = 0; k < 2; k++) {
    for (size_t i = 0; i < n; i++)
      h[i] = (k + 1) * 1000000 + crank * 1000 + (int)(i % 1000);
    sbuf[k] = mem_dup_p2p(h, n * sizeof(int));
    rbuf[k] = mem_alloc_p2p(n * sizeof(int));
    mem_set(rbuf[k], 0, n * sizeof(int));
  }
  MPI_Request req[4];
  MPI_Status st[4];
  int src = wild ? MPI_ANY_SOURCE : prev;
  D_MPI(MPI_Irecv(rbuf[0], (int)n, MPI_INT, src, MPI_ANY_TAG, parent, &req[0]));
  D_MPI(MPI_Irecv(rbuf[1], (int)n, MPI_INT, src, MPI_ANY_TAG, dup, &req[1]));
  D_MPI(MPI_Isend(sbuf[1], (int)n, MPI_INT, next, 7, dup, &req[2]));
  D_MPI(MPI_Isend(sbuf[0], (int)n, MPI_INT, next, 7, parent, &req[3]));
  D_MPI(MPI_Waitall(4, req, st));
  for (int k = 0; k < 2; k++) {
    D_EQ_INT(st[k].MPI_SOURCE, prev);
    D_EQ_INT(st[k].MPI_TAG, 7);
    for (size_t i = 0; i < n; i++)
      want[i] = (k + 1) * 1000000 + prev * 1000 + (int)(i % 1000);
    char msg[128];
    snprintf(msg, sizeof msg, "%s: the message on the %s arrives on the %s", what,
             k ? "dup" : "parent", k ? "dup" : "parent");
    mem_get(h, rbuf[k], n * sizeof(int));
    d_check_int(msg, h, want, n);
    mem_free(sbuf[k]);
    mem_free(rbuf[k]);
  }
  D_MPI(MPI_Barrier(parent)); /* the next call's messages on parent come after this one's */
  free(h);
  free(want);
  D_MPI(MPI_Comm_free(&dup));
}

/* Iallreduce on two communicators, started A then B on even ranks and B then A on odd ranks.
 * MPI orders collectives per communicator only, so this is legal and must complete. Not with
 * device buffers: NCCL needs collectives on different communicators started in one order on
 * every rank (NCCL's user guide, "using multiple NCCL communicators concurrently"), and gmpi
 * passes that rule on (docs/design.md, the drop-in layer); the skip is printed. */
static void test_cross_comm_order(void) {
  if (d_.kind == D_DEVICE) {
    if (d_rank() == 0)
      printf("dropin_comm: skipped iallreduce on two comms in opposite orders (device memory: "
             "NCCL's one-order rule)\n");
    return;
  }
  MPI_Comm c[2];
  D_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c[0]));
  D_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c[1]));
  size_t n = 100003;
  int *h = host_alloc(n * sizeof(int)), p = d_size();
  void *send[2], *recv[2];
  for (int k = 0; k < 2; k++) {
    for (size_t i = 0; i < n; i++)
      h[i] = (k + 1) * (d_rank() + 1) + (int)(i % 7);
    send[k] = mem_dup(h, n * sizeof(int));
    recv[k] = mem_alloc(n * sizeof(int));
  }
  MPI_Request req[2];
  int first = d_rank() % 2;
  for (int j = 0; j < 2; j++) {
    int k = j ? !first : first;
    D_MPI(MPI_Iallreduce(send[k], recv[k], (int)n, MPI_INT, MPI_SUM, c[k], &req[k]));
  }
  D_MPI(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
  int *want = host_alloc(n * sizeof(int));
  for (int k = 0; k < 2; k++) {
    for (size_t i = 0; i < n; i++)
      want[i] = (k + 1) * p * (p + 1) / 2 + p * (int)(i % 7);
    mem_get(h, recv[k], n * sizeof(int));
    d_check_int("iallreduce on two comms started in opposite orders", h, want, n);
    mem_free(send[k]);
    mem_free(recv[k]);
  }
  free(h);
  free(want);
  D_MPI(MPI_Comm_free(&c[0]));
  D_MPI(MPI_Comm_free(&c[1]));
}

/* 50 duplicates made, used and freed one at a time, then 10 alive at once, freed in reverse. */
static void test_many_dups(void) {
  for (int i = 0; i < 50; i++) {
    MPI_Comm dup;
    D_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    int *wr = world_ranks(dup, d_size());
    check_allreduce(dup, "allreduce on the i-th dup", wr, d_size(), 64 + (size_t)i);
    free(wr);
    D_MPI(MPI_Comm_free(&dup));
  }
  MPI_Comm live[10];
  for (int i = 0; i < 10; i++)
    D_MPI(MPI_Comm_dup(i ? live[i - 1] : MPI_COMM_WORLD, &live[i]));
  for (int i = 0; i < 10; i++)
    check_comm(live[(i * 3) % 10], "one of 10 live dups", d_rank(), d_size(), 0);
  for (int i = 9; i >= 0; i--)
    D_MPI(MPI_Comm_free(&live[i]));
}

int main(int argc, char **argv) {
  d_init(&argc, &argv, "dropin_comm", D_SCOPE_COLL);
  check_comm(MPI_COMM_WORLD, "world", d_rank(), d_size(), 1);
  test_dup();
  test_split_parity();
  test_split_undefined();
  test_split_shared();
  test_create_even();
  for (int wild = 0; wild < 2; wild++) {
    test_dup_isolation(MPI_COMM_WORLD, "world", 3, wild);
    test_dup_isolation(MPI_COMM_WORLD, "world", LARGE, wild);
  }
  MPI_Comm half;
  D_MPI(MPI_Comm_split(MPI_COMM_WORLD, d_rank() % 2, 0, &half));
  test_dup_isolation(half, "split", 3, 1);
  D_MPI(MPI_Comm_free(&half));
  test_many_dups();
  test_cross_comm_order();
  check_comm(MPI_COMM_WORLD, "world after all the frees", d_rank(), d_size(), 0);
  return d_finish();
}
