/* SPDX-License-Identifier: BSD-3-Clause */
/* GMPI_CHECK=1 (set by ctest): ranks that call different collectives get GMPI_ERR_MISMATCH on
 * every rank, naming the ranks and fields, instead of a hang or wrong data; nothing moved, so
 * the comm stays usable. Point-to-point messages are checked too: another dtype is a
 * mismatch, a longer message a truncation, and the channel stays consistent afterwards -- on
 * every path a message takes (eager, large without a copy, each half of a sendrecv). */
#include "test_util.h"

static int rank, size;
static gmpi_comm_t comm;

static void expect_mismatch(gmpi_status_t st, const char *what, const char *field) {
  if (st != GMPI_ERR_MISMATCH)
    T_FAIL_("%s: got %s, expected GMPI_ERR_MISMATCH (%s)", what, t_status_name(st),
            gmpi_last_error());
  else if (!strstr(gmpi_last_error(), field))
    T_FAIL_("%s: the detail does not name '%s': %s", what, field, gmpi_last_error());
}

/* After a mismatch, the comm works and buffers were not touched. */
static void still_usable(void) {
  long long one = 1, sum = 0;
  T_OK(gmpi_allreduce(&one, &sum, 1, GMPI_INT64, GMPI_SUM, comm));
  T_EQ_INT(sum, size);
}

static void collectives(void) {
  int *a = t_alloc(64 * sizeof(int)), *b = t_alloc(64 * sizeof(int));
  int sentinel[64], got[64];
  for (int i = 0; i < 64; i++)
    sentinel[i] = -i - 1;
  t_put(b, sentinel, sizeof(sentinel));
  expect_mismatch(gmpi_allreduce(a, b, rank == 0 ? 10 : 20, GMPI_INT32, GMPI_SUM, comm),
                  "allreduce count", "count");
  t_get(got, b, sizeof(got));
  T_EQ_INT(got[5], -6); /* nothing moved */
  still_usable();
  expect_mismatch(gmpi_bcast(a, 4, GMPI_INT32, rank == 0 ? 0 : size - 1, comm), "bcast root",
                  "root");
  still_usable();
  expect_mismatch(gmpi_allreduce(a, b, 4, GMPI_INT32, rank == 0 ? GMPI_MAX : GMPI_MIN, comm),
                  "allreduce op", "op");
  still_usable();
  expect_mismatch(gmpi_allreduce(a, b, 4, rank == 0 ? GMPI_INT32 : GMPI_FLOAT32, GMPI_SUM, comm),
                  "allreduce dtype", "dtype");
  still_usable();
  gmpi_status_t st = rank == 0 ? gmpi_barrier(comm) : gmpi_bcast(a, 4, GMPI_INT32, 0, comm);
  expect_mismatch(st, "barrier vs bcast", "operation");
  T_ERROR_MENTIONS("rank 0");
  still_usable();
  /* Rank 0 refuses its own call (its root is out of range): it still meets the others' check,
   * so they hear of it at once rather than wait for it until GMPI_TIMEOUT, and every rank
   * still counts the same collectives afterwards. */
  st = gmpi_bcast(a, 4, GMPI_INT32, rank == 0 ? size + 5 : 0, comm);
  if (rank == 0) {
    T_STATUS(st, GMPI_ERR_INVALID_ARG);
    T_ERROR_MENTIONS("root");
  } else {
    expect_mismatch(st, "bcast refused by rank 0", "refused");
    T_ERROR_MENTIONS("rank 0");
  }
  still_usable();
  t_free(a);
  t_free(b);
}

/* Device memory on rank 0, host memory elsewhere: each engine would wait for the ranks in the
 * other, so the check names the memory kind, and nothing moves (cuda runs only: elsewhere all
 * memory is host memory). A nonblocking collective's check ends only after its data started
 * on each engine, where nothing could end it but GMPI_TIMEOUT: not tried here. */
static void memory_kinds(void) {
  gmpi_backend_t backend = GMPI_BACKEND_CPU;
  T_OK(gmpi_comm_backend(comm, &backend));
  if (backend != GMPI_BACKEND_CUDA || t_host_buffers()) return;
  int sentinel[8], got[8];
  for (int i = 0; i < 8; i++)
    sentinel[i] = -1;
  int *send = rank == 0 ? t_alloc(sizeof(got)) : t_host(sizeof(got));
  int *recv = rank == 0 ? t_alloc(sizeof(got)) : t_host(sizeof(got));
  t_put(recv, sentinel, sizeof(sentinel));
  expect_mismatch(gmpi_allreduce(send, recv, 8, GMPI_INT32, GMPI_SUM, comm),
                  "allreduce, device memory on rank 0 only", "memory kind");
  T_ERROR_MENTIONS("device memory");
  T_ERROR_MENTIONS("host memory");
  t_get(got, recv, sizeof(got));
  T_EQ_INT(got[3], -1); /* nothing moved */
  still_usable();
  if (rank == 0) {
    t_free(send);
    t_free(recv);
  } else {
    free(send);
    free(recv);
  }
}

/* Rank 0 refuses its ibcast (root out of range, or no request handle): the others, whose
 * ibcast had started, hear of it at their wait as a mismatch naming rank 0, not as
 * GMPI_TIMEOUT. Their comm is failed then (their data part may have started), and rank 0's
 * with it, so that all free it alike: each case on a duplicate of its own. */
static void refused_nonblocking(int no_request) {
  gmpi_comm_t d = NULL;
  T_OK(gmpi_comm_dup(comm, &d));
  int *a = t_alloc(4 * sizeof(int));
  gmpi_request_t req = NULL;
  gmpi_status_t st;
  if (rank == 0) {
    st = no_request ? gmpi_ibcast(a, 4, GMPI_INT32, 0, d, NULL)
                    : gmpi_ibcast(a, 4, GMPI_INT32, size + 5, d, &req);
    T_STATUS(st, GMPI_ERR_INVALID_ARG);
    T_ERROR_MENTIONS(no_request ? "request" : "root");
  } else {
    st = gmpi_ibcast(a, 4, GMPI_INT32, 0, d, &req);
    if (st == GMPI_SUCCESS) st = gmpi_wait(&req, NULL);
    expect_mismatch(st, "ibcast refused by rank 0", "refused");
    T_ERROR_MENTIONS("rank 0");
  }
  T_STATUS(gmpi_barrier(d), GMPI_ERR_STATE); /* failed on every rank, refusing one included */
  T_OK(gmpi_comm_free(&d));
  t_free(a);
}

/* A v-variant refused for its missing counts: the refused record has none to digest. */
static void refused_without_counts(void) {
  int one = rank, all[64];
  size_t counts[64], displs[64];
  for (int r = 0; r < size && r < 64; r++) {
    counts[r] = 1;
    displs[r] = (size_t)r;
  }
  int *send = t_alloc(sizeof(int)), *recv = t_alloc(64 * sizeof(int));
  t_put(send, &one, sizeof(one));
  gmpi_status_t st =
      gmpi_allgatherv(send, 1, recv, rank == 0 ? NULL : counts, displs, GMPI_INT32, comm);
  if (rank == 0) {
    T_STATUS(st, GMPI_ERR_INVALID_ARG);
    T_ERROR_MENTIONS("recvcounts");
  } else {
    expect_mismatch(st, "allgatherv refused by rank 0", "refused");
  }
  still_usable();
  T_OK(gmpi_allgatherv(send, 1, recv, counts, displs, GMPI_INT32, comm));
  t_get(all, recv, (size_t)size * sizeof(int));
  for (int r = 0; r < size; r++)
    T_EQ_INT(all[r], r);
  t_free(send);
  t_free(recv);
}

static void point_to_point(void) {
  int peer = (rank ^ 1) < size ? rank ^ 1 : rank;
  int *s = t_alloc(16 * sizeof(int)), *r = t_alloc(16 * sizeof(int));
  int vals[16], got[16];
  for (int i = 0; i < 16; i++)
    vals[i] = rank * 100 + i;
  t_put(s, vals, sizeof(vals));
  gmpi_request_t req[3] = {NULL, NULL, NULL};
  int sender = rank % 2 == 0 || peer == rank, receiver = rank % 2 == 1 || peer == rank;
  if (sender) {
    T_OK(gmpi_isend(s, 4, GMPI_INT32, peer, 1, comm, &req[0]));  /* dtype mismatch */
    T_OK(gmpi_isend(s, 8, GMPI_INT32, peer, 2, comm, &req[1]));  /* too long */
    T_OK(gmpi_isend(s, 16, GMPI_INT32, peer, 3, comm, &req[2])); /* fine */
  }
  if (receiver) {
    T_STATUS(gmpi_recv(r, 4, GMPI_FLOAT32, peer, 1, comm, NULL), GMPI_ERR_MISMATCH);
    T_ERROR_MENTIONS("float32");
    T_STATUS(gmpi_recv(r, 4, GMPI_INT32, peer, 2, comm, NULL), GMPI_ERR_TRUNCATE);
    gmpi_msg_status_t st;
    T_OK(gmpi_recv(r, 16, GMPI_INT32, peer, 3, comm, &st));
    T_EQ_SIZE(st.count, 16);
    t_get(got, r, sizeof(got));
    for (int i = 0; i < 16; i++)
      T_EQ_INT(got[i], peer * 100 + i);
  }
  T_OK(gmpi_waitall(3, req, NULL));
  t_free(s);
  t_free(r);
}

/* n int32 from the peer arrived in r (values rank * 100 + i on the sender). */
static void expect_values(const int *r, size_t n) {
  int *got = malloc(n * sizeof(int));
  t_get(got, r, n * sizeof(int));
  int peer = (rank ^ 1) < size ? rank ^ 1 : rank, wrong = 0;
  for (size_t i = 0; i < n && !wrong; i++)
    if (got[i] != peer * 100 + (int)i) {
      T_EQ_INT(got[i], peer * 100 + (int)i);
      wrong = 1;
    }
  free(got);
}

/* Messages too large for a copy (32 KiB: the checked native path sends the caller's buffer
 * behind its header) and both halves of a sendrecv, small and large. */
static void large_and_sendrecv(void) {
  enum { N = 8192 };
  int peer = (rank ^ 1) < size ? rank ^ 1 : rank;
  int *s = t_alloc(N * sizeof(int)), *r = t_alloc(N * sizeof(int));
  int *vals = malloc(N * sizeof(int));
  for (int i = 0; i < N; i++)
    vals[i] = rank * 100 + i;
  t_put(s, vals, N * sizeof(int));
  int sender = rank % 2 == 0 || peer == rank, receiver = rank % 2 == 1 || peer == rank;
  gmpi_request_t req[2] = {NULL, NULL};
  if (sender) {
    T_OK(gmpi_isend(s, N, GMPI_INT32, peer, 4, comm, &req[0]));
    T_OK(gmpi_isend(s, N, GMPI_INT32, peer, 5, comm, &req[1]));
  }
  if (receiver) {
    T_STATUS(gmpi_recv(r, N, GMPI_FLOAT32, peer, 4, comm, NULL), GMPI_ERR_MISMATCH);
    T_ERROR_MENTIONS("float32");
    gmpi_msg_status_t st;
    T_OK(gmpi_recv(r, N, GMPI_INT32, peer, 5, comm, &st));
    T_EQ_SIZE(st.count, N);
    expect_values(r, N);
  }
  T_OK(gmpi_waitall(2, req, NULL));
  for (size_t n = 8; n <= N; n *= 1024) {
    T_STATUS(gmpi_sendrecv(s, n, GMPI_INT32, peer, 6, r, n, GMPI_FLOAT32, peer, 6, comm, NULL),
             GMPI_ERR_MISMATCH);
    T_ERROR_MENTIONS("int32");
    gmpi_msg_status_t st;
    T_OK(gmpi_sendrecv(s, n, GMPI_INT32, peer, 7, r, n, GMPI_INT32, peer, 7, comm, &st));
    T_EQ_SIZE(st.count, n);
    expect_values(r, n);
  }
  free(vals);
  t_free(s);
  t_free(r);
}

/* Mismatches and truncation across the two ways a checked message travels (copied below
 * 16 KiB, a struct type above): a mismatch writes nothing (small), another element size is a
 * mismatch too (and the pair stays usable), a small message fits a large receive, a large one
 * is truncated by a small receive, and a sendrecv reports truncation and another element size
 * on both ranks. */
static void sizes_and_truncation(void) {
  enum { N = 8192, SMALL = 1024 };
  int peer = (rank ^ 1) < size ? rank ^ 1 : rank;
  int *s = t_alloc(N * sizeof(int)), *r = t_alloc(N * sizeof(int));
  int *vals = malloc(N * sizeof(int)), *got = malloc(N * sizeof(int));
  for (int i = 0; i < N; i++)
    vals[i] = rank * 100 + i;
  t_put(s, vals, N * sizeof(int));
  int sender = rank % 2 == 0 || peer == rank, receiver = rank % 2 == 1 || peer == rank;
  gmpi_request_t req[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
  if (sender) {
    T_OK(gmpi_isend(s, 4, GMPI_INT32, peer, 20, comm, &req[0]));   /* into float32 */
    T_OK(gmpi_isend(s, 4, GMPI_FLOAT32, peer, 21, comm, &req[1])); /* into float64 */
    T_OK(gmpi_isend(s, 4, GMPI_INT32, peer, 22, comm, &req[2]));   /* the pair goes on */
    T_OK(gmpi_isend(s, 8, GMPI_INT32, peer, 23, comm, &req[3]));   /* into N */
    T_OK(gmpi_isend(s, N, GMPI_INT32, peer, 24, comm, &req[4]));   /* into SMALL */
    T_OK(gmpi_isend(s, N, GMPI_FLOAT32, peer, 28, comm, &req[5])); /* large, into float64 */
  }
  if (receiver) {
    int *sentinel = malloc(N * sizeof(int));
    for (int i = 0; i < N; i++)
      sentinel[i] = -1;
    t_put(r, sentinel, N * sizeof(int));
    T_STATUS(gmpi_recv(r, 4, GMPI_FLOAT32, peer, 20, comm, NULL), GMPI_ERR_MISMATCH);
    t_get(got, r, 4 * sizeof(int));
    T_EQ_INT(got[0], -1); /* nothing written */
    T_STATUS(gmpi_recv(r, 4, GMPI_FLOAT64, peer, 21, comm, NULL), GMPI_ERR_MISMATCH);
    T_STATUS(gmpi_recv(r, N / 2, GMPI_FLOAT64, peer, 28, comm, NULL), GMPI_ERR_MISMATCH);
    int waiting = 1;
    T_OK(gmpi_iprobe(peer, 21, comm, &waiting, NULL));
    T_EQ_INT(waiting, 0); /* the mismatched message was taken, not left queued */
    T_OK(gmpi_iprobe(peer, 28, comm, &waiting, NULL));
    T_EQ_INT(waiting, 0);
    gmpi_msg_status_t st;
    T_OK(gmpi_recv(r, 4, GMPI_INT32, peer, 22, comm, &st));
    T_EQ_SIZE(st.count, 4);
    expect_values(r, 4);
    T_OK(gmpi_recv(r, N, GMPI_INT32, peer, 23, comm, &st));
    T_EQ_SIZE(st.count, 8);
    expect_values(r, 8);
    T_STATUS(gmpi_recv(r, SMALL, GMPI_INT32, peer, 24, comm, NULL), GMPI_ERR_TRUNCATE);
    free(sentinel);
  }
  T_OK(gmpi_waitall(6, req, NULL)); /* the large mismatched send too: its message was taken */
  T_STATUS(gmpi_sendrecv(s, 16, GMPI_INT32, peer, 25, r, 8, GMPI_INT32, peer, 25, comm, NULL),
           GMPI_ERR_TRUNCATE);
  T_STATUS(gmpi_sendrecv(s, 4, GMPI_FLOAT32, peer, 27, r, 4, GMPI_FLOAT64, peer, 27, comm, NULL),
           GMPI_ERR_MISMATCH);
  T_ERROR_MENTIONS("float64");
  gmpi_msg_status_t st;
  T_OK(gmpi_sendrecv(s, 8, GMPI_INT32, peer, 26, r, 8, GMPI_INT32, peer, 26, comm, &st));
  T_EQ_SIZE(st.count, 8);
  expect_values(r, 8);
  free(vals);
  free(got);
  t_free(s);
  t_free(r);
}

int main(int argc, char **argv) {
  comm = t_init(&argc, &argv);
  gmpi_comm_rank(comm, &rank);
  gmpi_comm_size(comm, &size);
  if (size > 1) { /* one rank cannot disagree with itself */
    collectives();
    memory_kinds();
  }
  point_to_point();
  large_and_sendrecv();
  sizes_and_truncation();
  if (size > 1 && size <= 64) {
    refused_without_counts();
    refused_nonblocking(0);
    refused_nonblocking(1);
  }
  return t_finish("GMPI_CHECK");
}
