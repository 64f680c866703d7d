/* SPDX-License-Identifier: BSD-3-Clause */
/* The one place a collective's route is chosen and taken (dropin_coll.h): gmpi (device
 * buffers, or every buffer under GMPI_INTERPOSE=all, with types and ops gmpi has), MPI on host
 * copies of device buffers (derived types in reductions, user-defined ops, MINLOC/MAXLOC, comms
 * without a twin, calls gmpi lacks), or MPI as it is. MPI_IN_PLACE becomes gmpi's in-place form
 * (sendbuf == recvbuf). The barriers are here too: they have no buffers to describe. */
#include <stdio.h>
#include <stdlib.h>

#include "dropin_coll.h"

/* Bytes per element of a contiguous type (0: not contiguous, gmpi cannot move it as bytes). */
static size_t bytes_of(MPI_Datatype type) {
  size_t size = 0;
  return dropin_contiguous(type, &size) ? size : 0;
}

/* Why a call on device memory is staged, for GMPI_DEBUG=info. */
static const char *why_staged(MPI_Comm comm, MPI_Datatype type, MPI_Op op) {
  gmpi_dtype_t d;
  gmpi_op_t o;
  if (!dropin_twin(comm)) return "a communicator gmpi has no twin of";
  if (!dropin_dtype(type, &d) && !bytes_of(type)) return "a derived or unmapped datatype";
  if (op != MPI_OP_NULL && !dropin_op(op, &o))
    return "an op gmpi does not have (user-defined, MINLOC/MAXLOC, REPLACE)";
  return "a datatype and op pair gmpi does not reduce";
}

/* ---- the three routes ----------------------------------------------------------------------- */

/* Host copies of the device buffers this rank uses, over their spans; sb and rb are
 * what MPI is given (the copies, or the buffers themselves when on the host). */
typedef struct {
  dropin_stage_t send, recv;
  void *sb, *rb;
} staged_t;

static int stage(staged_t *s, const coll_call_t *c, const char *why) {
  s->sb = (void *)c->send_used;
  s->rb = c->recv_used;
  int rc = dropin_stage_in(&s->send, c->comm, &s->sb, c->send_span, c->send.type);
  if (rc == MPI_SUCCESS)
    rc = dropin_stage_in(&s->recv, c->comm, &s->rb, c->recv_span, c->recv.type);
  if (rc != MPI_SUCCESS) dropin_stage_out(&s->send, 0);
  if (rc == MPI_SUCCESS) dropin_note_staged(c->func, why);
  return rc;
}

static int unstage(staged_t *s, int rc) {
  dropin_stage_out(&s->send, 0);
  int back = dropin_stage_out(&s->recv, rc == MPI_SUCCESS);
  return rc != MPI_SUCCESS ? rc : back;
}

/* A staged nonblocking call: the copies live until MPI's request completes. */
static int unstage_later(staged_t *s, MPI_Comm comm, int rc, MPI_Request *request) {
  if (rc != MPI_SUCCESS) return unstage(s, rc);
  dropin_stage_t both[2] = {s->send, s->recv};
  return dropin_req_staged(comm, *request, both, request);
}

/* MPI on host copies of the device buffers this rank uses; a buffer it does not use
 * (a non-root's receive buffer) reaches MPI as the program passed it. */
static int run_staged(const coll_kind_t *kind, const coll_call_t *c) {
  const char *why = c->no_gmpi ? c->no_gmpi : why_staged(c->comm, c->named_type, c->op);
  staged_t s;
  int rc = stage(&s, c, why);
  if (rc != MPI_SUCCESS) return rc;
  rc = kind->mpi(c, c->send_used ? s.sb : c->send.buf, c->recv_used ? s.rb : c->recv.buf);
  return c->request ? unstage_later(&s, c->comm, rc, c->request) : unstage(&s, rc);
}

/* gmpi on the program's own buffers (reductions, barrier); a nonblocking call's gmpi request
 * is wrapped as the program's MPI request. */
static int run_gmpi_direct(const coll_kind_t *kind, const coll_call_t *c, gmpi_comm_t twin) {
  gmpi_request_t g = NULL;
  gmpi_status_t st = kind->start(c, twin, NULL, c->request ? &g : NULL);
  if (st != GMPI_SUCCESS) return dropin_fail(c->comm, c->func, st);
  return c->request ? dropin_req_wrap(c->comm, g, NULL, c->request) : MPI_SUCCESS;
}

/* Sides on the stack for a blocking call, on the heap for a nonblocking one. */
static coll_sides_t *sides_new(MPI_Request *request, coll_sides_t *local) {
  coll_sides_t *s = request ? malloc(sizeof(*s)) : local;
  if (s) dropin_side_clear(&s->send), dropin_side_clear(&s->recv);
  return s;
}

static void sides_free_both(coll_sides_t *s) {
  dropin_side_free(&s->send);
  dropin_side_free(&s->recv);
}

static void sides_release(void *p) {
  sides_free_both(p);
  free(p);
}

static int sides_after(dropin_req_t *r) {
  dropin_side_t *recv = &((coll_sides_t *)r->owned)->recv;
  recv->comm = r->comm; /* MPI_COMM_WORLD once the program freed the call's comm (rehomed) */
  return dropin_side_unpack_all(recv);
}

/* A nonblocking call's request takes the sides: it unpacks and frees them when it completes. */
static int sides_hand_over(const coll_call_t *c, gmpi_request_t g, coll_sides_t *s) {
  dropin_req_t *r = NULL;
  int rc = dropin_req_wrap(c->comm, g, &r, c->request);
  if (rc != MPI_SUCCESS) return rc;
  r->owned = s;
  r->after = sides_after;
  r->release = sides_release;
  return MPI_SUCCESS;
}

/* A side the layer could not lay out: MPI's class, named on stderr like gmpi's errors. */
static void refuse(MPI_Comm comm, const char *func, int rc) {
  if (rc == MPI_ERR_TYPE)
    fprintf(stderr, "[gmpi_mpi] %s: a datatype is MPI_DATATYPE_NULL or was never committed\n",
            func);
  PMPI_Comm_call_errhandler(comm, rc);
}

/* Finish a data-moving collective: rc is the preparation's outcome (MPI), st gmpi's; a failure
 * a side reported itself (a device copy or staging) is not reported twice. A blocking call
 * unpacks now; a nonblocking call's request unpacks when it completes. */
static int sides_finish(const coll_call_t *c, int rc, gmpi_status_t st, gmpi_request_t g,
                        coll_sides_t *s) {
  if (rc == MPI_SUCCESS && st != GMPI_SUCCESS)
    rc = dropin_fail(c->comm, c->func, st);
  else if (rc != MPI_SUCCESS && !s->send.reported && !s->recv.reported)
    refuse(c->comm, c->func, rc);
  if (rc == MPI_SUCCESS && c->request) {
    rc = sides_hand_over(c, g, s);
    if (rc == MPI_SUCCESS) return MPI_SUCCESS;
  }
  if (rc == MPI_SUCCESS) rc = dropin_side_unpack_all(&s->recv);
  if (c->request)
    sides_release(s);
  else
    sides_free_both(s);
  return rc;
}

/* gmpi moving this rank's sides as bytes (derived types packed). */
static int run_gmpi_sides(const coll_kind_t *kind, coll_call_t *c, gmpi_comm_t twin) {
  if (c->args_missing) return MPI_ERR_ARG;
  coll_sides_t local, *s = sides_new(c->request, &local);
  if (!s) return MPI_ERR_NO_MEM;
  int rc = kind->prepare(c, s);
  if (rc == MPI_SUCCESS && (s->send.dev || s->recv.dev))
    dropin_note_staged(c->func, "a derived datatype on device memory (packed in host memory)");
  gmpi_status_t st = GMPI_SUCCESS;
  gmpi_request_t g = NULL;
  if (rc == MPI_SUCCESS) st = kind->start(c, twin, s, c->request ? &g : NULL);
  return sides_finish(c, rc, st, g, s);
}

/* The one place a collective's route is chosen and taken. */
int dropin_coll_run(const coll_kind_t *kind, coll_call_t c) {
  kind->describe(&c);
  gmpi_comm_t twin = NULL;
  switch (dropin_via(c.comm, c.send_used, c.recv_used, c.native, &twin)) {
  case VIA_GMPI:
    return kind->prepare ? run_gmpi_sides(kind, &c, twin) : run_gmpi_direct(kind, &c, twin);
  case VIA_STAGING: return run_staged(kind, &c);
  default: return kind->mpi(&c, c.send.buf, c.recv.buf);
  }
}

/* ---- barriers: MPI_Barrier through gmpi when the layer is active, MPI_Ibarrier under all -- */

/* Through gmpi whenever the layer is active: gmpi's barrier drives gmpi's engines until every
 * rank has arrived, so a rank here still moves the device (or matched-across-kinds) sends a
 * peer's receive waits on -- MPI's progress rule, which PMPI_Barrier cannot keep for gmpi
 * (found on the H200: isend, MPI_Request_free, barrier against a peer's receive). Every rank
 * decides alike: no buffer is classified. */
int MPI_Barrier(MPI_Comm comm) {
  int arrived = 0;
  int rc = dropin_arrive(comm, "MPI_Barrier", &arrived);
  return rc != MPI_SUCCESS || arrived ? rc : PMPI_Barrier(comm);
}

/* No buffers: dropin_via takes it to gmpi under GMPI_INTERPOSE=all (on a comm with a twin). */
static void ibarrier_describe(coll_call_t *c) { c->native = 1; }

static gmpi_status_t ibarrier_start(const coll_call_t *c, gmpi_comm_t twin, const coll_sides_t *s,
                                    gmpi_request_t *request) {
  (void)c, (void)s;
  return gmpi_ibarrier(twin, request);
}

static int ibarrier_mpi(const coll_call_t *c, const void *sb, void *rb) {
  (void)sb, (void)rb;
  return PMPI_Ibarrier(c->comm, c->request);
}

static const coll_kind_t ibarrier = {ibarrier_describe, NULL, ibarrier_start, ibarrier_mpi};

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request) {
  coll_call_t c = {.func = "MPI_Ibarrier", .comm = comm, .request = request, .op = MPI_OP_NULL};
  return dropin_coll_run(&ibarrier, c);
}
