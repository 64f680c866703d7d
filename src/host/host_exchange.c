/* SPDX-License-Identifier: BSD-3-Clause */
/* gmpi_sendrecv in native mode between this rank and two others (core/p2p.c
 * gmpi_p2p_exchange): the receive and the send go straight to MPI -- no gmpi request, no
 * engine state, no eager copy -- either as MPI's blocking call, watched (below), or posted and
 * tested together until both end or GMPI_TIMEOUT passes. A blocking gmpi_send, gmpi_ssend or
 * gmpi_recv with another rank is the same exchange with one half (gmpi_p2p_single), except
 * that a standard send of eager size is detached (host_detached.c), so that gmpi_send keeps its
 * promise to complete with no receive posted (unless the comm's sends complete as MPI's,
 * gmpi_comm_set_sends). The send half completes with its transfer, as MPI_Sendrecv's does:
 * gmpi's 16 KiB eager promise is for gmpi_send and gmpi_isend (docs/api.md; copying it cost
 * 1.2-1.6x MPI_Sendrecv from 512 B to 16 KiB, docs/performance.md). Message order is MPI's, as
 * for every native send (one communicator, post order). Under GMPI_CHECK both messages are
 * framed (host_frame.c) in the engine's two exchange frames, reused call after call.
 *
 * MPI's blocking call, watched: under GMPI_TIMEOUT_ACTION=end (or GMPI_TIMEOUT=0) the exchange
 * is MPI_Send, MPI_Ssend, MPI_Recv or MPI_Sendrecv on the caller's buffers inside the
 * watchdog's mark, as blocking host collectives are (host_coll.c): MPI's speed, and past
 * GMPI_TIMEOUT the job ends naming the call, ranks and tags (docs/reliability.md). Only where
 * nothing but MPI must progress while this rank is inside MPI -- no GMPI_CHECK frames, no
 * engine of gmpi's in the process (an envelope or device engine, on which a peer's send may
 * wait) -- and where the watchdog did take the comm. One mark per comm is enough: calls on one
 * comm never overlap (gmpi.h, threads). Elsewhere, and under GMPI_TIMEOUT_ACTION=status (which
 * promises GMPI_ERR_TIMEOUT), the polled exchange. */
#include <stdlib.h>

#include "../core/comm.h"
#include "../core/dtype.h"
#include "../core/envelope.h"
#include "../core/error.h"
#include "../core/park.h"
#include "../core/progress.h"
#include "../core/request.h"
#include "../core/wait.h"
#include "../core/watchdog.h"
#include "../mpi/mpi_check.h"
#include "../mpi/types.h"
#include "host.h"
#include "host_native.h"

enum { RECV = 0, SEND = 1 };

typedef struct {
  MPI_Request mpi[2];   /* MPI_REQUEST_NULL once ended (or never posted) */
  MPI_Datatype type[2]; /* released at the end of the call: MPI keeps them alive as needed */
  int ended[2];
  host_recv_end_t end;  /* how the receive ended */
  host_frame_t *frames; /* GMPI_CHECK: the engine's exchange frames; else NULL */
} exchange_t;

/* The MPI buffer, count and type of one half: its bytes, or framed. */
static gmpi_status_t wire_of(const exchange_t *x, int half, const gmpi_p2p_args_t *a, size_t limit,
                             void **buf, int *n, MPI_Datatype *type) {
  if (x->frames)
    return gmpi_host_frame(&x->frames[half], a, limit, HOST_FRAME_COPY_BYTES, buf, n, type);
  *buf = a->buf;
  return gmpi_mpi_bytes_type(gmpi_p2p_bytes(a), limit, type, n);
}

static gmpi_status_t post_pair(gmpi_host_t *host, gmpi_comm_t comm, const gmpi_p2p_args_t *send,
                               const gmpi_p2p_args_t *recv, exchange_t *x) {
  size_t limit = comm->cfg.max_chunk;
  void *buf[2];
  int n[2];
  if (recv) {
    GMPI_CHECK(wire_of(x, RECV, recv, limit, &buf[RECV], &n[RECV], &x->type[RECV]));
    GMPI_MPI_CHECK(PMPI_Irecv(buf[RECV], n[RECV], x->type[RECV], recv->peer,
                              gmpi_host_mpi_tag(comm->tags_full, recv->tag, recv->dtype),
                              host->data, &x->mpi[RECV]));
  }
  if (!send) return GMPI_SUCCESS;
  GMPI_CHECK(wire_of(x, SEND, send, limit, &buf[SEND], &n[SEND], &x->type[SEND]));
  GMPI_MPI_CHECK((send->sync ? PMPI_Issend : PMPI_Isend)(
      buf[SEND], n[SEND], x->type[SEND], send->peer,
      gmpi_host_mpi_tag(comm->tags_full, send->tag, send->dtype), host->data, &x->mpi[SEND]));
  return GMPI_SUCCESS;
}

/* The engine's exchange frames (GMPI_CHECK), made at the first checked exchange. */
static gmpi_status_t frames_of(gmpi_host_t *host, host_frame_t **frames) {
  host_native_t *nat;
  GMPI_CHECK(gmpi_host_native(host, &nat));
  if (!nat->exchange_frames) nat->exchange_frames = calloc(2, sizeof(host_frame_t));
  if (!nat->exchange_frames) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for an exchange");
  *frames = nat->exchange_frames;
  return GMPI_SUCCESS;
}

/* One test of the receive; under GMPI_CHECK, now and then a look for a message of another
 * element size waiting for it (gmpi_host_other_size). */
static gmpi_status_t test_recv(gmpi_host_t *host, gmpi_comm_t comm, const gmpi_p2p_args_t *recv,
                               exchange_t *x, unsigned polls) {
  GMPI_CHECK(
      gmpi_host_test_one(comm->tags_full, &x->mpi[RECV], x->type[RECV], &x->ended[RECV], &x->end));
  if (x->ended[RECV] || !x->frames || polls % HOST_OTHER_SIZE_POLLS) return GMPI_SUCCESS;
  return gmpi_host_other_size(host, comm, recv, &x->mpi[RECV], x->type[RECV], &x->ended[RECV],
                              &x->end);
}

/* Both ended: GMPI_SUCCESS; the deadline passed: GMPI_ERR_TIMEOUT (no message: the caller,
 * which knows the call, writes it). */
static gmpi_status_t wait_pair(gmpi_host_t *host, gmpi_comm_t comm, const gmpi_p2p_args_t *recv,
                               exchange_t *x) {
  gmpi_deadline_t d;
  gmpi_deadline_start(&d, comm->cfg.timeout_s);
  for (unsigned polls = 1;; polls++) {
    if (!x->ended[RECV]) GMPI_CHECK(test_recv(host, comm, recv, x, polls));
    if (!x->ended[SEND])
      GMPI_CHECK(
          gmpi_host_test_one(comm->tags_full, &x->mpi[SEND], x->type[SEND], &x->ended[SEND], NULL));
    if (x->ended[RECV] && x->ended[SEND]) return GMPI_SUCCESS;
    if (gmpi_deadline_poll(&d)) return GMPI_ERR_TIMEOUT;
  }
}

/* What did not end is let go, as an abandoned request is: the receive cancelled, the send left
 * to MPI (docs/reliability.md: the caller's buffers stay in use after a timeout). */
static void let_go(gmpi_host_t *host, exchange_t *x) {
  int live = 0;
  if (x->mpi[RECV] != MPI_REQUEST_NULL) PMPI_Cancel(&x->mpi[RECV]);
  for (int i = 0; i < 2; i++) {
    if (x->mpi[i] != MPI_REQUEST_NULL) {
      PMPI_Request_free(&x->mpi[i]);
      live = 1;
    }
    gmpi_mpi_type_release(&x->type[i]);
  }
  if (!live || !x->frames) return;
  /* MPI may still use the frames: parked, and the next exchange makes new ones. */
  for (int i = 0; i < 2; i++)
    gmpi_host_frame_park(&x->frames[i]);
  gmpi_park(x->frames);
  host->native->exchange_frames = NULL;
}

/* The exchange posted and tested until both halves end or GMPI_TIMEOUT passes. */
/* Out of line (noinline): inlined, its frame would cost every watched send and receive. */
__attribute__((noinline)) static gmpi_status_t run_polled(gmpi_host_t *host, gmpi_comm_t comm,
                                                          const gmpi_p2p_args_t *send,
                                                          const gmpi_p2p_args_t *recv,
                                                          host_recv_end_t *end) {
  exchange_t x = {.mpi = {MPI_REQUEST_NULL, MPI_REQUEST_NULL},
                  .type = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL},
                  .ended = {!recv, !send}}; /* a missing half has nothing to wait for */
  if (host->checked) GMPI_CHECK(frames_of(host, &x.frames));
  gmpi_status_t st = post_pair(host, comm, send, recv, &x);
  if (st == GMPI_SUCCESS) st = wait_pair(host, comm, recv, &x);
  if (st == GMPI_SUCCESS && recv && x.frames && !x.end.other_elem_size)
    gmpi_host_unframe(&x.frames[RECV], recv, &x.end);
  let_go(host, &x);
  *end = x.end;
  return st;
}

/* May this exchange be MPI's blocking call, watched? (the file's head says when) */
static int watched_blocking(const gmpi_host_t *host, gmpi_comm_t comm) {
  return !host->checked && gmpi_comm_may_block(comm);
}

/* A send alone as MPI's blocking call inside the watchdog's mark (never framed: unchecked). Kept
 * apart from the receive's: in a ping-pong the sender's work before MPI_Send is latency. */
static gmpi_status_t send_blocking(gmpi_host_t *host, gmpi_comm_t comm,
                                   const gmpi_p2p_args_t *send) {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int n = 0;
  GMPI_CHECK(gmpi_mpi_bytes_type(gmpi_p2p_bytes(send), comm->cfg.max_chunk, &type, &n));
  const char *what = send->sync ? "MPI_Ssend" : "MPI_Send";
  int tag = gmpi_host_mpi_tag(comm->tags_full, send->tag, send->dtype);
  gmpi_watch_enter_p2p(&comm->watch, what, send->count, -1, -1, send->peer, send->tag);
  int rc = (send->sync ? PMPI_Ssend : PMPI_Send)(send->buf, n, type, send->peer, tag, host->data);
  gmpi_watch_exit(&comm->watch);
  gmpi_mpi_type_release(&type);
  return rc == MPI_SUCCESS ? GMPI_SUCCESS : gmpi_mpi_error(rc, what);
}

/* A receive, with or without a send half, as MPI's blocking call inside the watchdog's mark
 * (never framed: unchecked). *settled: it succeeded and nothing about it is left to look at
 * (no status asked, one-byte elements), so the receiver's work after MPI_Recv -- latency in a
 * ping-pong -- ends here. */
static gmpi_status_t recv_blocking(gmpi_host_t *host, gmpi_comm_t comm, const gmpi_p2p_args_t *send,
                                   const gmpi_p2p_args_t *recv, int length, host_recv_end_t *end,
                                   int *settled) {
  size_t limit = comm->cfg.max_chunk;
  MPI_Datatype type[2] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};
  int n[2] = {0, 0};
  gmpi_status_t st = GMPI_SUCCESS;
  MPI_Status s;
  GMPI_CHECK(gmpi_mpi_bytes_type(gmpi_p2p_bytes(recv), limit, &type[RECV], &n[RECV]));
  if (send)
    GMPI_CHECK_GOTO(gmpi_mpi_bytes_type(gmpi_p2p_bytes(send), limit, &type[SEND], &n[SEND]), st,
                    release_types);
  const char *what = send ? "MPI_Sendrecv" : "MPI_Recv";
  gmpi_watch_enter_p2p(&comm->watch, what, recv->count, recv->peer, recv->tag,
                       send ? send->peer : -1, send ? send->tag : -1);
  int rtag = gmpi_host_mpi_tag(comm->tags_full, recv->tag, recv->dtype);
  /* what the receive's end reads if MPI reports a truncation without filling them */
  s.MPI_SOURCE = recv->peer;
  s.MPI_TAG = rtag;
  int rc = send ? PMPI_Sendrecv(send->buf, n[SEND], type[SEND], send->peer,
                                gmpi_host_mpi_tag(comm->tags_full, send->tag, send->dtype),
                                recv->buf, n[RECV], type[RECV], recv->peer, rtag, host->data, &s)
                : PMPI_Recv(recv->buf, n[RECV], type[RECV], recv->peer, rtag, host->data, &s);
  gmpi_watch_exit(&comm->watch);
  *settled = rc == MPI_SUCCESS && !length;
  if (*settled) goto release_types;
  int cls = MPI_SUCCESS;
  if (rc != MPI_SUCCESS) PMPI_Error_class(rc, &cls);
  if (rc == MPI_SUCCESS || cls == MPI_ERR_TRUNCATE) /* truncation: its verdict */
    gmpi_host_recv_end(comm->tags_full, &s, rc, length ? type[RECV] : MPI_DATATYPE_NULL, end);
  else
    st = gmpi_mpi_error(rc, what);
release_types:
  gmpi_mpi_type_release(&type[RECV]);
  gmpi_mpi_type_release(&type[SEND]);
  return st;
}

gmpi_status_t gmpi_host_p2p_exchange(gmpi_host_t *host, gmpi_comm_t comm,
                                     const gmpi_p2p_args_t *send, const gmpi_p2p_args_t *recv,
                                     gmpi_msg_status_t *status) {
  gmpi_host_detached_reap(host->native); /* as every native post does: the list stays short */
  if (!recv && gmpi_host_sends_detached(comm, send))
    return gmpi_host_detached_post(host, comm, send);
  int watched = watched_blocking(host, comm);
  if (!recv && watched) return send_blocking(host, comm, send);
  /* A receive's length is one more call into MPI: asked for a status, or to check that whole
   * elements arrived (elements of more than one byte). */
  int length = recv && (status || gmpi_dtype_elem_size(recv->dtype) != 1);
  host_recv_end_t end;
  int settled = 0;
  gmpi_status_t st = watched && recv ? recv_blocking(host, comm, send, recv, length, &end, &settled)
                                     : run_polled(host, comm, send, recv, &end);
  if (st != GMPI_SUCCESS || !recv || settled) return st;
  gmpi_msg_status_t got;
  st = gmpi_host_recv_result(recv, &end, &got);
  if (gmpi_msg_status_written(st) && status) *status = got;
  return st;
}
