/* SPDX-License-Identifier: BSD-3-Clause */
/* Plans: every operation kind and a mixed sequence (allreduce + halo exchange + bcast) give
 * exactly the eager results; 1000 replays with changing inputs; each mismatch kind detected on
 * every rank, after which the comm runs eagerly and can record again; life-cycle errors. */
#include "test_values.h"

static int rank, size;
static gmpi_comm_t comm;

#define N 1000

/* Device (or host) buffers and their host mirrors. */
typedef struct {
  float *in, *out, *halo_l, *halo_r, *b;
} bufs_t;

static void bufs_alloc(bufs_t *b) {
  b->in = t_alloc(N * sizeof(float) * (size_t)size);
  b->out = t_alloc(N * sizeof(float) * (size_t)size);
  b->halo_l = t_alloc(N * sizeof(float));
  b->halo_r = t_alloc(N * sizeof(float));
  b->b = t_alloc(N * sizeof(float));
}
static void bufs_free(bufs_t *b) {
  t_free(b->in);
  t_free(b->out);
  t_free(b->halo_l);
  t_free(b->halo_r);
  t_free(b->b);
}

/* Inputs for iteration it: small integers, so every result is exact. */
static void fill(bufs_t *b, int it) {
  size_t n = (size_t)N * (size_t)(size > 2 ? size : 2); /* b's values are h[N..2N) */
  float *h = t_host(n * sizeof(float));
  for (size_t i = 0; i < n; i++)
    h[i] = (float)((rank * 7 + (int)i + it * 3) % 13);
  t_put(b->in, h, N * sizeof(float) * (size_t)size);
  t_put(b->out, h, N * sizeof(float) * (size_t)size); /* what the v-variants' gaps keep */
  t_put(b->b, h + N, N * sizeof(float));
  free(h);
}

/* The mixed sequence: allreduce, halo exchange with the ring neighbours, bcast. */
static void mixed_sequence(bufs_t *b) {
  int left = (rank + size - 1) % size, right = (rank + 1) % size;
  gmpi_request_t r[4];
  T_OK(gmpi_allreduce(b->in, b->out, N, GMPI_FLOAT32, GMPI_SUM, comm));
  T_OK(gmpi_irecv(b->halo_l, N, GMPI_FLOAT32, left, 1, comm, &r[0]));
  T_OK(gmpi_irecv(b->halo_r, N, GMPI_FLOAT32, right, 2, comm, &r[1]));
  T_OK(gmpi_isend(b->in, N, GMPI_FLOAT32, right, 1, comm, &r[2]));
  T_OK(gmpi_isend(b->in, N, GMPI_FLOAT32, left, 2, comm, &r[3]));
  T_OK(gmpi_waitall(4, r, NULL));
  T_OK(gmpi_bcast(b->b, N, GMPI_FLOAT32, size - 1, comm));
}

/* Everything the sequence produced, concatenated on the host. */
static float *snapshot(bufs_t *b) {
  float *h = t_host(4 * N * sizeof(float));
  t_get(h, b->out, N * sizeof(float));
  t_get(h + N, b->halo_l, N * sizeof(float));
  t_get(h + 2 * N, b->halo_r, N * sizeof(float));
  t_get(h + 3 * N, b->b, N * sizeof(float));
  return h;
}

static void check_same(const char *what, const float *got, const float *want, size_t n) {
  t_check_buffer(what, GMPI_FLOAT32, got, want, n);
}

static void mixed_plan_equals_eager(void) {
  bufs_t e, p;
  bufs_alloc(&e);
  bufs_alloc(&p);
  gmpi_plan_t plan = NULL;
  T_OK(gmpi_plan_begin(comm));
  mixed_sequence(&p); /* recorded, not run */
  T_OK(gmpi_plan_end(comm, &plan));
  T_TRUE(plan != NULL);
  for (int it = 0; it < 1000; it++) { /* 1000 replays, inputs changing each time */
    fill(&e, it);
    fill(&p, it);
    mixed_sequence(&e);
    T_OK(gmpi_plan_run(plan));
    if (it % 97 == 0 || it == 999) {
      float *got = snapshot(&p), *want = snapshot(&e);
      check_same("plan replay vs eager", got, want, 4 * N);
      free(got);
      free(want);
    }
  }
  if (rank == 0) T_OK(gmpi_plan_dump(plan, stdout));
  T_OK(gmpi_plan_free(&plan));
  T_EQ_PTR(plan, NULL);
  bufs_free(&e);
  bufs_free(&p);
}

/* One plan per collective kind (and blocking send/recv, wildcards), against eager. */
typedef void (*op_fn)(bufs_t *b);
static void op_reduce(bufs_t *b) {
  T_OK(gmpi_reduce(b->in, b->out, N, GMPI_FLOAT32, GMPI_MAX, size - 1, comm));
}
static void op_allgather(bufs_t *b) { T_OK(gmpi_allgather(b->in, b->out, N, GMPI_FLOAT32, comm)); }
static void op_reduce_scatter(bufs_t *b) {
  T_OK(gmpi_reduce_scatter(b->in, b->out, N, GMPI_FLOAT32, GMPI_SUM, comm));
}
static void op_alltoall(bufs_t *b) { T_OK(gmpi_alltoall(b->in, b->out, N, GMPI_FLOAT32, comm)); }
/* Uneven blocks for the v-variants: rank r's block has vcount(r) elements at r*N. */
static size_t vcounts[64], vdispls[64];
static void v_layout(void) {
  for (int r = 0; r < size && r < 64; r++) {
    vcounts[r] = (size_t)(N / 2 + r * 37) % N;
    vdispls[r] = (size_t)r * N;
  }
}
static void op_gather(bufs_t *b) {
  T_OK(gmpi_gather(b->in, b->out, N, GMPI_FLOAT32, size - 1, comm));
}
static void op_scatter(bufs_t *b) { T_OK(gmpi_scatter(b->in, b->out, N, GMPI_FLOAT32, 0, comm)); }
static void op_gatherv(bufs_t *b) {
  T_OK(gmpi_gatherv(b->in, vcounts[rank], b->out, vcounts, vdispls, GMPI_FLOAT32, size - 1, comm));
}
static void op_allgatherv(bufs_t *b) {
  T_OK(gmpi_allgatherv(b->in, vcounts[rank], b->out, vcounts, vdispls, GMPI_FLOAT32, comm));
}
static void op_alltoallv(bufs_t *b) { /* rank r sends vcount(r) to everyone */
  size_t sc[64], rc[64];
  for (int p = 0; p < size; p++) {
    sc[p] = vcounts[rank];
    rc[p] = vcounts[p];
  }
  T_OK(gmpi_alltoallv(b->in, sc, vdispls, b->out, rc, vdispls, GMPI_FLOAT32, comm));
  for (int p = 0; p < size; p++) /* the plan copied the counts: changing them must not matter */
    sc[p] = rc[p] = 0;
}
static void op_reduce_scatterv(bufs_t *b) {
  T_OK(gmpi_reduce_scatterv(b->in, b->out, vcounts, GMPI_FLOAT32, GMPI_SUM, comm));
}
static void op_nonblocking(bufs_t *b) { /* recorded requests: waited inside the plan */
  gmpi_request_t r[2];
  T_OK(gmpi_iallreduce(b->in, b->out, N, GMPI_FLOAT32, GMPI_MAX, comm, &r[0]));
  T_OK(gmpi_ibcast(b->b, N, GMPI_FLOAT32, 0, comm, &r[1]));
  T_OK(gmpi_waitall(2, r, NULL));
}
static void op_barrier_bcast(bufs_t *b) {
  T_OK(gmpi_barrier(comm));
  T_OK(gmpi_bcast(b->in, N, GMPI_FLOAT32, 0, comm));
}
static void op_blocking_ring(bufs_t *b) { /* sendrecv: one group of isend + irecv */
  int left = (rank + size - 1) % size, right = (rank + 1) % size;
  T_OK(gmpi_sendrecv(b->in, N, GMPI_FLOAT32, right, 5, b->out, N, GMPI_FLOAT32, left, 5, comm,
                     NULL));
}
static void op_wildcards(bufs_t *b) { /* every rank sends to 0; 0 receives with wildcards */
  gmpi_request_t r[65];
  int k = 0;
  if (rank == 0)
    for (int s = 0; s < size && s < 64; s++)
      T_OK(gmpi_irecv((float *)b->out + (size_t)s * N, N, GMPI_FLOAT32, GMPI_ANY_SOURCE,
                      GMPI_ANY_TAG, comm, &r[k++]));
  T_OK(gmpi_isend(b->in, N, GMPI_FLOAT32, 0, 30 + rank, comm, &r[k++]));
  T_OK(gmpi_waitall(k, r, NULL));
}

/* Wildcards are matched once, canonically: messages in (sender's step, sender's rank) order.
 * Rank 0 records its receives first, so ranks 1.. (send at step 0) come before rank 0. */
static void wildcards(void) {
  bufs_t p;
  bufs_alloc(&p);
  gmpi_plan_t plan = NULL;
  T_OK(gmpi_plan_begin(comm));
  op_wildcards(&p);
  T_OK(gmpi_plan_end(comm, &plan));
  fill(&p, 5);
  T_OK(gmpi_plan_run(plan));
  if (rank == 0) {
    float *got = t_host((size_t)size * N * sizeof(float)), *want = t_host(N * sizeof(float));
    t_get(got, p.out, (size_t)size * N * sizeof(float));
    for (int k = 0; k < size; k++) {
      int src = k < size - 1 ? k + 1 : 0;
      for (int i = 0; i < N; i++)
        want[i] = (float)((src * 7 + i + 15) % 13);
      check_same("wildcard receive slot", got + (size_t)k * N, want, N);
    }
    free(got);
    free(want);
  }
  T_OK(gmpi_plan_free(&plan));
  bufs_free(&p);
}

static void one_kind(const char *name, op_fn op, size_t check_elems) {
  bufs_t e, p;
  bufs_alloc(&e);
  bufs_alloc(&p);
  gmpi_plan_t plan = NULL;
  T_OK(gmpi_plan_begin(comm));
  op(&p);
  T_OK(gmpi_plan_end(comm, &plan));
  for (int it = 0; it < 3; it++) {
    fill(&e, it + 5);
    fill(&p, it + 5);
    op(&e);
    T_OK(gmpi_plan_run(plan));
    size_t bytes = check_elems * sizeof(float), room = bytes > N * 4 ? bytes : N * 4;
    float *got = t_host(room), *want = t_host(room);
    t_get(got, p.out, bytes);
    t_get(want, e.out, bytes);
    int at_root_only = op == op_reduce || op == op_gather || op == op_gatherv;
    if (!at_root_only || rank == size - 1) check_same(name, got, want, check_elems);
    t_get(got, p.in, N * sizeof(float)); /* bcast writes in */
    t_get(want, e.in, N * sizeof(float));
    check_same(name, got, want, N);
    free(got);
    free(want);
  }
  T_OK(gmpi_plan_free(&plan));
  bufs_free(&e);
  bufs_free(&p);
}

/* ---- mismatches: every rank gets GMPI_ERR_MISMATCH naming the problem ------------------ */

/* The buffers a mismatch case records with: 64 KiB each. */
enum { MISMATCH_BUF_BYTES = 64 * 1024 };

static void expect_mismatch(const char *what, const char *word) {
  gmpi_plan_t plan = (gmpi_plan_t)0x1;
  gmpi_status_t st = gmpi_plan_end(comm, &plan);
  if (st != GMPI_ERR_MISMATCH)
    T_FAIL_("%s: gmpi_plan_end returned %s, expected GMPI_ERR_MISMATCH (%s)", what,
            t_status_name(st), gmpi_last_error());
  else if (!strstr(gmpi_last_error(), word))
    T_FAIL_("%s: the error does not mention '%s': %s", what, word, gmpi_last_error());
  T_EQ_PTR(plan, (gmpi_plan_t)0x1); /* untouched */
  /* The recording ended: the comm runs eagerly again. */
  int one = 1, sum = 0;
  T_OK(gmpi_allreduce(&one, &sum, 1, GMPI_INT32, GMPI_SUM, comm));
  T_EQ_INT(sum, size);
}

static void mismatches(void) {
  void *a = t_alloc(MISMATCH_BUF_BYTES), *b = t_alloc(MISMATCH_BUF_BYTES);
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  gmpi_request_t r[2];

  if (size > 1) {
    T_OK(gmpi_plan_begin(comm)); /* counts differ */
    T_OK(gmpi_allreduce(a, b, rank == 0 ? 10 : 20, GMPI_FLOAT32, GMPI_SUM, comm));
    expect_mismatch("allreduce counts", "count");

    T_OK(gmpi_plan_begin(comm)); /* roots differ */
    T_OK(gmpi_bcast(a, 4, GMPI_INT8, rank == 0 ? 0 : 1, comm));
    expect_mismatch("bcast roots", "root");

    T_OK(gmpi_plan_begin(comm)); /* ops differ */
    T_OK(gmpi_allreduce(a, b, 4, GMPI_INT32, rank == 0 ? GMPI_SUM : GMPI_MAX, comm));
    expect_mismatch("allreduce ops", "op");

    T_OK(gmpi_plan_begin(comm)); /* a collective only rank 0 recorded */
    if (rank == 0) T_OK(gmpi_barrier(comm));
    expect_mismatch("missing collective", "not on rank");
  }

  T_OK(gmpi_plan_begin(comm)); /* a send nobody receives */
  T_OK(gmpi_isend(a, 4, GMPI_INT32, right, 77, comm, &r[0]));
  T_OK(gmpi_wait(&r[0], NULL));
  expect_mismatch("unmatched send", "no matching receive");

  T_OK(gmpi_plan_begin(comm)); /* a message longer than its receive */
  T_OK(gmpi_irecv(b, 4, GMPI_INT32, left, 8, comm, &r[0]));
  T_OK(gmpi_isend(a, 8, GMPI_INT32, right, 8, comm, &r[1]));
  T_OK(gmpi_waitall(2, r, NULL));
  expect_mismatch("truncation", "truncation");

  T_OK(gmpi_plan_begin(comm)); /* dtypes differ between sender and receiver */
  T_OK(gmpi_irecv(b, 4, GMPI_FLOAT32, left, 9, comm, &r[0]));
  T_OK(gmpi_isend(a, 4, GMPI_INT32, right, 9, comm, &r[1]));
  T_OK(gmpi_waitall(2, r, NULL));
  expect_mismatch("dtypes", "dtypes differ");

  T_OK(gmpi_plan_begin(comm)); /* a request never waited */
  T_OK(gmpi_irecv(b, 4, GMPI_INT32, left, 10, comm, &r[0]));
  T_OK(gmpi_isend(a, 4, GMPI_INT32, right, 10, comm, &r[1]));
  T_OK(gmpi_wait(&r[1], NULL));
  expect_mismatch("unwaited request", "never waited");
  /* The caller still holds it: its wait releases it (tests/test_stale.c) */
  T_STATUS(gmpi_wait(&r[0], NULL), GMPI_ERR_STATE);

  /* both send first, each waited alone: cannot run as groups */
  T_OK(gmpi_plan_begin(comm));
  int peer = (rank ^ 1) < size ? rank ^ 1 : rank;
  T_OK(gmpi_send(a, 4, GMPI_INT32, peer, 11, comm));
  T_OK(gmpi_recv(b, 4, GMPI_INT32, peer, 11, comm, NULL));
  expect_mismatch("unschedulable", "cannot complete");
  t_free(a);
  t_free(b);
}

/* Life cycle: double begin, end without begin, split while recording, NULL plans, a plan
 * outliving its comm. */
static void life_cycle(void) {
  gmpi_plan_t plan = NULL;
  T_STATUS(gmpi_plan_end(comm, &plan), GMPI_ERR_STATE);
  T_OK(gmpi_plan_begin(comm));
  T_STATUS(gmpi_plan_begin(comm), GMPI_ERR_STATE);
  gmpi_comm_t sub = NULL;
  T_STATUS(gmpi_comm_split(comm, 0, 0, &sub), GMPI_ERR_STATE);
  T_OK(gmpi_plan_end(comm, &plan)); /* empty plan: fine */
  T_OK(gmpi_plan_run(plan));
  T_OK(gmpi_plan_free(&plan));
  T_OK(gmpi_plan_free(&plan)); /* NULL-safe */
  T_STATUS(gmpi_plan_run(NULL), GMPI_ERR_INVALID_ARG);
  T_STATUS(gmpi_plan_dump(NULL, stdout), GMPI_ERR_INVALID_ARG);

  gmpi_comm_t second = NULL;
  T_OK(gmpi_init(MPI_COMM_WORLD, &second));
  float *x = t_alloc(16 * sizeof(float));
  T_OK(gmpi_plan_begin(second));
  T_OK(gmpi_allreduce(x, x, 16, GMPI_FLOAT32, GMPI_SUM, second));
  T_OK(gmpi_plan_end(second, &plan));
  T_OK(gmpi_finalize(&second));
  T_STATUS(gmpi_plan_run(plan), GMPI_ERR_STATE);
  T_OK(gmpi_plan_free(&plan)); /* the one call an orphaned plan allows */
  T_EQ_PTR(plan, NULL);
  t_free(x);
}

int main(int argc, char **argv) {
  comm = t_init(&argc, &argv);
  T_OK(gmpi_comm_rank(comm, &rank));
  T_OK(gmpi_comm_size(comm, &size));
  mixed_plan_equals_eager();
  one_kind("reduce", op_reduce, N);
  one_kind("allgather", op_allgather, N * (size_t)size);
  one_kind("reduce_scatter", op_reduce_scatter, N);
  one_kind("alltoall", op_alltoall, N * (size_t)size);
  one_kind("barrier + bcast", op_barrier_bcast, 0);
  if (size <= 64) {
    v_layout();
    one_kind("gather", op_gather, N * (size_t)size);
    one_kind("scatter", op_scatter, N);
    one_kind("gatherv", op_gatherv, N * (size_t)size);
    one_kind("allgatherv", op_allgatherv, N * (size_t)size);
    one_kind("alltoallv", op_alltoallv, N * (size_t)size);
    one_kind("reduce_scatterv", op_reduce_scatterv, vcounts[rank]);
    one_kind("iallreduce + ibcast", op_nonblocking, N);
  }
  one_kind("sendrecv ring", op_blocking_ring, N);
  wildcards();
  mismatches();
  life_cycle();
  return t_finish("plans");
}
