/* SPDX-License-Identifier: BSD-3-Clause */
/* Stale handles (docs/reliability.md, "Stale handles"): what a program that keeps a handle
 * past its end gets -- a status, never a read of freed memory (CI runs this under ASan).
 *  - requests recorded in a plan whose gmpi_plan_end failed: gmpi_wait/gmpi_waitall answer
 *    GMPI_ERR_STATE and release them, and the comm stays usable;
 *  - a copy of a freed plan: gmpi_plan_run, gmpi_plan_dump and gmpi_plan_free answer
 *    GMPI_ERR_INVALID_ARG naming the plan;
 *  - a copy of a completed request's handle: every call that takes a request answers
 *    GMPI_ERR_INVALID_ARG ("not a live request"), also while newer requests of the same thread
 *    are live (fewer than 16 since: requests are recycled per thread), and they are unharmed;
 *  - a plan whose comm was freed: run answers GMPI_ERR_STATE, gmpi_plan_free succeeds;
 *  - a block of gmpi_mem_alloc freed through another comm than its own is uncounted from its
 *    own, and one that outlives its comm can still be freed. */
#include "test_util.h"

static int rank, size;
static gmpi_comm_t comm;

/* Sends and receives recorded but never waited: gmpi_plan_end fails on every rank, and the
 * caller still holds the requests. */
static void failed_plan_end(void) {
  int left = (rank + size - 1) % size, right = (rank + 1) % size;
  int out = rank, in = -1;
  gmpi_request_t r[3];
  T_OK(gmpi_plan_begin(comm));
  T_OK(gmpi_irecv(&in, 1, GMPI_INT32, left, 5, comm, &r[0]));
  T_OK(gmpi_isend(&out, 1, GMPI_INT32, right, 5, comm, &r[1]));
  T_OK(gmpi_iallreduce(&out, &in, 1, GMPI_INT32, GMPI_SUM, comm, &r[2]));
  gmpi_plan_t plan = NULL;
  T_STATUS(gmpi_plan_end(comm, &plan), GMPI_ERR_MISMATCH);
  T_ERROR_MENTIONS("never waited");
  T_EQ_PTR(plan, NULL);
  T_STATUS(gmpi_wait(&r[0], NULL), GMPI_ERR_STATE);
  T_ERROR_MENTIONS("recording has ended");
  T_EQ_PTR(r[0], NULL);
  T_STATUS(gmpi_waitall(2, &r[1], NULL), GMPI_ERR_STATE);
  T_EQ_PTR(r[1], NULL);
  T_STATUS(gmpi_wait(&r[2], NULL), GMPI_ERR_STATE);
  T_EQ_PTR(r[2], NULL);
  /* A new recording (which may sit where the old one was) is not confused with it, and the
   * comm works: a ring exchange with its values checked. */
  T_OK(gmpi_plan_begin(comm));
  T_OK(gmpi_allreduce(&out, &in, 1, GMPI_INT32, GMPI_SUM, comm));
  T_OK(gmpi_plan_end(comm, &plan));
  T_OK(gmpi_plan_run(plan));
  T_EQ_INT(in, size * (size - 1) / 2);
  T_OK(gmpi_plan_free(&plan));
  in = -1;
  T_OK(gmpi_sendrecv(&out, 1, GMPI_INT32, right, 6, &in, 1, GMPI_INT32, left, 6, comm, NULL));
  T_EQ_INT(in, left);
}

static void stale_plan(void) {
  int x = rank + 1, y = 0;
  gmpi_plan_t plan = NULL;
  T_OK(gmpi_plan_begin(comm));
  T_OK(gmpi_allreduce(&x, &y, 1, GMPI_INT32, GMPI_SUM, comm));
  T_OK(gmpi_plan_end(comm, &plan));
  gmpi_plan_t copy = plan;
  T_OK(gmpi_plan_run(plan));
  T_EQ_INT(y, size * (size + 1) / 2);
  T_OK(gmpi_plan_free(&plan));
  T_EQ_PTR(plan, NULL);
  T_STATUS(gmpi_plan_run(copy), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("not a live plan");
  T_STATUS(gmpi_plan_dump(copy, stdout), GMPI_ERR_INVALID_ARG);
  T_STATUS(gmpi_plan_free(&copy), GMPI_ERR_INVALID_ARG);
}

/* One ring exchange on fresh requests: left's value arrives. */
static void ring(gmpi_request_t r[2], int *in, const int *out, int tag) {
  int left = (rank + size - 1) % size, right = (rank + 1) % size;
  *in = -1;
  T_OK(gmpi_irecv(in, 1, GMPI_INT32, left, tag, comm, &r[0]));
  T_OK(gmpi_isend(out, 1, GMPI_INT32, right, tag, comm, &r[1]));
}

static void stale_request(void) {
  int left = (rank + size - 1) % size, out = rank, in = -1, again = -1;
  gmpi_request_t r[2], copy[2], fresh[2];
  ring(r, &in, &out, 7);
  copy[0] = r[0];
  copy[1] = r[1];
  gmpi_request_t kept = r[0];
  T_OK(gmpi_waitall(2, r, NULL));
  T_EQ_INT(in, left);
  T_STATUS(gmpi_wait(&copy[0], NULL), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("argument 'request' = ");
  T_ERROR_MENTIONS("is not a live request");
  T_EQ_PTR(copy[0], kept); /* the caller's copy is left as it was */
  int done = 0, cancelled = 0, index = -1;
  T_STATUS(gmpi_test(&copy[1], &done, NULL), GMPI_ERR_INVALID_ARG);
  T_STATUS(gmpi_cancel(&copy[0], &cancelled), GMPI_ERR_INVALID_ARG);
  T_EQ_INT(cancelled, 0);
  /* Newer requests of this thread are live now: the copies still name dead requests, and an
   * array holding one is refused (naming its index) before anything in it is touched. */
  ring(fresh, &again, &out, 8);
  gmpi_request_t mixed[3] = {fresh[0], copy[1], fresh[1]};
  T_STATUS(gmpi_waitall(3, mixed, NULL), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("argument 'requests[1]'");
  T_STATUS(gmpi_waitany(3, mixed, &index, NULL), GMPI_ERR_INVALID_ARG);
  T_STATUS(gmpi_testall(3, mixed, &done, NULL), GMPI_ERR_INVALID_ARG);
  T_STATUS(gmpi_testany(3, mixed, &index, &done, NULL), GMPI_ERR_INVALID_ARG);
  T_STATUS(gmpi_wait(&copy[0], NULL), GMPI_ERR_INVALID_ARG);
  T_OK(gmpi_waitall(2, fresh, NULL));
  T_EQ_INT(again, left);
  T_EQ_PTR(fresh[0], NULL);
  T_EQ_PTR(fresh[1], NULL);
}

/* A plan whose comm was freed by gmpi_comm_free (test_plan covers gmpi_finalize): orphaned,
 * refused by run, freed by gmpi_plan_free with success; a copy is stale after that. */
static void plan_outlives_comm(void) {
  gmpi_comm_t dup = NULL;
  int x = rank + 1, y = 0;
  T_OK(gmpi_comm_dup(comm, &dup));
  gmpi_plan_t plan = NULL;
  T_OK(gmpi_plan_begin(dup));
  T_OK(gmpi_allreduce(&x, &y, 1, GMPI_INT32, GMPI_SUM, dup));
  T_OK(gmpi_plan_end(dup, &plan));
  T_OK(gmpi_plan_run(plan));
  T_EQ_INT(y, size * (size + 1) / 2);
  T_OK(gmpi_comm_free(&dup));
  gmpi_plan_t copy = plan;
  T_STATUS(gmpi_plan_run(plan), GMPI_ERR_STATE);
  T_ERROR_MENTIONS("only gmpi_plan_free is allowed");
  T_OK(gmpi_plan_free(&plan));
  T_EQ_PTR(plan, NULL);
  T_STATUS(gmpi_plan_free(&copy), GMPI_ERR_INVALID_ARG);
  T_ERROR_MENTIONS("not a live plan");
}

static size_t user_bytes(gmpi_comm_t c) {
  size_t lib = 0, user = 0;
  T_OK(gmpi_comm_mem_usage(c, &lib, &user));
  return user;
}

static void block_freed_elsewhere(void) {
  gmpi_comm_t dup = NULL;
  T_OK(gmpi_comm_dup(comm, &dup));
  size_t before = user_bytes(comm), dup_before = user_bytes(dup);
  void *p = NULL, *q = NULL;
  T_OK(gmpi_mem_alloc(comm, 4096, &p));
  T_EQ_SIZE(user_bytes(comm), before + 4096);
  T_OK(gmpi_mem_free(dup, p));
  T_EQ_SIZE(user_bytes(comm), before);
  T_EQ_SIZE(user_bytes(dup), dup_before);
  T_OK(gmpi_mem_alloc(dup, 512, &q)); /* outlives dup */
  T_OK(gmpi_comm_free(&dup));
  T_OK(gmpi_mem_free(comm, q));
  T_EQ_SIZE(user_bytes(comm), before);
}

int main(int argc, char **argv) {
  comm = t_init(&argc, &argv);
  gmpi_comm_rank(comm, &rank);
  gmpi_comm_size(comm, &size);
  failed_plan_end();
  stale_plan();
  stale_request();
  plan_outlives_comm();
  block_freed_elsewhere();
  return t_finish("test_stale");
}
