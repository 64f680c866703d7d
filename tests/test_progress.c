/* SPDX-License-Identifier: BSD-3-Clause */
/* Progress everywhere (MPI's progress rule): a send completes once its receive is posted,
 * whatever else the receiving rank is doing. Pairs (0 sends to 1, 2 to 3, ...): the receiver
 * posts an irecv and then enters another gmpi call; the sender's blocking gmpi_send must
 * complete before it can join that call. Calls: barrier, allreduce, bcast, a blocking recv on
 * another comm, comm_split, a plan run, a plan compile, a program's own loop of gmpi_test
 * on an iallreduce after the receiver tested its irecv once (the engine that test progressed
 * must still be driven by the loop's later calls), and a comm's first gather and alltoall
 * (NCCL connects their pairs at first use: cuda_coll.c connect_pairs); messages of 1 MiB (the data
 * waits for the receiver's engine) and 8 bytes. Values checked on every rank. */
#include <time.h>

#include "test_util.h"

#include <stdint.h>

enum { N_COLL = 4 }; /* elements of the collectives' buffers */

typedef enum {
  IN_BARRIER,
  IN_ALLREDUCE,
  IN_BCAST,
  IN_RECV_OTHER, /* a blocking recv on another comm */
  IN_SPLIT,
  IN_PLAN_RUN,
  IN_PLAN_END,  /* recording ends: the plan compiles collectively */
  IN_TEST_LOOP, /* gmpi_test in a loop on an iallreduce (no wait of gmpi's) */
  IN_GATHER,    /* NCCL's point-to-point pairs: connected at a root's first (root 1: a receiver), */
  IN_ALLTOALL,  /* or a comm's first alltoall (the world's splits may share connections: first) */
  N_CALLS
} call_t;

static const char *const call_name[N_CALLS] = {
    "barrier",    "allreduce", "bcast",    "recv on another comm",
    "comm_split", "plan_run",  "plan_end", "a gmpi_test loop",
    "gather",     "alltoall"};

typedef enum { SENDER, RECEIVER, ALONE } role_t;

static int rank, size;
/* Each case runs on comms of its own (splits of the world, which holds the buffers), so one
 * that fails does not take the next ones down with it. */
static gmpi_comm_t world, comm, other; /* other: for the recv on another comm */

static int32_t value(int seed, size_t i) { return (int32_t)(seed * 1000003 + (int)i); }

/* A backend buffer of n int32 holding value(seed, i), or zeros when seed < 0. */
static int32_t *filled(size_t n, int seed) {
  int32_t *host = t_host(n * 4), *dev = t_alloc(n * 4);
  for (size_t i = 0; seed >= 0 && i < n; i++)
    host[i] = value(seed, i);
  t_put(dev, host, n * 4);
  free(host);
  return dev;
}

/* The buffer holds value(seed, i) for every i (first difference reported). */
static void expect(const char *what, const int32_t *dev, size_t n, int seed) {
  int32_t *got = t_host(n * 4);
  t_get(got, dev, n * 4);
  for (size_t i = 0; i < n; i++) {
    if (got[i] == value(seed, i)) continue;
    T_FAIL_("%s: element %zu is %d, expected %d", what, i, (int)got[i], (int)value(seed, i));
    break;
  }
  free(got);
}

/* All ranks: an allreduce (sum) of rank+1 into recv, recorded or run. */
static void allreduce_ranks(int32_t *send, int32_t *recv) {
  int32_t host[N_COLL];
  for (int i = 0; i < N_COLL; i++)
    host[i] = rank + 1;
  t_put(send, host, sizeof(host));
  T_OK(gmpi_allreduce(send, recv, N_COLL, GMPI_INT32, GMPI_SUM, comm));
}

static void expect_rank_sum(const char *what, const int32_t *recv) {
  int32_t host[N_COLL];
  t_get(host, recv, sizeof(host));
  for (int i = 0; i < N_COLL; i++)
    if (host[i] != size * (size + 1) / 2)
      T_FAIL_("%s: element %d is %d, expected %d", what, i, (int)host[i], size * (size + 1) / 2);
}

/* The call every rank makes while the pair's message is pending; plan is one allreduce
 * recorded beforehand (for IN_PLAN_RUN) into precv. */
static void enter(call_t call, role_t role, int peer, int tag, gmpi_plan_t plan, int32_t *precv) {
  int32_t *send = filled(N_COLL, -1), *recv = filled(N_COLL, -1);
  switch (call) {
  case IN_BARRIER: T_OK(gmpi_barrier(comm)); break;
  case IN_ALLREDUCE:
    allreduce_ranks(send, recv);
    expect_rank_sum("allreduce", recv);
    break;
  case IN_BCAST: {
    int32_t *buf = filled(N_COLL, rank == 0 ? 77 : -1);
    T_OK(gmpi_bcast(buf, N_COLL, GMPI_INT32, 0, comm));
    expect("bcast", buf, N_COLL, 77);
    t_free(buf);
    break;
  }
  case IN_RECV_OTHER: {
    int32_t *buf = filled(1, role == SENDER ? 55 : -1);
    if (role == SENDER) T_OK(gmpi_send(buf, 1, GMPI_INT32, peer, tag, other));
    if (role == RECEIVER) {
      T_OK(gmpi_recv(buf, 1, GMPI_INT32, peer, tag, other, NULL));
      expect("recv on another comm", buf, 1, 55);
    }
    t_free(buf);
    break;
  }
  case IN_SPLIT: {
    gmpi_comm_t half = NULL;
    T_OK(gmpi_comm_split(comm, rank % 2, rank, &half));
    T_TRUE(half != NULL);
    if (half) T_OK(gmpi_finalize(&half));
    break;
  }
  case IN_PLAN_RUN:
    T_OK(gmpi_plan_run(plan));
    expect_rank_sum("plan run while a message was pending", precv);
    break;
  case IN_PLAN_END: {
    gmpi_plan_t compiled = NULL;
    T_OK(gmpi_plan_begin(comm));
    allreduce_ranks(send, recv);
    T_OK(gmpi_plan_end(comm, &compiled));
    T_OK(gmpi_plan_run(compiled));
    expect_rank_sum("plan compiled while a message was pending", recv);
    T_OK(gmpi_plan_free(&compiled));
    break;
  }
  case IN_TEST_LOOP: {
    gmpi_request_t r = NULL;
    int32_t host[N_COLL];
    for (int i = 0; i < N_COLL; i++)
      host[i] = rank + 1;
    t_put(send, host, sizeof(host));
    T_OK(gmpi_iallreduce(send, recv, N_COLL, GMPI_INT32, GMPI_SUM, comm, &r));
    /* the program's own loop, bounded here so that a rank left undriven fails, not hangs */
    time_t until = time(NULL) + 20;
    int done = 0;
    while (!done && r && time(NULL) < until)
      T_OK(gmpi_test(&r, &done, NULL));
    if (!done) T_FAIL_("a gmpi_test loop on an iallreduce did not end within 20 s");
    if (done) expect_rank_sum("iallreduce tested in a loop", recv);
    break;
  }
  case IN_ALLTOALL: {
    int32_t *in = filled((size_t)size, rank), *out = filled((size_t)size, -1),
            *got = t_host(size * 4);
    T_OK(gmpi_alltoall(in, out, 1, GMPI_INT32, comm));
    t_get(got, out, (size_t)size * 4);
    for (int p = 0; p < size; p++) /* rank p sent us its element `rank` */
      if (got[p] != value(p, (size_t)rank))
        T_FAIL_("alltoall: element %d is %d, expected %d", p, (int)got[p],
                (int)value(p, (size_t)rank));
    free(got);
    t_free(in);
    t_free(out);
    break;
  }
  case IN_GATHER: {
    int root = 1 % size;
    int32_t *in = filled(1, 100 + rank), *out = filled((size_t)size, -1), *got = t_host(size * 4);
    T_OK(gmpi_gather(in, out, 1, GMPI_INT32, root, comm));
    t_get(got, out, (size_t)size * 4);
    for (int p = 0; rank == root && p < size; p++) /* element 0 of rank p's input */
      if (got[p] != value(100 + p, 0))
        T_FAIL_("gather: element %d is %d, expected %d", p, (int)got[p], (int)value(100 + p, 0));
    free(got);
    t_free(in);
    t_free(out);
    break;
  }
  case N_CALLS: break;
  }
  t_free(send);
  t_free(recv);
}

/* One message of n int32 from the sender to the receiver of each pair around one call. */
static void pending_across(call_t call, size_t n, int tag, gmpi_plan_t plan, int32_t *precv) {
  int peer = rank ^ 1;
  role_t role = peer >= size ? ALONE : rank % 2 == 0 ? SENDER : RECEIVER;
  int32_t *buf = filled(n, role == SENDER ? rank : -1);
  gmpi_request_t req = NULL;
  if (role == RECEIVER) T_OK(gmpi_irecv(buf, n, GMPI_INT32, peer, tag, comm, &req));
  gmpi_msg_status_t st = {-1, -1, 0};
  if (role == RECEIVER && call == IN_TEST_LOOP) { /* its engine progressed by this test */
    int done = 0;
    T_OK(gmpi_test(&req, &done, &st));
  }
  if (role == SENDER) T_OK(gmpi_send(buf, n, GMPI_INT32, peer, tag, comm));
  enter(call, role, peer, tag, plan, precv);
  if (role == RECEIVER) {
    if (req) T_OK(gmpi_wait(&req, &st)); /* else the first test completed it */
    T_EQ_INT(st.source, peer);
    T_EQ_INT(st.tag, tag);
    T_EQ_SIZE(st.count, n);
    char what[96];
    snprintf(what, sizeof(what), "%zu bytes received across %s", n * 4, call_name[call]);
    expect(what, buf, n, peer);
  }
  t_free(buf);
}

/* One case on fresh comms; the plan of IN_PLAN_RUN is recorded before anything is pending. */
static void run_case(call_t call, size_t n) {
  if (rank == 0) printf("test_progress: %zu bytes pending across %s\n", n * 4, call_name[call]);
  fflush(stdout);
  T_OK(gmpi_comm_split(world, 0, rank, &comm));
  T_OK(gmpi_comm_split(world, 0, rank, &other));
  if (!comm || !other) return;
  int32_t *psend = filled(N_COLL, -1), *precv = filled(N_COLL, -1);
  gmpi_plan_t plan = NULL;
  if (call == IN_PLAN_RUN) {
    T_OK(gmpi_plan_begin(comm));
    allreduce_ranks(psend, precv);
    T_OK(gmpi_plan_end(comm, &plan));
  }
  pending_across(call, n, 10 * (int)call + (n > 2), plan, precv);
  if (plan) T_OK(gmpi_plan_free(&plan));
  t_free(psend);
  t_free(precv);
  T_OK(gmpi_finalize(&other));
  T_OK(gmpi_finalize(&comm));
}

int main(int argc, char **argv) {
  world = t_init(&argc, &argv);
  gmpi_comm_rank(world, &rank);
  gmpi_comm_size(world, &size);
  for (int c = 0; c < N_CALLS; c++) {
    run_case((call_t)c, (size_t)1 << 18); /* 1 MiB: its data waits for the receiver's engine */
    run_case((call_t)c, 2);               /* 8 bytes */
  }
  return t_finish("test_progress");
}
