/* SPDX-License-Identifier: BSD-3-Clause */
/* Public point to point: requests are started by core (gmpi_request_start) on the comm's
 * backend and completed by wait/test, each wait bounded by GMPI_TIMEOUT. */
#include <stdio.h>
#include <stdlib.h>

#include "../core/comm.h"
#include "../core/error.h"
#include "../core/ops.h"
#include "../core/plan.h"
#include "../core/progress.h"
#include "../core/request.h"
#include "../core/wait.h"

static const gmpi_msg_status_t empty_status = {GMPI_ANY_SOURCE, GMPI_ANY_TAG, 0};

/* Post one send or receive for the public call func (named in its errors). */
static gmpi_p2p_args_t p2p_args(gmpi_p2p_dir_t dir, const void *buf, size_t count,
                                gmpi_dtype_t dtype, int peer, int tag) {
  gmpi_p2p_args_t a = {0};
  a.dir = dir;
  a.buf = (void *)buf;
  a.count = count;
  a.dtype = dtype;
  a.peer = peer;
  a.tag = tag;
  return a;
}

/* A synchronous send: complete once a receive matched it. */
static gmpi_p2p_args_t sync_args(const void *buf, size_t count, gmpi_dtype_t dtype, int peer,
                                 int tag) {
  gmpi_p2p_args_t a = p2p_args(GMPI_P2P_SEND, buf, count, dtype, peer, tag);
  a.sync = 1;
  return a;
}

static gmpi_status_t post(const char *func, gmpi_comm_t comm, gmpi_p2p_args_t a,
                          gmpi_request_t *request) {
  GMPI_CHECK(gmpi_comm_enter(func, comm));
  if (!request) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'request' is NULL");
  return gmpi_request_start(comm, &a, request);
}

gmpi_status_t gmpi_isend(const void *buf, size_t count, gmpi_dtype_t dtype, int dest, int tag,
                         gmpi_comm_t comm, gmpi_request_t *request) {
  return post(__func__, comm, p2p_args(GMPI_P2P_SEND, buf, count, dtype, dest, tag), request);
}

gmpi_status_t gmpi_issend(const void *buf, size_t count, gmpi_dtype_t dtype, int dest, int tag,
                          gmpi_comm_t comm, gmpi_request_t *request) {
  return post(__func__, comm, sync_args(buf, count, dtype, dest, tag), request);
}

/* A blocking send or receive on a comm already entered: with another rank, the exchange with
 * one half on an engine that has one (no request); else a request, waited. */
static gmpi_status_t blocking_run(gmpi_comm_t comm, gmpi_p2p_args_t *a, gmpi_msg_status_t *status) {
  int ran = 0;
  gmpi_status_t st = gmpi_p2p_single(comm, a, status, &ran);
  if (st != GMPI_SUCCESS || ran) return st;
  gmpi_request_t req = NULL;
  GMPI_CHECK(gmpi_request_start(comm, a, &req));
  if (gmpi_plan_request_is_recorded(req)) return gmpi_plan_record_wait(req);
  return gmpi_request_wait(req, status);
}

static gmpi_status_t blocking(const char *func, gmpi_comm_t comm, gmpi_p2p_args_t a,
                              gmpi_msg_status_t *status) {
  GMPI_CHECK(gmpi_comm_enter(func, comm));
  return blocking_run(comm, &a, status);
}

gmpi_status_t gmpi_ssend(const void *buf, size_t count, gmpi_dtype_t dtype, int dest, int tag,
                         gmpi_comm_t comm) {
  return blocking(__func__, comm, sync_args(buf, count, dtype, dest, tag), NULL);
}

gmpi_status_t gmpi_irecv(void *buf, size_t count, gmpi_dtype_t dtype, int source, int tag,
                         gmpi_comm_t comm, gmpi_request_t *request) {
  return post(__func__, comm, p2p_args(GMPI_P2P_RECV, buf, count, dtype, source, tag), request);
}

/* "argument 'request'" of a one-request call (index < 0), "argument 'requests[3]'" of an array. */
static const char *request_name(int index, char *buf, size_t len) {
  if (index < 0) return "argument 'request'";
  snprintf(buf, len, "argument 'requests[%d]'", index);
  return buf;
}

/* A request may be waited only while it and its comm live; a failed comm ends it with STATE.
 * A stale copy of a completed request's handle meets a dead request (request.c keeps freed
 * ones aside before reusing them) and is refused. */
static gmpi_status_t check_request(gmpi_request_t req, int index) {
  char name[48];
  if (!gmpi_request_is_live(req))
    return gmpi_error(GMPI_ERR_INVALID_ARG,
                      "%s = %p is not a live request: it completed or was cancelled already "
                      "(a copy of a handle that gmpi_wait/gmpi_test set to NULL?)",
                      request_name(index, name, sizeof(name)), (void *)req);
  if (req->released) /* gmpi's now: waiting it would free it twice */
    return gmpi_error(GMPI_ERR_INVALID_ARG,
                      "%s = %p was given up by gmpi_request_release (a copy of that handle?)",
                      request_name(index, name, sizeof(name)), (void *)req);
  if (!gmpi_comm_is_live(req->comm))
    return gmpi_error(GMPI_ERR_INVALID_ARG, "%s belongs to a communicator that was finalized",
                      request_name(index, name, sizeof(name)));
  gmpi_call_ctx()->rank = req->comm->rank;
  gmpi_status_t failure = req->comm->failure;
  if (failure != GMPI_SUCCESS && !gmpi_plan_request_is_recorded(req)) {
    gmpi_request_abandon(req);
    return gmpi_error(GMPI_ERR_STATE, "%s: its communicator failed earlier (%s)",
                      request_name(index, name, sizeof(name)), gmpi_strerror(failure));
  }
  return GMPI_SUCCESS;
}

/* The common start of wait and test: *live is 0 when there is nothing to do (a NULL request,
 * or one that ended with an error just now). */
/* A request a plan recorded belongs to the plan: only a wait inside it may complete it. */
static gmpi_status_t refuse_recorded(gmpi_request_t req, const char *what) {
  if (!gmpi_plan_request_is_recorded(req)) return GMPI_SUCCESS;
  return gmpi_error(GMPI_ERR_STATE,
                    "a request recorded in a plan cannot be %s; wait it inside the plan", what);
}

static gmpi_status_t enter_request(gmpi_request_t *request, gmpi_msg_status_t *status, int *live) {
  *live = 0;
  if (!request) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'request' is NULL");
  if (!*request) {
    if (status) *status = empty_status;
    return GMPI_SUCCESS;
  }
  gmpi_status_t st = check_request(*request, -1);
  if (st == GMPI_ERR_STATE) *request = NULL;
  *live = st == GMPI_SUCCESS;
  return st;
}

gmpi_status_t gmpi_wait(gmpi_request_t *request, gmpi_msg_status_t *status) {
  gmpi_call_begin_nocomm(__func__);
  int live;
  gmpi_status_t st = enter_request(request, status, &live);
  if (!live) return st;
  gmpi_request_t req = *request;
  if (gmpi_plan_request_is_recorded(req)) {
    *request = NULL;
    return gmpi_plan_record_wait(req);
  }
  *request = NULL;
  return gmpi_request_wait(req, status);
}

gmpi_status_t gmpi_test(gmpi_request_t *request, int *done, gmpi_msg_status_t *status) {
  gmpi_call_begin_nocomm(__func__);
  if (!done) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'done' is NULL");
  int live;
  gmpi_status_t st = enter_request(request, status, &live);
  if (!live) {
    if (st == GMPI_SUCCESS) *done = 1; /* a NULL request is complete */
    return st;
  }
  gmpi_request_t req = *request;
  GMPI_CHECK(refuse_recorded(req, "tested"));
  int flag = 0;
  st = gmpi_request_test(req, &flag);
  if (st != GMPI_SUCCESS) return st;
  /* A test loop is the caller's wait: like MPI_Test it must keep everything else moving. */
  if (!flag) gmpi_progress_all();
  *done = flag;
  if (!flag) return GMPI_SUCCESS;
  *request = NULL;
  return gmpi_request_finish(req, status);
}

gmpi_status_t gmpi_cancel(gmpi_request_t *request, int *cancelled) {
  gmpi_call_begin_nocomm(__func__);
  if (!cancelled) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'cancelled' is NULL");
  *cancelled = 0;
  int live;
  gmpi_status_t st = enter_request(request, NULL, &live);
  if (!live) return st;
  gmpi_request_t req = *request;
  const gmpi_engine_t *e = req->engine;
  if (req->is_coll || req->args.dir != GMPI_P2P_RECV || !e || !e->p2p->cancel || req->done ||
      req->completed || gmpi_plan_request_is_recorded(req))
    return GMPI_SUCCESS;
  GMPI_CHECK(e->p2p->cancel(e->p2p_state, req, cancelled));
  if (!*cancelled) return GMPI_SUCCESS;
  *request = NULL;
  gmpi_request_discard(req, GMPI_SUCCESS);
  return GMPI_SUCCESS;
}

/* MPI_Request_free's rule: the operation goes on; gmpi frees the request once it ends. */
gmpi_status_t gmpi_request_release(gmpi_request_t *request) {
  gmpi_call_begin_nocomm(__func__);
  int live;
  gmpi_status_t st = enter_request(request, NULL, &live);
  if (!live) return st;
  gmpi_request_t req = *request;
  GMPI_CHECK(refuse_recorded(req, "released"));
  *request = NULL;
  int done = 0;
  st = gmpi_request_test(req, &done);
  if (st != GMPI_SUCCESS) { /* ended already, in error: nobody will ask how */
    gmpi_request_give_up(req, st);
    return GMPI_SUCCESS;
  }
  if (done) {
    gmpi_request_finish(req, NULL);
    return GMPI_SUCCESS;
  }
  gmpi_request_keep_released(req);
  return GMPI_SUCCESS;
}

/* Test *req once. When it has ended (done, or failed) it is finished or given up, freed and set
 * NULL, and *ended is 1; the result is the request's own. */
static gmpi_status_t test_and_finish(gmpi_request_t *req, gmpi_msg_status_t *status, int *ended) {
  int done = 0;
  gmpi_status_t st = gmpi_request_test(*req, &done);
  *ended = st != GMPI_SUCCESS || done;
  if (!*ended) return GMPI_SUCCESS;
  if (st == GMPI_SUCCESS)
    st = gmpi_request_finish(*req, status);
  else
    gmpi_request_give_up(*req, st);
  *req = NULL;
  return st;
}

/* The deadline passed with requests still live: every one is given up (its comm failed) and
 * NULL; the result is GMPI_ERR_TIMEOUT, whatever else failed before. */
static gmpi_status_t expire_all(int count, gmpi_request_t *reqs) {
  gmpi_status_t first = GMPI_SUCCESS;
  for (int i = 0; i < count; i++) {
    if (!reqs[i]) continue;
    gmpi_status_t st = gmpi_request_wait_expired(reqs[i]);
    reqs[i] = NULL;
    if (first == GMPI_SUCCESS) first = st;
  }
  return first;
}

/* Waitall: test every pending request in turn until all are done, under one deadline. */
static gmpi_status_t wait_many(int count, gmpi_request_t *reqs, gmpi_msg_status_t *statuses,
                               double timeout_s) {
  gmpi_status_t first_error = GMPI_SUCCESS;
  gmpi_deadline_t d;
  gmpi_deadline_start(&d, timeout_s);
  for (int pending = count; pending > 0;) {
    pending = 0;
    for (int i = 0; i < count; i++) {
      if (!reqs[i]) continue;
      int ended = 0;
      gmpi_status_t st = test_and_finish(&reqs[i], statuses ? &statuses[i] : NULL, &ended);
      pending += !ended;
      if (first_error == GMPI_SUCCESS) first_error = st;
    }
    if (pending && gmpi_deadline_poll(&d)) return expire_all(count, reqs);
  }
  return first_error;
}

/* gmpi_waitall's work, its errors under the name of the public call being served. */
static gmpi_status_t waitall_checked(int count, gmpi_request_t *requests,
                                     gmpi_msg_status_t *statuses) {
  if (count < 0) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'count' = %d < 0", count);
  if (count > 0 && !requests)
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'requests' is NULL with count %d", count);
  double timeout = 0;
  int recorded = 0, live = 0;
  for (int i = 0; i < count; i++) {
    if (statuses) statuses[i] = empty_status;
    if (!requests[i]) continue;
    gmpi_status_t st = check_request(requests[i], i);
    if (st == GMPI_ERR_STATE) requests[i] = NULL;
    if (st != GMPI_SUCCESS) return st;
    recorded += gmpi_plan_request_is_recorded(requests[i]);
    live++;
    timeout = requests[i]->comm->cfg.timeout_s;
  }
  if (recorded && recorded != live)
    return gmpi_error(GMPI_ERR_INVALID_ARG, "gmpi_waitall mixes requests recorded in a plan "
                                            "with requests that run now");
  if (recorded) {
    gmpi_status_t st = GMPI_SUCCESS;
    for (int i = 0; i < count && st == GMPI_SUCCESS; i++) {
      if (!requests[i]) continue;
      st = gmpi_plan_record_wait(requests[i]);
      requests[i] = NULL;
    }
    return st;
  }
  return wait_many(count, requests, statuses, timeout);
}

gmpi_status_t gmpi_waitall(int count, gmpi_request_t *requests, gmpi_msg_status_t *statuses) {
  gmpi_call_begin_nocomm(__func__);
  return waitall_checked(count, requests, statuses);
}

/* ---- probe ------------------------------------------------------------------------------- */

gmpi_status_t gmpi_probe(int source, int tag, gmpi_comm_t comm, gmpi_msg_status_t *status) {
  GMPI_API_ENTER(comm);
  return gmpi_p2p_probe(comm, source, tag, 1, NULL, status);
}

gmpi_status_t gmpi_iprobe(int source, int tag, gmpi_comm_t comm, int *flag,
                          gmpi_msg_status_t *status) {
  GMPI_API_ENTER(comm);
  if (!flag) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'flag' is NULL");
  return gmpi_p2p_probe(comm, source, tag, 0, flag, status);
}

/* ---- waitany, testany, testall ------------------------------------------------------------ */

/* Checks shared by the array calls: count, the array, and every live request (a failed comm's
 * request is dropped with GMPI_ERR_STATE). *live counts the non-NULL requests; *timeout is the
 * deadline of their comm. Requests recorded in a plan are waited with gmpi_wait(all) only. */
static gmpi_status_t check_array(int count, gmpi_request_t *requests, int *live, double *timeout) {
  *live = 0;
  *timeout = 0;
  if (count < 0) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'count' = %d < 0", count);
  if (count > 0 && !requests)
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'requests' is NULL with count %d", count);
  for (int i = 0; i < count; i++) {
    if (!requests[i]) continue;
    gmpi_status_t st = check_request(requests[i], i);
    if (st == GMPI_ERR_STATE) requests[i] = NULL;
    if (st != GMPI_SUCCESS) return st;
    if (gmpi_plan_request_is_recorded(requests[i]))
      return gmpi_error(GMPI_ERR_INVALID_ARG,
                        "request %d was recorded in a plan: wait it with gmpi_wait or "
                        "gmpi_waitall while recording",
                        i);
    (*live)++;
    *timeout = requests[i]->comm->cfg.timeout_s;
  }
  return GMPI_SUCCESS;
}

/* One pass over the array: the first request found complete is finished (freed, NULL) and
 * *index set; its own result is returned. *index stays GMPI_UNDEFINED when none is. */
static gmpi_status_t complete_any(int count, gmpi_request_t *requests, int *index,
                                  gmpi_msg_status_t *status) {
  *index = GMPI_UNDEFINED;
  for (int i = 0; i < count; i++) {
    if (!requests[i]) continue;
    int ended = 0;
    gmpi_status_t st = test_and_finish(&requests[i], status, &ended);
    if (!ended) continue;
    *index = i;
    return st;
  }
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_waitany(int count, gmpi_request_t *requests, int *index,
                           gmpi_msg_status_t *status) {
  gmpi_call_begin_nocomm(__func__);
  if (!index) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'index' is NULL");
  int live;
  double timeout;
  GMPI_CHECK(check_array(count, requests, &live, &timeout));
  *index = GMPI_UNDEFINED;
  if (!live) {
    if (status) *status = empty_status;
    return GMPI_SUCCESS;
  }
  gmpi_deadline_t d;
  gmpi_deadline_start(&d, timeout);
  for (;;) {
    gmpi_status_t st = complete_any(count, requests, index, status);
    if (*index != GMPI_UNDEFINED) return st;
    /* None completed in time: all of them are given up, as gmpi_waitall does. */
    if (gmpi_deadline_poll(&d)) return expire_all(count, requests);
  }
}

gmpi_status_t gmpi_testany(int count, gmpi_request_t *requests, int *index, int *flag,
                           gmpi_msg_status_t *status) {
  gmpi_call_begin_nocomm(__func__);
  if (!index) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'index' is NULL");
  if (!flag) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'flag' is NULL");
  int live;
  double timeout;
  GMPI_CHECK(check_array(count, requests, &live, &timeout));
  *index = GMPI_UNDEFINED;
  if (!live) { /* MPI: nothing to wait for counts as complete */
    *flag = 1;
    if (status) *status = empty_status;
    return GMPI_SUCCESS;
  }
  gmpi_status_t st = complete_any(count, requests, index, status);
  *flag = *index != GMPI_UNDEFINED;
  if (!*flag) gmpi_progress_all(); /* a test loop is the caller's wait */
  return st;
}

gmpi_status_t gmpi_testall(int count, gmpi_request_t *requests, int *flag,
                           gmpi_msg_status_t *statuses) {
  gmpi_call_begin_nocomm(__func__);
  if (!flag) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'flag' is NULL");
  int live;
  double timeout;
  GMPI_CHECK(check_array(count, requests, &live, &timeout));
  /* MPI's rule: only when every request is complete are they all freed (and statuses
   * written); until then none is touched. A request that failed ends the call with its error
   * (it is freed and NULL; the others stay). */
  for (int i = 0; i < count; i++) {
    if (!requests[i]) continue;
    int done = 0;
    gmpi_status_t st = gmpi_request_test(requests[i], &done);
    if (st != GMPI_SUCCESS) {
      gmpi_request_give_up(requests[i], st);
      requests[i] = NULL;
      return st;
    }
    if (!done) {
      *flag = 0;
      gmpi_progress_all();
      return GMPI_SUCCESS;
    }
  }
  *flag = 1;
  gmpi_status_t first = GMPI_SUCCESS;
  for (int i = 0; i < count; i++) {
    if (statuses) statuses[i] = empty_status;
    if (!requests[i]) continue;
    gmpi_status_t st = gmpi_request_finish(requests[i], statuses ? &statuses[i] : NULL);
    requests[i] = NULL;
    if (first == GMPI_SUCCESS) first = st;
  }
  return first;
}

gmpi_status_t gmpi_send(const void *buf, size_t count, gmpi_dtype_t dtype, int dest, int tag,
                        gmpi_comm_t comm) {
  return blocking(__func__, comm, p2p_args(GMPI_P2P_SEND, buf, count, dtype, dest, tag), NULL);
}

gmpi_status_t gmpi_recv(void *buf, size_t count, gmpi_dtype_t dtype, int source, int tag,
                        gmpi_comm_t comm, gmpi_msg_status_t *status) {
  return blocking(__func__, comm, p2p_args(GMPI_P2P_RECV, buf, count, dtype, source, tag), status);
}

gmpi_status_t gmpi_sendrecv(const void *sendbuf, size_t sendcount, gmpi_dtype_t sendtype, int dest,
                            int sendtag, void *recvbuf, size_t recvcount, gmpi_dtype_t recvtype,
                            int source, int recvtag, gmpi_comm_t comm, gmpi_msg_status_t *status) {
  GMPI_API_ENTER(comm);
  gmpi_p2p_args_t recv = p2p_args(GMPI_P2P_RECV, recvbuf, recvcount, recvtype, source, recvtag);
  gmpi_p2p_args_t send = p2p_args(GMPI_P2P_SEND, sendbuf, sendcount, sendtype, dest, sendtag);
  int ran = 0;
  gmpi_status_t st = gmpi_p2p_exchange(comm, &send, &recv, status, &ran);
  if (st != GMPI_SUCCESS || ran) return st;
  /* A half with GMPI_PROC_NULL moves nothing: the other half is its blocking call alone (one
   * request where the engine has no exchange -- an envelope engine's, matching across kinds --
   * not two), and with both halves so, nothing is left (a halo's edge ranks, every step: two
   * requests made and waited cost a GPU machine's default mode about 0.3 us a call). Both
   * halves were validated. A plan records both requests, as it replays them. */
  if (!comm->rec && (recv.peer == GMPI_PROC_NULL || send.peer == GMPI_PROC_NULL)) {
    if (recv.peer != GMPI_PROC_NULL) return blocking_run(comm, &recv, status);
    if (send.peer != GMPI_PROC_NULL) GMPI_CHECK(blocking_run(comm, &send, NULL));
    if (status) *status = gmpi_proc_null_status();
    return GMPI_SUCCESS;
  }
  /* Otherwise (self, wildcards, plans, envelope engines...): a receive and a send request. */
  gmpi_request_t reqs[2] = {NULL, NULL};
  gmpi_msg_status_t statuses[2];
  GMPI_CHECK(gmpi_request_start(comm, &recv, &reqs[0]));
  st = gmpi_request_start(comm, &send, &reqs[1]);
  if (st != GMPI_SUCCESS) {
    gmpi_request_abandon(reqs[0]);
    return st;
  }
  st = waitall_checked(2, reqs, statuses);
  if (gmpi_msg_status_written(st) && status) *status = statuses[0]; /* the receive's */
  return st;
}
