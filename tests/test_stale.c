/* SPDX-License-Identifier: BSD-3-Clause */
/* Stale handles (docs/reliability.md, "Stale handles"): what a program that keeps a handle
 * past its end gets -- a status, never a read of freed memory (CI runs this under ASan).
 *  - requests recorded in a plan whose gmpi_plan_end failed: gmpi_wait/gmpi_waitall answer
 *    GMPI_ERR_STATE and release them, and the comm stays usable;
 *  - a copy of a freed plan: gmpi_plan_run, gmpi_plan_dump and gmpi_plan_free answer
 *    GMPI_ERR_INVALID_ARG naming the plan;
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
  block_freed_elsewhere();
  return t_finish("test_stale");
}
