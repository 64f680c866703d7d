/* SPDX-License-Identifier: BSD-3-Clause */
/* Operations a GPU layer cannot hand to NCCL as they are, and so must stage through host
 * memory, on mem_alloc buffers:
 *   derived datatypes (MPI_Type_vector of doubles with a stride, MPI_Type_contiguous of ints,
 *   MPI_Type_indexed) in Send/Recv, sent as one type and received as another with the same
 *   type signature, and in Bcast from every root; the gaps a strided type skips must keep
 *   their old contents;
 *   MPI_MINLOC / MPI_MAXLOC on MPI_DOUBLE_INT and MPI_2INT (ties broken by the lower index) in
 *   Allreduce (in place too) and Reduce;
 *   a user-defined commutative MPI_Op (MPI_Op_create) in Allreduce and Reduce;
 *   MPI_Bsend from device data through a host buffer given to MPI_Buffer_attach (the data is
 *   overwritten right after MPI_Bsend returns: the message must still carry the old values);
 *   MPI_Ssend and MPI_Issend (which cannot complete before its receive is posted).
 * Runs at any size, 1 included. In a mixed-memory run Bcast/Allreduce/Reduce buffers are device
 * memory on every rank; point-to-point buffers (derived types, Bsend, Ssend) use the rank's
 * parity kind, so the staged types also cross memory kinds. */
#include "dropin_util.h"

#define STRIDE   5 /* vector: BLOCKLEN of every STRIDE doubles */
#define BLOCKLEN 2
#define SENT     (-1.0) /* what untouched receive elements hold */

static double dval(int src, size_t i) { return src * 1000003.0 + (double)i + 0.5; }

/* A host array of n doubles: dval(src, i), or SENT everywhere when src < 0. */
static double *doubles(int src, size_t n) {
  double *h = host_alloc(n * sizeof(double));
  for (size_t i = 0; i < n; i++)
    h[i] = src < 0 ? SENT : dval(src, i);
  return h;
}

/* Elements of a strided buffer of nblocks vector blocks, and whether element i is in a block. */
static size_t vec_span(size_t nblocks) { return (nblocks - 1) * STRIDE + BLOCKLEN; }
static int in_block(size_t i) { return i % STRIDE < BLOCKLEN; }

static MPI_Datatype make_vector(size_t nblocks) {
  MPI_Datatype t;
  D_MPI(MPI_Type_vector((int)nblocks, BLOCKLEN, STRIDE, MPI_DOUBLE, &t));
  D_MPI(MPI_Type_commit(&t));
  return t;
}

/* What a strided receive of nblocks blocks from src holds: the sender's block elements (the
 * sender's buffer is dval over its whole span), SENT in the gaps. */
static double *vec_expected(int src, size_t nblocks) {
  size_t span = vec_span(nblocks);
  double *h = doubles(-1, span);
  for (size_t i = 0; i < span; i++)
    if (in_block(i)) h[i] = dval(src, i);
  return h;
}

/* The block elements of a strided buffer from src, packed: what a contiguous receive holds. */
static double *vec_packed(int src, size_t nblocks) {
  double *h = host_alloc(nblocks * BLOCKLEN * sizeof(double));
  size_t k = 0;
  for (size_t i = 0; i < vec_span(nblocks); i++)
    if (in_block(i)) h[k++] = dval(src, i);
  return h;
}

/* Ring exchange with a send type and a receive type of the same signature: 0 = strided vector,
 * 1 = nblocks*BLOCKLEN contiguous doubles. */
static void test_vector_p2p(size_t nblocks, int send_contig, int recv_contig) {
  MPI_Datatype vec = make_vector(nblocks);
  size_t span = vec_span(nblocks), packed = nblocks * BLOCKLEN;
  double *out = send_contig ? vec_packed(d_rank(), nblocks) : doubles(d_rank(), span);
  size_t out_n = send_contig ? packed : span, in_n = recv_contig ? packed : span;
  void *sbuf = mem_dup_p2p(out, out_n * sizeof(double));
  double *init = doubles(-1, in_n);
  void *rbuf = mem_dup_p2p(init, in_n * sizeof(double));
  MPI_Request req;
  MPI_Status st;
  int count = -1;
  D_MPI(MPI_Irecv(rbuf, recv_contig ? (int)packed : 1, recv_contig ? MPI_DOUBLE : vec, d_prev(), 1,
                  MPI_COMM_WORLD, &req));
  D_MPI(MPI_Send(sbuf, send_contig ? (int)packed : 1, send_contig ? MPI_DOUBLE : vec, d_next(), 1,
                 MPI_COMM_WORLD));
  D_MPI(MPI_Wait(&req, &st));
  D_MPI(MPI_Get_count(&st, recv_contig ? MPI_DOUBLE : vec, &count));
  D_EQ_INT(count, recv_contig ? (int)packed : 1);
  /* The values a strided sender sends from index i are dval(src, i); a contiguous sender sent
   * the same values packed, so the expected receive depends only on the receive side. */
  double *want = recv_contig ? vec_packed(d_prev(), nblocks) : vec_expected(d_prev(), nblocks);
  double *got = mem_fetch(rbuf, in_n * sizeof(double));
  char what[96];
  snprintf(what, sizeof what, "%zu vector blocks sent %s, received %s", nblocks,
           send_contig ? "contiguous" : "strided", recv_contig ? "contiguous" : "strided");
  d_check_dbl(what, got, want, in_n);
  free(out);
  free(init);
  free(want);
  free(got);
  mem_free(sbuf);
  mem_free(rbuf);
  D_MPI(MPI_Type_free(&vec));
}

/* MPI_Type_contiguous(4, MPI_INT): k of them sent, 4k ints received, and the other way. */
static void test_contiguous_p2p(size_t k, int send_derived) {
  MPI_Datatype quad;
  D_MPI(MPI_Type_contiguous(4, MPI_INT, &quad));
  D_MPI(MPI_Type_commit(&quad));
  size_t n = 4 * k;
  int *h = host_alloc(n * sizeof(int)), *want = host_alloc(n * sizeof(int));
  for (size_t i = 0; i < n; i++) {
    h[i] = d_rank() * 1000000 + (int)(i % 999983);
    want[i] = d_prev() * 1000000 + (int)(i % 999983);
  }
  void *sbuf = mem_dup_p2p(h, n * sizeof(int)), *rbuf = mem_alloc_p2p(n * sizeof(int));
  MPI_Request req;
  D_MPI(MPI_Irecv(rbuf, send_derived ? (int)n : (int)k, send_derived ? MPI_INT : quad, d_prev(), 2,
                  MPI_COMM_WORLD, &req));
  D_MPI(MPI_Send(sbuf, send_derived ? (int)k : (int)n, send_derived ? quad : MPI_INT, d_next(), 2,
                 MPI_COMM_WORLD));
  D_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
  mem_get(h, rbuf, n * sizeof(int));
  d_check_int(send_derived ? "contiguous type sent, ints received"
                           : "ints sent, contiguous type "
                             "received",
              h, want, n);
  free(h);
  free(want);
  mem_free(sbuf);
  mem_free(rbuf);
  D_MPI(MPI_Type_free(&quad));
}

/* MPI_Type_indexed with irregular blocks, same type on both sides; untouched elements keep SENT. */
static void test_indexed_p2p(void) {
  int lens[3] = {1, 3, 2}, displs[3] = {0, 4, 9};
  size_t span = 11;
  MPI_Datatype idx;
  D_MPI(MPI_Type_indexed(3, lens, displs, MPI_DOUBLE, &idx));
  D_MPI(MPI_Type_commit(&idx));
  double *out = doubles(d_rank(), span), *init = doubles(-1, span), *want = doubles(-1, span);
  for (int b = 0; b < 3; b++)
    for (int j = 0; j < lens[b]; j++)
      want[displs[b] + j] = dval(d_prev(), (size_t)(displs[b] + j));
  void *sbuf = mem_dup_p2p(out, span * sizeof(double)),
       *rbuf = mem_dup_p2p(init, span * sizeof(double));
  MPI_Request req;
  D_MPI(MPI_Irecv(rbuf, 1, idx, d_prev(), 3, MPI_COMM_WORLD, &req));
  D_MPI(MPI_Send(sbuf, 1, idx, d_next(), 3, MPI_COMM_WORLD));
  D_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
  mem_get(init, rbuf, span * sizeof(double));
  d_check_dbl("indexed type", init, want, span);
  free(out);
  free(init);
  free(want);
  mem_free(sbuf);
  mem_free(rbuf);
  D_MPI(MPI_Type_free(&idx));
}

/* Bcast of one strided vector from root: non-roots' gaps keep SENT. */
static void test_vector_bcast(size_t nblocks, int root) {
  MPI_Datatype vec = make_vector(nblocks);
  size_t span = vec_span(nblocks);
  int me = d_rank();
  double *init = me == root ? doubles(root, span) : doubles(-1, span);
  void *buf = mem_dup(init, span * sizeof(double));
  D_MPI(MPI_Bcast(buf, 1, vec, root, MPI_COMM_WORLD));
  double *want = me == root ? doubles(root, span) : vec_expected(root, nblocks);
  mem_get(init, buf, span * sizeof(double));
  d_check_dbl("bcast of a vector type", init, want, span);
  free(init);
  free(want);
  mem_free(buf);
  D_MPI(MPI_Type_free(&vec));
}

/* Bcast of k MPI_Type_contiguous(3, MPI_DOUBLE) elements. */
static void test_contiguous_bcast(size_t k, int root) {
  MPI_Datatype triple;
  D_MPI(MPI_Type_contiguous(3, MPI_DOUBLE, &triple));
  D_MPI(MPI_Type_commit(&triple));
  size_t n = 3 * k;
  double *h = doubles(d_rank() == root ? root : -1, n), *want = doubles(root, n);
  void *buf = mem_dup(h, n * sizeof(double));
  D_MPI(MPI_Bcast(buf, (int)k, triple, root, MPI_COMM_WORLD));
  mem_get(h, buf, n * sizeof(double));
  d_check_dbl("bcast of a contiguous type", h, want, n);
  free(h);
  free(want);
  mem_free(buf);
  D_MPI(MPI_Type_free(&triple));
}

/* ---- MINLOC / MAXLOC -------------------------------------------------------------------- */

typedef struct {
  double v;
  int i;
} double_int; /* the layout of MPI_DOUBLE_INT */
typedef struct {
  int v, i;
} int_pair; /* MPI_2INT */

/* Rank r's value at element e: three levels only, so ranks tie often. */
static int loc_value(int r, size_t e) { return (int)((r * 7 + e * 3) % 3); }

/* The (value, rank) MPI must produce at element e: best value, lowest rank among ties. */
static void loc_expected(int maxloc, size_t e, int *value, int *rank) {
  *value = loc_value(0, e);
  *rank = 0;
  for (int r = 1; r < d_size(); r++) {
    int v = loc_value(r, e);
    if (maxloc ? v > *value : v < *value) *value = v, *rank = r;
  }
}

/* Allreduce (in place or not) or Reduce to root (root >= 0) with MINLOC/MAXLOC on MPI_DOUBLE_INT
 * (pairs = 0) or MPI_2INT (pairs = 1). The index field carries the rank. */
static void test_loc(int maxloc, int pairs, size_t n, int in_place, int root) {
  size_t es = pairs ? sizeof(int_pair) : sizeof(double_int);
  unsigned char *h = host_alloc(n * es);
  for (size_t e = 0; e < n; e++) {
    if (pairs)
      ((int_pair *)h)[e] = (int_pair){loc_value(d_rank(), e), d_rank()};
    else
      ((double_int *)h)[e] = (double_int){loc_value(d_rank(), e) + 0.25, d_rank()};
  }
  MPI_Datatype dt = pairs ? MPI_2INT : MPI_DOUBLE_INT;
  MPI_Op op = maxloc ? MPI_MAXLOC : MPI_MINLOC;
  void *data = mem_dup(h, n * es), *recv = in_place ? data : mem_alloc(n * es);
  int checks = root < 0 || d_rank() == root;
  if (root < 0)
    D_MPI(MPI_Allreduce(in_place ? MPI_IN_PLACE : data, recv, (int)n, dt, op, MPI_COMM_WORLD));
  else
    D_MPI(MPI_Reduce(data, recv, (int)n, dt, op, root, MPI_COMM_WORLD));
  if (checks) {
    mem_get(h, recv, n * es);
    size_t bad = 0, first = 0;
    for (size_t e = 0; e < n; e++) {
      int v, r;
      loc_expected(maxloc, e, &v, &r);
      int ok = pairs ? ((int_pair *)h)[e].v == v && ((int_pair *)h)[e].i == r
                     : ((double_int *)h)[e].v == v + 0.25 && ((double_int *)h)[e].i == r;
      if (!ok && bad++ == 0) first = e;
    }
    if (bad)
      D_FAIL("%s %s%s%s: %zu of %zu wrong, first at element %zu", maxloc ? "MAXLOC" : "MINLOC",
             pairs ? "MPI_2INT" : "MPI_DOUBLE_INT", root < 0 ? " allreduce" : " reduce",
             in_place ? " in place" : "", bad, n, first);
  }
  free(h);
  if (recv != data) mem_free(recv);
  mem_free(data);
}

/* ---- a user-defined op ------------------------------------------------------------------ */

static int user_op_bad_type; /* calls that were handed something other than MPI_INT */

/* a (+) b = a*b + a + b = (1+a)(1+b) - 1: commutative and associative, and not a predefined op,
 * so the reduction over ranks is prod(1 + v) - 1. */
static void combine(void *in, void *inout, int *len, MPI_Datatype *dt) {
  if (*dt != MPI_INT) {
    user_op_bad_type++;
    return;
  }
  const int *a = in;
  int *b = inout;
  for (int i = 0; i < *len; i++)
    b[i] = a[i] * b[i] + a[i] + b[i];
}

static int user_value(int r, size_t i) { return (int)((r + i) % 3); } /* 0, 1 or 2 */

static void test_user_op(MPI_Op op, size_t n, int in_place, int root) {
  int *h = host_alloc(n * sizeof(int)), *want = host_alloc(n * sizeof(int));
  for (size_t i = 0; i < n; i++) {
    h[i] = user_value(d_rank(), i);
    int prod = 1;
    for (int r = 0; r < d_size(); r++)
      prod *= 1 + user_value(r, i);
    want[i] = prod - 1;
  }
  void *data = mem_dup(h, n * sizeof(int)), *recv = in_place ? data : mem_alloc(n * sizeof(int));
  if (root < 0)
    D_MPI(MPI_Allreduce(in_place ? MPI_IN_PLACE : data, recv, (int)n, MPI_INT, op, MPI_COMM_WORLD));
  else
    D_MPI(MPI_Reduce(data, recv, (int)n, MPI_INT, op, root, MPI_COMM_WORLD));
  if (root < 0 || d_rank() == root) {
    mem_get(h, recv, n * sizeof(int));
    d_check_int(root < 0 ? "user op allreduce" : "user op reduce", h, want, n);
  }
  free(h);
  free(want);
  if (recv != data) mem_free(recv);
  mem_free(data);
}

/* ---- buffered and synchronous sends ----------------------------------------------------- */

/* MPI_Bsend of a small and a large message to next from a host attach buffer. The device data
 * is overwritten as soon as MPI_Bsend returns and the receives are only posted after a barrier:
 * the copy MPI made at MPI_Bsend time is what must arrive. */
static void test_bsend(void) {
  size_t n[2] = {2, ((size_t)1 << 20) / sizeof(double) + 3};
  int attach_bytes = 0;
  for (int k = 0; k < 2; k++) {
    int pack = 0;
    D_MPI(MPI_Pack_size((int)n[k], MPI_DOUBLE, MPI_COMM_WORLD, &pack));
    attach_bytes += pack + MPI_BSEND_OVERHEAD;
  }
  void *attach = host_alloc((size_t)attach_bytes);
  D_MPI(MPI_Buffer_attach(attach, attach_bytes));
  void *sbuf[2], *rbuf[2];
  for (int k = 0; k < 2; k++) {
    double *h = doubles(d_rank(), n[k]);
    sbuf[k] = mem_dup_p2p(h, n[k] * sizeof(double));
    rbuf[k] = mem_alloc_p2p(n[k] * sizeof(double));
    free(h);
    D_MPI(MPI_Bsend(sbuf[k], (int)n[k], MPI_DOUBLE, d_next(), 10 + k, MPI_COMM_WORLD));
    mem_set(sbuf[k], 0xee, n[k] * sizeof(double));
  }
  D_MPI(MPI_Barrier(MPI_COMM_WORLD));
  for (int k = 1; k >= 0; k--) { /* tags tell them apart: receive the large one first */
    MPI_Status st;
    D_MPI(MPI_Recv(rbuf[k], (int)n[k], MPI_DOUBLE, d_prev(), 10 + k, MPI_COMM_WORLD, &st));
    double *got = mem_fetch(rbuf[k], n[k] * sizeof(double)), *want = doubles(d_prev(), n[k]);
    d_check_dbl("bsend: data as it was at MPI_Bsend", got, want, n[k]);
    free(got);
    free(want);
  }
  void *detached = NULL;
  int detached_bytes = 0;
  D_MPI(MPI_Buffer_detach(&detached, &detached_bytes));
  D_TRUE(detached == attach);
  D_EQ_INT(detached_bytes, attach_bytes);
  free(attach);
  for (int k = 0; k < 2; k++) {
    mem_free(sbuf[k]);
    mem_free(rbuf[k]);
  }
}

/* MPI_Ssend to next with the receive already posted. */
static void test_ssend(size_t n) {
  double *h = doubles(d_rank(), n), *want = doubles(d_prev(), n);
  void *sbuf = mem_dup_p2p(h, n * sizeof(double)), *rbuf = mem_alloc_p2p(n * sizeof(double));
  MPI_Request req;
  D_MPI(MPI_Irecv(rbuf, (int)n, MPI_DOUBLE, d_prev(), 20, MPI_COMM_WORLD, &req));
  D_MPI(MPI_Ssend(sbuf, (int)n, MPI_DOUBLE, d_next(), 20, MPI_COMM_WORLD));
  D_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
  mem_get(h, rbuf, n * sizeof(double));
  d_check_dbl("ssend", h, want, n);
  free(h);
  free(want);
  mem_free(sbuf);
  mem_free(rbuf);
}

/* MPI_Issend to next, tested before the barrier that the receiver passes before posting its
 * receive: it cannot have completed. Then the receive is posted and both complete. */
static void test_issend(size_t n) {
  double *h = doubles(d_rank(), n), *want = doubles(d_prev(), n);
  void *sbuf = mem_dup_p2p(h, n * sizeof(double)), *rbuf = mem_alloc_p2p(n * sizeof(double));
  MPI_Request req;
  int flag = -1;
  D_MPI(MPI_Issend(sbuf, (int)n, MPI_DOUBLE, d_next(), 21, MPI_COMM_WORLD, &req));
  D_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
  D_EQ_INT(flag, 0); /* no matching receive exists yet anywhere */
  D_MPI(MPI_Barrier(MPI_COMM_WORLD));
  D_MPI(MPI_Recv(rbuf, (int)n, MPI_DOUBLE, d_prev(), 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  if (!flag) D_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
  mem_get(h, rbuf, n * sizeof(double));
  d_check_dbl("issend", h, want, n);
  free(h);
  free(want);
  mem_free(sbuf);
  mem_free(rbuf);
}

int main(int argc, char **argv) {
  d_init(&argc, &argv, "dropin_staged", D_SCOPE_COLL);
  const size_t nblocks[2] = {3, 70001}; /* the large one carries over 1 MiB */
  for (int s = 0; s < 2; s++)
    for (int sc = 0; sc < 2; sc++)
      for (int rc = 0; rc < 2; rc++)
        if (!(sc && rc)) test_vector_p2p(nblocks[s], sc, rc);
  for (int sd = 0; sd < 2; sd++) {
    test_contiguous_p2p(5, sd);
    test_contiguous_p2p(70001, sd);
  }
  test_indexed_p2p();
  for (int root = 0; root < d_size(); root++) {
    test_vector_bcast(nblocks[0], root);
    test_vector_bcast(nblocks[1], root);
    test_contiguous_bcast(7, root);
  }
  for (int maxloc = 0; maxloc < 2; maxloc++)
    for (int pairs = 0; pairs < 2; pairs++) {
      test_loc(maxloc, pairs, 5, 0, -1);
      test_loc(maxloc, pairs, 10007, 0, -1);
      test_loc(maxloc, pairs, 10007, 1, -1);
      test_loc(maxloc, pairs, 9, 0, d_size() - 1);
    }
  MPI_Op op;
  D_MPI(MPI_Op_create(combine, 1, &op));
  test_user_op(op, 6, 0, -1);
  test_user_op(op, 100003, 0, -1);
  test_user_op(op, 100003, 1, -1);
  test_user_op(op, 17, 0, 0);
  D_MPI(MPI_Op_free(&op));
  D_TRUE(op == MPI_OP_NULL);
  D_EQ_INT(user_op_bad_type, 0);
  test_bsend();
  test_ssend(3);
  test_ssend(((size_t)1 << 20) / sizeof(double) + 3);
  test_issend(3);
  test_issend(((size_t)1 << 20) / sizeof(double) + 3);
  return d_finish();
}
