/* SPDX-License-Identifier: BSD-3-Clause */
/* Request arrays and communicators: gmpi_waitany over completed, NULL and pending requests;
 * gmpi_testany and gmpi_testall with MPI's rules; all-NULL arrays; a non-periodic halo exchange
 * whose end ranks use GMPI_PROC_NULL instead of an if; gmpi_comm_dup isolating its messages and
 * collectives from its parent; gmpi_comm_free; gmpi_cancel of a receive no message matched
 * (taken back: the message goes to the next receive), of a matched receive and of a send (both
 * complete as they would have); gmpi_request_release of sends that are then received, of one
 * nobody receives before its comm is freed (LeakSanitizer sees it freed), of a completed request
 * and of NULL. Values are checked on every rank; buffers live
 * where the backend moves data. */
#include "test_util.h"

static int rank, size;
static gmpi_comm_t comm;

static int32_t *dev_int(int32_t v) {
  int32_t *d = t_alloc(sizeof(v));
  t_put(d, &v, sizeof(v));
  return d;
}
static int32_t host_int(const int32_t *d) {
  int32_t v;
  t_get(&v, d, sizeof(v));
  return v;
}

/* A request that is complete (a PROC_NULL receive), a NULL, and a pending receive that only
 * completes after the barrier: waitany returns the complete one first, then the pending one,
 * then GMPI_UNDEFINED. */
static void waitany_mix(void) {
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int32_t *r = dev_int(-1), *s = dev_int(500 + rank), *nothing = dev_int(-1);
  gmpi_request_t reqs[3] = {NULL, NULL, NULL};
  T_OK(gmpi_irecv(r, 1, GMPI_INT32, left, 3, comm, &reqs[2]));
  T_OK(gmpi_irecv(nothing, 1, GMPI_INT32, GMPI_PROC_NULL, 3, comm, &reqs[0]));
  int index = -5;
  gmpi_msg_status_t st = {-9, -9, 9};
  T_OK(gmpi_waitany(3, reqs, &index, &st));
  T_EQ_INT(index, 0);
  T_EQ_PTR(reqs[0], NULL);
  T_EQ_INT(st.source, GMPI_PROC_NULL);
  T_EQ_INT(st.tag, GMPI_ANY_TAG);
  T_EQ_SIZE(st.count, 0);
  int flag = -1;
  T_OK(gmpi_testany(3, reqs, &index, &flag, &st)); /* nothing was sent yet */
  T_EQ_INT(flag, 0);
  T_EQ_INT(index, GMPI_UNDEFINED);
  T_TRUE(reqs[2] != NULL);
  T_OK(gmpi_barrier(comm));
  T_OK(gmpi_send(s, 1, GMPI_INT32, right, 3, comm));
  T_OK(gmpi_waitany(3, reqs, &index, &st));
  T_EQ_INT(index, 2);
  T_EQ_INT(st.source, left);
  T_EQ_INT(st.tag, 3);
  T_EQ_INT(host_int(r), 500 + left);
  T_EQ_INT(host_int(nothing), -1);          /* a PROC_NULL receive writes nothing */
  T_OK(gmpi_waitany(3, reqs, &index, &st)); /* all NULL now */
  T_EQ_INT(index, GMPI_UNDEFINED);
  T_OK(gmpi_testany(3, reqs, &index, &flag, &st));
  T_EQ_INT(flag, 1);
  T_EQ_INT(index, GMPI_UNDEFINED);
  T_OK(gmpi_waitany(0, NULL, &index, NULL));
  T_EQ_INT(index, GMPI_UNDEFINED);
  t_free(r);
  t_free(s);
  t_free(nothing);
}

/* testall: while one request is pending, none is freed or NULLed; once all are done, all are. */
static void testall_rules(void) {
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int32_t *r = dev_int(-1), *s = dev_int(700 + rank), *nothing = dev_int(0);
  gmpi_request_t reqs[3] = {NULL, NULL, NULL};
  T_OK(gmpi_irecv(nothing, 1, GMPI_INT32, GMPI_PROC_NULL, 0, comm, &reqs[0])); /* complete */
  T_OK(gmpi_irecv(r, 1, GMPI_INT32, left, 4, comm, &reqs[1]));                 /* pending */
  gmpi_msg_status_t st[3];
  int flag = -1;
  T_OK(gmpi_testall(3, reqs, &flag, st));
  T_EQ_INT(flag, 0);
  T_TRUE(reqs[0] != NULL); /* complete, but untouched until all are */
  T_TRUE(reqs[1] != NULL);
  T_OK(gmpi_barrier(comm));
  T_OK(gmpi_send(s, 1, GMPI_INT32, right, 4, comm));
  for (flag = 0; !flag;)
    T_OK(gmpi_testall(3, reqs, &flag, st));
  T_EQ_PTR(reqs[0], NULL);
  T_EQ_PTR(reqs[1], NULL);
  T_EQ_INT(st[0].source, GMPI_PROC_NULL);
  T_EQ_INT(st[1].source, left);
  T_EQ_INT(st[1].tag, 4);
  T_EQ_SIZE(st[1].count, 1);
  T_EQ_INT(st[2].source, GMPI_ANY_SOURCE); /* a NULL request's status is empty */
  T_EQ_INT(host_int(r), 700 + left);
  T_OK(gmpi_testall(0, NULL, &flag, NULL));
  T_EQ_INT(flag, 1);
  t_free(r);
  t_free(s);
  t_free(nothing);
}

/* A non-periodic 1-D halo: rank 0 has no left neighbour and the last rank no right one;
 * GMPI_PROC_NULL takes their place and the code has no branch. */
static void proc_null_halo(void) {
  enum { H = 64 };
  int left = rank > 0 ? rank - 1 : GMPI_PROC_NULL;
  int right = rank < size - 1 ? rank + 1 : GMPI_PROC_NULL;
  float mine[H], from_l[H], from_r[H];
  for (int i = 0; i < H; i++) {
    mine[i] = (float)(rank * 1000 + i);
    from_l[i] = from_r[i] = -1.0f;
  }
  float *dm = t_alloc(sizeof(mine)), *dl = t_alloc(sizeof(from_l)), *dr = t_alloc(sizeof(from_r));
  t_put(dm, mine, sizeof(mine));
  t_put(dl, from_l, sizeof(from_l));
  t_put(dr, from_r, sizeof(from_r));
  gmpi_request_t reqs[4];
  gmpi_msg_status_t st[4];
  T_OK(gmpi_irecv(dl, H, GMPI_FLOAT32, left, 1, comm, &reqs[0]));
  T_OK(gmpi_irecv(dr, H, GMPI_FLOAT32, right, 2, comm, &reqs[1]));
  T_OK(gmpi_isend(dm, H, GMPI_FLOAT32, right, 1, comm, &reqs[2]));
  T_OK(gmpi_isend(dm, H, GMPI_FLOAT32, left, 2, comm, &reqs[3]));
  T_OK(gmpi_waitall(4, reqs, st));
  t_get(from_l, dl, sizeof(from_l));
  t_get(from_r, dr, sizeof(from_r));
  for (int i = 0; i < H; i++) {
    T_NEAR(from_l[i], left == GMPI_PROC_NULL ? -1.0f : (float)(left * 1000 + i), 0);
    T_NEAR(from_r[i], right == GMPI_PROC_NULL ? -1.0f : (float)(right * 1000 + i), 0);
  }
  T_EQ_INT(st[0].source, left);
  T_EQ_SIZE(st[0].count, left == GMPI_PROC_NULL ? 0 : H);
  T_EQ_INT(st[1].source, right);
  /* blocking forms and sendrecv too */
  T_OK(gmpi_send(dm, H, GMPI_FLOAT32, GMPI_PROC_NULL, 0, comm));
  gmpi_msg_status_t one;
  T_OK(gmpi_recv(dl, H, GMPI_FLOAT32, GMPI_PROC_NULL, 0, comm, &one));
  T_EQ_INT(one.source, GMPI_PROC_NULL);
  T_OK(gmpi_sendrecv(dm, H, GMPI_FLOAT32, right, 9, dl, H, GMPI_FLOAT32, left, 9, comm, &one));
  T_EQ_INT(one.source, left);
  t_free(dm);
  t_free(dl);
  t_free(dr);
}

/* The halo exchange recorded in a plan: the PROC_NULL transfers add no step, the others replay
 * with the buffers' values at run time. */
static void proc_null_in_plan(void) {
  int left = rank > 0 ? rank - 1 : GMPI_PROC_NULL;
  int right = rank < size - 1 ? rank + 1 : GMPI_PROC_NULL;
  double mine[2] = {0, 0}, halo[2] = {-1, -1};
  gmpi_request_t reqs[4] = {NULL, NULL, NULL, NULL};
  gmpi_plan_t plan = NULL;
  T_OK(gmpi_plan_begin(comm));
  T_OK(gmpi_irecv(&halo[0], 1, GMPI_FLOAT64, left, 21, comm, &reqs[0]));
  T_OK(gmpi_irecv(&halo[1], 1, GMPI_FLOAT64, right, 22, comm, &reqs[1]));
  T_OK(gmpi_isend(&mine[1], 1, GMPI_FLOAT64, right, 21, comm, &reqs[2]));
  T_OK(gmpi_isend(&mine[0], 1, GMPI_FLOAT64, left, 22, comm, &reqs[3]));
  T_OK(gmpi_waitall(4, reqs, NULL));
  T_OK(gmpi_plan_end(comm, &plan));
  for (int run = 1; run <= 2; run++) {
    mine[0] = rank * 10 + run;
    mine[1] = rank * 10 + run + 0.5;
    T_OK(gmpi_plan_run(plan));
    T_NEAR(halo[0], left == GMPI_PROC_NULL ? -1 : left * 10 + run + 0.5, 0);
    T_NEAR(halo[1], right == GMPI_PROC_NULL ? -1 : right * 10 + run, 0);
  }
  T_OK(gmpi_plan_free(&plan));
}

/* The same tag on the parent and on its duplicate: each receive gets its own comm's message,
 * whatever the order they were sent in; a collective on one does not meet the other's. */
static void dup_isolates(void) {
  gmpi_comm_t dup = NULL;
  T_OK(gmpi_comm_dup(comm, &dup));
  int drank = -1, dsize = -1;
  T_OK(gmpi_comm_rank(dup, &drank));
  T_OK(gmpi_comm_size(dup, &dsize));
  T_EQ_INT(drank, rank);
  T_EQ_INT(dsize, size);
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int32_t *on_parent = dev_int(100 + rank), *on_dup = dev_int(200 + rank);
  int32_t *got_parent = dev_int(-1), *got_dup = dev_int(-1);
  gmpi_request_t reqs[4];
  T_OK(gmpi_irecv(got_dup, 1, GMPI_INT32, left, 8, dup, &reqs[0]));
  T_OK(gmpi_irecv(got_parent, 1, GMPI_INT32, GMPI_ANY_SOURCE, GMPI_ANY_TAG, comm, &reqs[1]));
  T_OK(gmpi_isend(on_dup, 1, GMPI_INT32, right, 8, dup, &reqs[2])); /* dup's first */
  T_OK(gmpi_isend(on_parent, 1, GMPI_INT32, right, 8, comm, &reqs[3]));
  T_OK(gmpi_waitall(4, reqs, NULL));
  T_EQ_INT(host_int(got_dup), 200 + left);
  T_EQ_INT(host_int(got_parent), 100 + left);
  int32_t *x = dev_int(rank + 1), *y = dev_int(0);
  T_OK(gmpi_allreduce(x, y, 1, GMPI_INT32, GMPI_SUM, dup));
  T_EQ_INT(host_int(y), size * (size + 1) / 2);
  T_OK(gmpi_comm_free(&dup));
  T_EQ_PTR(dup, NULL);
  T_OK(gmpi_comm_free(&dup));                                /* NULL-safe */
  T_OK(gmpi_allreduce(x, y, 1, GMPI_INT32, GMPI_MAX, comm)); /* the parent goes on */
  T_EQ_INT(host_int(y), size);
  /* a split's result is freed the same way; the gmpi_init comm is not */
  gmpi_comm_t half = NULL;
  T_OK(gmpi_comm_split(comm, rank % 2, rank, &half));
  T_OK(gmpi_comm_free(&half));
  gmpi_comm_t keep = comm;
  T_STATUS(gmpi_comm_free(&keep), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("gmpi_finalize");
  T_EQ_PTR(keep, comm);
  t_free(on_parent);
  t_free(on_dup);
  t_free(got_parent);
  t_free(got_dup);
  t_free(x);
  t_free(y);
}

static void bad_arguments(void) {
  gmpi_request_t r = NULL;
  int index, flag;
  T_STATUS(gmpi_waitany(1, &r, NULL, NULL), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("index");
  T_STATUS(gmpi_waitany(-1, &r, &index, NULL), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("count");
  T_STATUS(gmpi_testany(2, NULL, &index, &flag, NULL), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("requests");
  T_STATUS(gmpi_testany(1, &r, &index, NULL, NULL), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("flag");
  T_STATUS(gmpi_testall(1, &r, NULL, NULL), GMPI_ERR_INVALID_ARG);
  T_STATUS(gmpi_comm_dup(comm, NULL), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("newcomm");
  T_STATUS(gmpi_send(&r, 1, GMPI_INT8, -3, 0, comm), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("PROC_NULL");
}

/* gmpi_issend of one int (eager-sized) to the right, and to itself: neither completes before
 * its receive is posted (tested before the barrier that comes first), both complete after, and
 * the values arrive. gmpi_ssend then completes against a posted receive. */
static void synchronous_sends(void) {
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int32_t *s = dev_int(700 + rank), *r = dev_int(-1), *self_r = dev_int(-1);
  gmpi_request_t reqs[2] = {NULL, NULL};
  T_OK(gmpi_issend(s, 1, GMPI_INT32, right, 8, comm, &reqs[0]));
  T_OK(gmpi_issend(s, 1, GMPI_INT32, rank, 9, comm, &reqs[1]));
  int flag = -1;
  T_OK(gmpi_testall(2, reqs, &flag, NULL));
  T_EQ_INT(flag, 0); /* no receive is posted anywhere yet */
  T_OK(gmpi_barrier(comm));
  T_OK(gmpi_recv(r, 1, GMPI_INT32, left, 8, comm, NULL));
  T_OK(gmpi_recv(self_r, 1, GMPI_INT32, rank, 9, comm, NULL));
  T_OK(gmpi_waitall(2, reqs, NULL));
  T_EQ_INT(host_int(r), 700 + left);
  T_EQ_INT(host_int(self_r), 700 + rank);
  gmpi_request_t rq = NULL;
  T_OK(gmpi_irecv(r, 1, GMPI_INT32, left, 10, comm, &rq));
  T_OK(gmpi_barrier(comm));
  T_OK(gmpi_ssend(s, 1, GMPI_INT32, right, 10, comm));
  T_OK(gmpi_wait(&rq, NULL));
  T_EQ_INT(host_int(r), 700 + left);
  t_free(s);
  t_free(r);
  t_free(self_r);
}

/* Synchronous sends of eager size through every way a receive ends: truncated (the receive
 * fails, the send completes), probed first, zero bytes, matched by wildcards, and 200 at once
 * received in reverse order -- every value checked. */
static void synchronous_paths(void) {
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  enum { N = 200 };
  int32_t hs[N];
  for (int i = 0; i < N; i++)
    hs[i] = 1000 * rank + i;
  int32_t *s = t_alloc(sizeof hs), *r = t_alloc(sizeof hs);
  t_put(s, hs, sizeof hs);
  gmpi_request_t sq[N], rq[N];
  T_OK(gmpi_issend(s, 4, GMPI_INT32, right, 20, comm, &sq[0]));
  T_STATUS(gmpi_recv(r, 2, GMPI_INT32, left, 20, comm, NULL), GMPI_ERR_TRUNCATE);
  T_OK(gmpi_wait(&sq[0], NULL));
  T_OK(gmpi_issend(s, 3, GMPI_INT32, right, 21, comm, &sq[0]));
  T_OK(gmpi_issend(s, 0, GMPI_INT32, right, 22, comm, &sq[1]));
  T_OK(gmpi_issend(s, 5, GMPI_INT32, right, 23, comm, &sq[2]));
  gmpi_msg_status_t st;
  T_OK(gmpi_probe(left, 21, comm, &st));
  T_EQ_INT(st.count, 3);
  T_OK(gmpi_recv(r, 3, GMPI_INT32, left, 21, comm, NULL));
  T_OK(gmpi_recv(r, 3, GMPI_INT32, left, 22, comm, &st));
  T_EQ_INT(st.count, 0);
  T_OK(gmpi_recv(r, 8, GMPI_INT32, GMPI_ANY_SOURCE, GMPI_ANY_TAG, comm, &st));
  T_EQ_INT(st.count, 5);
  T_EQ_INT(st.source, left);
  T_EQ_INT(st.tag, 23);
  T_OK(gmpi_waitall(3, sq, NULL));
  int32_t got[N];
  t_get(got, r, 5 * sizeof(int32_t));
  for (int i = 0; i < 5; i++)
    T_EQ_INT(got[i], 1000 * left + i);
  for (int i = 0; i < N; i++)
    T_OK(gmpi_issend(s + i, 1, GMPI_INT32, right, 100 + i, comm, &sq[i]));
  for (int i = N - 1; i >= 0; i--)
    T_OK(gmpi_irecv(r + i, 1, GMPI_INT32, left, 100 + i, comm, &rq[i]));
  T_OK(gmpi_waitall(N, rq, NULL));
  T_OK(gmpi_waitall(N, sq, NULL));
  t_get(got, r, sizeof got);
  for (int i = 0; i < N; i++)
    T_EQ_INT(got[i], 1000 * left + i);
  t_free(s);
  t_free(r);
}

/* gmpi_cancel: receives no message matched are taken back (one from a rank, one from
 * GMPI_ANY_SOURCE, one from this rank itself); the message sent afterwards goes to a new receive.
 * A receive whose message was in before the cancel, and a send, are not cancelled. */
static void cancel_receives(void) {
  int left = (rank + size - 1) % size, right = (rank + 1) % size, cancelled = -1;
  int32_t *r = dev_int(-1), *s = dev_int(700 + rank);
  int sources[3] = {left, GMPI_ANY_SOURCE, rank};
  for (int i = 0; i < 3; i++) {
    gmpi_request_t req = NULL;
    T_OK(gmpi_irecv(r, 1, GMPI_INT32, sources[i], 11, comm, &req));
    T_OK(gmpi_cancel(&req, &cancelled));
    T_EQ_INT(cancelled, 1);
    T_EQ_PTR(req, NULL);
    T_EQ_INT(host_int(r), -1);
  }
  T_OK(gmpi_barrier(comm));
  gmpi_request_t sreq = NULL, rreq = NULL;
  T_OK(gmpi_isend(s, 1, GMPI_INT32, right, 11, comm, &sreq));
  gmpi_msg_status_t st;
  T_OK(gmpi_recv(r, 1, GMPI_INT32, left, 11, comm, &st));
  T_EQ_INT(host_int(r), 700 + left);
  T_OK(gmpi_wait(&sreq, NULL));
  /* a send is not taken back: it completes when its receive comes */
  T_OK(gmpi_issend(s, 1, GMPI_INT32, right, 13, comm, &sreq));
  T_OK(gmpi_cancel(&sreq, &cancelled));
  T_EQ_INT(cancelled, 0);
  T_TRUE(sreq != NULL);
  T_OK(gmpi_recv(r, 1, GMPI_INT32, left, 13, comm, &st));
  T_OK(gmpi_wait(&sreq, NULL));
  /* matched before the cancel: the peer's synchronous send completed before the barrier */
  T_OK(gmpi_irecv(r, 1, GMPI_INT32, left, 12, comm, &rreq));
  T_OK(gmpi_issend(s, 1, GMPI_INT32, right, 12, comm, &sreq));
  T_OK(gmpi_wait(&sreq, NULL));
  T_OK(gmpi_barrier(comm));
  int done = 0;
  for (int spins = 0; !done && spins < 1000000; spins++) {
    T_OK(gmpi_cancel(&rreq, &cancelled)); /* the message may still be landing */
    T_EQ_INT(cancelled, 0);
    T_OK(gmpi_test(&rreq, &done, &st));
  }
  T_EQ_INT(done, 1);
  T_EQ_INT(host_int(r), 700 + left);
  T_EQ_INT(gmpi_cancel(NULL, &cancelled), GMPI_ERR_INVALID_ARG);
  t_free(r);
  t_free(s);
}

/* gmpi_request_release (MPI_Request_free): released sends still reach their receiver, and the
 * handle is NULL at once. A synchronous send nobody receives is released on a dup, which is then
 * freed: gmpi frees the request there (the ASan build's LeakSanitizer fails this test when a
 * released request is never freed). A completed request and NULL are released too. */
static void released_requests(void) {
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  enum { N = 40 };
  int32_t *s = dev_int(900 + rank), *r = dev_int(-1);
  for (int i = 0; i < N; i++) { /* each start reaps the released sends that completed */
    gmpi_request_t req = NULL;
    T_OK(gmpi_isend(s, 1, GMPI_INT32, right, 20, comm, &req));
    T_OK(gmpi_request_release(&req));
    T_EQ_PTR(req, NULL);
  }
  for (int i = 0; i < N; i++) {
    T_OK(gmpi_recv(r, 1, GMPI_INT32, left, 20, comm, NULL));
    T_EQ_INT(host_int(r), 900 + left);
  }
  gmpi_comm_t dup = NULL;
  T_OK(gmpi_comm_dup(comm, &dup));
  for (int i = 0; i < 8; i++) { /* several: a stale copy on the stack hides one from LSan */
    gmpi_request_t unmatched = NULL;
    T_OK(gmpi_issend(s, 1, GMPI_INT32, right, 21, dup, &unmatched));
    T_OK(gmpi_request_release(&unmatched));
    T_EQ_PTR(unmatched, NULL);
  }
  gmpi_request_t copy = NULL;
  T_OK(gmpi_issend(s, 1, GMPI_INT32, right, 21, dup, &copy));
  gmpi_request_t held = copy;
  T_OK(gmpi_request_release(&copy));
  T_EQ_INT(gmpi_wait(&held, NULL), GMPI_ERR_INVALID_ARG); /* a copy of a released handle */
  T_TRUE(strstr(gmpi_last_error(), "gmpi_request_release") != NULL);
  T_OK(gmpi_comm_free(&dup)); /* does not wait for the sends nobody receives */
  T_EQ_PTR(dup, NULL);
  gmpi_request_t done = NULL;
  T_OK(gmpi_irecv(r, 1, GMPI_INT32, GMPI_PROC_NULL, 22, comm, &done)); /* complete at once */
  T_OK(gmpi_request_release(&done));
  T_EQ_PTR(done, NULL);
  T_OK(gmpi_request_release(&done)); /* NULL: nothing to do */
  T_EQ_INT(gmpi_request_release(NULL), GMPI_ERR_INVALID_ARG);
  T_OK(gmpi_barrier(comm)); /* every release above finished before the next test's messages */
  t_free(s);
  t_free(r);
}

int main(int argc, char **argv) {
  comm = t_init(&argc, &argv);
  T_OK(gmpi_comm_rank(comm, &rank));
  T_OK(gmpi_comm_size(comm, &size));
  waitany_mix();
  testall_rules();
  proc_null_halo();
  proc_null_in_plan();
  dup_isolates();
  synchronous_sends();
  synchronous_paths();
  cancel_receives();
  released_requests();
  bad_arguments();
  return t_finish("requests");
}
