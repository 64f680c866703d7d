/* SPDX-License-Identifier: BSD-3-Clause */
/* Derived datatypes through the layer, as MPICH's test/mpi found them failing (issue 30): a
 * message sent with one type and received with another of the same signature, in point to
 * point and in every data-moving collective, with ranks passing different types in one
 * collective (a vector at the root, contiguous doubles elsewhere: MPI asks only that the type
 * signatures match); a receive longer than the message ending inside an element; a type freed
 * while its receive is pending; zero-size types and zero counts; MPI_IN_PLACE with the ignored
 * count -1. Host buffers: these are the layer's packing paths (GMPI_INTERPOSE=all). Last, the
 * same mix of types in every data-moving collective on mem_alloc buffers (device memory in a
 * device run: types_differ_by_rank). Values are checked on every rank, holes included. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dropin_util.h"

enum { N = 12, STRIDE = 5, HOLE = -7 };

/* A strided column of N doubles (MPICH's vector test type). */
static MPI_Datatype column(void) {
  MPI_Datatype t;
  D_MPI(MPI_Type_vector(N, 1, STRIDE, MPI_DOUBLE, &t));
  D_MPI(MPI_Type_commit(&t));
  return t;
}

/* {int[4]; gap; double at 24 twice with a gap}: struct of a block and a vector (nested). */
static MPI_Datatype nested(void) {
  MPI_Datatype vec, t;
  D_MPI(MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &vec));
  int len[2] = {4, 1};
  MPI_Aint disp[2] = {0, 24};
  MPI_Datatype types[2] = {MPI_INT, vec};
  D_MPI(MPI_Type_create_struct(2, len, disp, types, &t));
  D_MPI(MPI_Type_commit(&t));
  D_MPI(MPI_Type_free(&vec));
  return t;
}

typedef struct {
  int i[4];
  int pad[2];
  double d[3]; /* d[0] and d[2] are the type's, d[1] a hole */
} rec_t;

/* ---- point to point ------------------------------------------------------------------------ */

/* rank r sends r's records to r+1 as the nested type; r+1 receives as a packed struct of the same
 * signature (ints then doubles, contiguous) and the other way round. */
static void p2p_nested(void) {
  MPI_Datatype t = nested(), flat;
  int len[2] = {4, 2};
  MPI_Aint disp[2] = {0, 16};
  MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
  D_MPI(MPI_Type_create_struct(2, len, disp, types, &flat)); /* 4 ints then 2 doubles, no gap */
  D_MPI(MPI_Type_commit(&flat));
  enum { K = 3 };
  rec_t out[K], in[K];
  char flat_out[K][32], flat_in[K][32];
  for (int k = 0; k < K; k++) {
    for (int j = 0; j < 4; j++)
      out[k].i[j] = 100 * d_rank() + 10 * k + j;
    out[k].d[0] = d_rank() + k + 0.5, out[k].d[1] = HOLE, out[k].d[2] = d_rank() - k - 0.25;
    memcpy(flat_out[k], out[k].i, 16);
    memcpy(flat_out[k] + 16, &out[k].d[0], 8);
    memcpy(flat_out[k] + 24, &out[k].d[2], 8);
  }
  MPI_Aint lb, ext;
  MPI_Type_get_extent(t, &lb, &ext);
  D_EQ_INT(ext, sizeof(rec_t));
  /* nested -> flat */
  MPI_Request q;
  memset(flat_in, 0, sizeof flat_in);
  D_MPI(MPI_Irecv(flat_in, K, flat, d_prev(), 1, MPI_COMM_WORLD, &q));
  D_MPI(MPI_Send(out, K, t, d_next(), 1, MPI_COMM_WORLD));
  MPI_Status st;
  D_MPI(MPI_Wait(&q, &st));
  D_STATUS(&st, flat, d_prev(), 1, K);
  for (int k = 0; k < K; k++) {
    int *ip = (int *)(void *)flat_in[k];
    double d0, d2;
    memcpy(&d0, flat_in[k] + 16, 8);
    memcpy(&d2, flat_in[k] + 24, 8);
    for (int j = 0; j < 4; j++)
      D_EQ_INT(ip[j], 100 * d_prev() + 10 * k + j);
    D_EQ_DBL(d0, d_prev() + k + 0.5);
    D_EQ_DBL(d2, d_prev() - k - 0.25);
  }
  /* flat -> nested: the holes keep the receiver's values */
  for (int k = 0; k < K; k++) {
    memset(&in[k], 0, sizeof in[k]);
    in[k].pad[0] = in[k].pad[1] = HOLE;
    in[k].d[1] = HOLE;
  }
  D_MPI(MPI_Sendrecv(flat_out, K, flat, d_next(), 2, in, K, t, d_prev(), 2, MPI_COMM_WORLD, &st));
  D_STATUS(&st, t, d_prev(), 2, K);
  for (int k = 0; k < K; k++) {
    for (int j = 0; j < 4; j++)
      D_EQ_INT(in[k].i[j], 100 * d_prev() + 10 * k + j);
    D_EQ_INT(in[k].pad[0], HOLE);
    D_EQ_DBL(in[k].d[0], d_prev() + k + 0.5);
    D_EQ_DBL(in[k].d[1], HOLE);
    D_EQ_DBL(in[k].d[2], d_prev() - k - 0.25);
  }
  D_MPI(MPI_Type_free(&t));
  D_MPI(MPI_Type_free(&flat));
}

/* A receive of 2 elements of a 3-int vector that gets 4 ints: one whole element and one int of
 * the second (MPI fills basic elements in order; MPI_Get_count is MPI_UNDEFINED, elements 4). */
static void p2p_partial_element(void) {
  MPI_Datatype v;
  D_MPI(MPI_Type_vector(3, 1, 2, MPI_INT, &v));
  D_MPI(MPI_Type_commit(&v)); /* extent 5 ints */
  int out[4], in[10];
  for (int j = 0; j < 4; j++)
    out[j] = 1000 * d_rank() + j;
  for (int j = 0; j < 10; j++)
    in[j] = HOLE;
  MPI_Status st;
  D_MPI(MPI_Sendrecv(out, 4, MPI_INT, d_next(), 3, in, 2, v, d_prev(), 3, MPI_COMM_WORLD, &st));
  int want[10] = {HOLE, HOLE, HOLE, HOLE, HOLE, HOLE, HOLE, HOLE, HOLE, HOLE};
  want[0] = 1000 * d_prev(), want[2] = want[0] + 1, want[4] = want[0] + 2; /* element 0 */
  want[5] = want[0] + 3;                                                   /* element 1, int 0 */
  d_check_int("partial element", in, want, 10);
  int count = 0, elements = 0;
  D_MPI(MPI_Get_count(&st, v, &count));
  D_MPI(MPI_Get_elements(&st, v, &elements));
  D_EQ_INT(count, MPI_UNDEFINED);
  D_EQ_INT(elements, 4);
  D_MPI(MPI_Type_free(&v));
}

/* The type of pending receives and sends freed before they complete (MPICH's dtype_send). */
static void p2p_type_freed_while_pending(void) {
  enum { LOOPS = 16 };
  int displs[2] = {0, 2};
  MPI_Datatype t;
  int out[3] = {d_rank(), HOLE, d_rank() + 1}, in[LOOPS][3];
  MPI_Request q[2 * LOOPS];
  D_MPI(MPI_Type_create_indexed_block(2, 1, displs, MPI_INT, &t));
  D_MPI(MPI_Type_commit(&t));
  for (int k = 0; k < LOOPS; k++) {
    in[k][0] = in[k][1] = in[k][2] = HOLE;
    D_MPI(MPI_Irecv(in[k], 1, t, d_prev(), 4, MPI_COMM_WORLD, &q[k]));
  }
  for (int k = 0; k < LOOPS; k++)
    D_MPI(MPI_Isend(out, 1, t, d_next(), 4, MPI_COMM_WORLD, &q[LOOPS + k]));
  D_MPI(MPI_Type_free(&t));
  D_MPI(MPI_Waitall(2 * LOOPS, q, MPI_STATUSES_IGNORE));
  for (int k = 0; k < LOOPS; k++) {
    int want[3] = {d_prev(), HOLE, d_prev() + 1};
    d_check_int("type freed", in[k], want, 3);
  }
}

/* A subarray of a 4x5 int array sent to a contiguous receive and back. */
static void p2p_subarray(void) {
  int sizes[2] = {4, 5}, sub[2] = {2, 3}, start[2] = {1, 1};
  MPI_Datatype t;
  D_MPI(MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_INT, &t));
  D_MPI(MPI_Type_commit(&t));
  int a[20], flat[6], back[20];
  for (int j = 0; j < 20; j++)
    a[j] = 50 * d_rank() + j, back[j] = HOLE;
  D_MPI(MPI_Sendrecv(a, 1, t, d_next(), 5, flat, 6, MPI_INT, d_prev(), 5, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE));
  int want[6] = {6, 7, 8, 11, 12, 13};
  for (int j = 0; j < 6; j++)
    want[j] += 50 * d_prev();
  d_check_int("subarray to contiguous", flat, want, 6);
  D_MPI(MPI_Sendrecv(flat, 6, MPI_INT, d_next(), 6, back, 1, t, d_prev(), 6, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE));
  int want2[20];
  for (int j = 0; j < 20; j++)
    want2[j] = HOLE;
  for (int j = 0; j < 6; j++) /* flat came from d_prev, which received it from d_prev - 1 */
    want2[(1 + j / 3) * 5 + 1 + j % 3] =
        50 * ((d_rank() + 2 * d_size() - 2) % d_size()) + 6 + (j / 3) * 5 + j % 3;
  d_check_int("contiguous to subarray", back, want2, 20);
  D_MPI(MPI_Type_free(&t));
}

/* ---- collectives ----------------------------------------------------------------------------- */

static double *doubles(size_t n, double v) {
  double *d = host_alloc(n * sizeof(double));
  for (size_t i = 0; i < n; i++)
    d[i] = v;
  return d;
}

/* Gather: senders pass a column (odd ranks) or N contiguous doubles (even ranks); the root
 * receives contiguous doubles, then columns. Blocking and nonblocking, every root. */
static void gather_mixed(void) {
  MPI_Datatype col = column();
  int n = d_size();
  double *src = doubles(N * STRIDE, HOLE), *flat = doubles(N, 0);
  for (int i = 0; i < N; i++)
    src[i * STRIDE] = flat[i] = d_rank() * N + i;
  for (int root = 0; root < n; root++) {
    for (int nb = 0; nb < 2; nb++) {
      double *got = doubles((size_t)n * N, HOLE);
      const void *sb = d_rank() % 2 ? (const void *)src : flat;
      MPI_Datatype stype = d_rank() % 2 ? col : MPI_DOUBLE;
      int scount = d_rank() % 2 ? 1 : N;
      if (nb) {
        MPI_Request q;
        D_MPI(MPI_Igather(sb, scount, stype, got, N, MPI_DOUBLE, root, MPI_COMM_WORLD, &q));
        D_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
      } else {
        D_MPI(MPI_Gather(sb, scount, stype, got, N, MPI_DOUBLE, root, MPI_COMM_WORLD));
      }
      if (d_rank() == root)
        for (int i = 0; i < n * N; i++)
          D_EQ_DBL(got[i], i);
      free(got);
    }
    /* the root receives columns (resized to N*STRIDE doubles so that they do not overlap) */
    MPI_Datatype rcol;
    D_MPI(MPI_Type_create_resized(col, 0, (MPI_Aint)(N * STRIDE * sizeof(double)), &rcol));
    D_MPI(MPI_Type_commit(&rcol));
    double *got = doubles((size_t)n * N * STRIDE, HOLE);
    D_MPI(MPI_Gather(flat, N, MPI_DOUBLE, got, 1, rcol, root, MPI_COMM_WORLD));
    if (d_rank() == root)
      for (int i = 0; i < n * N * STRIDE; i++)
        D_EQ_DBL(got[i], i % STRIDE ? HOLE : i / STRIDE);
    free(got);
    D_MPI(MPI_Type_free(&rcol));
  }
  free(src);
  free(flat);
  D_MPI(MPI_Type_free(&col));
}

/* Scatter: the root sends contiguous doubles and receives its block into a column (MPICH's
 * scatter3); then the root sends columns with MPI_IN_PLACE and recvcount -1 (scatter2). */
static void scatter_mixed(void) {
  MPI_Datatype col = column();
  int n = d_size();
  double *all = doubles((size_t)n * N, 0);
  for (int i = 0; i < n * N; i++)
    all[i] = i;
  for (int root = 0; root < n; root++) {
    double *out = doubles(N * STRIDE, HOLE);
    if (d_rank() == root)
      D_MPI(MPI_Scatter(all, N, MPI_DOUBLE, out, 1, col, root, MPI_COMM_WORLD));
    else
      D_MPI(MPI_Scatter(NULL, -1, MPI_DATATYPE_NULL, out, N, MPI_DOUBLE, root, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) {
      if (d_rank() == root) {
        D_EQ_DBL(out[i * STRIDE], root * N + i);
        if (i + 1 < N) D_EQ_DBL(out[i * STRIDE + 1], HOLE);
      } else {
        D_EQ_DBL(out[i], d_rank() * N + i);
      }
    }
    free(out);
    /* columns of a strided matrix, resized so that rank r's column starts at double r */
    MPI_Datatype rcol;
    D_MPI(MPI_Type_create_resized(col, 0, sizeof(double), &rcol));
    D_MPI(MPI_Type_commit(&rcol));
    double *mat = doubles((size_t)N * STRIDE + (size_t)n, HOLE);
    for (int i = 0; i < N * STRIDE + n; i++)
      mat[i] = i;
    double *mine = doubles(N, HOLE);
    if (d_rank() == root) {
      D_MPI(MPI_Scatter(mat, 1, rcol, MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD));
    } else {
      D_MPI(MPI_Scatter(NULL, -1, MPI_DATATYPE_NULL, mine, N, MPI_DOUBLE, root, MPI_COMM_WORLD));
      for (int i = 0; i < N; i++)
        D_EQ_DBL(mine[i], d_rank() + i * STRIDE);
    }
    free(mat);
    free(mine);
    D_MPI(MPI_Type_free(&rcol));
  }
  free(all);
  D_MPI(MPI_Type_free(&col));
}

/* Bcast: the root sends a column, the others receive contiguous doubles; then the nested type
 * on every rank, nonblocking, with the type freed before the wait. */
static void bcast_mixed(void) {
  MPI_Datatype col = column();
  for (int root = 0; root < d_size(); root++) {
    double *buf = doubles(N * STRIDE, HOLE);
    if (d_rank() == root) {
      for (int i = 0; i < N; i++)
        buf[i * STRIDE] = 3 * i + root;
      D_MPI(MPI_Bcast(buf, 1, col, root, MPI_COMM_WORLD));
    } else {
      D_MPI(MPI_Bcast(buf, N, MPI_DOUBLE, root, MPI_COMM_WORLD));
      for (int i = 0; i < N; i++)
        D_EQ_DBL(buf[i], 3 * i + root);
      D_EQ_DBL(buf[N], HOLE);
    }
    free(buf);
    MPI_Datatype t = nested();
    rec_t r[2];
    for (int k = 0; k < 2; k++) {
      for (int j = 0; j < 4; j++)
        r[k].i[j] = d_rank() == root ? 7 * k + j + root : HOLE;
      r[k].d[0] = d_rank() == root ? k + 0.5 : HOLE;
      r[k].d[1] = HOLE;
      r[k].d[2] = d_rank() == root ? -k - 0.5 : HOLE;
    }
    MPI_Request q;
    D_MPI(MPI_Ibcast(r, 2, t, root, MPI_COMM_WORLD, &q));
    D_MPI(MPI_Type_free(&t));
    D_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    for (int k = 0; k < 2; k++) {
      for (int j = 0; j < 4; j++)
        D_EQ_INT(r[k].i[j], 7 * k + j + root);
      D_EQ_DBL(r[k].d[0], k + 0.5);
      D_EQ_DBL(r[k].d[1], HOLE);
      D_EQ_DBL(r[k].d[2], -k - 0.5);
    }
  }
  D_MPI(MPI_Type_free(&col));
}

/* Allgather of columns into contiguous doubles; alltoall of resized columns both ways. */
static void allgather_alltoall_mixed(void) {
  MPI_Datatype col = column();
  int n = d_size();
  double *src = doubles(N * STRIDE, HOLE), *got = doubles((size_t)n * N, HOLE);
  for (int i = 0; i < N; i++)
    src[i * STRIDE] = d_rank() * N + i;
  D_MPI(MPI_Allgather(src, 1, col, got, N, MPI_DOUBLE, MPI_COMM_WORLD));
  for (int i = 0; i < n * N; i++)
    D_EQ_DBL(got[i], i);
  /* alltoall: block j of rank r is the column j of an n-column matrix (resized to one double) */
  MPI_Datatype c2, rc2;
  D_MPI(MPI_Type_vector(N, 1, n, MPI_DOUBLE, &c2));
  D_MPI(MPI_Type_create_resized(c2, 0, sizeof(double), &rc2));
  D_MPI(MPI_Type_commit(&rc2));
  double *mat = doubles((size_t)N * n, 0), *flat = doubles((size_t)N * n, HOLE);
  for (int i = 0; i < N * n; i++)
    mat[i] = 1000 * d_rank() + i;
  D_MPI(MPI_Alltoall(mat, 1, rc2, flat, N, MPI_DOUBLE, MPI_COMM_WORLD));
  for (int p = 0; p < n; p++) /* from p: p's column d_rank() */
    for (int i = 0; i < N; i++)
      D_EQ_DBL(flat[p * N + i], 1000 * p + i * n + d_rank());
  double *back = doubles((size_t)N * n, HOLE);
  D_MPI(MPI_Alltoall(flat, N, MPI_DOUBLE, back, 1, rc2, MPI_COMM_WORLD)); /* the transpose back */
  for (int i = 0; i < N * n; i++)
    D_EQ_DBL(back[i], 1000 * d_rank() + i);
  free(src), free(got), free(mat), free(flat), free(back);
  D_MPI(MPI_Type_free(&c2));
  D_MPI(MPI_Type_free(&rc2));
  D_MPI(MPI_Type_free(&col));
}

/* The v-variants: allgatherv in place with the ignored sendcount -1 (MPICH's allgatherv2) and
 * zero counts for odd ranks; gatherv of columns; scatterv into columns. */
static void v_variants(void) {
  int n = d_size();
  int *counts = malloc((size_t)n * sizeof(int)), *displs = malloc((size_t)n * sizeof(int));
  int total = 0;
  for (int p = 0; p < n; p++) {
    counts[p] = p % 2 ? 0 : N;
    displs[p] = total + 1; /* a gap before each block */
    total += counts[p] + 1;
  }
  double *all = doubles((size_t)total + 1, HOLE);
  if (counts[d_rank()])
    for (int i = 0; i < N; i++)
      all[displs[d_rank()] + i] = d_rank() * N + i;
  D_MPI(MPI_Allgatherv(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, all, counts, displs, MPI_DOUBLE,
                       MPI_COMM_WORLD));
  for (int p = 0; p < n; p++) {
    D_EQ_DBL(all[displs[p] - 1], HOLE);
    for (int i = 0; i < counts[p]; i++)
      D_EQ_DBL(all[displs[p] + i], p * N + i);
  }
  MPI_Datatype col = column();
  double *src = doubles(N * STRIDE, HOLE);
  for (int i = 0; i < N; i++)
    src[i * STRIDE] = d_rank() * N + i;
  for (int root = 0; root < n; root++) {
    double *got = doubles((size_t)total + 1, HOLE);
    D_MPI(MPI_Gatherv(src, counts[d_rank()] ? 1 : 0, col, got, counts, displs, MPI_DOUBLE, root,
                      MPI_COMM_WORLD));
    if (d_rank() == root)
      for (int p = 0; p < n; p++) {
        D_EQ_DBL(got[displs[p] - 1], HOLE);
        for (int i = 0; i < counts[p]; i++)
          D_EQ_DBL(got[displs[p] + i], p * N + i);
      }
    double *mine = doubles(N * STRIDE, HOLE);
    D_MPI(MPI_Scatterv(got, counts, displs, MPI_DOUBLE, mine, counts[d_rank()] ? 1 : 0, col, root,
                       MPI_COMM_WORLD));
    for (int i = 0; i < N * STRIDE; i++) /* the root's got is the gathered array */
      D_EQ_DBL(mine[i], counts[d_rank()] && i % STRIDE == 0 ? d_rank() * N + i / STRIDE : HOLE);
    free(got);
    free(mine);
  }
  free(src), free(all), free(counts), free(displs);
  D_MPI(MPI_Type_free(&col));
}

/* MPICH's alltoallw_zeros: a zero-size type with count 1 against MPI_INT with count 0, in
 * alltoallv and alltoallw, out of place and in place. Nothing moves; nothing hangs. */
static void zero_size_types(void) {
  int n = d_size();
  MPI_Datatype zero;
  D_MPI(MPI_Type_contiguous(0, MPI_INT, &zero));
  D_MPI(MPI_Type_commit(&zero));
  int *ones = malloc((size_t)n * sizeof(int)), *zeros = calloc((size_t)n, sizeof(int));
  MPI_Datatype *zt = malloc((size_t)n * sizeof(MPI_Datatype)),
               *it = malloc((size_t)n * sizeof(MPI_Datatype));
  for (int p = 0; p < n; p++)
    ones[p] = 1, zt[p] = zero, it[p] = MPI_INT;
  int sbuf = 5, rbuf = HOLE;
  D_MPI(MPI_Alltoallv(&sbuf, ones, zeros, zero, &rbuf, zeros, zeros, MPI_INT, MPI_COMM_WORLD));
  D_MPI(MPI_Alltoallv(&sbuf, zeros, zeros, MPI_INT, &rbuf, ones, zeros, zero, MPI_COMM_WORLD));
  if (d_rank() % 2)
    D_MPI(MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, &rbuf, zeros, zeros, MPI_INT,
                        MPI_COMM_WORLD));
  else
    D_MPI(MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, &rbuf, ones, zeros, zero,
                        MPI_COMM_WORLD));
  D_MPI(MPI_Alltoallw(&sbuf, ones, zeros, zt, &rbuf, zeros, zeros, it, MPI_COMM_WORLD));
  D_MPI(MPI_Alltoallw(&sbuf, zeros, zeros, it, &rbuf, ones, zeros, zt, MPI_COMM_WORLD));
  D_EQ_INT(rbuf, HOLE);
  D_EQ_INT(sbuf, 5);
  /* zero counts of a derived type in a gather and a bcast */
  MPI_Datatype col = column();
  D_MPI(MPI_Bcast(&rbuf, 0, col, 0, MPI_COMM_WORLD));
  D_MPI(MPI_Gather(&sbuf, 0, col, &rbuf, 0, MPI_INT, 0, MPI_COMM_WORLD));
  D_EQ_INT(rbuf, HOLE);
  D_MPI(MPI_Type_free(&col));
  D_MPI(MPI_Type_free(&zero));
  free(ones), free(zeros), free(zt), free(it);
}

/* ---- one collective, contiguous ints on some ranks and a derived type on others ----------- */

/* How one rank lays out a block of k ints: count elements of type, blocks extent ints apart, int
 * j of a block at layout_pos(j); the ints between are holes. shape 0: k MPI_INTs; 1: a vector of
 * k ints at stride 2, resized to 2k (a hole after each); 2: pairs at 1, 4, 7... (a hole first, so
 * the true lb is not 0), resized to 3k/2 + 1. */
typedef struct {
  MPI_Datatype type;
  int count, extent, shape;
} layout_t;

enum { PRIOR = -9 }; /* what a buffer held before the call, holes included */

static int layout_pos(const layout_t *l, int j) {
  return l->shape == 0 ? j : l->shape == 1 ? 2 * j : 1 + 3 * (j / 2) + j % 2;
}

static layout_t layout_make(int shape, int k) {
  layout_t l = {MPI_INT, k, k, shape};
  if (shape == 0) return l;
  MPI_Datatype t;
  if (shape == 1) {
    D_MPI(MPI_Type_vector(k, 1, 2, MPI_INT, &t));
    l.extent = 2 * k;
  } else {
    int *displs = host_alloc((size_t)(k / 2) * sizeof(int));
    for (int i = 0; i < k / 2; i++)
      displs[i] = 1 + 3 * i;
    D_MPI(MPI_Type_create_indexed_block(k / 2, 2, displs, MPI_INT, &t));
    free(displs);
    l.extent = 3 * k / 2 + 1;
  }
  D_MPI(MPI_Type_create_resized(t, 0, (MPI_Aint)l.extent * (MPI_Aint)sizeof(int), &l.type));
  D_MPI(MPI_Type_commit(&l.type));
  D_MPI(MPI_Type_free(&t));
  l.count = 1;
  return l;
}

/* Which values blocks carry: block b holds int j of block blk + blk_step*b of rank
 * src + src_step*b. */
typedef struct {
  int src, src_step, blk, blk_step;
} fill_t;

static int dt_val(int src, int blk, int j) { return 100000 * (src + 1) + 1000 * blk + j; }

/* A host image of nblocks blocks of k ints laid out as l: the values f says (none: f NULL), PRIOR
 * everywhere else. */
static int *image(const layout_t *l, int k, int nblocks, const fill_t *f) {
  size_t n = (size_t)nblocks * (size_t)l->extent;
  int *h = host_alloc(n * sizeof(int));
  for (size_t i = 0; i < n; i++)
    h[i] = PRIOR;
  for (int b = 0; f && b < nblocks; b++)
    for (int j = 0; j < k; j++)
      h[(size_t)b * (size_t)l->extent + (size_t)layout_pos(l, j)] =
          dt_val(f->src + f->src_step * b, f->blk + f->blk_step * b, j);
  return h;
}

/* An MPI buffer (device memory in a device run) holding nblocks blocks of img. */
static void *dt_buf(const layout_t *l, const int *img, int nblocks) {
  return mem_dup(img, (size_t)nblocks * (size_t)l->extent * sizeof(int));
}

/* buf holds want: every value received, every hole as it was. */
static void dt_expect(const char *what, const layout_t *l, const void *buf, const int *want,
                      int nblocks) {
  size_t n = (size_t)nblocks * (size_t)l->extent;
  int *got = mem_fetch(buf, n * sizeof(int));
  d_check_int(what, got, want, n);
  free(got);
}

static void dt_bcast(const layout_t *l, int k, int root, int nonblocking) {
  fill_t from_root = {root, 0, 0, 0};
  int *want = image(l, k, 1, &from_root), *prior = image(l, k, 1, NULL);
  void *buf = dt_buf(l, d_rank() == root ? want : prior, 1);
  if (nonblocking) {
    MPI_Request q = MPI_REQUEST_NULL; /* a failed start leaves nothing to wait for */
    D_MPI(MPI_Ibcast(buf, l->count, l->type, root, MPI_COMM_WORLD, &q));
    D_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
  } else {
    D_MPI(MPI_Bcast(buf, l->count, l->type, root, MPI_COMM_WORLD));
  }
  dt_expect(
      d_label("%s k=%d shape=%d root=%d", nonblocking ? "ibcast" : "bcast", k, l->shape, root), l,
      buf, want, 1);
  mem_free(buf), free(want), free(prior);
}

static void dt_gather(const layout_t *l, int k, int root) {
  int n = d_size(), me = d_rank();
  fill_t mine = {me, 0, 0, 0}, from_each = {0, 1, 0, 0};
  int *send = image(l, k, 1, &mine), *want = image(l, k, n, &from_each);
  int *prior = image(l, k, n, NULL);
  void *sb = dt_buf(l, send, 1), *rb = me == root ? dt_buf(l, prior, n) : NULL;
  D_MPI(MPI_Gather(sb, l->count, l->type, rb, l->count, l->type, root, MPI_COMM_WORLD));
  if (me == root)
    dt_expect(d_label("gather k=%d shape=%d root=%d", k, l->shape, root), l, rb, want, n);
  dt_expect(d_label("gather's send k=%d shape=%d", k, l->shape), l, sb, send, 1);
  mem_free(sb), mem_free(rb), free(send), free(want), free(prior);
}

static void dt_scatter(const layout_t *l, int k, int root) {
  int n = d_size(), me = d_rank();
  fill_t to_each = {root, 0, 0, 1}, mine = {root, 0, me, 0};
  int *send = image(l, k, n, &to_each), *want = image(l, k, 1, &mine);
  int *prior = image(l, k, 1, NULL);
  void *sb = me == root ? dt_buf(l, send, n) : NULL, *rb = dt_buf(l, prior, 1);
  D_MPI(MPI_Scatter(sb, l->count, l->type, rb, l->count, l->type, root, MPI_COMM_WORLD));
  dt_expect(d_label("scatter k=%d shape=%d root=%d", k, l->shape, root), l, rb, want, 1);
  if (me == root) dt_expect(d_label("scatter's send k=%d shape=%d", k, l->shape), l, sb, send, n);
  mem_free(sb), mem_free(rb), free(send), free(want), free(prior);
}

/* Allgather (one block sent) or alltoall (n blocks sent, block p to rank p): n blocks arrive,
 * block p from rank p. */
static void dt_to_all(const layout_t *l, int k, int alltoall) {
  int n = d_size(), me = d_rank(), nsend = alltoall ? n : 1;
  fill_t mine = {me, 0, 0, alltoall}, from_each = {0, 1, alltoall ? me : 0, 0};
  int *send = image(l, k, nsend, &mine), *want = image(l, k, n, &from_each);
  int *prior = image(l, k, n, NULL);
  void *sb = dt_buf(l, send, nsend), *rb = dt_buf(l, prior, n);
  if (alltoall)
    D_MPI(MPI_Alltoall(sb, l->count, l->type, rb, l->count, l->type, MPI_COMM_WORLD));
  else
    D_MPI(MPI_Allgather(sb, l->count, l->type, rb, l->count, l->type, MPI_COMM_WORLD));
  const char *name = alltoall ? "alltoall" : "allgather";
  dt_expect(d_label("%s k=%d shape=%d", name, k, l->shape), l, rb, want, n);
  dt_expect(d_label("%s's send k=%d shape=%d", name, k, l->shape), l, sb, send, nsend);
  mem_free(sb), mem_free(rb), free(send), free(want), free(prior);
}

/* MPICH's dtpools bcast draws each rank's type from a pool seeded with its rank: in one collective
 * some ranks pass contiguous ints and others a vector of the same signature. On device memory
 * those ranks took different engines (gmpi, and MPI on staged copies) and waited until gmpi's
 * watchdog. Here ranks of one parity (flip swaps them, so a single rank passes both kinds) pass
 * shape's derived layout, the others contiguous ints; every buffer is mem_alloc'ed (device
 * memory in a device run), every value and hole checked on every rank. k = 65530: dtpools'
 * count, past NCCL's small-message sizes. */
static void types_differ_by_rank(void) {
  int ks[2] = {6, 65530};
  for (int ki = 0; ki < 2; ki++)
    for (int flip = 0; flip < 2; flip++)
      for (int shape = 1; shape <= 2; shape++) {
        int k = ks[ki];
        layout_t l = layout_make((d_rank() + flip) % 2 ? shape : 0, k);
        for (int root = 0; root < d_size(); root++) {
          dt_bcast(&l, k, root, 0);
          dt_bcast(&l, k, root, 1);
          dt_gather(&l, k, root);
          dt_scatter(&l, k, root);
        }
        dt_to_all(&l, k, 0);
        dt_to_all(&l, k, 1);
        if (l.type != MPI_INT) D_MPI(MPI_Type_free(&l.type));
      }
}

int main(int argc, char **argv) {
  /* collective scope: in a mixed-memory run the mem_alloc buffers are device memory everywhere */
  d_init(&argc, &argv, "dropin_dtype", D_SCOPE_COLL);
  p2p_nested();
  p2p_partial_element();
  p2p_type_freed_while_pending();
  p2p_subarray();
  gather_mixed();
  scatter_mixed();
  bcast_mixed();
  allgather_alltoall_mixed();
  v_variants();
  zero_size_types();
  types_differ_by_rank();
  return d_finish();
}
