/* SPDX-License-Identifier: BSD-3-Clause */
/* Point-to-point requests: what was asked, how it ended, and the backend's part. */
#ifndef GMPI_CORE_REQUEST_H
#define GMPI_CORE_REQUEST_H

#include <stdint.h>

#include "engine.h"
#include "gmpi.h"

struct gmpi_request {
  unsigned magic; /* live while handed out; dead once freed (gmpi_request_is_live) */
  gmpi_comm_t comm;
  int is_coll; /* a nonblocking collective (coll), else point to point (args) */
  gmpi_p2p_args_t args;
  gmpi_coll_args_t coll;
  struct gmpi_coll_check *check; /* a collective's GMPI_CHECK exchange still in flight */
  int engine_done;               /* a collective's engine part has completed */
  uint64_t flight_seq;           /* its entry in the comm's flight record */
  int done;                      /* set by the backend in p2p_test */
  int completed;                 /* gmpi_request_test said done: the engine is finished with it */
  gmpi_status_t result;          /* final status once done */
  gmpi_msg_status_t status;      /* final envelope once done */
  const gmpi_engine_t *engine;   /* where core routed it by its buffer's memory kind */
  void *be;                      /* the engine's state for this request */
  unsigned long rec_gen; /* generation of the recording it belongs to (never dereferenced), or 0 */
  int rec_index;         /* its number in that recording */
  int released;          /* given up by gmpi_request_release: gmpi frees it */
  struct gmpi_request *released_next; /* in its comm's released list */
};

/* A zeroed, live request (NULL when out of memory), and its release. Freed requests are reused
 * only after QUARANTINE newer ones (request.c): a stale copy of a handle meets a dead one. */
gmpi_request_t gmpi_request_new(void);
void gmpi_request_free(gmpi_request_t req);
/* 0 for a request already freed (a stale copy of its handle) that was not reused since. */
int gmpi_request_is_live(gmpi_request_t req);
/* Allocate and post a request (the p2p entry points use this). */
gmpi_status_t gmpi_request_start(gmpi_comm_t comm, const gmpi_p2p_args_t *args,
                                 gmpi_request_t *out);
/* A request for a nonblocking collective, its flight record started; the caller routes it and
 * has its engine start it (gmpi_coll_start). */
gmpi_status_t gmpi_request_new_coll(gmpi_comm_t comm, const gmpi_coll_args_t *a,
                                    gmpi_request_t *out);
/* Free a request that never started (its engine holds nothing), ending its flight entry. */
void gmpi_request_discard(gmpi_request_t req, gmpi_status_t why);
/* Wait for one request with the comm's deadline; frees it. */
gmpi_status_t gmpi_request_wait(gmpi_request_t req, gmpi_msg_status_t *status);
/* Finish a done request: copy status out, record the end, free it. Returns its result. */
gmpi_status_t gmpi_request_finish(gmpi_request_t req, gmpi_msg_status_t *status);

/* What a receive from (or a probe of) GMPI_PROC_NULL reports: an empty message from it, with
 * no tag (MPI's rule). */
static inline gmpi_msg_status_t gmpi_proc_null_status(void) {
  return (gmpi_msg_status_t){GMPI_PROC_NULL, GMPI_ANY_TAG, 0};
}

/* A receive's status is written when it succeeds, and when it ends in GMPI_ERR_TRUNCATE: the
 * message's source and tag, count 0 (as MPI, whose programs read which message overflowed;
 * what the buffer holds then is undefined, so no count of elements is promised). No other
 * failure of a receive writes its status. */
static inline int gmpi_msg_status_written(gmpi_status_t st) {
  return st == GMPI_SUCCESS || st == GMPI_ERR_TRUNCATE;
}

/* The comm's deadline passed while waiting req: fail the comm, release req, describe it. */
gmpi_status_t gmpi_request_wait_expired(gmpi_request_t req);
/* Progress req on its engine; *done when it completed (status and result final). */
gmpi_status_t gmpi_request_test(gmpi_request_t req, int *done);
/* End req unfinished with why: its flight-record entry says so, its engine lets go (it will not
 * complete), and req is freed. */
void gmpi_request_give_up(gmpi_request_t req, gmpi_status_t why);
/* Release a request that will never be waited (an error left it behind). */
void gmpi_request_abandon(gmpi_request_t req);

/* Requests whose handle the caller gave up (gmpi_request_release) wait in their comm's released
 * list until gmpi sees them complete. Reap: test each once, free the ones that ended (a
 * request's start calls it, so a loop of started-and-released sends keeps the list short).
 * Drop: at the comm's end, reap, then give up the ones still running. */
void gmpi_request_keep_released(gmpi_request_t req);
void gmpi_request_reap_released(gmpi_comm_t comm);
void gmpi_request_drop_released(gmpi_comm_t comm);

#endif
