/* SPDX-License-Identifier: BSD-3-Clause */
/* Point to point on host buffers. Natively MPI matches (source, tag, order) itself; messages
 * travel as bytes so one message may exceed INT_MAX elements. What native mode adds to MPI
 * (host_native.h): sends of at most GMPI_ENV_EAGER_BYTES complete at once (host_detached.c;
 * not on a comm whose sends complete as MPI's, gmpi_comm_set_sends),
 * messages to one's own rank are matched by gmpi, never by MPI (host_self.c), and under
 * GMPI_CHECK=1 each message carries its sender's dtype in a header (host_frame.c). With
 * GMPI_P2P=envelope none of this runs: the host engine's point to point is then core's
 * envelope engine over the model mover (host_engine.c), as on cuda over the device's. */
#include <stdlib.h>

#include "../core/comm.h"
#include "../core/dtype.h"
#include "../core/envelope.h"
#include "../core/error.h"
#include "../core/park.h"
#include "../core/request.h"
#include "../core/reuse.h"
#include "../core/wait.h"
#include "../mpi/mpi_check.h"
#include "../mpi/types.h"
#include "host.h"
#include "host_native.h"

/* Released request parts kept for the next post (reuse.h): a window of nonblocking messages
 * (osu_bw's) makes and frees one per message. Calls on one comm and its requests never overlap
 * (gmpi.h, threads), so the engine's list needs no lock. */
#define SPARE_PARTS 128

gmpi_status_t gmpi_host_native(gmpi_host_t *host, host_native_t **out) {
  if (!host->native) {
    host_native_t *nat = calloc(1, sizeof(*nat));
    if (!nat) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for point-to-point state");
    nat->checked = host->checked;
    nat->self_tail = &nat->self_head;
    nat->pending_tail = &nat->pending_head;
    gmpi_spares_init(&nat->spare_parts, sizeof(host_req_t), SPARE_PARTS);
    host->native = nat;
  }
  *out = host->native;
  return GMPI_SUCCESS;
}

/* ---- element size in the MPI tag (host_native.h) ---- */
#define TAG_CLASS_BITS 3
static const size_t class_size[] = {1, 2, 4, 8, 16};
#define N_CLASSES ((int)(sizeof(class_size) / sizeof(class_size[0])))

static int size_class(size_t es) {
  int c = 0;
  while (c < N_CLASSES - 1 && class_size[c] < es)
    c++;
  return c;
}

int gmpi_host_mpi_tag(int full, int tag, gmpi_dtype_t dtype) {
  if (tag == GMPI_ANY_TAG) return MPI_ANY_TAG;
  if (full) return tag;
  return (tag << TAG_CLASS_BITS) | size_class(gmpi_dtype_elem_size(dtype));
}
int gmpi_host_user_tag(int full, int mpi_tag) { return full ? mpi_tag : mpi_tag >> TAG_CLASS_BITS; }
size_t gmpi_host_tag_elem_size(int full, int mpi_tag) {
  if (full) return 1;
  int c = mpi_tag & ((1 << TAG_CLASS_BITS) - 1);
  return c < N_CLASSES ? class_size[c] : 1;
}

/* The MPI buffer, count and type of the request's message: its bytes, or framed. */
static gmpi_status_t wire_of(gmpi_host_t *host, gmpi_request_t req, void **buf, int *n) {
  host_req_t *cr = req->be;
  size_t limit = req->comm->cfg.max_chunk;
  if (host->checked) {
    cr->framed = 1;
    return gmpi_host_frame(&cr->frame, &req->args, limit, HOST_FRAME_COPY_BYTES, buf, n, &cr->type);
  }
  *buf = req->args.buf;
  return gmpi_mpi_bytes_type(gmpi_p2p_bytes(&req->args), limit, &cr->type, n);
}

/* MPI_Isend or MPI_Irecv of the request's message (a receive may be from ANY_SOURCE). */
static gmpi_status_t post_to_mpi(gmpi_host_t *host, gmpi_request_t req) {
  const gmpi_p2p_args_t *a = &req->args;
  host_req_t *cr = req->be;
  void *buf;
  int n;
  gmpi_status_t st = GMPI_SUCCESS;
  GMPI_CHECK(wire_of(host, req, &buf, &n));
  int full = req->comm->tags_full;
  if (a->dir == GMPI_P2P_SEND) {
    int (*isend)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *) =
        a->sync ? PMPI_Issend : PMPI_Isend;
    GMPI_MPI_CHECK_GOTO(isend(buf, n, cr->type, a->peer, gmpi_host_mpi_tag(full, a->tag, a->dtype),
                              host->data, &cr->mpi),
                        st, release_type);
  } else {
    int src = a->peer == GMPI_ANY_SOURCE ? MPI_ANY_SOURCE : a->peer;
    int tag = gmpi_host_mpi_tag(full, a->tag, a->dtype);
    GMPI_MPI_CHECK_GOTO(PMPI_Irecv(buf, n, cr->type, src, tag, host->data, &cr->mpi), st,
                        release_type);
  }
  return GMPI_SUCCESS;
release_type:
  gmpi_mpi_type_release(&cr->type);
  return st;
}

static gmpi_status_t post_send(gmpi_host_t *host, gmpi_request_t req) {
  if (req->args.peer == req->comm->rank) return gmpi_host_self_send(host->native, req);
  /* An eager send is copied so that it completes with no receive posted. */
  if (gmpi_host_sends_detached(req->comm, &req->args)) return gmpi_host_detached_send(host, req);
  return post_to_mpi(host, req);
}

/* A receive that a self message could match takes a queued one, or waits for one (and, from
 * ANY_SOURCE, for a remote message in MPI too). */
static gmpi_status_t post_recv(gmpi_host_t *host, gmpi_request_t req) {
  int from_self = req->args.peer == req->comm->rank;
  int from_any = req->args.peer == GMPI_ANY_SOURCE;
  if (!from_self && !from_any) return post_to_mpi(host, req);
  int matched;
  gmpi_host_self_take(host->native, req, &matched);
  if (matched) return GMPI_SUCCESS;
  if (from_any) GMPI_CHECK(post_to_mpi(host, req));
  gmpi_host_self_pending_add(host->native, req);
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_host_p2p_post(gmpi_host_t *host, gmpi_request_t req) {
  host_native_t *nat = NULL;
  GMPI_CHECK(gmpi_host_native(host, &nat));
  gmpi_host_detached_reap(nat);
  host_req_t *cr = gmpi_spare_take(&nat->spare_parts);
  if (!cr) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a request");
  cr->mpi = MPI_REQUEST_NULL;
  cr->type = MPI_DATATYPE_NULL;
  req->be = cr;
  gmpi_status_t st = req->args.dir == GMPI_P2P_SEND ? post_send(host, req) : post_recv(host, req);
  if (st != GMPI_SUCCESS) { /* nothing refers to cr after a failed post */
    gmpi_host_frame_free(&cr->frame);
    gmpi_spare_give(&nat->spare_parts, cr);
    req->be = NULL;
  }
  return st;
}

static void release(gmpi_host_t *host, gmpi_request_t req) {
  host_req_t *cr = req->be;
  gmpi_mpi_type_release(&cr->type);
  gmpi_host_frame_free(&cr->frame);
  gmpi_spare_give(&host->native->spare_parts, cr);
  req->be = NULL;
}

/* The bytes a receive posted as `type` got: 0 when it failed or MPI cannot say. */
static size_t received_bytes(const MPI_Status *s, int rc, MPI_Datatype type) {
  size_t bytes = 0;
  MPI_Count elements = 0;
  if (rc != MPI_SUCCESS || type == MPI_DATATYPE_NULL) return 0;
  if (type == MPI_BYTE && gmpi_mpi_status_bytes(s, &bytes)) return bytes; /* the common case */
  if (PMPI_Get_elements_x(s, type, &elements) != MPI_SUCCESS || elements < 0) return 0;
  return (size_t)elements; /* bytes: every type is of bytes (< 0: MPI_UNDEFINED) */
}

void gmpi_host_recv_end(int full, const MPI_Status *s, int rc, MPI_Datatype type,
                        host_recv_end_t *end) {
  int cls = MPI_SUCCESS;
  if (rc != MPI_SUCCESS) PMPI_Error_class(rc, &cls);
  *end = (host_recv_end_t){.source = s->MPI_SOURCE,
                           .tag = gmpi_host_user_tag(full, s->MPI_TAG),
                           .bytes = received_bytes(s, rc, type),
                           .truncated = cls == MPI_ERR_TRUNCATE,
                           .mpi_rc = cls == MPI_ERR_TRUNCATE ? MPI_SUCCESS : rc};
}

/* GMPI_CHECK's verdict on the sender's dtype (host_frame.c, host_self.c). */
static gmpi_status_t check_sender_dtype(const gmpi_p2p_args_t *a, const host_recv_end_t *e) {
  if (e->sender_dtype < 0)
    return gmpi_error(GMPI_ERR_MISMATCH,
                      "GMPI_CHECK: receive from rank %d tag %d got a message without a check "
                      "header (set GMPI_CHECK alike on every rank)",
                      e->source, e->tag);
  if (e->sender_dtype != (int)a->dtype)
    return gmpi_error(GMPI_ERR_MISMATCH,
                      "GMPI_CHECK: receive from rank %d tag %d expects %s but rank %d sent %s",
                      e->source, e->tag, gmpi_dtype_name(a->dtype), e->source,
                      gmpi_dtype_name((gmpi_dtype_t)e->sender_dtype));
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_host_recv_result(const gmpi_p2p_args_t *a, const host_recv_end_t *e,
                                    gmpi_msg_status_t *status) {
  size_t es = gmpi_dtype_elem_size(a->dtype);
  *status = (gmpi_msg_status_t){e->source, e->tag, e->truncated ? 0 : e->bytes / es};
  if (e->truncated && e->bytes) /* a self message: its length is known */
    return gmpi_error(GMPI_ERR_TRUNCATE,
                      "receive from rank %d tag %d: the message has %zu bytes, longer than the "
                      "receive buffer of %zu %s elements (%zu bytes)",
                      e->source, e->tag, e->bytes, a->count, gmpi_dtype_name(a->dtype),
                      a->count * es);
  if (e->truncated) /* MPI's receive: MPI reports that it truncated, not how long the message was */
    return gmpi_error(GMPI_ERR_TRUNCATE,
                      "receive from rank %d tag %d: the message is longer than the receive "
                      "buffer of %zu %s elements (%zu bytes); MPI does not report its length: "
                      "gmpi_probe before the receive gives it",
                      e->source, e->tag, a->count, gmpi_dtype_name(a->dtype), a->count * es);
  if (e->mpi_rc != MPI_SUCCESS) return gmpi_mpi_error(e->mpi_rc, "MPI_Wait");
  if (e->other_elem_size)
    return gmpi_error(GMPI_ERR_MISMATCH,
                      "GMPI_CHECK: receive from rank %d tag %d expects %s (%zu-byte elements) but "
                      "rank %d sent a message of %zu-byte elements (received and dropped)",
                      e->source, e->tag, gmpi_dtype_name(a->dtype), es, e->source,
                      e->other_elem_size);
  if (e->checked) GMPI_CHECK(check_sender_dtype(a, e));
  if (e->bytes % es)
    return gmpi_error(GMPI_ERR_MISMATCH,
                      "receive from rank %d tag %d: %zu bytes arrived, not a whole number of %s "
                      "elements (the sender used another dtype)",
                      e->source, e->tag, e->bytes, gmpi_dtype_name(a->dtype));
  return GMPI_SUCCESS;
}

/* Has MPI finished the request's MPI part? A receive's end is recorded, and it leaves the
 * self-pending list (an ANY_SOURCE receive that a remote message took). */
gmpi_status_t gmpi_host_test_one(int full, MPI_Request *mpi, MPI_Datatype type, int *ended,
                                 host_recv_end_t *end) {
  /* what a truncated receive's status reads if MPI does not fill it: no rank, no tag */
  MPI_Status s = {.MPI_SOURCE = MPI_ANY_SOURCE, .MPI_TAG = MPI_ANY_TAG};
  int flag = 0, cls = MPI_SUCCESS;
  int rc = PMPI_Test(mpi, &flag, &s);
  if (rc != MPI_SUCCESS) PMPI_Error_class(rc, &cls);
  if (rc != MPI_SUCCESS && cls != MPI_ERR_TRUNCATE) return gmpi_mpi_error(rc, "MPI_Test");
  *ended = flag || rc != MPI_SUCCESS;
  /* Open MPI keeps a request that ended in an error (truncation) allocated: freed here. */
  if (rc != MPI_SUCCESS && *mpi != MPI_REQUEST_NULL) PMPI_Request_free(mpi);
  if (*ended && end) gmpi_host_recv_end(full, &s, rc, type, end);
  return GMPI_SUCCESS;
}

/* The size class of another element size whose message for (peer, tag) waits; -1: none. */
static gmpi_status_t other_class_waiting(gmpi_host_t *host, const gmpi_p2p_args_t *a, int *cls) {
  int own = size_class(gmpi_dtype_elem_size(a->dtype)), flag = 0;
  *cls = -1;
  for (int c = 0; c < N_CLASSES && !flag; c++) {
    if (c == own) continue;
    GMPI_MPI_CHECK(
        PMPI_Iprobe(a->peer, (a->tag << TAG_CLASS_BITS) | c, host->data, &flag, MPI_STATUS_IGNORE));
    if (flag) *cls = c;
  }
  return GMPI_SUCCESS;
}

/* MPI_Wait of *r within comm's GMPI_TIMEOUT, driving the engines meanwhile (a transfer under
 * way may need its sender's progress); *rc is MPI's verdict, an errored request freed. */
static gmpi_status_t wait_within(gmpi_comm_t comm, MPI_Request *r, MPI_Status *s, int *rc,
                                 const char *what) {
  gmpi_deadline_t d;
  gmpi_deadline_start(&d, comm->cfg.timeout_s);
  for (;;) {
    int flag = 0;
    *rc = PMPI_Test(r, &flag, s);
    if (*rc != MPI_SUCCESS && *r != MPI_REQUEST_NULL) PMPI_Request_free(r);
    if (flag || *rc != MPI_SUCCESS) return GMPI_SUCCESS;
    if (gmpi_deadline_poll(&d))
      return gmpi_error(GMPI_ERR_TIMEOUT, "%s did not end within GMPI_TIMEOUT = %g s", what,
                        comm->cfg.timeout_s);
  }
}

/* Receive and drop the waiting message of class cls into no room at all: a truncated receive
 * still completes the message and its send. */
static gmpi_status_t drop_message(gmpi_host_t *host, gmpi_comm_t comm, const gmpi_p2p_args_t *a,
                                  int cls) {
  MPI_Message msg;
  int got = 0;
  GMPI_MPI_CHECK(PMPI_Improbe(a->peer, (a->tag << TAG_CLASS_BITS) | cls, host->data, &got, &msg,
                              MPI_STATUS_IGNORE));
  if (!got) return GMPI_SUCCESS; /* another receive of that size took it meanwhile */
  char room;
  MPI_Request r;
  GMPI_MPI_CHECK(PMPI_Imrecv(&room, 0, MPI_BYTE, &msg, &r));
  int rc, ec = MPI_SUCCESS;
  GMPI_CHECK(wait_within(comm, &r, MPI_STATUS_IGNORE, &rc,
                         "GMPI_CHECK: dropping a message of another element size"));
  if (rc != MPI_SUCCESS) PMPI_Error_class(rc, &ec);
  if (rc != MPI_SUCCESS && ec != MPI_ERR_TRUNCATE) return gmpi_mpi_error(rc, "MPI_Imrecv");
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_host_take_back(gmpi_comm_t comm, MPI_Request *mpi, MPI_Datatype type, int *taken,
                                  host_recv_end_t *end) {
  GMPI_MPI_CHECK(PMPI_Cancel(mpi));
  MPI_Status s;
  int cancelled = 0, rc;
  /* Cancelled at once, or matched before the cancel came and finishing its transfer. */
  GMPI_CHECK(wait_within(comm, mpi, &s, &rc, "taking a posted receive back from MPI"));
  if (rc == MPI_SUCCESS) PMPI_Test_cancelled(&s, &cancelled);
  *taken = cancelled;
  if (!cancelled) gmpi_host_recv_end(comm->tags_full, &s, rc, type, end);
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_host_other_size(gmpi_host_t *host, gmpi_comm_t comm, const gmpi_p2p_args_t *a,
                                   MPI_Request *mpi, MPI_Datatype type, int *ended,
                                   host_recv_end_t *end) {
  int cls, taken;
  *ended = 0;
  /* Only a receive from one other rank with one tag has one (source, tag) to look at; a
   * GMPI_TAGS_FULL comm has no sizes in its tags to look at. */
  if (comm->tags_full || a->tag == GMPI_ANY_TAG || a->peer == GMPI_ANY_SOURCE ||
      a->peer == comm->rank)
    return GMPI_SUCCESS;
  GMPI_CHECK(other_class_waiting(host, a, &cls));
  if (cls < 0) return GMPI_SUCCESS;
  GMPI_CHECK(gmpi_host_take_back(comm, mpi, type, &taken, end));
  *ended = 1;
  if (!taken) return GMPI_SUCCESS;
  GMPI_CHECK(drop_message(host, comm, a, cls));
  *end = (host_recv_end_t){
      .source = a->peer, .tag = a->tag, .mpi_rc = MPI_SUCCESS, .other_elem_size = class_size[cls]};
  return GMPI_SUCCESS;
}

static gmpi_status_t test_mpi(gmpi_host_t *host, gmpi_request_t req, int *finished) {
  host_req_t *cr = req->be;
  int is_recv = req->args.dir == GMPI_P2P_RECV;
  GMPI_CHECK(gmpi_host_test_one(req->comm->tags_full, &cr->mpi, cr->type, finished,
                                is_recv ? &cr->end : NULL));
  /* GMPI_CHECK: now and then, a message of another element size waiting for this receive */
  if (!*finished && cr->framed && is_recv && ++cr->polls % HOST_OTHER_SIZE_POLLS == 0)
    GMPI_CHECK(
        gmpi_host_other_size(host, req->comm, &req->args, &cr->mpi, cr->type, finished, &cr->end));
  if (*finished && is_recv && cr->end.other_elem_size == 0) {
    if (cr->framed) gmpi_host_unframe(&cr->frame, &req->args, &cr->end);
    gmpi_host_self_pending_remove(host->native, req);
  }
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_host_p2p_test(gmpi_host_t *host, gmpi_request_t req, int *done) {
  gmpi_host_detached_reap(host->native);
  host_req_t *cr = req->be;
  *done = 0;
  /* Without an MPI part, only a self message (or a receive for one) can finish it. */
  if (!cr->complete && cr->mpi == MPI_REQUEST_NULL) return GMPI_SUCCESS;
  if (!cr->complete) {
    int finished = 0;
    GMPI_CHECK(test_mpi(host, req, &finished));
    if (!finished) return GMPI_SUCCESS;
  }
  req->result = GMPI_SUCCESS;
  if (req->args.dir == GMPI_P2P_RECV)
    req->result = gmpi_host_recv_result(&req->args, &cr->end, &req->status);
  else
    req->status = (gmpi_msg_status_t){req->args.peer, req->args.tag, req->args.count};
  release(host, req);
  *done = 1;
  return GMPI_SUCCESS;
}

/* A native receive waits in MPI (MPI_Cancel takes it back, gmpi_host_take_back), in the self
 * queue (a receive from this rank), or both (ANY_SOURCE). */
gmpi_status_t gmpi_host_p2p_cancel(gmpi_host_t *host, gmpi_request_t req, int *cancelled) {
  *cancelled = 0;
  host_req_t *cr = req->be;
  if (!cr || cr->complete || req->args.dir != GMPI_P2P_RECV) return GMPI_SUCCESS;
  if (cr->mpi != MPI_REQUEST_NULL) {
    int taken = 0;
    GMPI_CHECK(gmpi_host_take_back(req->comm, &cr->mpi, cr->type, &taken, &cr->end));
    if (!taken) { /* matched before the cancel came: it ends as received, as test_mpi ends it */
      if (cr->framed) gmpi_host_unframe(&cr->frame, &req->args, &cr->end);
      gmpi_host_self_pending_remove(host->native, req);
      cr->complete = 1;
      return GMPI_SUCCESS;
    }
  }
  gmpi_host_self_pending_remove(host->native, req);
  release(host, req);
  *cancelled = 1;
  return GMPI_SUCCESS;
}

void gmpi_host_p2p_abandon(gmpi_host_t *host, gmpi_request_t req) {
  host_req_t *cr = req->be;
  if (!cr) return;
  gmpi_host_self_pending_remove(host->native, req);
  gmpi_host_self_forget_send(host->native, req);
  if (cr->mpi != MPI_REQUEST_NULL) {
    if (req->args.dir == GMPI_P2P_RECV) PMPI_Cancel(&cr->mpi);
    PMPI_Request_free(&cr->mpi);
    if (cr->framed) { /* MPI may still use the header in cr and the staging buffer */
      gmpi_host_frame_park(&cr->frame);
      gmpi_mpi_type_release(&cr->type);
      gmpi_park(cr);
      req->be = NULL;
      return;
    }
  }
  release(host, req);
}

void gmpi_host_p2p_close(gmpi_comm_t comm, gmpi_host_t *host) {
  host_native_t *nat = host->native;
  if (!nat) return;
  gmpi_host_detached_drain(comm, nat);
  gmpi_host_self_free_all(nat);
  if (nat->exchange_frames) {
    gmpi_host_frame_free(&nat->exchange_frames[0]);
    gmpi_host_frame_free(&nat->exchange_frames[1]);
    free(nat->exchange_frames);
  }
  gmpi_spares_drop(&nat->spare_parts);
  free(nat);
  host->native = NULL;
}

/* ---- probe ------------------------------------------------------------------------------- */

/* A message MPI holds for (source, tag): with a tag, each element-size class is probed. */
static gmpi_status_t mpi_probe(gmpi_host_t *host, int full, int source, int tag, int *flag,
                               MPI_Status *s) {
  int src = source == GMPI_ANY_SOURCE ? MPI_ANY_SOURCE : source;
  if (tag == GMPI_ANY_TAG || full) {
    GMPI_MPI_CHECK(PMPI_Iprobe(src, tag == GMPI_ANY_TAG ? MPI_ANY_TAG : tag, host->data, flag, s));
    return GMPI_SUCCESS;
  }
  for (int c = 0; c < N_CLASSES && !*flag; c++)
    GMPI_MPI_CHECK(PMPI_Iprobe(src, (tag << TAG_CLASS_BITS) | c, host->data, flag, s));
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_host_p2p_probe(gmpi_host_t *host, gmpi_comm_t comm, int source, int tag,
                                  int *flag, gmpi_msg_status_t *status) {
  int me = comm->rank, full = comm->tags_full;
  *flag = 0;
  host_native_t *nat = NULL;
  GMPI_CHECK(gmpi_host_native(host, &nat));
  if (source == me || source == GMPI_ANY_SOURCE) {
    gmpi_host_self_probe(nat, me, tag, flag, status);
    if (*flag) return GMPI_SUCCESS;
  }
  MPI_Status s;
  GMPI_CHECK(mpi_probe(host, full, source, tag, flag, &s));
  if (!*flag) return GMPI_SUCCESS;
  MPI_Count bytes = 0;
  PMPI_Get_elements_x(&s, MPI_BYTE, &bytes);
  if (nat->checked) /* the check header is not the sender's data */
    bytes = bytes >= (MPI_Count)sizeof(host_frame_hdr_t) ? bytes - sizeof(host_frame_hdr_t) : 0;
  *status = (gmpi_msg_status_t){s.MPI_SOURCE, gmpi_host_user_tag(full, s.MPI_TAG),
                                (size_t)bytes / gmpi_host_tag_elem_size(full, s.MPI_TAG)};
  return GMPI_SUCCESS;
}
