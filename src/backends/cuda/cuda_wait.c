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
 * Only the control communicator (cuda_comm_t.ctl), which builds the comm, is nonblocking: its
 * init and split are polled here (cuda_wait_control), bounded and abortable. */
#include "../../core/comm.h"
#include "../../core/error.h"
#include "../../core/log.h"
#include "../../core/progress.h"
#include "../../core/wait.h"
#include "../../core/watchdog.h"
#include "cuda.h"
#include "cuda_check.h"

/* ---- aborting ------------------------------------------------------------------------------- */

/* Abort both communicators of the comm (they share resources, and so an abort flag) and fail
 * the comm with why. NCCL's abort is safe only while no other thread is inside NCCL on them:
 * one that is can only be ended with the job. */
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
  if (cc->ctl) ncclCommAbort(cc->ctl);
  cc->nccl = cc->ctl = NULL;
  gmpi_comm_fail(comm, why);
  return why;
}

void cuda_abort(gmpi_comm_t comm, cuda_comm_t *cc, gmpi_status_t why) {
  if (cc->nccl || cc->ctl) abort_nccl(comm, cc, why);
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
  gmpi_watch_enter(comm, call, 0); /* watched under either action (core/watchdog.h) */
}

void cuda_nccl_exit(gmpi_comm_t comm) {
  gmpi_watch_exit(comm);
  atomic_fetch_sub_explicit(&((cuda_comm_t *)comm->be)->inside_nccl, 1, memory_order_relaxed);
}

gmpi_status_t cuda_nccl_failed(gmpi_comm_t comm, ncclComm_t nc, ncclResult_t r, const char *call) {
  /* A broken communicator (a peer lost, a network error) fails the comm; a refused call
   * (invalid usage) leaves it healthy. Then the call is what the error names. */
  (void)cuda_poll_errors(comm, comm->be);
  return gmpi_nccl_error(r, nc, call);
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
                    "or is stuck elsewhere); the NCCL communicator was aborted and the comm is "
                    "now failed",
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
    /* it drives every engine meanwhile: peers may wait on our envelopes */
    if (gmpi_deadline_poll(&d)) return timed_out(comm, cc, what, gmpi_now() - started);
  }
}

/* Wait until the nonblocking control communicator has nothing in progress (its init, a split
 * from it, its finalize), bounded: a rank that never comes makes this rank's comm creation
 * fail with GMPI_ERR_TIMEOUT (the control communicator aborts cleanly: no other thread is in
 * it). No engine is driven: the comm being built has none yet. */
gmpi_status_t cuda_wait_control(gmpi_comm_t comm, cuda_comm_t *cc, const char *what) {
  gmpi_deadline_t d;
  gmpi_deadline_start(&d, comm->cfg.timeout_s);
  for (;;) {
    int ready = 0;
    GMPI_CHECK(nccl_async(comm, cc, cc->ctl, &ready));
    if (ready) return GMPI_SUCCESS;
    if (gmpi_deadline_poll(&d)) {
      abort_nccl(comm, cc, GMPI_ERR_TIMEOUT);
      return gmpi_error(GMPI_ERR_TIMEOUT,
                        "%s did not complete within GMPI_TIMEOUT = %g s (a rank of the %d is not "
                        "taking part); the NCCL communicator was aborted",
                        what, comm->cfg.timeout_s, comm->size);
    }
  }
}
