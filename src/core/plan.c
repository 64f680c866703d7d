/* SPDX-License-Identifier: BSD-3-Clause */
/* Recording a plan, and the plan objects' life cycle. While comm->rec is set, collectives and
 * point-to-point calls on comm append steps instead of running; waits on recorded requests
 * append wait steps. gmpi_plan_end (src/api/plan.c) compiles the steps. */
#include "plan.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "error.h"
#include "plan_rec.h"
#include "request.h"
#include "route.h"

static gmpi_status_t push_step(struct gmpi_plan_rec *rec, gmpi_plan_step_t step) {
  if (rec->n == rec->cap) {
    int cap = rec->cap ? 2 * rec->cap : 32;
    gmpi_plan_step_t *grown = realloc(rec->steps, (size_t)cap * sizeof(*grown));
    if (!grown) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory to record %d steps", cap);
    rec->steps = grown;
    rec->cap = cap;
  }
  step.group = -1;
  step.peer = -1;
  rec->steps[rec->n++] = step;
  return GMPI_SUCCESS;
}

/* A v-variant's per-rank arrays are the caller's and may be gone by replay: the step keeps a
 * copy (one block, step->owned), pointed to by its args. */
static gmpi_status_t keep_arrays(gmpi_comm_t comm, gmpi_plan_step_t *step) {
  gmpi_coll_args_t *c = &step->coll;
  const size_t **arrays[4] = {&c->sendcounts, &c->sdispls, &c->recvcounts, &c->rdispls};
  size_t p = (size_t)comm->size, used = 0;
  for (int i = 0; i < 4; i++)
    used += *arrays[i] != NULL;
  if (!used) return GMPI_SUCCESS;
  if (!(step->owned = malloc(used * p * sizeof(size_t))))
    return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory to record a %s's counts",
                      gmpi_coll_name(c->kind));
  size_t *next = step->owned;
  for (int i = 0; i < 4; i++) {
    if (!*arrays[i]) continue;
    memcpy(next, *arrays[i], p * sizeof(size_t));
    *arrays[i] = next;
    next += p;
  }
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_plan_record_coll(gmpi_comm_t comm, const gmpi_coll_args_t *a) {
  gmpi_plan_step_t step;
  memset(&step, 0, sizeof(step));
  step.kind = PLAN_COLL;
  step.coll = *a;
  step.request = -1;
  GMPI_CHECK(keep_arrays(comm, &step));
  gmpi_status_t st = push_step(comm->rec, step);
  if (st != GMPI_SUCCESS) free(step.owned);
  return st;
}

gmpi_status_t gmpi_plan_record_coll_request(gmpi_comm_t comm, const gmpi_coll_args_t *a,
                                            gmpi_request_t *out) {
  gmpi_request_t req = gmpi_request_new();
  if (!req) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a request");
  gmpi_status_t st = gmpi_plan_record_coll(comm, a);
  if (st != GMPI_SUCCESS) {
    gmpi_request_free(req);
    return st;
  }
  /* The plan runs its collectives in order and each replay completes them all: waiting this
   * request records nothing. */
  req->comm = comm;
  req->is_coll = 1;
  req->coll = *a;
  req->rec_gen = comm->rec->gen;
  req->rec_index = -1;
  *out = req;
  return GMPI_SUCCESS;
}

void gmpi_plan_steps_free(gmpi_plan_step_t *steps, int n) {
  for (int i = 0; steps && i < n; i++)
    free(steps[i].owned);
  free(steps);
}

gmpi_status_t gmpi_plan_record_p2p(gmpi_comm_t comm, gmpi_request_t req) {
  struct gmpi_plan_rec *rec = comm->rec;
  if (rec->n_reqs == rec->cap_reqs) {
    int cap = rec->cap_reqs ? 2 * rec->cap_reqs : 32;
    gmpi_request_t *grown = realloc(rec->reqs, (size_t)cap * sizeof(*grown));
    if (!grown) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory to record %d requests", cap);
    rec->reqs = grown;
    rec->cap_reqs = cap;
  }
  gmpi_plan_step_t step;
  memset(&step, 0, sizeof(step));
  step.kind = req->args.dir == GMPI_P2P_SEND ? PLAN_SEND : PLAN_RECV;
  step.p2p = req->args;
  step.request = rec->n_reqs;
  GMPI_CHECK(push_step(rec, step));
  req->rec_gen = rec->gen;
  req->rec_index = rec->n_reqs;
  rec->reqs[rec->n_reqs++] = req;
  return GMPI_SUCCESS;
}

int gmpi_plan_request_is_recorded(gmpi_request_t req) { return req && req->rec_gen; }

unsigned long gmpi_plan_rec_gen(const struct gmpi_plan_rec *rec) { return rec->gen; }

struct gmpi_plan_rec *gmpi_plan_rec_new(void) {
  static atomic_ulong last_gen;
  struct gmpi_plan_rec *rec = calloc(1, sizeof(*rec));
  if (rec) rec->gen = atomic_fetch_add(&last_gen, 1) + 1;
  return rec;
}

gmpi_status_t gmpi_plan_record_wait(gmpi_request_t req) {
  /* The recording is named by its generation, never dereferenced: the one a request was
   * recorded in may have ended and been freed (gmpi_plan_end failed, the comm was freed), and
   * a new one may sit at its address. Such a request is the caller's alone: released here. */
  struct gmpi_plan_rec *rec = req->comm->rec;
  if (!rec || rec->gen != req->rec_gen) {
    gmpi_request_free(req);
    return gmpi_error(GMPI_ERR_STATE,
                      "the request was recorded in a plan whose recording has ended (it can "
                      "only be waited inside that recording); it is released now");
  }
  if (req->rec_index < 0) { /* a recorded nonblocking collective, or GMPI_PROC_NULL p2p */
    gmpi_request_free(req);
    return GMPI_SUCCESS;
  }
  gmpi_plan_step_t step;
  memset(&step, 0, sizeof(step));
  step.kind = PLAN_WAIT;
  step.request = req->rec_index;
  GMPI_CHECK(push_step(rec, step));
  rec->reqs[req->rec_index] = NULL;
  gmpi_request_free(req);
  return GMPI_SUCCESS;
}

void gmpi_plan_rec_free(struct gmpi_plan_rec *rec) {
  if (!rec) return;
  /* Requests never waited in the recording (rec->reqs[i] still set) stay allocated: the caller
   * holds them, and its gmpi_wait releases them with GMPI_ERR_STATE (gmpi_plan_record_wait). */
  free(rec->reqs);
  gmpi_plan_steps_free(rec->steps, rec->n);
  free(rec);
}

void gmpi_plan_abort_recording(gmpi_comm_t comm) {
  gmpi_plan_rec_free(comm->rec);
  comm->rec = NULL;
}

void gmpi_plan_orphan_all(gmpi_comm_t comm) {
  for (struct gmpi_plan *p = comm->plans, *next; p; p = next) {
    next = p->next;
    gmpi_plan_release(p);
    p->comm = NULL;
    p->next = NULL;
  }
  comm->plans = NULL;
}

void gmpi_plan_unlink(struct gmpi_plan *plan) {
  gmpi_comm_t comm = plan->comm;
  for (struct gmpi_plan **link = &comm->plans; *link; link = &(*link)->next) {
    if (*link == plan) {
      *link = plan->next;
      break;
    }
  }
}

gmpi_status_t gmpi_plan_lower(struct gmpi_plan *plan) {
  gmpi_comm_t comm = plan->comm;
  const gmpi_engine_t *engine;
  GMPI_CHECK(gmpi_route_plan(comm, plan, &engine));
  GMPI_CHECK(engine->coll->plan_lower(comm, engine->coll_state, plan, &plan->lowered));
  plan->engine = engine;
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_plan_replay(struct gmpi_plan *plan) {
  const gmpi_engine_t *engine = plan->engine;
  GMPI_CHECK(gmpi_route_fence(plan->comm, engine));
  return engine->coll->plan_replay(plan->comm, engine->coll_state, plan, plan->lowered);
}

void gmpi_plan_release(struct gmpi_plan *plan) {
  if (plan->engine) plan->engine->coll->plan_free(plan->lowered);
  plan->engine = NULL;
  plan->lowered = NULL;
}

/* Plans handed to the caller and not yet freed. Membership is checked by address only, so a
 * stale handle (a copy kept after gmpi_plan_free) is refused without being dereferenced. Plans
 * are few and made rarely: an array under a mutex. */
static pthread_mutex_t plans_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gmpi_plan **live_plans;
static size_t n_live_plans, cap_live_plans;

gmpi_status_t gmpi_plan_register(struct gmpi_plan *plan) {
  gmpi_status_t st = GMPI_SUCCESS;
  pthread_mutex_lock(&plans_lock);
  if (n_live_plans == cap_live_plans) {
    size_t cap = cap_live_plans ? 2 * cap_live_plans : 16;
    struct gmpi_plan **grown = realloc(live_plans, cap * sizeof(*grown));
    if (!grown) {
      st = gmpi_error(GMPI_ERR_NO_MEMORY, "no memory to register %zu plans", cap);
      goto unlock;
    }
    live_plans = grown;
    cap_live_plans = cap;
  }
  live_plans[n_live_plans++] = plan;
unlock:
  pthread_mutex_unlock(&plans_lock);
  return st;
}

void gmpi_plan_unregister(struct gmpi_plan *plan) {
  pthread_mutex_lock(&plans_lock);
  for (size_t i = 0; i < n_live_plans; i++)
    if (live_plans[i] == plan) {
      live_plans[i] = live_plans[--n_live_plans];
      break;
    }
  if (n_live_plans == 0) { /* leave nothing for leak checkers */
    free(live_plans);
    live_plans = NULL;
    cap_live_plans = 0;
  }
  pthread_mutex_unlock(&plans_lock);
}

int gmpi_plan_is_live(const struct gmpi_plan *plan) {
  int live = 0;
  pthread_mutex_lock(&plans_lock);
  for (size_t i = 0; i < n_live_plans && !live; i++)
    live = live_plans[i] == plan;
  pthread_mutex_unlock(&plans_lock);
  return live;
}
