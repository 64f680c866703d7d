/* SPDX-License-Identifier: BSD-3-Clause */
/* Public plan calls: begin recording, end (compile collectively), run, dump, free. */
#include <stdlib.h>
#include <string.h>

#include "../core/comm.h"
#include "../core/dtype.h"
#include "../core/error.h"
#include "../core/ops.h"
#include "../core/plan.h"
#include "../core/plan_check.h"
#include "../core/plan_rec.h"
#include "../core/vote.h"

gmpi_status_t gmpi_plan_begin(gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  if (comm->rec)
    return gmpi_error(GMPI_ERR_STATE, "the communicator is already recording a plan; end it with "
                                      "gmpi_plan_end first");
  comm->rec = gmpi_plan_rec_new();
  if (!comm->rec) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a plan recording");
  return GMPI_SUCCESS;
}

/* The first step whose request is never waited inside the recording, or -1. */
static int first_unwaited(const struct gmpi_plan_rec *rec) {
  for (int i = 0; i < rec->n; i++) {
    const gmpi_plan_step_t *s = &rec->steps[i];
    if ((s->kind == PLAN_SEND || s->kind == PLAN_RECV) && rec->reqs[s->request]) return i;
  }
  return -1;
}

/* Every rank lowered its part, or every rank fails (naming a rank that could not). */
static gmpi_status_t agree(gmpi_comm_t comm, gmpi_status_t mine) {
  return gmpi_vote(comm, mine, 0, NULL, "could not compile the plan");
}

gmpi_status_t gmpi_plan_end(gmpi_comm_t comm, gmpi_plan_t *out) {
  GMPI_API_ENTER(comm);
  struct gmpi_plan_rec *rec = comm->rec;
  if (!rec) return gmpi_error(GMPI_ERR_STATE, "the communicator is not recording a plan");
  comm->rec = NULL; /* the recording ends, whatever happens next */
  struct gmpi_plan *plan = calloc(1, sizeof(*plan));
  gmpi_status_t st = GMPI_SUCCESS, mine = GMPI_SUCCESS;
  if (!plan) {
    st = gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a plan");
    goto free_rec;
  }
  int unwaited = first_unwaited(rec);
  plan->comm = comm;
  plan->backend = comm->ops->name;
  plan->steps = rec->steps;
  plan->n_steps = rec->n;
  rec->steps = NULL;
  GMPI_CHECK_GOTO(gmpi_plan_check(comm, plan->steps, plan->n_steps, unwaited, &plan->n_groups), st,
                  free_plan);
  mine = out ? gmpi_plan_lower(plan) : gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'plan' is NULL");
  if (mine == GMPI_SUCCESS && (mine = gmpi_plan_register(plan)) != GMPI_SUCCESS)
    gmpi_plan_release(plan);
  /* After a timeout a rank is missing: a vote would only wait for it a second time. */
  st = mine == GMPI_ERR_TIMEOUT ? mine : agree(comm, mine);
  if (st != GMPI_SUCCESS) {
    if (mine == GMPI_SUCCESS) {
      gmpi_plan_unregister(plan);
      gmpi_plan_release(plan);
    }
    goto free_plan;
  }
  plan->next = comm->plans;
  comm->plans = plan;
  *out = plan;
  gmpi_plan_rec_free(rec);
  return GMPI_SUCCESS;
free_plan:
  gmpi_plan_steps_free(plan->steps, plan->n_steps);
  free(plan);
free_rec:
  gmpi_plan_rec_free(rec);
  return st;
}

static gmpi_status_t check_live(gmpi_plan_t plan) {
  if (gmpi_plan_is_live(plan)) return GMPI_SUCCESS;
  return gmpi_error(GMPI_ERR_INVALID_ARG,
                    "argument 'plan' = %p is not a live plan (freed already, or never made by "
                    "gmpi_plan_end)",
                    (void *)plan);
}

static gmpi_status_t enter_plan(const char *func, gmpi_plan_t plan) {
  gmpi_call_begin(func, -1);
  if (!plan) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'plan' is NULL");
  GMPI_CHECK(check_live(plan));
  if (!plan->comm)
    return gmpi_error(GMPI_ERR_STATE, "the plan's communicator was finalized or freed; only "
                                      "gmpi_plan_free is allowed");
  return gmpi_comm_enter(func, plan->comm);
}

gmpi_status_t gmpi_plan_run(gmpi_plan_t plan) {
  GMPI_CHECK(enter_plan(__func__, plan));
  gmpi_comm_t comm = plan->comm;
  if (comm->rec)
    return gmpi_error(GMPI_ERR_STATE, "cannot run a plan while the comm records another");
  uint64_t seq = gmpi_flight_start(&comm->flight, "plan", (size_t)plan->n_steps, -1, -1);
  gmpi_status_t st = gmpi_plan_replay(plan);
  gmpi_flight_end(&comm->flight, seq, st);
  if (st == GMPI_ERR_TIMEOUT) gmpi_flight_dump(&comm->flight, "timeout");
  return st;
}

static void dump_step(FILE *out, const gmpi_plan_step_t *s, int index) {
  fprintf(out, "  %3d  group %-3d %-26s ", index, s->group, s->lowered);
  switch (s->kind) {
  case PLAN_COLL: {
    const gmpi_coll_args_t *a = &s->coll;
    fprintf(out, "%s send=%p recv=%p count=%zu %s", gmpi_coll_name(a->kind), a->sendbuf, a->recvbuf,
            a->count, gmpi_dtype_name(a->dtype));
    if (gmpi_coll_has_op(a->kind)) fprintf(out, " op=%s", gmpi_op_name(a->op));
    if (gmpi_coll_has_root(a->kind)) fprintf(out, " root=%d", a->root);
    if (s->fuse_why) fprintf(out, " [%s]", s->fuse_why); /* why it did not join the run before */
    break;
  }
  case PLAN_SEND:
  case PLAN_RECV:
    fprintf(out, "%s buf=%p %zu bytes %s rank %d tag %d (request %d)",
            s->kind == PLAN_SEND ? "send" : "recv", s->p2p.buf, s->bytes,
            s->kind == PLAN_SEND ? "to" : "from", s->peer, s->tag, s->request);
    if (s->kind == PLAN_RECV && (s->p2p.peer == GMPI_ANY_SOURCE || s->p2p.tag == GMPI_ANY_TAG))
      fprintf(out, " [recorded as source %d tag %d]", s->p2p.peer, s->p2p.tag);
    break;
  case PLAN_WAIT: fprintf(out, "wait request %d", s->request); break;
  }
  fputc('\n', out);
}

gmpi_status_t gmpi_plan_dump(gmpi_plan_t plan, FILE *out) {
  gmpi_call_begin(__func__, -1);
  if (!plan) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'plan' is NULL");
  if (!out) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'out' is NULL");
  GMPI_CHECK(check_live(plan));
  fprintf(out, "gmpi plan: %d steps in %d groups, lowered for the %s backend%s\n", plan->n_steps,
          plan->n_groups, plan->backend, plan->comm ? "" : " (orphaned: comm finalized or freed)");
  if (plan->comm) fprintf(out, "  rank %d of %d\n", plan->comm->rank, plan->comm->size);
  for (int i = 0; i < plan->n_steps; i++)
    dump_step(out, &plan->steps[i], i);
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_plan_free(gmpi_plan_t *pplan) {
  gmpi_call_begin(__func__, -1);
  if (!pplan || !*pplan) return GMPI_SUCCESS;
  struct gmpi_plan *plan = *pplan;
  GMPI_CHECK(check_live(plan));
  /* A plan whose comm was finalized (orphaned) released its backend resources then; freeing
   * it is the one call it allows, and succeeds. */
  if (plan->comm) {
    gmpi_call_ctx()->rank = plan->comm->rank;
    gmpi_plan_release(plan);
    gmpi_plan_unlink(plan);
  }
  gmpi_plan_unregister(plan);
  gmpi_plan_steps_free(plan->steps, plan->n_steps);
  free(plan);
  *pplan = NULL;
  return GMPI_SUCCESS;
}
