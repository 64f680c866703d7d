/* SPDX-License-Identifier: BSD-3-Clause */
/* Control channels over MPI, the chan_* members of the out-of-band struct (core/oob.h): a
 * channel is a duplicate of the comm's MPI communicator whose errors return, carrying one tag;
 * a handle is an MPI request. */
#include <limits.h>
#include <stdlib.h>

#include "../core/comm.h"
#include "../core/reuse.h"
#include "mpi_check.h"
#include "oob.h"
#include "types.h"

#define CHAN_TAG       7 /* the envelopes' tag */
#define CHAN_DATA_TAG0 8 /* data tags follow it: 8 .. 8 + GMPI_CHAN_DATA_TAGS - 1 < 32767 */

/* Handles released by chan_test are kept for the next send or receive, at most SPARE_OPS
 * (core/reuse.h): a small message posts one on each side, and a malloc and free each cost about
 * as much as the rest of a post (one thread at a time per channel: core/oob.h). */
#define SPARE_OPS 16

struct gmpi_chan {
  MPI_Comm comm;
  gmpi_spares_t spare; /* released handles */
};

struct gmpi_chan_op {
  MPI_Request req;
  int is_recv;
  MPI_Datatype type; /* a data message's beyond INT_MAX bytes, else MPI_BYTE */
  gmpi_chan_t *chan; /* the channel it is from */
};

gmpi_status_t gmpi_mpi_chan_open(gmpi_comm_t comm, gmpi_chan_t **out) {
  gmpi_chan_t *chan = calloc(1, sizeof(*chan));
  if (!chan) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a control channel");
  gmpi_spares_init(&chan->spare, sizeof(gmpi_chan_op_t), SPARE_OPS);
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_CHECK_GOTO(gmpi_mpi_dup(gmpi_oob_mpi_comm(comm), comm->cfg.timeout_s,
                               "the control channel's communicator (MPI_Comm_idup)", &chan->comm),
                  st, free_chan);
  GMPI_MPI_CHECK_GOTO(PMPI_Comm_set_errhandler(chan->comm, MPI_ERRORS_RETURN), st, free_comm);
  *out = chan;
  return GMPI_SUCCESS;
free_comm:
  PMPI_Comm_free(&chan->comm);
free_chan:
  free(chan);
  return st;
}

void gmpi_mpi_chan_close(gmpi_chan_t *chan, int failed) {
  if (!chan) return;
  if (!failed) PMPI_Comm_free(&chan->comm);
  gmpi_spares_drop(&chan->spare);
  free(chan);
}

static gmpi_status_t take_op(gmpi_chan_t *chan, int is_recv, gmpi_chan_op_t **out) {
  gmpi_chan_op_t *op = gmpi_spare_take(&chan->spare);
  if (!op) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a control message");
  *op =
      (gmpi_chan_op_t){.req = MPI_REQUEST_NULL, .is_recv = is_recv, .type = MPI_BYTE, .chan = chan};
  *out = op;
  return GMPI_SUCCESS;
}

static gmpi_status_t new_op(gmpi_chan_t *chan, size_t bytes, int is_recv, gmpi_chan_op_t **out) {
  if (bytes > INT_MAX) return gmpi_error(GMPI_ERR_INTERNAL, "control message of %zu bytes", bytes);
  return take_op(chan, is_recv, out);
}

/* A handle that completed: kept for the next post. */
static void release_op(gmpi_chan_op_t *op) {
  gmpi_mpi_type_release(&op->type);
  gmpi_spare_give(&op->chan->spare, op);
}

gmpi_status_t gmpi_mpi_chan_send(gmpi_chan_t *chan, int dest, const void *buf, size_t bytes,
                                 gmpi_chan_op_t **op) {
  gmpi_chan_op_t *o = NULL;
  GMPI_CHECK(new_op(chan, bytes, 0, &o));
  int rc = PMPI_Isend(buf, (int)bytes, MPI_BYTE, dest, CHAN_TAG, chan->comm, &o->req);
  if (rc != MPI_SUCCESS) {
    free(o);
    return gmpi_mpi_error(rc, "MPI_Isend (control channel)");
  }
  *op = o;
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_mpi_chan_recv(gmpi_chan_t *chan, void *buf, size_t max_bytes,
                                 gmpi_chan_op_t **op) {
  gmpi_chan_op_t *o = NULL;
  GMPI_CHECK(new_op(chan, max_bytes, 1, &o));
  int rc = PMPI_Irecv(buf, (int)max_bytes, MPI_BYTE, MPI_ANY_SOURCE, CHAN_TAG, chan->comm, &o->req);
  if (rc != MPI_SUCCESS) {
    free(o);
    return gmpi_mpi_error(rc, "MPI_Irecv (control channel)");
  }
  *op = o;
  return GMPI_SUCCESS;
}

/* A data message: its own tag, a type for one beyond INT_MAX bytes. */
static gmpi_status_t data_op(gmpi_chan_t *chan, int is_recv, int peer, int tag, void *buf,
                             size_t bytes, gmpi_chan_op_t **op) {
  if (tag < 0 || tag >= GMPI_CHAN_DATA_TAGS)
    return gmpi_error(GMPI_ERR_INTERNAL, "channel data tag %d outside 0..%d", tag,
                      GMPI_CHAN_DATA_TAGS - 1);
  gmpi_chan_op_t *o = NULL;
  GMPI_CHECK(take_op(chan, is_recv, &o));
  int n = 0;
  gmpi_status_t st = gmpi_mpi_bytes_type(bytes, INT_MAX, &o->type, &n);
  if (st != GMPI_SUCCESS) {
    free(o);
    return st;
  }
  int rc = is_recv ? PMPI_Irecv(buf, n, o->type, peer, CHAN_DATA_TAG0 + tag, chan->comm, &o->req)
                   : PMPI_Isend(buf, n, o->type, peer, CHAN_DATA_TAG0 + tag, chan->comm, &o->req);
  if (rc != MPI_SUCCESS) {
    gmpi_mpi_type_release(&o->type);
    free(o);
    return gmpi_mpi_error(rc, is_recv ? "MPI_Irecv (channel data)" : "MPI_Isend (channel data)");
  }
  *op = o;
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_mpi_chan_send_data(gmpi_chan_t *chan, int dest, int tag, const void *buf,
                                      size_t bytes, gmpi_chan_op_t **op) {
  return data_op(chan, 0, dest, tag, (void *)buf, bytes, op);
}

gmpi_status_t gmpi_mpi_chan_recv_data(gmpi_chan_t *chan, int src, int tag, void *buf, size_t bytes,
                                      gmpi_chan_op_t **op) {
  return data_op(chan, 1, src, tag, buf, bytes, op);
}

gmpi_status_t gmpi_mpi_chan_test(gmpi_chan_op_t **op, int *done, int *source, size_t *bytes) {
  gmpi_chan_op_t *o = *op;
  *done = 0;
  if (!o) /* never posted: its posting failed (the channel lost a receive slot) */
    return gmpi_error(GMPI_ERR_STATE, "a control channel handle is not in flight (an earlier "
                                      "post failed)");
  int flag = 0;
  MPI_Status s;
  GMPI_MPI_CHECK(PMPI_Test(&o->req, &flag, o->is_recv ? &s : MPI_STATUS_IGNORE));
  if (!flag) return GMPI_SUCCESS;
  int rc = MPI_SUCCESS, n = 0, is_recv = o->is_recv;
  if (is_recv) {
    if (source) *source = s.MPI_SOURCE;
    if (bytes) rc = PMPI_Get_count(&s, MPI_BYTE, &n);
  }
  release_op(o);
  *op = NULL;
  *done = 1;
  if (rc != MPI_SUCCESS) return gmpi_mpi_error(rc, "MPI_Get_count (control channel)");
  if (is_recv && bytes) *bytes = (size_t)n;
  return GMPI_SUCCESS;
}

/* How long a cancelled receive whose message was already under way gets to land: a data
 * receive matched to a large send needs its peer, which may be failed or gone. */
#define CANCEL_GRACE_S 1.0

int gmpi_mpi_chan_cancel(gmpi_chan_op_t *op) {
  if (!op) return 1;
  int freed = 0;
  if (op->is_recv) {
    PMPI_Cancel(&op->req);
    double until = PMPI_Wtime() + CANCEL_GRACE_S;
    while (!freed && PMPI_Test(&op->req, &freed, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
           PMPI_Wtime() < until) {
    }
  }
  if (!freed) PMPI_Request_free(&op->req); /* MPI may still use the buffer: left to the process */
  gmpi_mpi_type_release(&op->type);        /* MPI keeps what a pending request still uses */
  free(op);
  return freed;
}
