/* SPDX-License-Identifier: BSD-3-Clause */
#include "request.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "comm.h"
#include "error.h"
#include "ops.h"
#include "plan.h"
#include "reuse.h"
#include "route.h"
#include "tls.h"
#include "wait.h"

/* A collective is done when its engine part and its GMPI_CHECK exchange both are. A mismatch
 * fails the comm: the data part may never complete, or may have moved wrong data. */
static gmpi_status_t coll_request_test(gmpi_request_t req, int *done) {
  *done = 0;
  if (req->check) {
    int checked = 0;
    gmpi_status_t st = gmpi_check_coll_test(req->comm, &req->check, &checked);
    if (st != GMPI_SUCCESS) {
      gmpi_comm_fail(req->comm, st);
      gmpi_flight_dump(&req->comm->flight, gmpi_strerror(st));
      return st;
    }
  }
  if (!req->engine_done)
    GMPI_CHECK(req->engine->coll->test(req->engine->coll_state, req, &req->engine_done));
  *done = req->engine_done && !req->check;
  return GMPI_SUCCESS;
}

static gmpi_status_t engine_test(gmpi_request_t req, int *done) {
  if (!req->engine) { /* GMPI_PROC_NULL: complete from the start */
    *done = 1;
    return GMPI_SUCCESS;
  }
  if (req->is_coll) return coll_request_test(req, done);
  return req->engine->p2p->test(req->engine->p2p_state, req, done);
}

/* Requests are made and freed once per message: freed ones are kept per thread for the next
 * (a zeroed block either way). Any thread may free a request another made. A freed request is
 * marked dead and waits its turn in a queue, oldest reused first, and only once QUARANTINE
 * newer ones wait behind it: so a stale copy of a handle (one gmpi_wait/gmpi_test ended) finds
 * a dead request for at least the next QUARANTINE requests the thread frees, and is refused
 * (gmpi_request_is_live) rather than read as a newer request that took its place. */
/* 256: a window of 64 nonblocking messages (osu_bw's) freed and made again took a quarter of its
 * requests from malloc with 64 (the quarantine keeps 16 back). Under AddressSanitizer 64, as
 * before: a deeper ring would hide a use after free of a request from it for longer. */
#define SPARE_REQUESTS (GMPI_KEEP_SPARES ? 256 : 64)
#define QUARANTINE     16
#define REQUEST_LIVE   0x67726571u /* "greq" */
#define REQUEST_DEAD   0x64656164u /* "dead" */
/* A ring, first_spare the oldest: a heap block of SPARE_REQUESTS made at the thread's first
 * free, so that libgmpi's thread-local block stays small (tls.h). */
static _Thread_local gmpi_request_t *spare GMPI_TLS_HOT;
static _Thread_local int n_spare GMPI_TLS_HOT, first_spare GMPI_TLS_HOT;
/* A thread's spares and ring are freed when it exits (a key whose value is the ring). */
static pthread_key_t spare_key;
static pthread_once_t spare_key_once = PTHREAD_ONCE_INIT;
static int spare_key_made; /* else spares are not kept: freed at once */

static gmpi_request_t oldest_spare(void) {
  gmpi_request_t req = spare[first_spare];
  first_spare = (first_spare + 1) % SPARE_REQUESTS;
  n_spare--;
  return req;
}

static void free_spares(void *ring) {
  while (n_spare)
    free(oldest_spare());
  free(ring);
  spare = NULL;
}

static void make_spare_key(void) {
  spare_key_made = pthread_key_create(&spare_key, free_spares) == 0;
}

gmpi_request_t gmpi_request_new(void) {
  gmpi_request_t req = n_spare > QUARANTINE ? oldest_spare() : malloc(sizeof(*req));
  if (!req) return NULL;
  memset(req, 0, sizeof(*req));
  req->magic = REQUEST_LIVE;
  return req;
}

int gmpi_request_is_live(gmpi_request_t req) { return req->magic == REQUEST_LIVE; }

/* This thread's ring, made now if it has none (freed with its spares at its exit); NULL
 * when there is no memory for it. */
static gmpi_request_t *spare_ring(void) {
  if (spare) return spare;
  pthread_once(&spare_key_once, make_spare_key);
  gmpi_request_t *ring = spare_key_made ? malloc(SPARE_REQUESTS * sizeof(*ring)) : NULL;
  if (!ring || pthread_setspecific(spare_key, ring) != 0) {
    free(ring);
    return NULL;
  }
  first_spare = 0;
  return spare = ring;
}

void gmpi_request_free(gmpi_request_t req) {
  req->magic = REQUEST_DEAD;
  if (!spare_ring()) { /* not kept: freed at once */
    free(req);
    return;
  }
  if (n_spare == SPARE_REQUESTS) free(oldest_spare());
  spare[(first_spare + n_spare++) % SPARE_REQUESTS] = req;
}

/* Idempotent: once done, the engine has let go of req, so it is not asked again (testall tests
 * requests that stay unfinished while others are pending). */
gmpi_status_t gmpi_request_test(gmpi_request_t req, int *done) {
  if (req->completed) {
    *done = 1;
    return GMPI_SUCCESS;
  }
  GMPI_CHECK(engine_test(req, done));
  req->completed = *done;
  return GMPI_SUCCESS;
}

static void engine_let_go(gmpi_request_t req) {
  gmpi_check_coll_abandon(req->check);
  req->check = NULL;
  /* GMPI_PROC_NULL, or done: no engine holds anything */
  if (!req->engine || req->completed) return;
  const gmpi_engine_t *e = req->engine;
  if (req->is_coll)
    e->coll->abandon(e->coll_state, req);
  else
    e->p2p->abandon(e->p2p_state, req);
}

static const char *p2p_name(const gmpi_p2p_args_t *a) {
  return a->dir == GMPI_P2P_SEND ? "isend" : "irecv";
}

gmpi_status_t gmpi_request_new_coll(gmpi_comm_t comm, const gmpi_coll_args_t *a,
                                    gmpi_request_t *out) {
  gmpi_request_reap_released(comm);
  gmpi_request_t req = gmpi_request_new();
  if (!req) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a request");
  req->comm = comm;
  req->is_coll = 1;
  req->coll = *a;
  req->status = (gmpi_msg_status_t){GMPI_ANY_SOURCE, GMPI_ANY_TAG, 0};
  /* a static name: the flight record keeps the pointer (a name built on this stack was read
   * after the call returned, when a timeout printed the record) */
  req->flight_seq = gmpi_flight_start(&comm->flight, gmpi_coll_iname(a->kind), a->count,
                                      gmpi_coll_has_root(a->kind) ? a->root : -1, -1);
  *out = req;
  return GMPI_SUCCESS;
}

void gmpi_request_discard(gmpi_request_t req, gmpi_status_t why) {
  gmpi_flight_end(&req->comm->flight, req->flight_seq, why);
  gmpi_request_free(req);
}

/* A send to or receive from GMPI_PROC_NULL: done at once, no engine, an empty status (MPI's
 * rule). While a plan records, it records nothing, and waiting it records nothing either. */
static gmpi_status_t proc_null_request(gmpi_comm_t comm, gmpi_request_t req, gmpi_request_t *out) {
  req->status = gmpi_proc_null_status();
  if (comm->rec) {
    req->rec_gen = gmpi_plan_rec_gen(comm->rec);
    req->rec_index = -1;
  } else {
    req->flight_seq =
        gmpi_flight_start(&comm->flight, p2p_name(&req->args), 0, GMPI_PROC_NULL, req->args.tag);
  }
  *out = req;
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_request_start(gmpi_comm_t comm, const gmpi_p2p_args_t *args,
                                 gmpi_request_t *out) {
  GMPI_CHECK(gmpi_p2p_validate(comm, args));
  gmpi_request_reap_released(comm);
  gmpi_request_t req = gmpi_request_new();
  if (!req) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a request");
  req->comm = comm;
  req->args = *args;
  if (args->peer == GMPI_PROC_NULL) return proc_null_request(comm, req, out);
  if (comm->rec) {
    gmpi_status_t st = gmpi_plan_record_p2p(comm, req);
    if (st != GMPI_SUCCESS)
      gmpi_request_free(req);
    else
      *out = req;
    return st;
  }
  comm->p2p_started = 1;
  req->flight_seq =
      gmpi_flight_start(&comm->flight, p2p_name(args), args->count, args->peer, args->tag);
  gmpi_status_t st = gmpi_route_p2p(req);
  if (st == GMPI_SUCCESS) st = req->engine->p2p->post(req->engine->p2p_state, req);
  if (st != GMPI_SUCCESS) {
    gmpi_flight_end(&comm->flight, req->flight_seq, st);
    gmpi_request_free(req);
    return st;
  }
  *out = req;
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_request_finish(gmpi_request_t req, gmpi_msg_status_t *status) {
  gmpi_status_t st = req->result;
  if (status && gmpi_msg_status_written(st)) *status = req->status;
  gmpi_flight_end(&req->comm->flight, req->flight_seq, st);
  gmpi_request_free(req);
  return st;
}

void gmpi_request_give_up(gmpi_request_t req, gmpi_status_t why) {
  gmpi_flight_end(&req->comm->flight, req->flight_seq, why);
  engine_let_go(req);
  gmpi_request_free(req);
}

void gmpi_request_abandon(gmpi_request_t req) {
  if (!req) return;
  /* A recorded request stays in its recording, unwaited: gmpi_plan_end reports it. */
  if (gmpi_plan_request_is_recorded(req)) return;
  gmpi_request_give_up(req, GMPI_ERR_STATE);
}

gmpi_status_t gmpi_request_wait_expired(gmpi_request_t req) {
  gmpi_comm_t comm = req->comm;
  gmpi_p2p_args_t a = req->args;
  gmpi_coll_args_t c = req->coll;
  int is_coll = req->is_coll;
  gmpi_comm_fail(comm, GMPI_ERR_TIMEOUT);
  gmpi_request_give_up(req, GMPI_ERR_TIMEOUT);
  gmpi_flight_dump(&comm->flight, "timeout");
  if (is_coll)
    return gmpi_error(GMPI_ERR_TIMEOUT,
                      "%s (%zu elements) did not complete within GMPI_TIMEOUT = %g s: a rank "
                      "has not started it; the communicator is now failed",
                      gmpi_coll_iname(c.kind), c.count, comm->cfg.timeout_s);
  return gmpi_error(GMPI_ERR_TIMEOUT,
                    "%s %s rank %d (tag %d, %zu elements) did not complete within GMPI_TIMEOUT "
                    "= %g s; the communicator is now failed",
                    p2p_name(&a), a.dir == GMPI_P2P_SEND ? "to" : "from", a.peer, a.tag, a.count,
                    comm->cfg.timeout_s);
}

/* A collective on an engine whose work completes alone, with no GMPI_CHECK exchange to
 * progress: tested several times between progress passes. */
static int completes_alone(gmpi_request_t req) {
  return req->is_coll && req->engine && req->engine->coll->completes_alone && !req->check;
}

gmpi_status_t gmpi_request_wait(gmpi_request_t req, gmpi_msg_status_t *status) {
  gmpi_deadline_t d;
  gmpi_deadline_start(&d, req->comm->cfg.timeout_s);
  int (*poll)(gmpi_deadline_t *) =
      completes_alone(req) ? gmpi_deadline_poll_passive : gmpi_deadline_poll;
  for (;;) {
    int done = 0;
    gmpi_status_t st = gmpi_request_test(req, &done);
    if (st != GMPI_SUCCESS) {
      gmpi_request_give_up(req, st);
      return st;
    }
    if (done) return gmpi_request_finish(req, status);
    if (poll(&d)) return gmpi_request_wait_expired(req);
  }
}

/* ---- released requests ------------------------------------------------------------------- */

/* Every comm's released list is kept under one lock: it is touched only while some request is
 * released (n_released > 0), so the per-call cost otherwise is one atomic load. */
static pthread_mutex_t released_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int n_released;

static void push_released(gmpi_request_t req) {
  pthread_mutex_lock(&released_lock);
  req->released_next = req->comm->released;
  req->comm->released = req;
  pthread_mutex_unlock(&released_lock);
}

void gmpi_request_keep_released(gmpi_request_t req) {
  req->released = 1;
  atomic_fetch_add(&n_released, 1);
  push_released(req);
}

/* Take comm's whole list: its requests are then this thread's alone to test and free. */
static gmpi_request_t take_released(gmpi_comm_t comm) {
  pthread_mutex_lock(&released_lock);
  gmpi_request_t list = comm->released;
  comm->released = NULL;
  pthread_mutex_unlock(&released_lock);
  return list;
}

/* Nobody waits for a released request: its end is recorded, its status dropped. A failed one
 * is given up (its engine lets go) like any request whose test failed. */
static int reap_one(gmpi_request_t req) {
  int done = 0;
  gmpi_status_t st = gmpi_request_test(req, &done);
  if (st != GMPI_SUCCESS)
    gmpi_request_give_up(req, st);
  else if (done)
    gmpi_request_finish(req, NULL);
  else
    return 0;
  atomic_fetch_sub(&n_released, 1);
  return 1;
}

void gmpi_request_reap_released(gmpi_comm_t comm) {
  if (!atomic_load_explicit(&n_released, memory_order_relaxed)) return;
  for (gmpi_request_t req = take_released(comm), next; req; req = next) {
    next = req->released_next;
    if (!reap_one(req)) push_released(req);
  }
}

void gmpi_request_drop_released(gmpi_comm_t comm) {
  gmpi_request_reap_released(comm);
  for (gmpi_request_t req = take_released(comm), next; req; req = next) {
    next = req->released_next;
    gmpi_request_give_up(req, GMPI_ERR_STATE); /* its engine lets go; nothing more is moved */
    atomic_fetch_sub(&n_released, 1);
  }
}
