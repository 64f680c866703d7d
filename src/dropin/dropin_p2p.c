/* SPDX-License-Identifier: BSD-3-Clause */
/* Point to point. On a comm with a twin every message goes to gmpi, whatever memory it is in:
 * one matching engine per comm keeps MPI's matching across memory kinds (a device receive takes
 * a host send, MPI_ANY_SOURCE sees both in MPI's order). Messages move as bytes: a contiguous
 * type as it lies, any other packed in host memory (MPI_Pack) and unpacked at the receiver.
 * Comms without a twin (intercomms) take MPI, device buffers staged for blocking calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dropin.h"

static int to_gmpi_rank(int rank) {
  return rank == MPI_ANY_SOURCE ? GMPI_ANY_SOURCE : rank == MPI_PROC_NULL ? GMPI_PROC_NULL : rank;
}

static int to_gmpi_tag(int tag) { return tag == MPI_ANY_TAG ? GMPI_ANY_TAG : tag; }

static void fill_status(MPI_Status *status, const gmpi_msg_status_t *gs) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = gs->source == GMPI_PROC_NULL    ? MPI_PROC_NULL
                       : gs->source == GMPI_ANY_SOURCE ? MPI_ANY_SOURCE
                                                       : gs->source;
  status->MPI_TAG = gs->tag == GMPI_ANY_TAG ? MPI_ANY_TAG : gs->tag;
  /* MPI_ERROR is left as it was: single-completion calls do not set it (MPI 3.1, 3.2.5) */
  dropin_status_set_count(status, gs->count, 0);
}

/* ---- what goes on the wire ------------------------------------------------------------------ */

/* MPI_SUCCESS, or MPI_ERR_TYPE on comm's error handler for a type never committed. */
static int usable_type(MPI_Comm comm, const char *func, MPI_Datatype type) {
  if (dropin_type_committed(type)) return MPI_SUCCESS;
  fprintf(stderr, "[gmpi_mpi] %s: the datatype was never committed (MPI_Type_commit)\n", func);
  PMPI_Comm_call_errhandler(comm, MPI_ERR_TYPE);
  return MPI_ERR_TYPE;
}

/* A usable count and type; *size: the type's size when count elements of it are count*size
 * contiguous bytes, else 0 (a derived type to pack). A predefined type the memo holds is
 * answered inline: it is the common case, and the sender's latency. */
static int contiguous_size(MPI_Comm comm, const char *func, int count, MPI_Datatype type,
                           size_t *size) {
  if (count < 0) return MPI_ERR_COUNT;
  const dropin_type_row_t *row = dropin_memo_type(type);
  if (row) {
    *size = row->size;
    return MPI_SUCCESS;
  }
  int rc = usable_type(comm, func, type);
  if (rc == MPI_SUCCESS && !dropin_contiguous(type, size)) *size = 0;
  return rc;
}

static int send_packed(dropin_req_t *r, const void *buf, int count, MPI_Datatype type,
                       const char *func, const void **data, size_t *bytes);

/* The bytes a send moves: the program's buffer for a contiguous type (copied to the host when
 * keep_copy: buffered sends), else packed into r->owned. */
static int send_bytes(dropin_req_t *r, const void *buf, int count, MPI_Datatype type, int keep_copy,
                      const char *func, const void **data, size_t *bytes) {
  size_t size = 0;
  int rc = contiguous_size(r->comm, func, count, type, &size);
  if (rc != MPI_SUCCESS) return rc;
  if (size) {
    *data = buf;
    *bytes = (size_t)count * size;
    if (!keep_copy || !*bytes) return MPI_SUCCESS;
    if (!(r->owned = malloc(*bytes))) return MPI_ERR_NO_MEM;
    gmpi_status_t st = gmpi_mem_copy(dropin_copier(r->comm), r->owned, buf, *bytes);
    *data = r->owned;
    return st == GMPI_SUCCESS ? MPI_SUCCESS : dropin_fail(r->comm, func, st);
  }
  return send_packed(r, buf, count, type, func, data, bytes);
}

/* A derived type's send: its bytes packed into r->owned. */
static int send_packed(dropin_req_t *r, const void *buf, int count, MPI_Datatype type,
                       const char *func, const void **data, size_t *bytes) {
  int packed = 0, pos = 0;
  int rc = PMPI_Pack_size(count, type, r->comm, &packed);
  if (rc != MPI_SUCCESS) return rc;
  if (!(r->owned = malloc(packed ? (size_t)packed : 1))) return MPI_ERR_NO_MEM;
  dropin_stage_t s;
  void *src = (void *)buf;
  if ((rc = dropin_stage_in(&s, r->comm, &src, count, type)) != MPI_SUCCESS) return rc;
  rc = PMPI_Pack(src, count, type, r->owned, packed, &pos, r->comm);
  dropin_stage_out(&s, 0);
  if (dropin_is_device(buf)) dropin_note_staged(func, "a derived datatype (packed in host memory)");
  *data = r->owned;
  *bytes = (size_t)pos;
  return rc;
}

/* bytes packed bytes into count elements of type at dst. A message may end inside an element
 * (a receive longer than the message): MPI then fills the basic elements it has, which
 * MPI_Unpack cannot do (it unpacks whole elements), so that message is received from this rank
 * itself as MPI_PACKED on the layer's own comm, and MPI lays it out. */
static int unpack_bytes(const void *packed, size_t bytes, void *dst, MPI_Aint count,
                        MPI_Datatype type, MPI_Comm comm) {
  MPI_Count size = 0;
  int rc = PMPI_Type_size_x(type, &size);
  if (rc != MPI_SUCCESS || !bytes) return rc;
  if (size > 0 && bytes % (size_t)size == 0) {
    int pos = 0;
    return PMPI_Unpack(packed, (int)bytes, &pos, dst, (int)(bytes / (size_t)size), type, comm);
  }
  return PMPI_Sendrecv(packed, (int)bytes, MPI_PACKED, 0, 0, dst, (int)count, type, 0, 0,
                       dropin.self_comm, MPI_STATUS_IGNORE);
}

static int unpack_received(dropin_req_t *r) {
  dropin_stage_t s;
  void *dst = r->user;
  int rc = dropin_stage_in(&s, r->comm, &dst, r->user_count, r->user_type); /* the holes */
  if (rc == MPI_SUCCESS)
    rc = unpack_bytes(r->owned, r->bytes, dst, r->user_count, r->user_type, r->comm);
  int out = dropin_stage_out(&s, rc == MPI_SUCCESS);
  return rc != MPI_SUCCESS ? rc : out;
}

/* Where a receive lands: the program's buffer for a contiguous type, else a packed buffer
 * unpacked when the message is in (r->after). */
static int recv_bytes(dropin_req_t *r, void *buf, int count, MPI_Datatype type, const char *func,
                      void **data, size_t *bytes) {
  size_t size = 0;
  int rc = contiguous_size(r->comm, func, count, type, &size);
  if (rc != MPI_SUCCESS) return rc;
  if (size) {
    *data = buf;
    *bytes = (size_t)count * size;
    return MPI_SUCCESS;
  }
  int packed = 0;
  rc = PMPI_Pack_size(count, type, r->comm, &packed);
  if (rc != MPI_SUCCESS) return rc;
  if (!(r->owned = malloc(packed ? (size_t)packed : 1))) return MPI_ERR_NO_MEM;
  if (dropin_is_device(buf))
    dropin_note_staged(func, "a derived datatype (unpacked from host memory)");
  r->after = unpack_received;
  r->user = buf;
  r->user_count = count;
  r->user_type = type;
  *data = r->owned;
  *bytes = (size_t)packed;
  return MPI_SUCCESS;
}

/* ---- posting through gmpi ------------------------------------------------------------------- */

static int post_send(gmpi_comm_t g, MPI_Comm comm, const void *buf, int count, MPI_Datatype type,
                     int dest, int tag, dropin_send_kind_t kind, const char *func,
                     MPI_Request *request) {
  dropin_req_t local = {.comm = comm};
  const void *data = NULL;
  size_t bytes = 0;
  int rc = send_bytes(&local, buf, count, type, kind == DROPIN_SEND_BUFFERED, func, &data, &bytes);
  if (rc != MPI_SUCCESS) {
    free(local.owned);
    return rc;
  }
  gmpi_request_t gr = NULL;
  gmpi_status_t st = kind == DROPIN_SEND_SYNC
                         ? gmpi_issend(data, bytes, GMPI_BYTE, to_gmpi_rank(dest), tag, g, &gr)
                         : gmpi_isend(data, bytes, GMPI_BYTE, to_gmpi_rank(dest), tag, g, &gr);
  if (st != GMPI_SUCCESS) {
    free(local.owned);
    return dropin_fail(comm, func, st);
  }
  dropin_req_t *r = NULL;
  MPI_Request h = MPI_REQUEST_NULL;
  if ((rc = dropin_req_wrap(comm, gr, &r, &h)) != MPI_SUCCESS) {
    free(local.owned);
    return rc;
  }
  r->owned = local.owned;
  if (kind != DROPIN_SEND_BUFFERED) {
    *request = h;
    return MPI_SUCCESS;
  }
  /* Buffered: the program's request is complete at once (the data is copied); gmpi's send
   * finishes on its own, driven by later calls and MPI_Finalize. */
  rc = dropin_request_free(&h);
  return rc == MPI_SUCCESS && request ? dropin_req_done(comm, request) : rc;
}

static int post_recv(gmpi_comm_t g, MPI_Comm comm, void *buf, int count, MPI_Datatype type,
                     int source, int tag, const char *func, MPI_Request *request) {
  dropin_req_t local = {.comm = comm};
  void *data = NULL;
  size_t bytes = 0;
  int rc = recv_bytes(&local, buf, count, type, func, &data, &bytes);
  if (rc != MPI_SUCCESS) {
    free(local.owned);
    return rc;
  }
  gmpi_request_t gr = NULL;
  gmpi_status_t st =
      gmpi_irecv(data, bytes, GMPI_BYTE, to_gmpi_rank(source), to_gmpi_tag(tag), g, &gr);
  if (st != GMPI_SUCCESS) {
    free(local.owned);
    return dropin_fail(comm, func, st);
  }
  dropin_req_t *r = NULL;
  if ((rc = dropin_req_wrap(comm, gr, &r, request)) != MPI_SUCCESS) {
    free(local.owned);
    return rc;
  }
  r->is_recv = 1;
  r->owned = local.owned; /* a packed receive: unpacked by r->after */
  r->after = local.after;
  r->user = local.user;
  r->user_count = local.user_count;
  r->user_type = local.user_type;
  /* the program may free its type before the receive completes (MPI allows it; MPICH's
   * dtype_send): the unpacking uses the layer's own reference */
  if (r->after && PMPI_Type_dup(local.user_type, &r->user_type) == MPI_SUCCESS) r->type_owned = 1;
  return MPI_SUCCESS;
}

/* ---- blocking calls through gmpi ------------------------------------------------------------ */

/* A blocking call's packed copy, freed once gmpi is done with it. After GMPI_ERR_TIMEOUT MPI
 * may still read or write it (docs/reliability.md: what a timeout gives up keeps its buffers),
 * so it is kept: a failed comm's small leak, never MPI touching freed memory. */
static void free_owned(void *owned, gmpi_status_t st) {
  if (st != GMPI_ERR_TIMEOUT) free(owned);
}

/* gmpi's blocking send of bytes bytes at data; an MPI code. */
static int send_data(gmpi_comm_t g, MPI_Comm comm, const void *data, size_t bytes, int dest,
                     int tag, dropin_send_kind_t kind, const char *func, gmpi_status_t *st) {
  *st = kind == DROPIN_SEND_SYNC ? gmpi_ssend(data, bytes, GMPI_BYTE, to_gmpi_rank(dest), tag, g)
                                 : gmpi_send(data, bytes, GMPI_BYTE, to_gmpi_rank(dest), tag, g);
  return *st == GMPI_SUCCESS ? MPI_SUCCESS : dropin_fail(comm, func, *st);
}

/* A derived type's blocking send: packed into a copy of the layer's, then sent. Its
 * dropin_req_t, as gmpi_recv_blocking's, holds what send_packed and recv_bytes set, nothing
 * else: not zeroed whole (it is large). */
static int send_blocking_packed(gmpi_comm_t g, MPI_Comm comm, const void *buf, int count,
                                MPI_Datatype type, int dest, int tag, dropin_send_kind_t kind,
                                const char *func) {
  dropin_req_t local;
  local.comm = comm;
  local.owned = NULL;
  const void *data = NULL;
  size_t bytes = 0;
  gmpi_status_t st = GMPI_SUCCESS;
  int rc = send_packed(&local, buf, count, type, func, &data, &bytes);
  if (rc == MPI_SUCCESS) rc = send_data(g, comm, data, bytes, dest, tag, kind, func, &st);
  free_owned(local.owned, st);
  return rc;
}

/* A contiguous type's bytes go where they lie, with nothing to own or free: the sender's
 * latency. */
static int gmpi_send_blocking(gmpi_comm_t g, MPI_Comm comm, const void *buf, int count,
                              MPI_Datatype type, int dest, int tag, dropin_send_kind_t kind,
                              const char *func) {
  size_t size = 0;
  int rc = contiguous_size(comm, func, count, type, &size);
  if (rc != MPI_SUCCESS) return rc;
  if (!size) return send_blocking_packed(g, comm, buf, count, type, dest, tag, kind, func);
  gmpi_status_t st;
  return send_data(g, comm, buf, (size_t)count * size, dest, tag, kind, func, &st);
}

/* A blocking receive's end (gmpi's st, its status gs): the bytes unpacked where a derived type
 * asks, the program's status filled -- also on a truncation, as MPI's: which message
 * overflowed (its source and tag; count 0, nothing unpacked); an MPI code. */
static int recv_finished(dropin_req_t *in, gmpi_status_t st, const gmpi_msg_status_t *gs,
                         MPI_Status *status, const char *func) {
  if (st == GMPI_ERR_TRUNCATE) fill_status(status, gs); /* before the error handler, as MPI */
  if (st != GMPI_SUCCESS) return dropin_fail(in->comm, func, st);
  in->bytes = gs->count;
  int rc = in->after ? in->after(in) : MPI_SUCCESS;
  if (rc == MPI_SUCCESS) fill_status(status, gs);
  return rc;
}

static int gmpi_recv_blocking(gmpi_comm_t g, MPI_Comm comm, void *buf, int count, MPI_Datatype type,
                              int source, int tag, MPI_Status *status, const char *func) {
  dropin_req_t local;
  local.comm = comm;
  local.owned = NULL;
  local.after = NULL;
  void *data = NULL;
  size_t bytes = 0;
  gmpi_status_t st = GMPI_SUCCESS;
  int rc = recv_bytes(&local, buf, count, type, func, &data, &bytes);
  if (rc == MPI_SUCCESS) {
    gmpi_msg_status_t gs = {0};
    /* no status asked for: gmpi need not ask MPI the message's length */
    gmpi_msg_status_t *want = status == MPI_STATUS_IGNORE && !local.after ? NULL : &gs;
    st = gmpi_recv(data, bytes, GMPI_BYTE, to_gmpi_rank(source), to_gmpi_tag(tag), g, want);
    rc = recv_finished(&local, st, &gs, status, func);
  }
  if (local.owned) free_owned(local.owned, st); /* a receiver's latency: most own nothing */
  return rc;
}

/* ---- comms without a twin: MPI, device buffers staged (blocking calls only) ---------------- */

static int staged_send(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                       MPI_Comm comm, const char *func) {
  dropin_stage_t s;
  void *src = (void *)buf;
  int rc = dropin_stage_in(&s, comm, &src, count, type);
  if (rc != MPI_SUCCESS) return rc;
  dropin_note_staged(func, "a communicator gmpi has no twin of (an intercommunicator)");
  rc = PMPI_Send(src, count, type, dest, tag, comm);
  dropin_stage_out(&s, 0);
  return rc;
}

static int staged_recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                       MPI_Status *status, const char *func) {
  dropin_stage_t s;
  void *dst = buf;
  int rc = dropin_stage_in(&s, comm, &dst, count, type);
  if (rc != MPI_SUCCESS) return rc;
  dropin_note_staged(func, "a communicator gmpi has no twin of (an intercommunicator)");
  rc = PMPI_Recv(dst, count, type, source, tag, comm, status);
  int out = dropin_stage_out(&s, rc == MPI_SUCCESS);
  return rc != MPI_SUCCESS ? rc : out;
}

static int staged_sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                           int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                           int source, int recvtag, MPI_Comm comm, MPI_Status *status) {
  dropin_stage_t in, out;
  void *src = (void *)sendbuf, *dst = recvbuf;
  int rc = dropin_stage_in(&in, comm, &src, sendcount, sendtype);
  if (rc == MPI_SUCCESS) rc = dropin_stage_in(&out, comm, &dst, recvcount, recvtype);
  if (rc != MPI_SUCCESS) {
    dropin_stage_out(&in, 0);
    return rc;
  }
  if (in.host || out.host)
    dropin_note_staged("MPI_Sendrecv", "a communicator gmpi has no twin of (an intercommunicator)");
  rc = PMPI_Sendrecv(src, sendcount, sendtype, dest, sendtag, dst, recvcount, recvtype, source,
                     recvtag, comm, status);
  dropin_stage_out(&in, 0);
  int back = dropin_stage_out(&out, rc == MPI_SUCCESS);
  return rc != MPI_SUCCESS ? rc : back;
}

static int untwinned_device(const void *buf) { return dropin.active && dropin_is_device(buf); }

static int refuse_untwinned(MPI_Comm comm, const char *func) {
  fprintf(stderr,
          "[gmpi_mpi] %s: a device buffer on a communicator gmpi has no twin of (an "
          "intercommunicator): only blocking calls are staged there\n",
          func);
  PMPI_Comm_call_errhandler(comm, MPI_ERR_BUFFER);
  return MPI_ERR_BUFFER;
}

/* ---- the MPI functions -------------------------------------------------------------------- */

static int send_any(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                    dropin_send_kind_t kind, const char *func,
                    int (*pmpi)(const void *, int, MPI_Datatype, int, int, MPI_Comm)) {
  gmpi_comm_t g = dropin_take_p2p(comm, buf);
  if (g) return gmpi_send_blocking(g, comm, buf, count, type, dest, tag, kind, func);
  if (untwinned_device(buf)) return staged_send(buf, count, type, dest, tag, comm, func);
  if (dropin_quiet()) return pmpi(buf, count, type, dest, tag, comm);
  /* gmpi requests are live: blocked in MPI this rank would not drive them, and a peer may wait
   * on them before it receives this message (MPI's progress rule; found on the H200 under
   * per-kind matching). */
  MPI_Request q;
  int rc = kind == DROPIN_SEND_SYNC ? PMPI_Issend(buf, count, type, dest, tag, comm, &q)
                                    : PMPI_Isend(buf, count, type, dest, tag, comm, &q);
  return dropin_polled(rc, &q);
}

/* The blocking point-to-point calls' first test, before anything is looked up, as the
 * collectives' (dropin_coll_fast): comm is the one asked last and has a twin that takes every
 * message (matching across kinds, or GMPI_INTERPOSE=all), and type is a predefined type the
 * memo holds (dropin_memo_type). Returns its row, or NULL: the generic path (send_any,
 * gmpi_recv_blocking), which does the same for these calls with a dozen more steps and two more
 * frames (about 30 instructions a send and 70 a receive: callgrind, 2026-12-07). */
static inline const dropin_type_row_t *p2p_fast(MPI_Comm comm, MPI_Datatype type, int count) {
  if (!dropin.active || comm != dropin.last_comm || !dropin.last_twin || dropin_per_kind() ||
      count < 0)
    return NULL;
  return dropin_memo_type(type);
}

/* A nonblocking message posted on the wire: MPI's request is the program's now. */
static int on_wire(MPI_Comm comm, int rc) {
  dropin.wire_posted = 1;
  return dropin_raised(comm, rc);
}

/* A blocking message on the wire, as MPI's own blocking call inside gmpi's watch
 * (dropin_wire_watch), when no request of gmpi's is live (blocked in MPI, this rank would not
 * drive it); else 0, and the call goes through gmpi. What a message through gmpi adds to MPI's
 * own call (its checks, flight record, route, the engine's exchange: a few hundred
 * instructions) was a fifth of a small message's latency (docs/performance.md). */
static int wire_watched(const char *what, int count, int source, int recv_tag, int dest,
                        int send_tag) {
  return dropin_quiet() && dropin_wire_watch(what, count, source, recv_tag, dest, send_tag);
}

/* The generic paths of MPI_Send and MPI_Recv: out of line with the MPI function's parameters,
 * so that the function ends in a jump to them (DROPIN_COLL_GENERIC, dropin_coll.h). */
static __attribute__((noinline)) int send_generic(const void *buf, int count, MPI_Datatype type,
                                                  int dest, int tag, MPI_Comm comm) {
  return send_any(buf, count, type, dest, tag, comm, DROPIN_SEND_STANDARD, "MPI_Send", PMPI_Send);
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  const dropin_type_row_t *row = p2p_fast(comm, type, count);
  if (!row) return send_generic(buf, count, type, dest, tag, comm);
  MPI_Comm wire = dropin_wire(comm, buf, dest);
  if (wire != MPI_COMM_NULL && wire_watched("MPI_Send", count, -1, -1, dest, tag))
    return dropin_wire_done(comm, PMPI_Send(buf, count, type, dest, tag, wire));
  gmpi_status_t st = gmpi_send(buf, (size_t)count * row->size, GMPI_BYTE, to_gmpi_rank(dest), tag,
                               dropin.last_twin);
  return st == GMPI_SUCCESS ? MPI_SUCCESS : dropin_fail(comm, "MPI_Send", st);
}

/* Synchronous sends complete once matched (gmpi_ssend: never eager); a ready send is a standard
 * send (MPI allows it: the receive is posted already). */
int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  return send_any(buf, count, type, dest, tag, comm, DROPIN_SEND_SYNC, "MPI_Ssend", PMPI_Ssend);
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  return send_any(buf, count, type, dest, tag, comm, DROPIN_SEND_STANDARD, "MPI_Rsend", PMPI_Rsend);
}

/* A buffered send copies the message to host memory and completes at once; gmpi sends the
 * copy (the attached buffer is not used). */
int MPI_Bsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  gmpi_comm_t g = dropin_take_p2p(comm, buf);
  if (g) {
    if (dropin_is_device(buf)) dropin_note_staged("MPI_Bsend", "a buffered send (host copy)");
    return post_send(g, comm, buf, count, type, dest, tag, DROPIN_SEND_BUFFERED, "MPI_Bsend", NULL);
  }
  if (untwinned_device(buf)) return staged_send(buf, count, type, dest, tag, comm, "MPI_Bsend");
  return PMPI_Bsend(buf, count, type, dest, tag, comm);
}

int MPI_Ibsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request *request) {
  gmpi_comm_t g = dropin_take_p2p(comm, buf);
  if (g)
    return post_send(g, comm, buf, count, type, dest, tag, DROPIN_SEND_BUFFERED, "MPI_Ibsend",
                     request);
  if (untwinned_device(buf)) return refuse_untwinned(comm, "MPI_Ibsend");
  return PMPI_Ibsend(buf, count, type, dest, tag, comm, request);
}

/* ---- matched probes: the probed message received at once, held for MPI_Mrecv -------------- */

/* A matched probe takes its message out of matching. On a comm whose messages go through gmpi
 * the probe finds it in gmpi's engine and the layer receives it right away into memory of its
 * own: a receive from the probed source with the probed tag gets that very message (the
 * earliest one of that pair waiting unmatched, MPI's order; nothing runs between the two calls,
 * the layer grants at most MPI_THREAD_SERIALIZED). MPI_Mrecv/Imrecv then lay it out in the
 * program's buffer. The program's MPI_Message is the address of the held message. */
typedef struct held_msg {
  char *data;   /* the message's bytes */
  size_t bytes; /* its length */
  int source, tag;
  MPI_Comm comm;
  struct held_msg *next;
} held_msg_t;
static held_msg_t *held;

_Static_assert(sizeof(MPI_Message) == sizeof(held_msg_t *),
               "matched probes hand out the held message's address as the MPI_Message");

static MPI_Message handle_of(held_msg_t *m) {
  MPI_Message h;
  memcpy(&h, &m, sizeof(h));
  return h;
}

/* The held message behind h, unlinked (NULL: not the layer's, MPI's own message). */
static held_msg_t *take_held(MPI_Message h) {
  for (held_msg_t **p = &held; *p; p = &(*p)->next)
    if (handle_of(*p) == h) {
      held_msg_t *m = *p;
      *p = m->next;
      return m;
    }
  return NULL;
}

/* Receive the message a probe found (gs) into a held message and hand out its handle. */
static int hold_probed(gmpi_comm_t g, MPI_Comm comm, const gmpi_msg_status_t *gs,
                       MPI_Message *message, MPI_Status *status, const char *func) {
  held_msg_t *m = calloc(1, sizeof(*m));
  if (!m || !(m->data = malloc(gs->count ? gs->count : 1))) {
    free(m);
    PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM);
    return MPI_ERR_NO_MEM;
  }
  gmpi_msg_status_t got = {0};
  gmpi_status_t st = gmpi_recv(m->data, gs->count, GMPI_BYTE, gs->source, gs->tag, g, &got);
  if (st != GMPI_SUCCESS) {
    free(m->data);
    free(m);
    return dropin_fail(comm, func, st);
  }
  m->bytes = got.count;
  m->source = got.source;
  m->tag = got.tag;
  m->comm = comm;
  m->next = held;
  held = m;
  *message = handle_of(m);
  fill_status(status, &got);
  return MPI_SUCCESS;
}

/* The held message laid out as count elements of type at buf; *status as MPI_Mrecv's (a message
 * longer than the buffer: MPI_ERR_TRUNCATE, nothing written). *reported: the error was given to
 * the comm's error handler already (by the check or MPI call that found it), so the caller must
 * not give it again; a bad count and a truncation are left to the caller. */
static int deliver_held(held_msg_t *m, const char *func, void *buf, int count, MPI_Datatype type,
                        MPI_Status *status, int *reported) {
  size_t size = 0;
  int rc = MPI_SUCCESS;
  size_t room = 0;
  *reported = 0;
  if (count < 0) {
    rc = MPI_ERR_COUNT;
  } else if ((rc = usable_type(m->comm, func, type)) != MPI_SUCCESS) {
    *reported = 1; /* refused, nothing written */
  } else if (dropin_contiguous(type, &size)) {
    room = (size_t)count * size;
    if (m->bytes <= room && m->bytes) {
      gmpi_status_t st = gmpi_mem_copy(dropin_copier(m->comm), buf, m->data, m->bytes);
      if (st != GMPI_SUCCESS) rc = dropin_fail(m->comm, func, st);
    }
    *reported = rc != MPI_SUCCESS;
  } else {
    int packed = 0;
    rc = PMPI_Pack_size(count, type, m->comm, &packed);
    room = (size_t)packed;
    if (rc == MPI_SUCCESS && m->bytes <= room) {
      dropin_req_t r = {.comm = m->comm,
                        .owned = m->data,
                        .bytes = m->bytes,
                        .user = buf,
                        .user_count = count,
                        .user_type = type};
      rc = unpack_received(&r);
    }
    *reported = rc != MPI_SUCCESS; /* MPI's calls and the staging report their own errors */
  }
  if (rc == MPI_SUCCESS && m->bytes > room) rc = MPI_ERR_TRUNCATE; /* nothing written */
  /* a truncation's status names the message, count 0, as every receive's (core/request.h) */
  gmpi_msg_status_t gs = {.source = m->source, .tag = m->tag, .count = rc ? 0 : m->bytes};
  if (rc == MPI_SUCCESS || rc == MPI_ERR_TRUNCATE) fill_status(status, &gs);
  return rc;
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status) {
  gmpi_comm_t g = dropin_take_p2p(comm, NULL);
  if (!g || source == MPI_PROC_NULL) return PMPI_Mprobe(source, tag, comm, message, status);
  gmpi_msg_status_t gs = {0};
  gmpi_status_t st = gmpi_probe(to_gmpi_rank(source), to_gmpi_tag(tag), g, &gs);
  if (st != GMPI_SUCCESS) return dropin_fail(comm, "MPI_Mprobe", st);
  return hold_probed(g, comm, &gs, message, status, "MPI_Mprobe");
}

int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                MPI_Status *status) {
  gmpi_comm_t g = dropin_take_p2p(comm, NULL);
  if (!g || source == MPI_PROC_NULL) return PMPI_Improbe(source, tag, comm, flag, message, status);
  gmpi_msg_status_t gs = {0};
  gmpi_status_t st = gmpi_iprobe(to_gmpi_rank(source), to_gmpi_tag(tag), g, flag, &gs);
  if (st != GMPI_SUCCESS) return dropin_fail(comm, "MPI_Improbe", st);
  if (!*flag) return MPI_SUCCESS;
  return hold_probed(g, comm, &gs, message, status, "MPI_Improbe");
}

int MPI_Mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Status *status) {
  held_msg_t *m = message ? take_held(*message) : NULL;
  if (!m) return PMPI_Mrecv(buf, count, type, message, status);
  int reported = 0;
  int rc = deliver_held(m, "MPI_Mrecv", buf, count, type, status, &reported);
  *message = MPI_MESSAGE_NULL;
  if (rc != MPI_SUCCESS && !reported) PMPI_Comm_call_errhandler(m->comm, rc);
  free(m->data);
  free(m);
  return rc;
}

/* The message is in already: the request is complete when it is returned, its status (and a
 * truncation) reported by the wait, as MPI's. */
int MPI_Imrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message,
               MPI_Request *request) {
  held_msg_t *m = message ? take_held(*message) : NULL;
  if (!m) return PMPI_Imrecv(buf, count, type, message, request);
  gmpi_msg_status_t gs = {.source = m->source, .tag = m->tag, .count = m->bytes};
  int reported = 0;
  int error = deliver_held(m, "MPI_Imrecv", buf, count, type, MPI_STATUS_IGNORE, &reported);
  *message = MPI_MESSAGE_NULL;
  MPI_Comm comm = m->comm;
  free(m->data);
  free(m);
  if (error == MPI_ERR_COUNT) { /* an argument: this call's error, as MPI's own check says */
    PMPI_Comm_call_errhandler(comm, error);
    reported = 1;
  }
  if (reported) { /* this call's own error, handled already: no request to wait for */
    *request = MPI_REQUEST_NULL;
    return error;
  }
  return dropin_req_done_status(comm, gs.source, gs.tag, error ? 0 : gs.count, error, request);
}

/* A fast receive's end (recv_fast, sendrecv_fast): the program's status filled -- on a
 * truncation too, before the error handler, as recv_finished does -- and st as an MPI code. */
static int fast_recv_done(MPI_Comm comm, const char *func, gmpi_status_t st,
                          const gmpi_msg_status_t *gs, MPI_Status *status) {
  if (st == GMPI_SUCCESS || st == GMPI_ERR_TRUNCATE) fill_status(status, gs);
  return st == GMPI_SUCCESS ? MPI_SUCCESS : dropin_fail(comm, func, st);
}

/* MPI_Recv's fast path (p2p_fast): a frame of its own, since its status is a local whose address
 * gmpi_recv receives, which would keep MPI_Recv from ending in a jump to either path. */
static __attribute__((noinline)) int recv_fast(void *buf, int count, const dropin_type_row_t *row,
                                               int source, int tag, MPI_Comm comm,
                                               MPI_Status *status) {
  gmpi_msg_status_t gs = {0};
  gmpi_status_t st =
      gmpi_recv(buf, (size_t)count * row->size, GMPI_BYTE, to_gmpi_rank(source), to_gmpi_tag(tag),
                dropin.last_twin, status == MPI_STATUS_IGNORE ? NULL : &gs);
  return fast_recv_done(comm, "MPI_Recv", st, &gs, status);
}

static __attribute__((noinline)) int recv_generic(void *buf, int count, MPI_Datatype type,
                                                  int source, int tag, MPI_Comm comm,
                                                  MPI_Status *status);

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status *status) {
  const dropin_type_row_t *row = p2p_fast(comm, type, count);
  MPI_Comm wire = row ? dropin_wire(comm, buf, source) : MPI_COMM_NULL;
  if (wire != MPI_COMM_NULL && wire_watched("MPI_Recv", count, source, tag, -1, -1))
    return dropin_wire_done(comm, PMPI_Recv(buf, count, type, source, tag, wire, status));
  if (row) return recv_fast(buf, count, row, source, tag, comm, status);
  return recv_generic(buf, count, type, source, tag, comm, status);
}

static int recv_generic(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                        MPI_Status *status) {
  gmpi_comm_t g = dropin_take_p2p(comm, buf);
  if (g) return gmpi_recv_blocking(g, comm, buf, count, type, source, tag, status, "MPI_Recv");
  if (untwinned_device(buf))
    return staged_recv(buf, count, type, source, tag, comm, status, "MPI_Recv");
  if (dropin_quiet()) return PMPI_Recv(buf, count, type, source, tag, comm, status);
  MPI_Request q; /* polled while gmpi requests are live, as send_any's */
  return dropin_polled_status(PMPI_Irecv(buf, count, type, source, tag, comm, &q), &q, status);
}

static int isend_any(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                     MPI_Comm comm, MPI_Request *request, dropin_send_kind_t kind, const char *func,
                     int (*pmpi)(const void *, int, MPI_Datatype, int, int, MPI_Comm,
                                 MPI_Request *)) {
  gmpi_comm_t g = dropin_take_p2p(comm, buf);
  MPI_Comm wire = g && kind != DROPIN_SEND_BUFFERED ? dropin_wire(comm, buf, dest) : MPI_COMM_NULL;
  if (wire != MPI_COMM_NULL && dropin_memo_type(type))
    return on_wire(comm, pmpi(buf, count, type, dest, tag, wire, request));
  if (g) return post_send(g, comm, buf, count, type, dest, tag, kind, func, request);
  if (untwinned_device(buf)) return refuse_untwinned(comm, func);
  return pmpi(buf, count, type, dest, tag, comm, request);
}

int dropin_isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                 int kind, MPI_Request *request) {
  gmpi_comm_t g = dropin_take_p2p(comm, buf);
  if (!g) return MPI_ERR_COMM; /* persistent handles are made only where a twin takes them */
  return post_send(g, comm, buf, count, type, dest, tag, (dropin_send_kind_t)kind,
                   "MPI_Start (a persistent send)", request);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request *request) {
  return isend_any(buf, count, type, dest, tag, comm, request, DROPIN_SEND_STANDARD, "MPI_Isend",
                   PMPI_Isend);
}

int MPI_Issend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request *request) {
  return isend_any(buf, count, type, dest, tag, comm, request, DROPIN_SEND_SYNC, "MPI_Issend",
                   PMPI_Issend);
}

int MPI_Irsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request *request) {
  return isend_any(buf, count, type, dest, tag, comm, request, DROPIN_SEND_STANDARD, "MPI_Irsend",
                   PMPI_Irsend);
}

int dropin_irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                 MPI_Request *request, const char *func) {
  gmpi_comm_t g = dropin_take_p2p(comm, buf);
  MPI_Comm wire = g ? dropin_wire(comm, buf, source) : MPI_COMM_NULL;
  if (wire != MPI_COMM_NULL && dropin_memo_type(type))
    return on_wire(comm, PMPI_Irecv(buf, count, type, source, tag, wire, request));
  if (g) return post_recv(g, comm, buf, count, type, source, tag, func, request);
  if (untwinned_device(buf)) return refuse_untwinned(comm, func);
  return PMPI_Irecv(buf, count, type, source, tag, comm, request);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request *request) {
  return dropin_irecv(buf, count, type, source, tag, comm, request, "MPI_Irecv");
}

/* Both messages through gmpi in one call (gmpi_sendrecv: no request where its engine exchanges
 * at once), each as bytes -- a contiguous type where it lies, any other packed, and unpacked
 * once the message is in -- as gmpi_send_blocking and gmpi_recv_blocking move them. */
static int gmpi_sendrecv_blocking(gmpi_comm_t g, MPI_Comm comm, const void *sendbuf, int sendcount,
                                  MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
                                  int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                                  MPI_Status *status, const char *func) {
  dropin_req_t out, in; /* what send_bytes and recv_bytes set, nothing else (they are large) */
  out.comm = in.comm = comm;
  out.owned = in.owned = NULL;
  in.after = NULL;
  const void *sent = NULL;
  void *landing = NULL;
  size_t send_len = 0, recv_len = 0;
  gmpi_status_t st = GMPI_SUCCESS;
  int rc = send_bytes(&out, sendbuf, sendcount, sendtype, 0, func, &sent, &send_len);
  if (rc == MPI_SUCCESS)
    rc = recv_bytes(&in, recvbuf, recvcount, recvtype, func, &landing, &recv_len);
  if (rc == MPI_SUCCESS) {
    gmpi_msg_status_t gs = {0};
    gmpi_msg_status_t *want = status == MPI_STATUS_IGNORE && !in.after ? NULL : &gs;
    st = gmpi_sendrecv(sent, send_len, GMPI_BYTE, to_gmpi_rank(dest), sendtag, landing, recv_len,
                       GMPI_BYTE, to_gmpi_rank(source), to_gmpi_tag(recvtag), g, want);
    rc = recv_finished(&in, st, &gs, status, func);
  }
  free_owned(out.owned, st);
  free_owned(in.owned, st);
  return rc;
}

/* The two messages routed apart (per-kind matching: one in gmpi, one in MPI, or both in MPI
 * while gmpi requests are live): a receive and a send, completed together. */
static int sendrecv_requests(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                             int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                             int source, int recvtag, MPI_Comm comm, MPI_Status *status,
                             const char *func) {
  MPI_Request req[2];
  int rc = dropin_irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &req[0], func);
  if (rc != MPI_SUCCESS) return rc;
  rc = isend_any(sendbuf, sendcount, sendtype, dest, sendtag, comm, &req[1], DROPIN_SEND_STANDARD,
                 func, PMPI_Isend);
  if (rc != MPI_SUCCESS) {
    /* The call fails: its receive must not stay posted, or it would take a later message into
     * a buffer the program owns again. Taken back when no message matched it yet (what Open
     * MPI's argument checks give: nothing received); one that did match completes here. */
    dropin_cancel(&req[0]);
    dropin_wait(&req[0], MPI_STATUS_IGNORE);
    return rc;
  }
  MPI_Status st[2];
  rc = dropin_waitall(2, req, st);
  /* st is written on success and per request on MPI_ERR_IN_STATUS; MPI_ERROR stays: MPI_Sendrecv
   * does not set it */
  if (status != MPI_STATUS_IGNORE && (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS)) {
    int error = status->MPI_ERROR;
    *status = st[0];
    status->MPI_ERROR = error;
  }
  if (rc != MPI_ERR_IN_STATUS) return rc;
  return st[0].MPI_ERROR != MPI_SUCCESS ? st[0].MPI_ERROR : st[1].MPI_ERROR;
}

/* Each message routed by its own buffer: one gmpi call when both take the same twin. */
static int sendrecv_any(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                        int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                        int source, int recvtag, MPI_Comm comm, MPI_Status *status,
                        const char *func) {
  if (!dropin.active)
    return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                         source, recvtag, comm, status);
  gmpi_comm_t g = dropin_take_p2p(comm, sendbuf);
  if (g && g == dropin_take_p2p(comm, recvbuf))
    return gmpi_sendrecv_blocking(g, comm, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf,
                                  recvcount, recvtype, source, recvtag, status, func);
  if (!dropin_twin(comm))
    return staged_sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                           recvtype, source, recvtag, comm, status);
  return sendrecv_requests(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                           recvtype, source, recvtag, comm, status, func);
}

/* MPI_Sendrecv's paths, each with its parameters, so that it ends in a jump to either: the fast
 * one (both types in the memo, p2p_fast) straight to gmpi_sendrecv, its status filled here, and
 * the generic one. */
static __attribute__((noinline)) int sendrecv_fast(const void *sendbuf, int sendcount,
                                                   MPI_Datatype sendtype, int dest, int sendtag,
                                                   void *recvbuf, int recvcount,
                                                   MPI_Datatype recvtype, int source, int recvtag,
                                                   MPI_Comm comm, MPI_Status *status) {
  MPI_Comm wire = dropin_wire(comm, sendbuf, dest);
  if (wire != MPI_COMM_NULL && dropin_wire(comm, recvbuf, source) == wire &&
      wire_watched("MPI_Sendrecv", recvcount, source, recvtag, dest, sendtag))
    return dropin_wire_done(comm,
                            PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf,
                                          recvcount, recvtype, source, recvtag, wire, status));
  size_t send_len = (size_t)sendcount * dropin_memo_type(sendtype)->size;
  size_t recv_len = (size_t)recvcount * dropin_memo_type(recvtype)->size;
  gmpi_msg_status_t gs = {0};
  gmpi_status_t st =
      gmpi_sendrecv(sendbuf, send_len, GMPI_BYTE, to_gmpi_rank(dest), sendtag, recvbuf, recv_len,
                    GMPI_BYTE, to_gmpi_rank(source), to_gmpi_tag(recvtag), dropin.last_twin,
                    status == MPI_STATUS_IGNORE ? NULL : &gs);
  return fast_recv_done(comm, "MPI_Sendrecv", st, &gs, status);
}

static __attribute__((noinline)) int
sendrecv_generic(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status *status) {
  return sendrecv_any(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                      source, recvtag, comm, status, "MPI_Sendrecv");
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status *status) {
  if (p2p_fast(comm, sendtype, sendcount) && recvcount >= 0 && dropin_memo_type(recvtype))
    return sendrecv_fast(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                         source, recvtag, comm, status);
  return sendrecv_generic(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                          source, recvtag, comm, status);
}

/* The message lands in a host copy first: the send reads buf until it completes. */
int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int sendtag, int source,
                         int recvtag, MPI_Comm comm, MPI_Status *status) {
  gmpi_comm_t g = dropin_take_p2p(comm, buf);
  if (!g) {
    if (untwinned_device(buf)) return refuse_untwinned(comm, "MPI_Sendrecv_replace");
    return PMPI_Sendrecv_replace(buf, count, type, dest, sendtag, source, recvtag, comm, status);
  }
  MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
  PMPI_Type_get_extent(type, &lb, &extent);
  PMPI_Type_get_true_extent(type, &tlb, &textent);
  size_t span = count > 0 ? (size_t)((count - 1) * extent + textent) : 0;
  /* The copy is memory of buf's kind (so per-kind matching routes it alike) and starts as buf
   * (the holes of a derived type come back as they were). */
  int device = dropin_is_device(buf);
  char *copy = NULL;
  gmpi_status_t s = device ? gmpi_mem_alloc(g, span ? span : 1, (void **)&copy)
                           : ((copy = malloc(span ? span : 1)) ? GMPI_SUCCESS : GMPI_ERR_NO_MEMORY);
  if (s == GMPI_SUCCESS && span) s = gmpi_mem_copy(g, copy, (char *)buf + tlb, span);
  int rc = s == GMPI_SUCCESS ? MPI_SUCCESS : dropin_fail(comm, "MPI_Sendrecv_replace", s);
  if (rc == MPI_SUCCESS) /* status filled in place: its MPI_ERROR stays the program's */
    rc = sendrecv_any(buf, count, type, dest, sendtag, copy - tlb, count, type, source, recvtag,
                      comm, status, "MPI_Sendrecv_replace");
  if (rc == MPI_SUCCESS && span) {
    s = gmpi_mem_copy(g, (char *)buf + tlb, copy, span);
    if (s != GMPI_SUCCESS) rc = dropin_fail(comm, "MPI_Sendrecv_replace", s);
  }
  if (device && copy) gmpi_mem_free(g, copy);
  if (!device) free(copy);
  return rc;
}

/* Under per-kind matching a message may be in either engine: gmpi's (device buffers) or MPI's
 * (host). One look at each, gmpi first; the blocking form polls both within GMPI_TIMEOUT
 * (found on the H200: probing MPI alone blocked forever on a device message). */
static int probe_either(gmpi_comm_t g, int source, int tag, MPI_Comm comm, int wait, int *flag,
                        MPI_Status *status, const char *func) {
  double start = dropin_now();
  for (;;) {
    gmpi_msg_status_t gs = {0};
    gmpi_status_t st = gmpi_iprobe(to_gmpi_rank(source), to_gmpi_tag(tag), g, flag, &gs);
    if (st != GMPI_SUCCESS) return dropin_fail(comm, func, st);
    if (*flag) {
      fill_status(status, &gs);
      return MPI_SUCCESS;
    }
    int rc = PMPI_Iprobe(source, tag, comm, flag, status);
    if (rc != MPI_SUCCESS || *flag || !wait) return rc;
    if (dropin_timed_out(start)) {
      fprintf(stderr, "[gmpi_mpi] %s: no message arrived within GMPI_TIMEOUT = %g s\n", func,
              dropin.timeout_s);
      PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
      return MPI_ERR_OTHER;
    }
  }
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status) {
  int either = 0, flag = 0;
  gmpi_comm_t g = dropin_take_probe(comm, &either);
  if (!g) return PMPI_Probe(source, tag, comm, status);
  if (either) return probe_either(g, source, tag, comm, 1, &flag, status, "MPI_Probe");
  gmpi_msg_status_t gs = {0};
  gmpi_status_t st = gmpi_probe(to_gmpi_rank(source), to_gmpi_tag(tag), g, &gs);
  if (st != GMPI_SUCCESS) return dropin_fail(comm, "MPI_Probe", st);
  fill_status(status, &gs); /* count: bytes (messages move as GMPI_BYTE) */
  return MPI_SUCCESS;
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status) {
  int either = 0;
  gmpi_comm_t g = dropin_take_probe(comm, &either);
  if (!g) return PMPI_Iprobe(source, tag, comm, flag, status);
  if (either) return probe_either(g, source, tag, comm, 0, flag, status, "MPI_Iprobe");
  gmpi_msg_status_t gs = {0};
  gmpi_status_t st = gmpi_iprobe(to_gmpi_rank(source), to_gmpi_tag(tag), g, flag, &gs);
  if (st != GMPI_SUCCESS) return dropin_fail(comm, "MPI_Iprobe", st);
  if (*flag) fill_status(status, &gs);
  return MPI_SUCCESS;
}
