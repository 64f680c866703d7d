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
int dropin_coll_run_sides(const coll_kind_t *kind, coll_call_t *c, gmpi_comm_t twin) {
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

/* ---- one route on every rank (GMPI_INTERPOSE_KINDS) ------------------------------------------ */

/* Each rank routes by its own buffers, so ranks passing different memory kinds (device on some,
 * host on others: legal in a CUDA-aware MPI) would wait in different engines. Under mixed the
 * ranks agree first, and where they differ every rank takes MPI, whose collective serves any
 * mix; under uniform (the default) they are trusted, and GMPI_CHECK=1 finds out. */

/* MPI's route for this rank: on host copies where its buffers are device memory. */
static dropin_via_t via_mpi(const coll_call_t *c) {
  return dropin_is_device(c->send_used) || dropin_is_device(c->recv_used) ? VIA_STAGING : VIA_MPI;
}

static void leave_gmpi(coll_call_t *c, dropin_via_t *via, const char *why) {
  *via = via_mpi(c);
  c->no_gmpi = why;
}

/* Whether the ranks agree on this call's route: from what every rank of the call shares (the
 * settings, the comm's twin and size, the call), never from this rank's buffers, or the
 * agreement itself would wait for ranks that skip it. Nonblocking calls must not wait for
 * other ranks (MPI); calls gmpi has no form of (scans) always end in MPI. */
static int agreement_runs(const coll_kind_t *kind, const coll_call_t *c) {
  if (!(dropin.kinds_mixed || dropin.check) || !dropin.active || c->request || !kind->start)
    return 0;
  /* the size first: MPI_COMM_SELF's twin would be made at its first lookup */
  return c->comm != MPI_COMM_NULL && dropin_size_of(c->comm) > 1 && dropin_twin(c->comm);
}

/* The routes of every rank as bits (1 << VIA_x), by one allreduce on the program's comm: MPI's
 * nonblocking form, waited while gmpi's live requests are driven (a peer may sit in a receive
 * that only this rank's gmpi progress completes), and on every rank alike (MPI does not match a
 * blocking collective with a nonblocking one). */
static int agree(const coll_call_t *c, dropin_via_t mine, int *routes) {
  int bit = 1 << mine;
  MPI_Request q = MPI_REQUEST_NULL;
  return dropin_polled(PMPI_Iallreduce(&bit, routes, 1, MPI_INT, MPI_BOR, c->comm, &q), &q);
}

/* Only gmpi beside MPI waits: staged and plain routes both end in MPI's collective. */
static int routes_conflict(int routes) {
  int gmpi = 1 << VIA_GMPI;
  return (routes & gmpi) && (routes & ~gmpi);
}

/* GMPI_CHECK=1 under uniform: the call fails on every rank (each saw the same bits) instead of
 * waiting for gmpi's watchdog. */
static int refuse_kinds(const coll_call_t *c, dropin_via_t via) {
  fprintf(stderr,
          "[gmpi_mpi] %s (rank %d): the ranks' routes differ, by memory kind or datatype (this "
          "rank: %s memory, to %s; others to %s); GMPI_INTERPOSE_KINDS=mixed makes such calls "
          "work\n",
          c->func, dropin_rank_of(c->comm), via_mpi(c) == VIA_STAGING ? "device" : "host",
          via == VIA_GMPI ? "gmpi" : "MPI", via == VIA_GMPI ? "MPI" : "gmpi");
  PMPI_Comm_call_errhandler(c->comm, MPI_ERR_OTHER);
  return MPI_ERR_OTHER;
}

/* Turn this rank's route into one every rank of the call can meet. */
static int route_for_all(const coll_kind_t *kind, coll_call_t *c, dropin_via_t *via) {
  if (dropin.kinds_mixed && c->request && *via == VIA_GMPI && !c->bufferless) {
    leave_gmpi(c, via, "a nonblocking collective under GMPI_INTERPOSE_KINDS=mixed");
    return MPI_SUCCESS;
  }
  if (!agreement_runs(kind, c)) return MPI_SUCCESS;
  int routes = 0;
  int rc = agree(c, *via, &routes);
  if (rc != MPI_SUCCESS || !routes_conflict(routes)) return rc;
  if (!dropin.kinds_mixed) return refuse_kinds(c, *via);
  if (*via == VIA_GMPI) leave_gmpi(c, via, "other ranks' buffers take MPI (another memory kind)");
  return MPI_SUCCESS;
}

/* Where a collective's route is made one for every rank and taken (dropin_coll_run chooses
 * this rank's, and takes gmpi itself where nothing here could change that). */
int dropin_coll_run_routed(const coll_kind_t *kind, coll_call_t *c, dropin_via_t via,
                           gmpi_comm_t twin) {
  int rc = route_for_all(kind, c, &via);
  if (rc != MPI_SUCCESS) return rc;
  switch (via) {
  case VIA_GMPI: return dropin_coll_run_gmpi(kind, c, twin);
  case VIA_STAGING: return run_staged(kind, c);
  default: return kind->mpi(c, c->send.buf, c->recv.buf);
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

/* No buffers: dropin_via takes it to gmpi under GMPI_INTERPOSE=all (on a comm with a twin), on
 * every rank alike, so it stays there under GMPI_INTERPOSE_KINDS=mixed too. */
static void ibarrier_describe(coll_call_t *c) { c->native = c->bufferless = 1; }

static gmpi_status_t ibarrier_start(const coll_call_t *c, gmpi_comm_t twin, const coll_sides_t *s,
                                    gmpi_request_t *request) {
  (void)c, (void)s;
  return gmpi_ibarrier(twin, request);
}

static int ibarrier_mpi(const coll_call_t *c, const void *sb, void *rb) {
  (void)sb, (void)rb;
  return PMPI_Ibarrier(c->comm, c->request);
}

static const coll_kind_t ibarrier = {ibarrier_describe, NULL, ibarrier_start, ibarrier_mpi, NULL};

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request) {
  coll_call_t c = {.func = "MPI_Ibarrier", .comm = comm, .request = request, .op = MPI_OP_NULL};
  return dropin_coll_run(&ibarrier, &c);
}
