/* SPDX-License-Identifier: BSD-3-Clause */
#include "oob.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../core/comm.h"
#include "../core/park.h"
#include "../core/progress.h"
#include "../core/wait.h"
#include "../core/watchdog.h"
#include "bootstrap.h"
#include "mpi_check.h"

static const gmpi_oob_ops_t oob_over_mpi;

/* Wrap a new MPI communicator as a channel whose errors return ({0} for MPI_COMM_NULL). */
static gmpi_status_t wrap(MPI_Comm mc, gmpi_oob_t *out) {
  if (mc == MPI_COMM_NULL) {
    *out = (gmpi_oob_t){0};
    return GMPI_SUCCESS;
  }
  gmpi_oob_state_t *oob = calloc(1, sizeof(*oob));
  gmpi_status_t st = GMPI_SUCCESS;
  if (!oob) {
    st = gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for the MPI channel");
    goto free_comm;
  }
  oob->comm = mc;
  GMPI_MPI_CHECK_GOTO(PMPI_Comm_set_errhandler(mc, MPI_ERRORS_RETURN), st, free_oob);
  *out = (gmpi_oob_t){&oob_over_mpi, oob};
  return GMPI_SUCCESS;
free_oob:
  free(oob);
free_comm:
  PMPI_Comm_free(&mc);
  return st;
}

gmpi_status_t gmpi_mpi_dup(MPI_Comm parent, double timeout_s, const char *what, MPI_Comm *out) {
  /* The new handle's slot is written by MPI when the duplicate completes: after a timeout a
   * late rank may still complete it, so the slot is parked rather than freed. */
  MPI_Comm *slot = malloc(sizeof(*slot));
  if (!slot) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a communicator handle");
  MPI_Request req;
  int rc = PMPI_Comm_idup(parent, slot, &req);
  if (rc != MPI_SUCCESS) {
    free(slot);
    return gmpi_mpi_error(rc, "MPI_Comm_idup");
  }
  gmpi_status_t st = gmpi_mpi_wait_for(1, &req, timeout_s, what);
  if (st == GMPI_ERR_TIMEOUT) {
    gmpi_park(slot);
    return st;
  }
  if (st == GMPI_SUCCESS) *out = *slot;
  free(slot);
  return st;
}

gmpi_status_t gmpi_oob_create(MPI_Comm mpi_comm, double timeout_s, gmpi_oob_t *out) {
  MPI_Comm mc = MPI_COMM_NULL;
  GMPI_CHECK(gmpi_mpi_dup(mpi_comm, timeout_s, "the duplicate of the MPI communicator", &mc));
  return wrap(mc, out);
}

gmpi_status_t gmpi_oob_dup(gmpi_comm_t comm, gmpi_oob_t *out) {
  MPI_Comm mc = MPI_COMM_NULL;
  gmpi_status_t st = gmpi_mpi_dup(comm->oob.state->comm, comm->cfg.timeout_s,
                                  "the new communicator's duplicate (MPI_Comm_idup)", &mc);
  if (st == GMPI_ERR_TIMEOUT) gmpi_comm_fail(comm, st);
  GMPI_CHECK(st);
  return wrap(mc, out);
}

gmpi_status_t gmpi_oob_split(gmpi_comm_t comm, int color, int key, gmpi_oob_t *out) {
  /* MPI_Comm_split has no nonblocking form, and a rank blocked inside it cannot drive its
   * engines: a peer whose send waits on them would never arrive. Every rank first arrives
   * through a polled barrier (bounded, progressing); after it the split waits only on ranks
   * already inside this same call, so it returns promptly -- unless a rank stops or dies
   * between the two. That window is watched (core/watchdog.h) in both GMPI_TIMEOUT_ACTIONs:
   * nothing can return from inside MPI's call, so the job ends naming it. Done on every rank
   * and at every timeout, so all ranks make the same MPI calls. */
  MPI_Request arrival;
  GMPI_MPI_CHECK(PMPI_Ibarrier(comm->oob.state->comm, &arrival));
  GMPI_CHECK(gmpi_mpi_wait(comm, 1, &arrival, MPI_STATUSES_IGNORE, "gmpi_comm_split's arrival"));
  MPI_Comm mc = MPI_COMM_NULL;
  int mpi_color = color == GMPI_UNDEFINED ? MPI_UNDEFINED : color;
  gmpi_watch_enter(&comm->watch, "gmpi_comm_split's MPI_Comm_split", 0);
  int rc = PMPI_Comm_split(comm->oob.state->comm, mpi_color, key, &mc);
  gmpi_watch_exit(&comm->watch);
  GMPI_CHECK(gmpi_mpi_check(rc, "MPI_Comm_split"));
  return wrap(mc, out);
}

void gmpi_oob_destroy(gmpi_oob_t *oob, int failed) {
  if (!oob->state) return;
  /* After a failure peers may never free their side: disconnecting would wait on them, so
   * the handle is left to MPI_Finalize (or process exit). */
  if (!failed) PMPI_Comm_free(&oob->state->comm);
  free(oob->state);
  *oob = (gmpi_oob_t){0};
}

MPI_Comm gmpi_oob_mpi_comm(gmpi_comm_t comm) { return comm->oob.state->comm; }

/* Wait for MPI requests under a deadline (0: none). Blocking inside MPI is the fastest wait,
 * but only allowed when nothing else needs this rank: with no deadline to check and no engine
 * registered (core/progress.h). Otherwise poll, driving every engine. */
static gmpi_status_t wait_requests(int n, MPI_Request *reqs, MPI_Status *statuses, double timeout_s,
                                   int *expired) {
  *expired = 0;
  if (timeout_s == 0 && !gmpi_progress_needed()) {
    GMPI_MPI_CHECK(PMPI_Waitall(n, reqs, statuses));
    return GMPI_SUCCESS;
  }
  gmpi_deadline_t d;
  gmpi_deadline_start(&d, timeout_s);
  for (;;) {
    int flag = 0;
    GMPI_MPI_CHECK(PMPI_Testall(n, reqs, &flag, statuses));
    if (flag) return GMPI_SUCCESS;
    if (gmpi_deadline_poll(&d)) {
      *expired = 1;
      return GMPI_SUCCESS;
    }
  }
}

gmpi_status_t gmpi_mpi_wait(gmpi_comm_t comm, int n, MPI_Request *reqs, MPI_Status *statuses,
                            const char *what) {
  int expired;
  GMPI_CHECK(wait_requests(n, reqs, statuses, comm->cfg.timeout_s, &expired));
  if (!expired) return GMPI_SUCCESS;
  gmpi_comm_fail(comm, GMPI_ERR_TIMEOUT);
  return gmpi_error(GMPI_ERR_TIMEOUT,
                    "%s did not complete within GMPI_TIMEOUT = %g s (a rank is not taking part, "
                    "or is stuck elsewhere); the communicator is now failed",
                    what, comm->cfg.timeout_s);
}

gmpi_status_t gmpi_mpi_wait_for(int n, MPI_Request *reqs, double timeout_s, const char *what) {
  int expired;
  GMPI_CHECK(wait_requests(n, reqs, MPI_STATUSES_IGNORE, timeout_s, &expired));
  if (!expired) return GMPI_SUCCESS;
  return gmpi_error(GMPI_ERR_TIMEOUT,
                    "%s did not complete within GMPI_TIMEOUT = %g s (a rank is not taking part, "
                    "or is stuck elsewhere)",
                    what, timeout_s);
}

gmpi_status_t gmpi_mpi_arrive(MPI_Comm mc, double timeout_s, const char *what) {
  MPI_Request req;
  GMPI_MPI_CHECK(PMPI_Ibarrier(mc, &req));
  return gmpi_mpi_wait_for(1, &req, timeout_s, what);
}

/* The out-of-band collectives stage their data in memory of their own: when one times out,
 * MPI may still write it whenever a late rank arrives (a started collective cannot be
 * cancelled), so on GMPI_ERR_TIMEOUT the staging is left allocated rather than freed under MPI,
 * and the caller's buffers were never handed to MPI at all. */
static int timed_out(gmpi_status_t st) { return st == GMPI_ERR_TIMEOUT; }

static gmpi_status_t oob_allgather(gmpi_comm_t comm, const void *mine, void *all, size_t bytes) {
  size_t p = (size_t)comm->size;
  if (bytes > INT_MAX / p)
    return gmpi_error(GMPI_ERR_INTERNAL, "out-of-band allgather of %zu bytes", bytes);
  char *stage = malloc(bytes * (p + 1));
  if (!stage) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for an out-of-band allgather");
  memcpy(stage, mine, bytes);
  MPI_Request req;
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_MPI_CHECK_GOTO(PMPI_Iallgather(stage, (int)bytes, MPI_BYTE, stage + bytes, (int)bytes,
                                      MPI_BYTE, comm->oob.state->comm, &req),
                      st, free_stage);
  st = gmpi_mpi_wait(comm, 1, &req, MPI_STATUSES_IGNORE, "an out-of-band allgather");
  if (timed_out(st)) { /* stage stays MPI's */
    gmpi_park(stage);
    return st;
  }
  if (st == GMPI_SUCCESS) memcpy(all, stage + bytes, bytes * p);
free_stage:
  free(stage);
  return st;
}

/* A started out-of-band exchange: MPI's request. */
struct gmpi_oob_op {
  MPI_Request req;
};

static gmpi_status_t oob_iallgather(gmpi_comm_t comm, const void *mine, void *all, size_t bytes,
                                    gmpi_oob_op_t **op) {
  if (bytes > INT_MAX)
    return gmpi_error(GMPI_ERR_INTERNAL, "out-of-band allgather of %zu bytes", bytes);
  gmpi_oob_op_t *o = malloc(sizeof(*o));
  if (!o) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for an out-of-band exchange");
  int rc = PMPI_Iallgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE,
                           comm->oob.state->comm, &o->req);
  if (rc != MPI_SUCCESS) {
    free(o);
    return gmpi_mpi_error(rc, "MPI_Iallgather");
  }
  *op = o;
  return GMPI_SUCCESS;
}

static gmpi_status_t oob_test(gmpi_oob_op_t **op, int *done) {
  int flag = 0;
  GMPI_MPI_CHECK(PMPI_Test(&(*op)->req, &flag, MPI_STATUS_IGNORE));
  *done = flag;
  if (flag) {
    free(*op);
    *op = NULL;
  }
  return GMPI_SUCCESS;
}

static void oob_abandon(gmpi_oob_op_t *op) {
  gmpi_park(op); /* a started collective cannot be cancelled or freed in MPI */
}

static gmpi_status_t oob_bcast(gmpi_comm_t comm, void *buf, size_t bytes, int root) {
  if (bytes > INT_MAX)
    return gmpi_error(GMPI_ERR_INTERNAL, "out-of-band bcast of %zu bytes", bytes);
  char *stage = malloc(bytes ? bytes : 1);
  if (!stage) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for an out-of-band bcast");
  if (comm->rank == root) memcpy(stage, buf, bytes);
  MPI_Request req;
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_MPI_CHECK_GOTO(PMPI_Ibcast(stage, (int)bytes, MPI_BYTE, root, comm->oob.state->comm, &req),
                      st, free_stage);
  st = gmpi_mpi_wait(comm, 1, &req, MPI_STATUSES_IGNORE, "an out-of-band bcast");
  if (timed_out(st)) { /* stage stays MPI's */
    gmpi_park(stage);
    return st;
  }
  if (st == GMPI_SUCCESS) memcpy(buf, stage, bytes);
free_stage:
  free(stage);
  return st;
}

static gmpi_status_t oob_allgatherv(gmpi_comm_t comm, const void *mine, size_t bytes, void **all,
                                    size_t **offsets) {
  int p = comm->size;
  unsigned long long my_len = bytes, *lens = calloc((size_t)p, sizeof(*lens));
  int *counts = calloc((size_t)p, sizeof(int)), *displs = calloc((size_t)p, sizeof(int));
  size_t *offs = calloc((size_t)p + 1, sizeof(size_t));
  void *data = NULL, *staged_mine = NULL;
  gmpi_status_t st = GMPI_SUCCESS;
  if (!lens || !counts || !displs || !offs) {
    st = gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for an out-of-band allgatherv");
    goto free_all;
  }
  GMPI_CHECK_GOTO(oob_allgather(comm, &my_len, lens, sizeof(my_len)), st, free_all);
  for (int r = 0; r < p; r++)
    offs[r + 1] = offs[r] + lens[r];
  if (offs[p] > INT_MAX) {
    st = gmpi_error(GMPI_ERR_INTERNAL, "out-of-band allgatherv of %zu bytes", offs[p]);
    goto free_all;
  }
  for (int r = 0; r < p; r++) {
    counts[r] = (int)lens[r];
    displs[r] = (int)offs[r];
  }
  data = malloc(offs[p] ? offs[p] : 1);
  if (!data) {
    st = gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for %zu gathered bytes", offs[p]);
    goto free_all;
  }
  if (!(staged_mine = malloc(bytes ? bytes : 1))) {
    st = gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for %zu bytes to gather", bytes);
    goto free_all;
  }
  memcpy(staged_mine, mine, bytes);
  MPI_Request req;
  GMPI_MPI_CHECK_GOTO(PMPI_Iallgatherv(staged_mine, (int)bytes, MPI_BYTE, data, counts, displs,
                                       MPI_BYTE, comm->oob.state->comm, &req),
                      st, free_all);
  st = gmpi_mpi_wait(comm, 1, &req, MPI_STATUSES_IGNORE, "an out-of-band allgatherv");
  if (timed_out(st)) { /* staged_mine, data, counts, displs stay MPI's */
    gmpi_park(staged_mine);
    gmpi_park(data);
    gmpi_park(counts);
    gmpi_park(displs);
    free(lens); /* never MPI's */
    free(offs);
    return st;
  }
  if (st != GMPI_SUCCESS) goto free_all;
  *all = data;
  *offsets = offs;
  data = NULL;
  offs = NULL;
free_all:
  free(staged_mine);
  free(data);
  free(offs);
  free(displs);
  free(counts);
  free(lens);
  return st;
}

static const gmpi_oob_ops_t oob_over_mpi = {
    .allgather = oob_allgather,
    .bcast = oob_bcast,
    .allgatherv = oob_allgatherv,
    .iallgather = oob_iallgather,
    .test = oob_test,
    .abandon = oob_abandon,
    .chan_open = gmpi_mpi_chan_open,
    .chan_close = gmpi_mpi_chan_close,
    .chan_send = gmpi_mpi_chan_send,
    .chan_recv = gmpi_mpi_chan_recv,
    .chan_send_data = gmpi_mpi_chan_send_data,
    .chan_recv_data = gmpi_mpi_chan_recv_data,
    .chan_test = gmpi_mpi_chan_test,
    .chan_cancel = gmpi_mpi_chan_cancel,
    .end_job = gmpi_mpi_end_job,
    .concurrent_threads = gmpi_mpi_concurrent_threads,
};
