/* SPDX-License-Identifier: BSD-3-Clause */
/* gmpi's requests as MPI requests: each is an MPI generalized request (MPI's own mechanism for
 * operations it does not run), so one MPI_Waitall completes host and device requests together
 * and MPI_Status carries source, tag, error and count. MPI does not progress generalized
 * requests: the wait and test calls below drive gmpi first, call MPI_Grequest_complete for what
 * finished, then let MPI finish the call. A program that holds no gmpi request pays one
 * comparison per wait. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dropin.h"

int dropin_live_requests;

/* Live requests by their MPI handle; requests freed by the program before completion wait in
 * the detached list until gmpi finishes them. */
enum { BUCKETS = 1024 };
static dropin_req_t *bucket[BUCKETS];
static dropin_req_t *detached;

static size_t hash(MPI_Request h) {
  uint64_t v = 0;
  memcpy(&v, &h, sizeof(h) < sizeof(v) ? sizeof(h) : sizeof(v));
  v ^= v >> 29;
  v *= 0x9e3779b97f4a7c15ull;
  return (size_t)(v >> 40) & (BUCKETS - 1);
}

static dropin_req_t *find(MPI_Request h) {
  if (h == MPI_REQUEST_NULL) return NULL;
  for (dropin_req_t *r = bucket[hash(h)]; r; r = r->next)
    if (r->mpi == h) return r;
  return NULL;
}

static void unlink_req(dropin_req_t *r) {
  for (dropin_req_t **p = &bucket[hash(r->mpi)]; *p; p = &(*p)->next) {
    if (*p == r) {
      *p = r->next;
      return;
    }
  }
  for (dropin_req_t **p = &detached; *p; p = &(*p)->next) {
    if (*p == r) {
      *p = r->next;
      return;
    }
  }
}

/* Freed requests kept for the next: a window of MPI_Isend or MPI_Irecv makes and frees one per
 * message, and calloc and free of this block (past glibc's per-thread cache, which calloc never
 * takes) were a fifth of such a message's instructions (docs/performance.md, "A twelfth
 * pass"). No lock: the layer grants at most MPI_THREAD_SERIALIZED. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DROPIN_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(DROPIN_ASAN)
enum { SPARE_REQS = 0 }; /* AddressSanitizer must see every use after free */
#else
enum { SPARE_REQS = 256 };
#endif
static dropin_req_t *spare_reqs; /* linked by next */
static int n_spare_reqs;

static dropin_req_t *spare_take(void) {
  dropin_req_t *r = spare_reqs;
  if (!r) return calloc(1, sizeof(*r));
  spare_reqs = r->next;
  n_spare_reqs--;
  memset(r, 0, sizeof(*r));
  return r;
}

static void spare_give(dropin_req_t *r) {
  if (n_spare_reqs >= SPARE_REQS) {
    free(r);
    return;
  }
  r->next = spare_reqs;
  spare_reqs = r;
  n_spare_reqs++;
}

/* ---- MPI's callbacks ------------------------------------------------------------------------ */

static int query_status(void *extra, MPI_Status *status) {
  dropin_req_t *r = extra;
  status->MPI_SOURCE = r->source;
  status->MPI_TAG = r->tag;
  status->MPI_ERROR = r->error;
  dropin_status_set_count(status, r->bytes, r->cancelled);
  return r->error;
}

static int free_req(void *extra) {
  dropin_req_t *r = extra;
  if (r->g) { /* freed by MPI before gmpi finished (MPI_Finalize): let gmpi finish it */
    gmpi_wait(&r->g, NULL);
  }
  if (r->inner != MPI_REQUEST_NULL) PMPI_Wait(&r->inner, MPI_STATUS_IGNORE);
  unlink_req(r);
  dropin_stage_out(&r->stage[0], 0);
  dropin_stage_out(&r->stage[1], 0);
  if (r->type_owned) PMPI_Type_free(&r->user_type);
  if (r->release)
    r->release(r->owned);
  else
    free(r->owned);
  spare_give(r);
  dropin_live_requests--;
  return MPI_SUCCESS;
}

static int cancel_req(void *extra, int complete) {
  (void)extra, (void)complete;
  return MPI_SUCCESS; /* gmpi cannot cancel: the request completes normally (MPI allows it) */
}

/* ---- wrapping ------------------------------------------------------------------------------- */

static int start(MPI_Comm comm, dropin_req_t **out, MPI_Request *request) {
  dropin_req_t *r = spare_take();
  if (!r) return MPI_ERR_NO_MEM;
  r->comm = comm;
  r->inner = MPI_REQUEST_NULL;
  r->source = MPI_ANY_SOURCE;
  r->tag = MPI_ANY_TAG;
  int rc = PMPI_Grequest_start(query_status, free_req, cancel_req, r, &r->mpi);
  if (rc != MPI_SUCCESS) {
    spare_give(r);
    return rc;
  }
  size_t b = hash(r->mpi);
  r->next = bucket[b];
  bucket[b] = r;
  dropin_live_requests++;
  *request = r->mpi;
  *out = r;
  return MPI_SUCCESS;
}

int dropin_req_wrap(MPI_Comm comm, gmpi_request_t g, dropin_req_t **out, MPI_Request *request) {
  dropin_req_t *r = NULL;
  int rc = start(comm, &r, request);
  if (rc != MPI_SUCCESS) {
    gmpi_wait(&g, NULL); /* nothing may be left running on the program's buffers */
    return rc;
  }
  r->g = g;
  if (out) *out = r;
  return MPI_SUCCESS;
}

int dropin_req_done(MPI_Comm comm, MPI_Request *request) {
  dropin_req_t *r = NULL;
  int rc = start(comm, &r, request);
  if (rc != MPI_SUCCESS) return rc;
  r->complete = 1;
  return PMPI_Grequest_complete(r->mpi);
}

int dropin_req_done_status(MPI_Comm comm, int source, int tag, size_t bytes, int error,
                           MPI_Request *request) {
  dropin_req_t *r = NULL;
  int rc = start(comm, &r, request);
  if (rc != MPI_SUCCESS) return rc;
  r->source = source;
  r->tag = tag;
  r->bytes = bytes;
  r->error = error;
  r->complete = 1;
  return PMPI_Grequest_complete(r->mpi);
}

int dropin_req_staged(MPI_Comm comm, MPI_Request inner, const dropin_stage_t stage[2],
                      MPI_Request *request) {
  dropin_req_t *r = NULL;
  int rc = start(comm, &r, request);
  if (rc != MPI_SUCCESS) {
    int done = PMPI_Wait(&inner, MPI_STATUS_IGNORE);
    dropin_stage_t copy[2] = {stage[0], stage[1]};
    dropin_stage_out(&copy[0], 0);
    dropin_stage_out(&copy[1], done == MPI_SUCCESS);
    return rc;
  }
  r->inner = inner;
  r->stage[0] = stage[0];
  r->stage[1] = stage[1];
  return MPI_SUCCESS;
}

/* A staged call: MPI's request on the host copies; when done, the result goes to the device. */
static int test_inner(dropin_req_t *r, int wait, int *done) {
  MPI_Status st;
  int rc = wait ? dropin_polled(MPI_SUCCESS, &r->inner) : PMPI_Test(&r->inner, done, &st);
  if (wait) *done = 1;
  if (!*done) return rc;
  dropin_stage_out(&r->stage[0], 0);
  int back = dropin_stage_out(&r->stage[1], rc == MPI_SUCCESS);
  return rc != MPI_SUCCESS ? rc : back;
}

/* ---- completion ----------------------------------------------------------------------------- */

static void finish(dropin_req_t *r);

/* Test (or wait for) r's gmpi request; once it is done, run its after-work and tell MPI. A
 * staged request's wait polls and drives every live request meanwhile -- r itself is skipped
 * there (found on the H200: driven twice, it was completed and freed twice). */
static void drive(dropin_req_t *r, int wait) {
  if (r->complete || r->driving) return;
  gmpi_msg_status_t gs = {0};
  int done = 0;
  if (r->inner != MPI_REQUEST_NULL) {
    r->driving = 1;
    r->error = test_inner(r, wait, &done);
    r->driving = 0;
    if (done) finish(r);
    return;
  }
  gmpi_status_t st = wait ? gmpi_wait(&r->g, &gs) : gmpi_test(&r->g, &done, &gs);
  if (st != GMPI_SUCCESS) {
    r->error = dropin_error_code(st);
    dropin_forget_last_twin(); /* the twin may have failed: its wire is asked again */
    if (st != GMPI_ERR_TRUNCATE) fprintf(stderr, "[gmpi_mpi] request: %s\n", gmpi_last_error());
    if (r->g) { /* a failed test leaves gmpi's request: give it up before its buffers go */
      gmpi_wait(&r->g, NULL);
    }
    done = 1;
  } else if (wait) {
    done = 1;
  }
  /* a truncation's status names the message too, as MPI's (count 0: nothing unpacked) */
  if (done && (st == GMPI_SUCCESS || st == GMPI_ERR_TRUNCATE)) {
    if (gs.source >= 0 || gs.source == GMPI_PROC_NULL)
      r->source = gs.source == GMPI_PROC_NULL ? MPI_PROC_NULL : gs.source;
    if (gs.tag >= 0) r->tag = gs.tag;
    r->bytes = gs.count; /* p2p moves bytes (GMPI_BYTE); a collective reports 0 */
  }
  if (!done) return;
  r->g = NULL;
  if (r->error == MPI_SUCCESS && r->after) r->error = r->after(r);
  finish(r);
}

/* Tell MPI that r is complete (and release it if the program freed it already). */
static void finish(dropin_req_t *r) {
  r->complete = 1;
  PMPI_Grequest_complete(r->mpi);
  if (r->detached) {
    MPI_Request h = r->mpi;
    PMPI_Request_free(&h); /* free_req releases r */
  }
}

static void drive_detached(void) {
  for (dropin_req_t *r = detached, *next; r; r = next) {
    next = r->next;
    drive(r, 0);
  }
}

/* Drive the gmpi requests in an array: returns how many are still running. */
static int drive_array(int n, const MPI_Request reqs[], int wait) {
  int running = 0;
  drive_detached();
  for (int i = 0; i < n; i++) {
    dropin_req_t *r = find(reqs[i]);
    if (!r) continue;
    drive(r, wait);
    running += !r->complete;
  }
  return running;
}

double dropin_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int dropin_timed_out(double start) {
  return dropin.timeout_s > 0 && dropin_now() - start > dropin.timeout_s;
}

/* A polled wait over an array holding gmpi requests is bounded by GMPI_TIMEOUT. */
static int over_time(double start, const char *func) {
  if (!dropin_timed_out(start)) return 0;
  fprintf(stderr,
          "[gmpi_mpi] %s: no request completed within GMPI_TIMEOUT = %g s (messages through "
          "gmpi: GMPI_TIMEOUT bounds their waits)\n",
          func, dropin.timeout_s);
  return 1;
}

/* A polled wait's spin past GMPI_TIMEOUT (the clock read every 256 spins; *start 0 until the
 * first). */
static int late(double *start, unsigned spin, const char *func) {
  if (spin % 256) return 0;
  if (*start == 0) {
    *start = dropin_now();
    return 0;
  }
  return over_time(*start, func);
}

/* Once the layer has handed the program MPI's own requests for messages through gmpi
 * (dropin_wire), a wait on MPI's requests is polled within GMPI_TIMEOUT, as the gmpi requests
 * they stand for would be: no wait for a message through gmpi is unbounded. */
static int mpi_bounded(void) { return dropin.wire_posted && dropin.timeout_s > 0; }

static int quiet(void) { return !dropin_live_requests; }

/* Let gmpi progress (MPI's progress rule: a send of ours may wait on this rank while it sits in
 * MPI) and finish what is done. */
static void drive_live(void) {
  drive_detached();
  for (int b = 0; b < BUCKETS; b++)
    for (dropin_req_t *r = bucket[b], *next; r; r = next) {
      next = r->next;
      if (!r->complete) drive(r, 0);
    }
}

static int polled_wait(MPI_Request *request, MPI_Status *status, const char *func) {
  double start = 0;
  for (unsigned spin = 0;; spin++) {
    int flag = 0, rc = PMPI_Test(request, &flag, status);
    if (rc != MPI_SUCCESS || flag) return rc;
    if (!quiet()) drive_live();
    if (mpi_bounded() && late(&start, spin, func)) return MPI_ERR_OTHER;
  }
}

int dropin_polled_status(int rc, MPI_Request *request, MPI_Status *status) {
  if (rc != MPI_SUCCESS) return rc;
  return quiet() && !mpi_bounded() ? PMPI_Wait(request, status)
                                   : polled_wait(request, status, "a blocking call");
}

int dropin_polled(int rc, MPI_Request *request) {
  return dropin_polled_status(rc, request, MPI_STATUS_IGNORE);
}

int dropin_quiet(void) { return quiet(); }

int dropin_req_live_on(MPI_Comm comm) {
  int live = 0;
  drive_detached(); /* a detached request that completes here is freed: count after */
  for (dropin_req_t *r = detached; r; r = r->next)
    live += r->comm == comm && !r->complete;
  for (int b = 0; b < BUCKETS; b++)
    for (dropin_req_t *r = bucket[b]; r; r = r->next) {
      if (r->comm != comm || r->complete) continue;
      drive(r, 0);
      live += !r->complete;
    }
  return live;
}

/* r's comm is being freed: r (and its staged copies) report to MPI_COMM_WORLD from now on. */
static void rehome(dropin_req_t *r, MPI_Comm comm) {
  if (r->comm != comm) return;
  r->comm = MPI_COMM_WORLD;
  r->stage[0].comm = r->stage[1].comm = MPI_COMM_WORLD;
}

void dropin_req_rehome(MPI_Comm comm) {
  for (dropin_req_t *r = detached; r; r = r->next)
    rehome(r, comm);
  for (int b = 0; b < BUCKETS; b++)
    for (dropin_req_t *r = bucket[b]; r; r = r->next)
      rehome(r, comm);
}

int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status) {
  MPI_Request *use = dropin_persist_swap(1, &request);
  if (!quiet()) drive_array(1, use, 0);
  int rc = PMPI_Request_get_status(*use, flag, status);
  dropin_persist_unswap(1, &request, use);
  return rc;
}

/* A gmpi receive no message has matched yet is taken back (gmpi_cancel): it completes at once,
 * cancelled. A matched receive and a send complete as they would have: MPI lets a cancel fail,
 * and MPI_Test_cancelled then says false (gmpi does not take sends back; Open MPI does not
 * either once a send has started). */
static int cancel_gmpi(dropin_req_t *r) {
  r->given_up = !r->is_recv;
  if (!r->is_recv || !r->g) return MPI_SUCCESS;
  int cancelled = 0;
  gmpi_status_t st = gmpi_cancel(&r->g, &cancelled);
  if (st != GMPI_SUCCESS) return dropin_fail(r->comm, "MPI_Cancel", st);
  if (!cancelled) return MPI_SUCCESS;
  r->cancelled = 1;
  finish(r);
  return MPI_SUCCESS;
}

int MPI_Cancel(MPI_Request *request) { return dropin_cancel(request); }

int dropin_cancel(MPI_Request *request) {
  MPI_Request *use = dropin_persist_swap(1, request);
  dropin_req_t *r = !quiet() && use ? find(*use) : NULL;
  int rc = r && !r->complete && r->inner == MPI_REQUEST_NULL ? cancel_gmpi(r) : PMPI_Cancel(use);
  dropin_persist_unswap(1, request, use);
  return rc;
}

static int wait_impl(MPI_Request *request, MPI_Status *status) {
  if (!quiet() && request) {
    dropin_req_t *r = find(*request);
    if (r)
      drive(r, 1); /* gmpi_wait: bounded by GMPI_TIMEOUT */
    else
      return polled_wait(request, status, "MPI_Wait");
  }
  if (mpi_bounded() && request) return polled_wait(request, status, "MPI_Wait");
  return PMPI_Wait(request, status);
}

static int test_impl(MPI_Request *request, int *flag, MPI_Status *status) {
  if (!quiet() && request) drive_array(1, request, 0);
  return PMPI_Test(request, flag, status);
}

static int waitall_impl(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (!requests || (quiet() && !mpi_bounded())) return PMPI_Waitall(count, requests, statuses);
  if (!quiet()) drive_array(count, requests, 1);
  double start = 0;
  for (unsigned spin = 0;; spin++) { /* MPI's requests left: gmpi's elsewhere may be what they
                                        wait for */
    int flag = 0, rc = PMPI_Testall(count, requests, &flag, statuses);
    if (rc != MPI_SUCCESS || flag) return rc;
    if (!quiet()) drive_live();
    if (mpi_bounded() && late(&start, spin, "MPI_Waitall")) return MPI_ERR_OTHER;
  }
}

static int testall_impl(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]) {
  if (!quiet() && requests) drive_array(count, requests, 0);
  return PMPI_Testall(count, requests, flag, statuses);
}

static int testany_impl(int count, MPI_Request requests[], int *index, int *flag,
                        MPI_Status *status) {
  if (!quiet() && requests) drive_array(count, requests, 0);
  return PMPI_Testany(count, requests, index, flag, status);
}

static int testsome_impl(int incount, MPI_Request requests[], int *outcount, int indices[],
                         MPI_Status statuses[]) {
  if (!quiet() && requests) drive_array(incount, requests, 0);
  return PMPI_Testsome(incount, requests, outcount, indices, statuses);
}

/* gmpi requests of the array still running (driven once more); 0 when none is live. */
static int running_in(int count, MPI_Request requests[]) {
  return quiet() ? 0 : drive_array(count, requests, 0);
}

static int waitany_impl(int count, MPI_Request requests[], int *index, MPI_Status *status) {
  if (!requests || (!running_in(count, requests) && !mpi_bounded()))
    return PMPI_Waitany(count, requests, index, status);
  double start = 0;
  for (unsigned spin = 0;; spin++) {
    int flag = 0, rc = PMPI_Testany(count, requests, index, &flag, status);
    if (rc != MPI_SUCCESS || flag) return rc;
    int running = running_in(count, requests);
    if (!running && !mpi_bounded()) return PMPI_Waitany(count, requests, index, status);
    if (late(&start, spin, "MPI_Waitany")) return MPI_ERR_OTHER;
  }
}

static int waitsome_impl(int incount, MPI_Request requests[], int *outcount, int indices[],
                         MPI_Status statuses[]) {
  if (!requests || (!running_in(incount, requests) && !mpi_bounded()))
    return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  double start = 0;
  for (unsigned spin = 0;; spin++) {
    int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
    if (rc != MPI_SUCCESS || *outcount != 0) return rc;
    int running = running_in(incount, requests);
    if (!running && !mpi_bounded())
      return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    if (late(&start, spin, "MPI_Waitsome")) return MPI_ERR_OTHER;
  }
}

int MPI_Request_free(MPI_Request *request) { return dropin_request_free(request); }

int dropin_request_free(MPI_Request *request) {
  if (request && dropin_persist_free(request)) return MPI_SUCCESS;
  dropin_req_t *r = !quiet() && request ? find(*request) : NULL;
  if (!r || r->complete) return PMPI_Request_free(request);
  unlink_req(r); /* the handle is the program's no more; gmpi still runs the operation */
  r->detached = 1;
  r->next = detached;
  detached = r;
  *request = MPI_REQUEST_NULL;
  return MPI_SUCCESS;
}

/* MPI_Finalize: operations the program freed still finish (MPI's rule for freed requests),
 * except sends the program asked MPI_Cancel to take back: it gave up on them, and MPI's own
 * finalize does not wait for a send nobody receives. Such a send is handed to gmpi
 * (gmpi_request_release): its twin is freed next, and that frees the request. */
void dropin_req_finalize(void) {
  while (detached) {
    dropin_req_t *r = detached;
    drive(r, !r->given_up);
    if (r != detached) continue; /* finished and freed */
    gmpi_request_release(&r->g);
    r->g = NULL; /* released even if the call failed: its comm failed and let go of it */
    finish(r);
  }
  while (spare_reqs) {
    dropin_req_t *r = spare_reqs;
    spare_reqs = r->next;
    free(r);
  }
  n_spare_reqs = 0;
}

/* ---- the wait and test calls: persistent handles swapped for what they started -------------- */

int MPI_Wait(MPI_Request *request, MPI_Status *status) { return dropin_wait(request, status); }

int dropin_wait(MPI_Request *request, MPI_Status *status) {
  MPI_Request *use = dropin_persist_swap(1, request);
  int rc = wait_impl(use, status);
  dropin_persist_unswap(1, request, use);
  return rc;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
  MPI_Request *use = dropin_persist_swap(1, request);
  int rc = test_impl(use, flag, status);
  dropin_persist_unswap(1, request, use);
  return rc;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  return dropin_waitall(count, requests, statuses);
}

int dropin_waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  MPI_Request *use = dropin_persist_swap(count, requests);
  int rc = waitall_impl(count, use, statuses);
  dropin_persist_unswap(count, requests, use);
  return rc;
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]) {
  MPI_Request *use = dropin_persist_swap(count, requests);
  int rc = testall_impl(count, use, flag, statuses);
  dropin_persist_unswap(count, requests, use);
  return rc;
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status) {
  MPI_Request *use = dropin_persist_swap(count, requests);
  int rc = waitany_impl(count, use, index, status);
  dropin_persist_unswap(count, requests, use);
  return rc;
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status) {
  MPI_Request *use = dropin_persist_swap(count, requests);
  int rc = testany_impl(count, use, index, flag, status);
  dropin_persist_unswap(count, requests, use);
  return rc;
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[]) {
  MPI_Request *use = dropin_persist_swap(incount, requests);
  int rc = waitsome_impl(incount, use, outcount, indices, statuses);
  dropin_persist_unswap(incount, requests, use);
  return rc;
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[]) {
  MPI_Request *use = dropin_persist_swap(incount, requests);
  int rc = testsome_impl(incount, use, outcount, indices, statuses);
  dropin_persist_unswap(incount, requests, use);
  return rc;
}
