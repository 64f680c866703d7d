/* SPDX-License-Identifier: BSD-3-Clause */
/* Completion and bounded waiting on the cuda backend.
 *
 * Every data-path NCCL call (collectives, grouped sends and receives, plan captures) goes to the
 * comm's blocking communicator: NCCL launches the work inline and returns, with no helper
 * thread per call (a nonblocking communicator starts and joins an OS thread at every group end,
 * which cost 1.8 us a call on one H200 and 20-25x NCCL's time on two, where that thread shared
 * one core with the polling rank). Such a call can still block the host inside NCCL -- a lazy
 * connection to a peer, a full work queue -- and nothing may interrupt it from another thread,
 * so it is watched (core/watchdog.h): past GMPI_TIMEOUT it ends the job, naming the call.
 *
 * Completion is read from the stream or an event by a polled wait that keeps gmpi's engines
 * moving and gives up at GMPI_TIMEOUT: GMPI_TIMEOUT_ACTION=end ends the job naming the call,
 * as host collectives do; status aborts the NCCL communicator from the waiting thread (never
 * while another thread is inside NCCL on it) and returns GMPI_ERR_TIMEOUT.
 *
 * Building a communicator blocks inside NCCL too (ncclCommInitRankConfig, ncclCommSplit): a
 * polled arrival comes first, so that it waits only on ranks already inside the same call, and
 * the call is watched (cuda_backend.c). A nonblocking communicator for init alone was tried: its
 * split-off blocking child cost 840 MiB on the H200 against 580 MiB for one communicator. */
#include <sched.h>

#include "../../core/comm.h"
#include "../../core/error.h"
#include "../../core/log.h"
#include "../../core/progress.h"
#include "../../core/wait.h"
#include "../../core/watchdog.h"
#include "cuda.h"
#include "cuda_check.h"

/* ---- aborting ------------------------------------------------------------------------------- */

/* Abort the comm's communicator and fail the comm with why. Communicators that share resources
 * share an abort flag: the parent and the splits of an aborted one are aborted too (their next
 * call fails their comm with NCCL's error). NCCL's abort is safe only while no other thread is
 * inside NCCL on them: one that is can only be ended with the job. */
static gmpi_status_t abort_nccl(gmpi_comm_t comm, cuda_comm_t *cc, gmpi_status_t why) {
  int inside = atomic_load(&cc->inside_nccl);
  if (inside > 0) {
    gmpi_log(GMPI_LOG_WARN,
             "cuda: the NCCL communicator of rank %d must be aborted (%s), but %d other "
             "thread(s) are inside NCCL on it, where an abort is unsafe: ending the job",
             comm->rank, gmpi_status_name(why), inside);
    gmpi_watchdog_end_job(comm, "an NCCL call of another thread", 0, 0.0);
  }
  if (cc->nccl) ncclCommAbort(cc->nccl);
  cc->nccl = NULL;
  gmpi_comm_fail(comm, why);
  return why;
}

void cuda_abort(gmpi_comm_t comm, cuda_comm_t *cc, gmpi_status_t why) {
  if (cc->nccl) abort_nccl(comm, cc, why);
}

/* NCCL's asynchronous state of nc: *ready when nothing is in progress; an error aborts. */
static gmpi_status_t nccl_async(gmpi_comm_t comm, cuda_comm_t *cc, ncclComm_t nc, int *ready) {
  ncclResult_t r = ncclInProgress;
  ncclResult_t q = ncclCommGetAsyncError(nc, &r);
  if (q != ncclSuccess) r = q;
  *ready = r == ncclSuccess;
  if (r == ncclSuccess || r == ncclInProgress) return GMPI_SUCCESS;
  gmpi_status_t st = gmpi_nccl_error(r, nc, "NCCL (asynchronous error)");
  abort_nccl(comm, cc, GMPI_ERR_BACKEND);
  return st;
}

gmpi_status_t cuda_poll_errors(gmpi_comm_t comm, cuda_comm_t *cc) {
  int ready;
  return cc->nccl ? nccl_async(comm, cc, cc->nccl, &ready) : GMPI_SUCCESS;
}

/* ---- data-path calls ------------------------------------------------------------------------ */

void cuda_nccl_enter(gmpi_comm_t comm, const char *call) {
  atomic_fetch_add_explicit(&((cuda_comm_t *)comm->be)->inside_nccl, 1, memory_order_relaxed);
  gmpi_watch_enter(&comm->watch, call, 0); /* watched under either action (core/watchdog.h) */
}

void cuda_nccl_exit(gmpi_comm_t comm) {
  gmpi_watch_exit(&comm->watch);
  atomic_fetch_sub_explicit(&((cuda_comm_t *)comm->be)->inside_nccl, 1, memory_order_relaxed);
}

gmpi_status_t cuda_nccl_failed(gmpi_comm_t comm, ncclComm_t nc, ncclResult_t r, const char *call) {
  /* A broken communicator (a peer lost, a network error) fails the comm; a refused call
   * (invalid usage) leaves it healthy. Then the call is what the error names. */
  (void)cuda_poll_errors(comm, comm->be);
  return gmpi_nccl_error(r, nc, call);
}

/* ---- completion events ------------------------------------------------------------------- */

gmpi_status_t cuda_event_take(cuda_comm_t *cc, cudaEvent_t *ev) {
  pthread_mutex_lock(&cc->events_lock);
  int have = cc->n_spare_events > 0;
  if (have) *ev = cc->spare_events[--cc->n_spare_events];
  pthread_mutex_unlock(&cc->events_lock);
  if (!have) GMPI_CUDA_CHECK(cudaEventCreateWithFlags(ev, cudaEventDisableTiming));
  return GMPI_SUCCESS;
}

void cuda_event_give(cuda_comm_t *cc, cudaEvent_t ev) {
  pthread_mutex_lock(&cc->events_lock);
  int kept = cc->n_spare_events < CUDA_SPARE_EVENTS;
  if (kept) cc->spare_events[cc->n_spare_events++] = ev;
  pthread_mutex_unlock(&cc->events_lock);
  if (!kept) cudaEventDestroy(ev);
}

void cuda_events_release(cuda_comm_t *cc) {
  while (cc->n_spare_events > 0)
    cudaEventDestroy(cc->spare_events[--cc->n_spare_events]);
}

/* ---- teardown ------------------------------------------------------------------------------ */

int cuda_stream_drained(cudaStream_t s, double timeout_s) {
  double until = gmpi_now() + timeout_s;
  for (;;) {
    cudaError_t e = cudaStreamQuery(s);
    if (e != cudaErrorNotReady) return 1; /* done, or broken: nothing more will come */
    if (timeout_s > 0 && gmpi_now() > until) return 0;
    sched_yield();
  }
}

/* ---- waiting ----------------------------------------------------------------------------------
 */

/* A wait for the device passed GMPI_TIMEOUT. */
static gmpi_status_t timed_out(gmpi_comm_t comm, cuda_comm_t *cc, const char *what, double waited) {
  if (comm->cfg.timeout_action == GMPI_TIMEOUT_END_JOB)
    gmpi_watchdog_end_job(comm, what, 0, waited);
  abort_nccl(comm, cc, GMPI_ERR_TIMEOUT);
  return gmpi_error(GMPI_ERR_TIMEOUT,
                    "%s did not complete within GMPI_TIMEOUT = %g s (a rank is not taking part, "
                    "is stuck elsewhere, or passed memory of another kind); the NCCL communicator "
                    "was aborted and the comm is now failed",
                    what, comm->cfg.timeout_s);
}

gmpi_status_t cuda_wait_stream(gmpi_comm_t comm, cudaStream_t stream, const char *what) {
  cuda_comm_t *cc = comm->be;
  gmpi_deadline_t d;
  double started = 0.0;
  gmpi_deadline_start(&d, comm->cfg.timeout_s);
  for (unsigned polls = 0;; polls++) {
    cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return GMPI_SUCCESS;
    if (e != cudaErrorNotReady) return gmpi_cuda_error(e, "cudaStreamQuery");
    if (polls == 0) started = gmpi_now();
    if ((polls & 15u) == 15u) GMPI_CHECK(cuda_poll_errors(comm, cc));
    /* it drives every engine meanwhile (peers may wait on our envelopes), between tests */
    if (gmpi_deadline_poll_passive(&d)) return timed_out(comm, cc, what, gmpi_now() - started);
  }
}
