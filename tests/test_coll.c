/* SPDX-License-Identifier: BSD-3-Clause */
/* The other collectives: bcast (root 0 and last), reduce (root 0 and last), allgather,
 * reduce_scatter, alltoall -- in place and out of place, values checked on every rank; and
 * floating AVG exact (sum rounded to the type, then divided) on all ranks and on 3 of them. */
#include "test_values.h"

static int rank, size;
static gmpi_comm_t comm;

/* Host buffer of n elements: block b (of len elements) holds the pattern of seed(b). */
#define SEED(r, b) ((r)*7 + (b))

static void *dev_copy(const void *host, size_t bytes) {
  void *dev = t_alloc(bytes);
  t_put(dev, host, bytes);
  return dev;
}

static void check_dev(const char *what, gmpi_dtype_t d, const void *dev, const void *want,
                      size_t n) {
  size_t bytes = n * gmpi_dtype_size(d);
  char *got = t_host(bytes);
  t_get(got, dev, bytes);
  t_check_buffer(what, d, got, want, n);
  free(got);
}

static void bcast(gmpi_dtype_t d, size_t n, int root) {
  size_t bytes = n * gmpi_dtype_size(d);
  char *want = t_host(bytes), *mine = t_host(bytes);
  T_TILE(d, want, n, t_input(d, GMPI_SUM, root, i));
  T_TILE(d, mine, n, t_input(d, GMPI_SUM, rank + 100, i)); /* junk off the root */
  void *buf = dev_copy(rank == root ? want : mine, bytes);
  T_OK(gmpi_bcast(buf, n, d, root, comm));
  check_dev(root == 0 ? "bcast root 0" : "bcast last root", d, buf, want, n);
  t_free(buf);
  free(want);
  free(mine);
}

static void reduce(gmpi_dtype_t d, gmpi_op_t op, size_t n, int root, int in_place) {
  size_t bytes = n * gmpi_dtype_size(d);
  char *in = t_host(bytes), *want = t_host(bytes);
  T_TILE(d, in, n, t_input(d, op, rank, i));
  T_TILE(d, want, n, t_reduced(d, op, size, i));
  void *send = dev_copy(in, bytes);
  void *recv = in_place && rank == root ? send : t_alloc(bytes);
  T_OK(gmpi_reduce(send, recv, n, d, op, root, comm));
  if (rank == root) check_dev(in_place ? "reduce in place" : "reduce", d, recv, want, n);
  if (recv != send) t_free(recv);
  t_free(send);
  free(in);
  free(want);
}

static void allgather(gmpi_dtype_t d, size_t n, int mode) {
  size_t es = gmpi_dtype_size(d), block = n * es;
  char *want = t_host(block * (size_t)size);
  for (int r = 0; r < size; r++)
    T_TILE(d, want + (size_t)r * block, n, t_input(d, GMPI_SUM, r, i));
  void *recv = t_alloc(block * (size_t)size), *send = NULL;
  if (mode == 0) { /* out of place */
    send = dev_copy(want + (size_t)rank * block, block);
    T_OK(gmpi_allgather(send, recv, n, d, comm));
    t_free(send);
  } else { /* in place: our block already at its slot; sendbuf = slot (NCCL) or recvbuf (MPI) */
    t_put((char *)recv + (size_t)rank * block, want + (size_t)rank * block, block);
    send = mode == 1 ? (char *)recv + (size_t)rank * block : recv;
    T_OK(gmpi_allgather(send, recv, n, d, comm));
  }
  check_dev(mode == 0   ? "allgather"
            : mode == 1 ? "allgather in place (slot)"
                        : "allgather in "
                          "place (MPI)",
            d, recv, want, n * (size_t)size);
  t_free(recv);
  free(want);
}

static void reduce_scatter(gmpi_dtype_t d, gmpi_op_t op, size_t n, int mode) {
  size_t es = gmpi_dtype_size(d), block = n * es, all = block * (size_t)size;
  char *in = t_host(all), *want = t_host(block);
  /* block b of rank r's input: element j of the whole vector is b*n + j */
  T_TILE(d, in, n * (size_t)size, t_input(d, op, rank, i));
  for (size_t j = 0; j < n; j++)
    t_store(d, want, j, t_reduced(d, op, size, (size_t)rank * n + j));
  void *send = dev_copy(in, all), *recv;
  const char *what;
  if (mode == 0) {
    recv = t_alloc(block);
    what = "reduce_scatter";
  } else if (mode == 1) {
    recv = (char *)send + (size_t)rank * block; /* NCCL's in place: result at our slot */
    what = "reduce_scatter in place (slot)";
  } else {
    recv = send; /* MPI's in place: result at the start */
    what = "reduce_scatter in place (MPI)";
  }
  T_OK(gmpi_reduce_scatter(send, recv, n, d, op, comm));
  check_dev(what, d, recv, want, n);
  if (mode == 0) t_free(recv);
  t_free(send);
  free(in);
  free(want);
}

static void alltoall(gmpi_dtype_t d, size_t n, int in_place) {
  size_t es = gmpi_dtype_size(d), block = n * es, all = block * (size_t)size;
  char *in = t_host(all), *want = t_host(all);
  for (int p = 0; p < size; p++) {
    T_TILE(d, in + (size_t)p * block, n, t_input(d, GMPI_SUM, SEED(rank, p), i));
    T_TILE(d, want + (size_t)p * block, n, t_input(d, GMPI_SUM, SEED(p, rank), i));
  }
  void *send = dev_copy(in, all), *recv = in_place ? send : t_alloc(all);
  T_OK(gmpi_alltoall(send, recv, n, d, comm));
  check_dev(in_place ? "alltoall in place" : "alltoall", d, recv, want, n * (size_t)size);
  if (!in_place) t_free(recv);
  t_free(send);
  free(in);
  free(want);
}

/* AVG means one thing on every backend: the sum rounded to the type, divided once (16-bit
 * floats in float32). Inputs rank+1 on n ranks give exactly (n+1)/2 (2.0 on 3 ranks), and 7 on
 * every rank gives 7. Scaling each input by 1/n before summing (NCCL's ncclAvg) misses such
 * values: 7 on 3 ranks, scaled by float16(1/3) and summed in float16, is 6.996. Checked bit for
 * bit on every rank, through allreduce (in and out of place), reduce and reduce_scatter; the
 * caller adds a 3-rank comm, a divisor that is not a power of two. */
static double avg_input(int pattern, int r) { return pattern ? 7.0 : r + 1.0; }

static t_num avg_expected(gmpi_dtype_t d, int n, int pattern) {
  double acc[2] = {0}, next[2]; /* room for any dtype's element, aligned */
  t_store(d, acc, 0, (t_num){avg_input(pattern, 0), 0});
  for (int r = 1; r < n; r++) { /* rank 0 + rank 1 + ..., rounded to the type at each step */
    t_store(d, next, 0, (t_num){t_load(d, acc, 0).re + avg_input(pattern, r), 0});
    memcpy(acc, next, sizeof(acc));
  }
  double sum = t_load(d, acc, 0).re;
  t_num q = {d == GMPI_FLOAT64 ? sum / n : (double)((float)sum / (float)n), 0};
  t_store(d, acc, 0, q);
  return t_load(d, acc, 0);
}

static void avg_exact_one(gmpi_comm_t c, gmpi_dtype_t d, size_t cnt, int pattern) {
  int n, me;
  T_OK(gmpi_comm_size(c, &n));
  T_OK(gmpi_comm_rank(c, &me));
  double exact = pattern ? 7.0 : (n + 1) / 2.0;
  t_num want = avg_expected(d, n, pattern);
  if (want.re != exact)
    T_FAIL_("%s avg reference on %d ranks computed as %g, want %g", gmpi_dtype_name(d), n, want.re,
            exact);
  size_t bytes = cnt * gmpi_dtype_size(d);
  char *in = t_host(bytes * (size_t)n), *exp = t_host(bytes);
  T_TILE(d, in, cnt * (size_t)n, ((t_num){avg_input(pattern, me), 0}));
  T_TILE(d, exp, cnt, want);
  char what[128];
  const char *of = pattern ? "7 everywhere" : "rank+1";
  void *send = dev_copy(in, bytes), *recv = t_alloc(bytes);
  snprintf(what, sizeof(what), "avg exact (%s): allreduce of %zu on %d ranks", of, cnt, n);
  T_OK(gmpi_allreduce(send, recv, cnt, d, GMPI_AVG, c));
  check_dev(what, d, recv, exp, cnt);
  snprintf(what, sizeof(what), "avg exact (%s): allreduce in place of %zu on %d ranks", of, cnt, n);
  T_OK(gmpi_allreduce(send, send, cnt, d, GMPI_AVG, c));
  check_dev(what, d, send, exp, cnt);
  t_put(send, in, bytes);
  snprintf(what, sizeof(what), "avg exact (%s): reduce of %zu on %d ranks", of, cnt, n);
  T_OK(gmpi_reduce(send, recv, cnt, d, GMPI_AVG, n - 1, c));
  if (me == n - 1) check_dev(what, d, recv, exp, cnt);
  t_free(send);
  send = dev_copy(in, bytes * (size_t)n);
  snprintf(what, sizeof(what), "avg exact (%s): reduce_scatter of %zu on %d ranks", of, cnt, n);
  T_OK(gmpi_reduce_scatter(send, recv, cnt, d, GMPI_AVG, c));
  check_dev(what, d, recv, exp, cnt);
  t_free(send);
  t_free(recv);
  free(in);
  free(exp);
}

static void avg_exact(gmpi_comm_t c) {
  const gmpi_dtype_t types[] = {GMPI_FLOAT16, GMPI_BFLOAT16, GMPI_FLOAT32, GMPI_FLOAT64};
  const size_t counts[] = {1, 1000, 100000};
  for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++)
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
      for (int pattern = 0; pattern < 2; pattern++)
        avg_exact_one(c, types[t], counts[k], pattern);
}

int main(int argc, char **argv) {
  comm = t_init(&argc, &argv);
  T_OK(gmpi_comm_rank(comm, &rank));
  T_OK(gmpi_comm_size(comm, &size));
  const size_t sizes[] = {0, 1, 7, 100000};
  const gmpi_dtype_t types[] = {GMPI_INT8,  GMPI_FLOAT16,   GMPI_FLOAT32,
                                GMPI_INT64, GMPI_COMPLEX64, GMPI_BOOL};
  for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
    size_t n = sizes[k];
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
      gmpi_dtype_t d = types[t];
      gmpi_op_t op = d == GMPI_BOOL ? GMPI_LXOR : d == GMPI_COMPLEX64 ? GMPI_PROD : GMPI_SUM;
      bcast(d, n, 0);
      bcast(d, n, size - 1);
      for (int in_place = 0; in_place < 2; in_place++) {
        reduce(d, op, n, 0, in_place);
        reduce(d, op, n, size - 1, in_place);
        alltoall(d, n, in_place);
      }
      for (int mode = 0; mode < 3; mode++) {
        allgather(d, n, mode);
        reduce_scatter(d, op, n, mode);
      }
    }
    /* AVG and MAX through the rooted and scattered reductions too. */
    reduce(GMPI_INT32, GMPI_AVG, n, size - 1, 0);
    reduce_scatter(GMPI_FLOAT64, GMPI_AVG, n, 0);
    reduce_scatter(GMPI_UINT16, GMPI_MAX, n, 1);
  }
  avg_exact(comm);
  if (size > 3) { /* 3 ranks: a divisor that is not a power of two */
    gmpi_comm_t three = NULL;
    T_OK(gmpi_comm_split(comm, rank < 3 ? 0 : GMPI_UNDEFINED, rank, &three));
    if (three) {
      avg_exact(three);
      T_OK(gmpi_finalize(&three));
    }
  }
  return t_finish("collectives");
}
