/* SPDX-License-Identifier: BSD-3-Clause */
/* Nonblocking collectives: every gmpi_i* call gives the blocking call's values; many are
 * outstanding at once on one comm and complete through one gmpi_waitall in reverse order; an
 * iallreduce overlaps a ring exchange and a compute loop in one request array mixing collective
 * and point-to-point requests; completion by gmpi_test polling and gmpi_waitany; and an
 * ibarrier that rank 0 starts before receiving a rendezvous message rank 1 sends before its own
 * ibarrier (legal MPI: a blocking ibarrier would deadlock). Values checked on every rank;
 * buffers live where the backend moves data. */
#include "test_util.h"

static int rank, size;
static gmpi_comm_t comm;

#define N    257 /* elements per rank and block */
#define MAXR 64

static int32_t *dev_ints(size_t n, int32_t (*f)(size_t)) {
  int32_t *h = t_host(n * 4);
  for (size_t i = 0; i < n; i++)
    h[i] = f ? f(i) : -1;
  int32_t *d = t_alloc(n * 4);
  t_put(d, h, n * 4);
  free(h);
  return d;
}
static int32_t *host_ints(const int32_t *d, size_t n) {
  int32_t *h = t_host(n * 4);
  t_get(h, d, n * 4);
  return h;
}
/* Element i of rank r's contribution. */
static int32_t val(int r, size_t i) { return r * 1000 + (int32_t)i; }
static int cur_rank;
static int32_t mine(size_t i) { return val(cur_rank, i); }
/* rank r's block for rank p in the alltoalls */
static int32_t blocks(size_t i) { return val(cur_rank, i % N) + (int32_t)(i / N) * 100000; }

#define CHECK_INTS(what, dev, n, expr_of_i)                                                        \
  do {                                                                                             \
    int32_t *h_ = host_ints(dev, n);                                                               \
    for (size_t i = 0; i < (n); i++)                                                               \
      if (h_[i] != (int32_t)(expr_of_i)) {                                                         \
        T_FAIL_("%s: element %zu is %d, want %d", what, i, h_[i], (int32_t)(expr_of_i));           \
        break;                                                                                     \
      }                                                                                            \
    free(h_);                                                                                      \
  } while (0)

static int64_t sum_over_ranks(size_t i) {
  int64_t s = 0;
  for (int r = 0; r < size; r++)
    s += val(r, i);
  return s;
}

/* Every nonblocking collective started back to back, completed by one waitall (reverse order
 * in the array), each checked against what the blocking call gives. */
static void all_at_once(void) {
  size_t P = (size_t)size, vcount[MAXR], vdispl[MAXR], off = 0;
  for (int r = 0; r < size; r++) { /* uneven, with zeros */
    vcount[r] = (size_t)(r % 3) * 5;
    vdispl[r] = off;
    off += vcount[r];
  }
  cur_rank = rank;
  int32_t *in = dev_ints(N * P, blocks), *x = dev_ints(N, mine);
  int32_t *ar = dev_ints(N, NULL), *bc = dev_ints(N, rank == 0 ? mine : NULL);
  int32_t *rd = dev_ints(N, NULL), *ag = dev_ints(N * P, NULL), *rs = dev_ints(N, NULL);
  int32_t *aa = dev_ints(N * P, NULL), *ga = dev_ints(N * P, NULL), *sc = dev_ints(N, NULL);
  int32_t *agv = dev_ints(off + 1, NULL), *gv = dev_ints(off + 1, NULL), *sv = dev_ints(N, NULL);
  int32_t *av = dev_ints(N * P, NULL), *rsv = dev_ints(N, NULL);
  int root = size - 1;
  size_t ac[MAXR], ad[MAXR]; /* alltoallv: 2 elements of each block */
  for (int p = 0; p < size; p++) {
    ac[p] = 2;
    ad[p] = (size_t)p * N;
  }
  gmpi_request_t r[15];
  int k = 14;
  T_OK(gmpi_iallreduce(x, ar, N, GMPI_INT32, GMPI_SUM, comm, &r[k--]));
  T_OK(gmpi_ibcast(bc, N, GMPI_INT32, 0, comm, &r[k--]));
  T_OK(gmpi_ireduce(x, rd, N, GMPI_INT32, GMPI_MAX, root, comm, &r[k--]));
  T_OK(gmpi_iallgather(x, ag, N, GMPI_INT32, comm, &r[k--]));
  T_OK(gmpi_ireduce_scatter(in, rs, N, GMPI_INT32, GMPI_SUM, comm, &r[k--]));
  T_OK(gmpi_ialltoall(in, aa, N, GMPI_INT32, comm, &r[k--]));
  T_OK(gmpi_ibarrier(comm, &r[k--]));
  T_OK(gmpi_igather(x, ga, N, GMPI_INT32, root, comm, &r[k--]));
  T_OK(gmpi_iscatter(in, sc, N, GMPI_INT32, 0, comm, &r[k--]));
  T_OK(gmpi_iallgatherv(x, vcount[rank], agv, vcount, vdispl, GMPI_INT32, comm, &r[k--]));
  T_OK(gmpi_igatherv(x, vcount[rank], gv, vcount, vdispl, GMPI_INT32, root, comm, &r[k--]));
  T_OK(gmpi_iscatterv(in, vcount, vdispl, sv, vcount[rank], GMPI_INT32, 0, comm, &r[k--]));
  T_OK(gmpi_ialltoallv(in, ac, ad, av, ac, ad, GMPI_INT32, comm, &r[k--]));
  T_OK(gmpi_ireduce_scatterv(in, rsv, vcount, GMPI_INT32, GMPI_SUM, comm, &r[k--]));
  r[0] = NULL; /* a NULL in the array is fine */
  gmpi_msg_status_t st[15];
  T_OK(gmpi_waitall(15, r, st));
  for (int i = 0; i < 15; i++)
    T_EQ_PTR(r[i], NULL);
  T_EQ_INT(st[14].source, GMPI_ANY_SOURCE); /* a collective's status is empty */
  T_EQ_SIZE(st[14].count, 0);
  CHECK_INTS("iallreduce", ar, N, sum_over_ranks(i));
  CHECK_INTS("ibcast", bc, N, val(0, i));
  if (rank == root) CHECK_INTS("ireduce", rd, N, val(size - 1, i));
  CHECK_INTS("iallgather", ag, N * P, val((int)(i / N), i % N));
  int64_t rs_want[N];
  for (size_t i = 0; i < N; i++) { /* block `rank` of everyone's input, summed */
    rs_want[i] = 0;
    for (int q = 0; q < size; q++)
      rs_want[i] += val(q, i) + (int64_t)rank * 100000;
  }
  CHECK_INTS("ireduce_scatter", rs, N, rs_want[i]);
  CHECK_INTS("ialltoall", aa, N * P, val((int)(i / N), i % N) + rank * 100000);
  if (rank == root) CHECK_INTS("igather", ga, N * P, val((int)(i / N), i % N));
  CHECK_INTS("iscatter", sc, N, val(0, i) + rank * 100000);
  for (int q = 0; q < size; q++) {
    char what[48];
    snprintf(what, sizeof(what), "iallgatherv block %d", q);
    CHECK_INTS(what, agv + vdispl[q], vcount[q], val(q, i));
    snprintf(what, sizeof(what), "igatherv block %d", q);
    if (rank == root) CHECK_INTS(what, gv + vdispl[q], vcount[q], val(q, i));
    snprintf(what, sizeof(what), "ialltoallv block %d", q);
    CHECK_INTS(what, av + (size_t)q * N, 2, val(q, i) + rank * 100000);
  }
  CHECK_INTS("iscatterv", sv, vcount[rank], val(0, vdispl[rank] + i));
  int64_t rsv_want[N]; /* block `rank` (vcount[rank] elements at vdispl[rank]) of in, summed */
  for (size_t i = 0; i < vcount[rank]; i++) {
    size_t j = vdispl[rank] + i;
    rsv_want[i] = 0;
    for (int q = 0; q < size; q++)
      rsv_want[i] += val(q, j % N) + (int64_t)(j / N) * 100000;
  }
  CHECK_INTS("ireduce_scatterv", rsv, vcount[rank], rsv_want[i]);
  CHECK_INTS("ireduce_scatterv: beyond this rank's block", rsv + vcount[rank], 1, -1);
  int32_t *bufs[] = {in, x, ar, bc, rd, ag, rs, aa, ga, sc, agv, gv, sv, av, rsv};
  for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
    t_free(bufs[i]);
}

/* An iallreduce of 1 Mi elements runs while a ring exchange and a compute loop happen. */
static void overlap(void) {
  size_t n = (size_t)1 << 20;
  cur_rank = rank;
  int32_t *x = dev_ints(n, mine), *y = dev_ints(n, NULL);
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int32_t *s = dev_ints(N, mine), *r = dev_ints(N, NULL);
  gmpi_request_t reqs[3];
  T_OK(gmpi_iallreduce(x, y, n, GMPI_INT32, GMPI_SUM, comm, &reqs[0]));
  T_OK(gmpi_irecv(r, N, GMPI_INT32, left, 21, comm, &reqs[1]));
  T_OK(gmpi_isend(s, N, GMPI_INT32, right, 21, comm, &reqs[2]));
  volatile double acc = 0; /* compute meanwhile */
  for (int i = 0; i < 2000000; i++)
    acc += (double)i * 1e-9;
  T_TRUE(acc > 0);
  gmpi_msg_status_t st[3];
  T_OK(gmpi_waitall(3, reqs, st));
  T_EQ_INT(st[1].source, left);
  T_EQ_INT(st[1].tag, 21);
  CHECK_INTS("ring message during iallreduce", r, N, val(left, i));
  CHECK_INTS("iallreduce 1 Mi", y, n, sum_over_ranks(i));
  t_free(x);
  t_free(y);
  t_free(s);
  t_free(r);
}

/* gmpi_test polls to completion; gmpi_waitany picks whichever is done. */
static void test_and_waitany(void) {
  cur_rank = rank;
  int32_t *x = dev_ints(N, mine), *y = dev_ints(N, NULL);
  gmpi_request_t req = NULL;
  T_OK(gmpi_iallreduce(x, y, N, GMPI_INT32, GMPI_MIN, comm, &req));
  int done = 0;
  long polls = 0;
  while (!done) {
    T_OK(gmpi_test(&req, &done, NULL));
    polls++;
  }
  T_TRUE(polls >= 1);
  T_EQ_PTR(req, NULL);
  CHECK_INTS("iallreduce by test", y, N, val(0, i));
  gmpi_request_t two[2];
  T_OK(gmpi_ibcast(x, N, GMPI_INT32, size - 1, comm, &two[0]));
  T_OK(gmpi_ibarrier(comm, &two[1]));
  for (int left = 2; left > 0; left--) {
    int index = -1;
    T_OK(gmpi_waitany(2, two, &index, NULL));
    T_TRUE(index == 0 || index == 1);
  }
  CHECK_INTS("ibcast by waitany", x, N, val(size - 1, i));
  t_free(x);
  t_free(y);
}

/* Rank 0 starts an ibarrier, then receives 1 MiB from rank 1, which sends it (blocking, large:
 * it completes only once received) before starting its own ibarrier. */
static void ibarrier_does_not_block(void) {
  size_t n = (size_t)1 << 18; /* 1 MiB of int32: never eager */
  cur_rank = rank;
  gmpi_request_t bar = NULL;
  if (size < 2) { /* no one to receive from: the ibarrier alone */
    T_OK(gmpi_ibarrier(comm, &bar));
    T_OK(gmpi_wait(&bar, NULL));
    return;
  }
  if (rank == 0) {
    int32_t *r = dev_ints(n, NULL);
    T_OK(gmpi_ibarrier(comm, &bar));
    T_OK(gmpi_recv(r, n, GMPI_INT32, 1, 31, comm, NULL));
    CHECK_INTS("message received inside an ibarrier", r, n, val(1, i));
    t_free(r);
  } else if (rank == 1) {
    int32_t *s = dev_ints(n, mine);
    T_OK(gmpi_send(s, n, GMPI_INT32, 0, 31, comm));
    T_OK(gmpi_ibarrier(comm, &bar));
    t_free(s);
  } else {
    T_OK(gmpi_ibarrier(comm, &bar));
  }
  T_OK(gmpi_wait(&bar, NULL));
}

int main(int argc, char **argv) {
  comm = t_init(&argc, &argv);
  T_OK(gmpi_comm_rank(comm, &rank));
  T_OK(gmpi_comm_size(comm, &size));
  if (size > MAXR) return t_skip("nonblocking collectives", "more than 64 ranks");
  all_at_once();
  overlap();
  test_and_waitany();
  ibarrier_does_not_block();
  all_at_once(); /* the comm is intact afterwards */
  return t_finish("nonblocking collectives");
}
