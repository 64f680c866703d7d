/* SPDX-License-Identifier: BSD-3-Clause */
/* Probe: a message is described before it is received -- source, tag and its count in the
 * sender's elements -- and the next matching receive gets exactly that message. Every rank
 * sends to its right neighbour messages whose length and dtype only the sender knows; the
 * receiver probes, allocates from the count, receives, and checks every element. Also: iprobe
 * finds nothing before anything is sent; ANY_SOURCE/ANY_TAG probes; PROC_NULL; self messages;
 * GMPI_TAGS_FULL (every MPI tag, probes count bytes, sizes not matched); bad arguments. Buffers
 * live where the backend moves data (device memory on cuda). */
#include "test_util.h"

static int rank, size;
static gmpi_comm_t comm;

static const gmpi_dtype_t dtypes[] = {GMPI_INT8, GMPI_UINT16, GMPI_INT32, GMPI_FLOAT64,
                                      GMPI_COMPLEX128};
#define N_DTYPES ((int)(sizeof(dtypes) / sizeof(dtypes[0])))

/* Message m from rank r: its dtype, its length (some eager, some not, one empty), its bytes. */
static gmpi_dtype_t msg_dtype(int m) { return dtypes[m % N_DTYPES]; }
static size_t msg_count(int r, int m) {
  static const size_t lens[] = {0, 3, 1000, 5000, 70000};
  return lens[(r + m) % 5];
}
static unsigned char msg_byte(int r, int m, size_t i) {
  return (unsigned char)(r * 31 + m * 7 + i);
}

static void *filled(int r, int m, size_t bytes) {
  unsigned char *h = t_host(bytes);
  for (size_t i = 0; i < bytes; i++)
    h[i] = msg_byte(r, m, i);
  void *d = t_alloc(bytes);
  t_put(d, h, bytes);
  free(h);
  return d;
}

static void check_bytes(const char *what, const void *dev, size_t bytes, int r, int m) {
  unsigned char *h = t_host(bytes);
  t_get(h, dev, bytes);
  for (size_t i = 0; i < bytes; i++)
    if (h[i] != msg_byte(r, m, i)) {
      T_FAIL_("%s: byte %zu is %u, want %u", what, i, h[i], msg_byte(r, m, i));
      break;
    }
  free(h);
}

/* Rank r sends messages 0..M-1 with tag 10+m to r+1; r+1 probes for a specific or any tag and
 * receives what it was told about, in order. */
static void probe_then_receive(int any_tag, int any_source) {
  enum { M = 6 };
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  gmpi_request_t sends[M];
  void *bufs[M];
  for (int m = 0; m < M; m++) {
    size_t bytes = msg_count(rank, m) * gmpi_dtype_size(msg_dtype(m));
    bufs[m] = filled(rank, m, bytes);
    T_OK(gmpi_isend(bufs[m], msg_count(rank, m), msg_dtype(m), right, 10 + m, comm, &sends[m]));
  }
  for (int m = 0; m < M; m++) {
    gmpi_msg_status_t st = {-9, -9, 0};
    int src = any_source ? GMPI_ANY_SOURCE : left, tag = any_tag ? GMPI_ANY_TAG : 10 + m;
    T_OK(gmpi_probe(src, tag, comm, &st));
    T_EQ_INT(st.source, left);
    T_EQ_INT(st.tag, 10 + m); /* non-overtaking: the earliest message first */
    T_EQ_SIZE(st.count, msg_count(left, m));
    gmpi_dtype_t d = msg_dtype(m);
    size_t bytes = st.count * gmpi_dtype_size(d);
    void *r = t_alloc(bytes);
    gmpi_msg_status_t got;
    T_OK(gmpi_recv(r, st.count, d, st.source, st.tag, comm, &got));
    T_EQ_SIZE(got.count, st.count);
    char what[80];
    snprintf(what, sizeof(what), "message %d (%s, %zu elements)", m, gmpi_dtype_name(d), st.count);
    check_bytes(what, r, bytes, left, m);
    t_free(r);
  }
  T_OK(gmpi_waitall(M, sends, NULL));
  for (int m = 0; m < M; m++)
    t_free(bufs[m]);
  T_OK(gmpi_barrier(comm));
}

/* Before anything is sent, iprobe says no (and writes nothing); after, yes. */
static void iprobe_flag(void) {
  int flag = -1;
  gmpi_msg_status_t st = {-9, -9, 99};
  T_OK(gmpi_iprobe(GMPI_ANY_SOURCE, 77, comm, &flag, &st));
  T_EQ_INT(flag, 0);
  T_EQ_INT(st.source, -9);
  T_OK(gmpi_barrier(comm));
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int32_t v = 1000 + rank, w = 0;
  int32_t *dv = t_alloc(4), *dw = t_alloc(4);
  t_put(dv, &v, 4);
  gmpi_request_t s;
  T_OK(gmpi_isend(dv, 1, GMPI_INT32, right, 77, comm, &s));
  for (flag = 0; !flag;)
    T_OK(gmpi_iprobe(left, 77, comm, &flag, &st));
  T_EQ_INT(st.source, left);
  T_EQ_INT(st.tag, 77);
  T_EQ_SIZE(st.count, 1);
  T_OK(gmpi_recv(dw, 1, GMPI_INT32, left, 77, comm, NULL));
  t_get(&w, dw, 4);
  T_EQ_INT(w, 1000 + left);
  T_OK(gmpi_wait(&s, NULL));
  t_free(dv);
  t_free(dw);
  T_OK(gmpi_barrier(comm));
}

/* A message to oneself is probed too; PROC_NULL finds the empty message at once. */
static void self_and_proc_null(void) {
  double v[3] = {1.5, 2.5, 3.5}, w[3] = {0};
  double *dv = t_alloc(sizeof(v)), *dw = t_alloc(sizeof(w));
  t_put(dv, v, sizeof(v));
  T_OK(gmpi_send(dv, 3, GMPI_FLOAT64, rank, 5, comm)); /* eager: completes unreceived */
  gmpi_msg_status_t st;
  T_OK(gmpi_probe(rank, GMPI_ANY_TAG, comm, &st));
  T_EQ_INT(st.source, rank);
  T_EQ_INT(st.tag, 5);
  T_EQ_SIZE(st.count, 3);
  T_OK(gmpi_recv(dw, st.count, GMPI_FLOAT64, rank, 5, comm, NULL));
  t_get(w, dw, sizeof(w));
  T_TRUE(w[0] == 1.5 && w[2] == 3.5);
  int flag = 0;
  T_OK(gmpi_iprobe(GMPI_PROC_NULL, 3, comm, &flag, &st));
  T_EQ_INT(flag, 1);
  T_EQ_INT(st.source, GMPI_PROC_NULL);
  T_EQ_INT(st.tag, GMPI_ANY_TAG);
  T_EQ_SIZE(st.count, 0);
  T_OK(gmpi_probe(GMPI_PROC_NULL, GMPI_ANY_TAG, comm, &st));
  t_free(dv);
  t_free(dw);
}

/* Bad arguments are refused by name. */
static void bad_arguments(void) {
  gmpi_msg_status_t st;
  int flag;
  T_STATUS(gmpi_probe(size, 0, comm, &st), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("source");
  T_STATUS(gmpi_probe(0, -5, comm, &st), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("tag");
  T_STATUS(gmpi_iprobe(0, 0, comm, NULL, &st), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("flag");
  T_STATUS(gmpi_iprobe(0, 0, NULL, &flag, &st), GMPI_ERR_INVALID_ARG);
}

/* A dup set to GMPI_TAGS_FULL takes tags up to MPI_TAG_UB (the default stops at MPI_TAG_UB / 8);
 * a dup of it inherits the setting; setting it after point to point is GMPI_ERR_STATE. Bytes
 * travel (as the drop-in's do), so every engine's probe counts 4. */
static void full_tags(void) {
  int *mpi_ub = NULL, flag = 0, typed = 0, full = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &mpi_ub, &flag);
  T_TRUE(flag);
  T_OK(gmpi_comm_tag_ub(comm, &typed));
  T_EQ_INT(typed, *mpi_ub / 8);
  gmpi_comm_t d = NULL, dd = NULL;
  T_OK(gmpi_comm_dup(comm, &d));
  T_EQ_INT(gmpi_comm_set_tags(d, (gmpi_tags_t)7), GMPI_ERR_INVALID_ARG);
  T_OK(gmpi_comm_set_tags(d, GMPI_TAGS_FULL));
  T_OK(gmpi_comm_tag_ub(d, &full));
  T_EQ_INT(full, *mpi_ub);
  T_OK(gmpi_comm_dup(d, &dd));
  T_OK(gmpi_comm_tag_ub(dd, &full));
  T_EQ_INT(full, *mpi_ub);
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int32_t v = 1000 + rank;
  void *s = t_alloc(4), *r = t_alloc(4);
  t_put(s, &v, 4);
  gmpi_comm_t comms[2] = {d, dd};
  for (int c = 0; c < 2; c++) {
    gmpi_request_t q = NULL;
    gmpi_msg_status_t st;
    T_OK(gmpi_isend(s, 4, GMPI_UINT8, right, *mpi_ub, comms[c], &q));
    T_OK(gmpi_probe(left, *mpi_ub, comms[c], &st));
    T_EQ_INT(st.tag, *mpi_ub);
    T_EQ_SIZE(st.count, 4);
    T_OK(gmpi_recv(r, 4, GMPI_UINT8, left, GMPI_ANY_TAG, comms[c], &st));
    T_EQ_INT(st.tag, *mpi_ub);
    T_EQ_SIZE(st.count, 4);
    int32_t got = 0;
    t_get(&got, r, 4);
    T_EQ_INT(got, 1000 + left);
    T_OK(gmpi_wait(&q, NULL));
  }
  /* Without a status MPI is not asked the length (the drop-in's MPI_STATUS_IGNORE): the message
   * still lands, and elements of more than one byte are still checked whole (host engine). */
  gmpi_request_t q = NULL;
  T_OK(gmpi_isend(s, 4, GMPI_UINT8, right, 7, d, &q));
  T_OK(gmpi_recv(r, 4, GMPI_UINT8, left, 7, d, NULL));
  int32_t got = 0;
  t_get(&got, r, 4);
  T_EQ_INT(got, 1000 + left);
  T_OK(gmpi_wait(&q, NULL));
  gmpi_backend_t backend = GMPI_BACKEND_CPU;
  T_OK(gmpi_comm_backend(comm, &backend));
  if (t_host_buffers() || backend == GMPI_BACKEND_CPU) {
    T_OK(gmpi_isend(s, 3, GMPI_UINT8, right, 8, d, &q));
    T_STATUS(gmpi_recv(r, 1, GMPI_INT32, left, 8, d, NULL), GMPI_ERR_MISMATCH);
    const char *check = getenv("GMPI_CHECK"); /* GMPI_CHECK names the sender's type instead */
    T_ERROR_MENTIONS(check && strcmp(check, "1") == 0 ? "uint8" : "whole number");
    T_OK(gmpi_wait(&q, NULL));
  }
  T_EQ_INT(gmpi_comm_set_tags(d, GMPI_TAGS_TYPED), GMPI_ERR_STATE);
  T_EQ_INT(gmpi_isend(s, 1, GMPI_INT32, right, *mpi_ub, comm, &(gmpi_request_t){NULL}),
           GMPI_ERR_INVALID_ARG); /* the default comm keeps its range */
  t_free(s);
  t_free(r);
  T_OK(gmpi_comm_free(&dd));
  T_OK(gmpi_comm_free(&d));
}

int main(int argc, char **argv) {
  comm = t_init(&argc, &argv);
  T_OK(gmpi_comm_rank(comm, &rank));
  T_OK(gmpi_comm_size(comm, &size));
  iprobe_flag();
  probe_then_receive(0, 0);
  probe_then_receive(1, 0);
  probe_then_receive(0, 1);
  probe_then_receive(1, 1);
  self_and_proc_null();
  full_tags();
  bad_arguments();
  return t_finish("probe");
}
