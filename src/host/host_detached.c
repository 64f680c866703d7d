/* SPDX-License-Identifier: BSD-3-Clause */
/* Detached eager sends (native mode): a send of at most GMPI_ENV_EAGER_BYTES is copied, the
 * copy goes to MPI_Isend, and the gmpi request completes at once, so a blocking send of that
 * size never waits for its receive (gmpi's documented eager limit; MPI's own is smaller).
 * Order is still MPI's: every send goes through MPI_Isend on the same communicator in post
 * order, so messages do not overtake. The MPI requests and copies live here until MPI is done
 * with them: reaped at every native post and test, drained at close. */
#include <stdlib.h>
#include <string.h>

#include "../core/comm.h"
#include "../core/dtype.h"
#include "../core/envelope.h"
#include "../core/error.h"
#include "../core/log.h"
#include "../core/park.h"
#include "../core/request.h"
#include "../core/wait.h"
#include "../mpi/mpi_check.h"
#include "../mpi/types.h"
#include "host_native.h"

/* How long close waits for detached sends when GMPI_TIMEOUT is 0 (wait forever): close must
 * not hang on a message that no rank will ever receive. */
#define DRAIN_WAIT_WITHOUT_TIMEOUT_S 10.0

/* Room for one more detached send, so that nothing can fail once MPI_Isend has started. */
static gmpi_status_t reserve_one(host_native_t *nat) {
  if (nat->n_detached < nat->cap_detached) return GMPI_SUCCESS;
  size_t cap = nat->cap_detached ? 2 * nat->cap_detached : 16;
  MPI_Request *reqs = realloc(nat->detached, cap * sizeof(*reqs));
  if (reqs) nat->detached = reqs;
  void **copies = reqs ? realloc(nat->detached_copy, cap * sizeof(*copies)) : NULL;
  if (copies) nat->detached_copy = copies;
  int *index = copies ? realloc(nat->reaped_index, cap * sizeof(*index)) : NULL;
  if (index) nat->reaped_index = index;
  if (!index) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for the list of eager sends");
  nat->cap_detached = cap;
  return GMPI_SUCCESS;
}

/* The copy MPI sends: the payload, or under GMPI_CHECK the framed message (host_frame.c). A
 * small payload goes into the spare buffer when there is one, else a new one of
 * HOST_SPARE_COPY_BYTES (*spare_sized: it may become the spare). */
static gmpi_status_t copy_of(host_native_t *nat, gmpi_comm_t comm, const gmpi_p2p_args_t *a,
                             void **copy, size_t *copy_bytes, int *spare_sized) {
  size_t bytes = gmpi_p2p_bytes(a);
  *copy = NULL;
  *copy_bytes = bytes;
  *spare_sized = 0;
  if (nat->checked) {
    host_frame_t f = {0};
    void *buf;
    int n;
    MPI_Datatype type;
    GMPI_CHECK(gmpi_host_frame(&f, a, comm->cfg.max_chunk, GMPI_ENV_EAGER_BYTES, &buf, &n, &type));
    *copy = f.staging; /* eager sizes are always copied: the frame is one buffer */
    *copy_bytes = (size_t)n;
    return GMPI_SUCCESS;
  }
  if (!bytes) return GMPI_SUCCESS;
  *spare_sized = bytes <= HOST_SPARE_COPY_BYTES;
  if (*spare_sized && nat->spare_copy) {
    *copy = nat->spare_copy;
    nat->spare_copy = NULL;
  } else {
    *copy = malloc(*spare_sized ? HOST_SPARE_COPY_BYTES : bytes);
  }
  if (!*copy) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for an eager send's copy");
  memcpy(*copy, a->buf, bytes);
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_host_detached_post(gmpi_host_t *host, gmpi_comm_t comm,
                                      const gmpi_p2p_args_t *a) {
  host_native_t *nat = NULL;
  GMPI_CHECK(gmpi_host_native(host, &nat));
  GMPI_CHECK(reserve_one(nat));
  void *copy;
  size_t bytes;
  int spare_sized;
  GMPI_CHECK(copy_of(nat, comm, a, &copy, &bytes, &spare_sized));
  gmpi_status_t st = GMPI_SUCCESS;
  MPI_Datatype type;
  int n;
  MPI_Request mpi;
  GMPI_CHECK_GOTO(gmpi_mpi_bytes_type(bytes, comm->cfg.max_chunk, &type, &n), st, free_copy);
  int rc = PMPI_Isend(copy, n, type, a->peer, gmpi_host_mpi_tag(comm->tags_full, a->tag, a->dtype),
                      host->data, &mpi);
  gmpi_mpi_type_release(&type); /* MPI keeps a type alive for the sends using it */
  if (rc != MPI_SUCCESS) {
    st = gmpi_mpi_error(rc, "MPI_Isend");
    goto free_copy;
  }
  /* A small send is often done inside MPI_Isend (copied to the peer's queue); then its buffer
   * is free at once, and the next small send uses it. */
  int done = 0;
  if (spare_sized && !nat->spare_copy && PMPI_Test(&mpi, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
      done) {
    nat->spare_copy = copy;
    return GMPI_SUCCESS;
  }
  nat->detached[nat->n_detached] = mpi;
  nat->detached_copy[nat->n_detached] = copy;
  nat->n_detached++;
  return GMPI_SUCCESS;
free_copy:
  if (spare_sized && !nat->spare_copy)
    nat->spare_copy = copy;
  else
    free(copy);
  return st;
}

gmpi_status_t gmpi_host_detached_send(gmpi_host_t *host, gmpi_request_t req) {
  GMPI_CHECK(gmpi_host_detached_post(host, req->comm, &req->args));
  host_req_t *cr = req->be;
  cr->complete = 1;
  return GMPI_SUCCESS;
}

void gmpi_host_detached_test(host_native_t *nat) {
  int reaped = 0;
  int rc = PMPI_Testsome((int)nat->n_detached, nat->detached, &reaped, nat->reaped_index,
                         MPI_STATUSES_IGNORE);
  /* The user was told these sends succeeded; a late MPI failure can only be logged. */
  if (rc != MPI_SUCCESS) gmpi_log(GMPI_LOG_WARN, "an eager send failed in MPI after completing");
  if (reaped == MPI_UNDEFINED || reaped == 0) return;
  /* Requests MPI finished are MPI_REQUEST_NULL now: free their copies, keep the rest in order. */
  size_t kept = 0;
  for (size_t i = 0; i < nat->n_detached; i++) {
    if (nat->detached[i] == MPI_REQUEST_NULL) {
      free(nat->detached_copy[i]);
      continue;
    }
    nat->detached[kept] = nat->detached[i];
    nat->detached_copy[kept] = nat->detached_copy[i];
    kept++;
  }
  nat->n_detached = kept;
}

void gmpi_host_detached_drain(gmpi_comm_t comm, host_native_t *nat) {
  gmpi_deadline_t d;
  double wait_s = comm->cfg.timeout_s > 0 ? comm->cfg.timeout_s : DRAIN_WAIT_WITHOUT_TIMEOUT_S;
  gmpi_deadline_start(&d, wait_s);
  /* A failed comm's peers may be gone: do not wait for them. */
  while (nat->n_detached && comm->failure == GMPI_SUCCESS) {
    gmpi_host_detached_reap(nat);
    if (nat->n_detached && gmpi_deadline_poll(&d)) break;
  }
  if (nat->n_detached && comm->failure == GMPI_SUCCESS)
    gmpi_log(GMPI_LOG_WARN, "eager sends never received, given up at close: %zu", nat->n_detached);
  for (size_t i = 0; i < nat->n_detached; i++) {
    PMPI_Cancel(&nat->detached[i]);
    PMPI_Request_free(&nat->detached[i]);
    /* MPI may still read it (a send cancelled is not always a send stopped): parked, not
     * freed under MPI's feet. Only a failed comm, or a message never received, leaves any. */
    gmpi_park(nat->detached_copy[i]);
  }
  nat->n_detached = 0;
  free(nat->spare_copy);
  nat->spare_copy = NULL;
  free(nat->detached);
  free(nat->detached_copy);
  free(nat->reaped_index);
  nat->detached = NULL;
  nat->detached_copy = NULL;
  nat->reaped_index = NULL;
  nat->cap_detached = 0;
}
