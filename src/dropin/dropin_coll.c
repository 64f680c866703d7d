/* SPDX-License-Identifier: BSD-3-Clause */
/* Collectives. Each MPI collective fills one coll_call_t with its arguments and hands it to
 * coll_run with its entry of a small table (coll_kind_t): which buffers count at this rank and
 * whether gmpi can take the call (describe), how gmpi runs it (prepare, start) and how MPI runs
 * it (mpi). coll_run chooses the route once, with dropin_via: gmpi (device buffers, or every
 * buffer under GMPI_INTERPOSE=all, with types and ops gmpi has), MPI on host copies of device
 * buffers (derived types in reductions, user-defined ops, MINLOC/MAXLOC, comms without a twin,
 * calls gmpi lacks), or MPI as it is. Data-moving collectives move gmpi's bytes (derived types
 * packed, dropin_pack.c); reductions need gmpi's dtype and op. MPI_IN_PLACE becomes gmpi's
 * in-place form (sendbuf == recvbuf). */
#include <stdlib.h>

#include "dropin.h"

static int rank_of(MPI_Comm comm) {
  int r = 0;
  PMPI_Comm_rank(comm, &r);
  return r;
}

static int size_of(MPI_Comm comm) {
  int n = 0;
  PMPI_Comm_size(comm, &n);
  return n;
}

static const void *in_place(const void *sendbuf, const void *recvbuf) {
  return sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
}

/* Bytes per element of a contiguous type (0: not contiguous, gmpi cannot move it as bytes). */
static size_t bytes_of(MPI_Datatype type) {
  size_t size = 0;
  return dropin_contiguous(type, &size) ? size : 0;
}

static int reducible(MPI_Datatype type, MPI_Op op, gmpi_dtype_t *d, gmpi_op_t *o) {
  return dropin_dtype(type, d) && dropin_op(op, o) && gmpi_op_valid(*d, *o);
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

/* Elements spanned by a v-layout: max(displs[i] + counts[i]). */
static MPI_Aint v_span(const int *counts, const int *displs, int n) {
  MPI_Aint span = 0;
  for (int i = 0; counts && displs && i < n; i++)
    if (counts[i] > 0 && displs[i] + counts[i] > span) span = displs[i] + counts[i];
  return span;
}

/* ---- one collective call, and how each collective is run ------------------------------------ */

/* The program's arguments, in one shape for every collective (a reduction's type is both
 * sendtype and recvtype; MPI_Bcast's buffer is recvbuf), and what describe finds about them. */
typedef struct {
  const char *func;     /* the MPI function, for errors and notes */
  MPI_Comm comm;        /* the program's comm */
  MPI_Request *request; /* NULL: the blocking call */
  const void *sendbuf;
  int sendcount;
  const int *sendcounts, *sdispls; /* v-forms; NULL otherwise */
  MPI_Datatype sendtype;
  void *recvbuf;
  int recvcount;
  const int *recvcounts, *rdispls; /* v-forms; NULL otherwise */
  MPI_Datatype recvtype;
  MPI_Op op; /* reductions; MPI_OP_NULL otherwise */
  int root;  /* rooted collectives */
  /* ---- set by the kind's describe ---- */
  int n, me;               /* comm's size and this rank, where the kind asks for them */
  int is_root;             /* this rank is the root (every rank, without one) */
  int inplace;             /* MPI_IN_PLACE where it counts at this rank */
  const void *send;        /* the send buffer that counts at this rank (NULL: none) */
  void *recv;              /* the receive buffer that counts at this rank (NULL: none) */
  MPI_Aint send_span;      /* elements of sendtype a staged send buffer spans */
  MPI_Aint recv_span;      /* elements of recvtype a staged receive buffer spans */
  int native;              /* gmpi can take the call's types (and op) */
  int args_missing;        /* a count or displacement array gmpi needs is NULL */
  MPI_Datatype named_type; /* the type a staged call's note names */
  const char *no_gmpi;     /* why gmpi never takes this call (no such gmpi call), or NULL */
  gmpi_dtype_t dtype;      /* reductions: gmpi's type and op, when native */
  gmpi_op_t gop;
} coll_call_t;

/* Both sides of a data-moving collective as gmpi's bytes; a nonblocking call's request owns
 * them. */
typedef struct {
  dropin_side_t send, recv;
} sides_t;

/* One collective, blocking and nonblocking alike (the call's request says which). */
typedef struct {
  /* Fill the describe part of c: the buffers that count, spans, native. Never fails. */
  void (*describe)(coll_call_t *c);
  /* Data-moving collectives: this rank's sides as gmpi's bytes, packed. NULL for the calls
   * gmpi takes on the program's own buffers (reductions, barrier). Returns an MPI code. */
  int (*prepare)(coll_call_t *c, sides_t *s);
  /* Start (request non-NULL) or run gmpi's call on twin; s is NULL without prepare. NULL for
   * a collective gmpi has no form of (it is never native). */
  gmpi_status_t (*start)(const coll_call_t *c, gmpi_comm_t twin, const sides_t *s,
                         gmpi_request_t *request);
  /* MPI's own call, blocking or nonblocking as c says, on sb and rb. */
  int (*mpi)(const coll_call_t *c, const void *sb, void *rb);
} coll_kind_t;

/* ---- the three routes ----------------------------------------------------------------------- */

/* Host copies of the device buffers that count at this rank, over their spans; sb and rb are
 * what MPI is given (the copies, or the buffers themselves when on the host). */
typedef struct {
  dropin_stage_t send, recv;
  void *sb, *rb;
} staged_t;

static int stage(staged_t *s, const coll_call_t *c, const char *why) {
  s->sb = (void *)c->send;
  s->rb = c->recv;
  int rc = dropin_stage_in(&s->send, &s->sb, c->send_span, c->sendtype);
  if (rc == MPI_SUCCESS) rc = dropin_stage_in(&s->recv, &s->rb, c->recv_span, c->recvtype);
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

/* MPI on host copies of the device buffers that count at this rank; a buffer that does not
 * count (a non-root's receive buffer) reaches MPI as the program passed it. */
static int run_staged(const coll_kind_t *kind, const coll_call_t *c) {
  const char *why = c->no_gmpi ? c->no_gmpi : why_staged(c->comm, c->named_type, c->op);
  staged_t s;
  int rc = stage(&s, c, why);
  if (rc != MPI_SUCCESS) return rc;
  rc = kind->mpi(c, c->send ? s.sb : c->sendbuf, c->recv ? s.rb : c->recvbuf);
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
static sides_t *sides_new(MPI_Request *request, sides_t *local) {
  sides_t *s = request ? malloc(sizeof(*s)) : local;
  if (s) dropin_side_clear(&s->send), dropin_side_clear(&s->recv);
  return s;
}

static void sides_free_both(sides_t *s) {
  dropin_side_free(&s->send);
  dropin_side_free(&s->recv);
}

static void sides_release(void *p) {
  sides_free_both(p);
  free(p);
}

static int sides_after(dropin_req_t *r) {
  return dropin_side_unpack_all(&((sides_t *)r->owned)->recv);
}

/* A nonblocking call's request takes the sides: it unpacks and frees them when it completes. */
static int sides_hand_over(const coll_call_t *c, gmpi_request_t g, sides_t *s) {
  dropin_req_t *r = NULL;
  int rc = dropin_req_wrap(c->comm, g, &r, c->request);
  if (rc != MPI_SUCCESS) return rc;
  r->owned = s;
  r->after = sides_after;
  r->release = sides_release;
  return MPI_SUCCESS;
}

/* Finish a data-moving collective: rc is the preparation's outcome (MPI), st gmpi's. A blocking
 * call unpacks now; a nonblocking call's request unpacks when it completes. */
static int sides_finish(const coll_call_t *c, int rc, gmpi_status_t st, gmpi_request_t g,
                        sides_t *s) {
  if (rc == MPI_SUCCESS && st != GMPI_SUCCESS)
    rc = dropin_fail(c->comm, c->func, st);
  else if (rc != MPI_SUCCESS)
    PMPI_Comm_call_errhandler(c->comm, rc);
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
  sides_t local, *s = sides_new(c->request, &local);
  if (!s) return MPI_ERR_NO_MEM;
  int rc = kind->prepare(c, s);
  gmpi_status_t st = GMPI_SUCCESS;
  gmpi_request_t g = NULL;
  if (rc == MPI_SUCCESS) st = kind->start(c, twin, s, c->request ? &g : NULL);
  return sides_finish(c, rc, st, g, s);
}

/* The one place a collective's route is chosen and taken. */
static int coll_run(const coll_kind_t *kind, coll_call_t c) {
  kind->describe(&c);
  gmpi_comm_t twin = NULL;
  switch (dropin_via(c.comm, c.send, c.recv, c.native, &twin)) {
  case VIA_GMPI:
    return kind->prepare ? run_gmpi_sides(kind, &c, twin) : run_gmpi_direct(kind, &c, twin);
  case VIA_STAGING: return run_staged(kind, &c);
  default: return kind->mpi(&c, c.sendbuf, c.recvbuf);
  }
}

/* ---- reductions ----------------------------------------------------------------------------- */

/* Every rank reduces count elements of one type (MPI_Allreduce, MPI_Reduce). */
static void reduction_describe(coll_call_t *c) {
  c->send = c->sendbuf;
  c->recv = c->recvbuf;
  c->send_span = c->recv_span = c->recvcount;
  c->named_type = c->recvtype;
  c->native = c->recvcount >= 0 && reducible(c->recvtype, c->op, &c->dtype, &c->gop);
}

static gmpi_status_t allreduce_start(const coll_call_t *c, gmpi_comm_t twin, const sides_t *s,
                                     gmpi_request_t *request) {
  (void)s;
  const void *sb = in_place(c->sendbuf, c->recvbuf);
  size_t count = (size_t)c->recvcount;
  if (request) return gmpi_iallreduce(sb, c->recvbuf, count, c->dtype, c->gop, twin, request);
  return gmpi_allreduce(sb, c->recvbuf, count, c->dtype, c->gop, twin);
}

static int allreduce_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Iallreduce(sb, rb, c->recvcount, c->recvtype, c->op, c->comm, c->request);
  return PMPI_Allreduce(sb, rb, c->recvcount, c->recvtype, c->op, c->comm);
}

static const coll_kind_t allreduce = {reduction_describe, NULL, allreduce_start, allreduce_mpi};

static int allreduce_any(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type,
                         MPI_Op op, MPI_Comm comm, MPI_Request *request, const char *func) {
  coll_call_t c = {.func = func,
                   .comm = comm,
                   .request = request,
                   .sendbuf = sendbuf,
                   .sendtype = type,
                   .recvbuf = recvbuf,
                   .recvcount = count,
                   .recvtype = type,
                   .op = op};
  return coll_run(&allreduce, c);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  return allreduce_any(sendbuf, recvbuf, count, type, op, comm, NULL, "MPI_Allreduce");
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request) {
  return allreduce_any(sendbuf, recvbuf, count, type, op, comm, request, "MPI_Iallreduce");
}

/* The receive buffer counts at the root only. */
static void reduce_describe(coll_call_t *c) {
  c->is_root = rank_of(c->comm) == c->root;
  reduction_describe(c);
  c->recv = c->is_root ? c->recvbuf : NULL;
}

static gmpi_status_t reduce_start(const coll_call_t *c, gmpi_comm_t twin, const sides_t *s,
                                  gmpi_request_t *request) {
  (void)s;
  const void *sb = in_place(c->sendbuf, c->recv);
  size_t count = (size_t)c->recvcount;
  if (request) return gmpi_ireduce(sb, c->recv, count, c->dtype, c->gop, c->root, twin, request);
  return gmpi_reduce(sb, c->recv, count, c->dtype, c->gop, c->root, twin);
}

static int reduce_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Ireduce(sb, rb, c->recvcount, c->recvtype, c->op, c->root, c->comm, c->request);
  return PMPI_Reduce(sb, rb, c->recvcount, c->recvtype, c->op, c->root, c->comm);
}

static const coll_kind_t reduce = {reduce_describe, NULL, reduce_start, reduce_mpi};

static int reduce_any(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                      int root, MPI_Comm comm, MPI_Request *request, const char *func) {
  coll_call_t c = {.func = func,
                   .comm = comm,
                   .request = request,
                   .sendbuf = sendbuf,
                   .sendtype = type,
                   .recvbuf = recvbuf,
                   .recvcount = count,
                   .recvtype = type,
                   .op = op,
                   .root = root};
  return coll_run(&reduce, c);
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
               int root, MPI_Comm comm) {
  return reduce_any(sendbuf, recvbuf, count, type, op, root, comm, NULL, "MPI_Reduce");
}

int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                int root, MPI_Comm comm, MPI_Request *request) {
  return reduce_any(sendbuf, recvbuf, count, type, op, root, comm, request, "MPI_Ireduce");
}

/* n blocks of recvcount elements are reduced; in place, the whole input is in recvbuf. */
static void reduce_scatter_block_describe(coll_call_t *c) {
  c->n = size_of(c->comm);
  reduction_describe(c);
  c->send_span = (MPI_Aint)c->recvcount * c->n;
  if (c->sendbuf == MPI_IN_PLACE) c->recv_span = c->send_span;
}

static gmpi_status_t reduce_scatter_block_start(const coll_call_t *c, gmpi_comm_t twin,
                                                const sides_t *s, gmpi_request_t *request) {
  (void)s;
  const void *sb = in_place(c->sendbuf, c->recvbuf);
  size_t count = (size_t)c->recvcount;
  if (request) return gmpi_ireduce_scatter(sb, c->recvbuf, count, c->dtype, c->gop, twin, request);
  return gmpi_reduce_scatter(sb, c->recvbuf, count, c->dtype, c->gop, twin);
}

static int reduce_scatter_block_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Ireduce_scatter_block(sb, rb, c->recvcount, c->recvtype, c->op, c->comm,
                                      c->request);
  return PMPI_Reduce_scatter_block(sb, rb, c->recvcount, c->recvtype, c->op, c->comm);
}

static const coll_kind_t reduce_scatter_block = {
    reduce_scatter_block_describe, NULL, reduce_scatter_block_start, reduce_scatter_block_mpi};

static int reduce_scatter_block_any(const void *sendbuf, void *recvbuf, int recvcount,
                                    MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                                    MPI_Request *request, const char *func) {
  coll_call_t c = {.func = func,
                   .comm = comm,
                   .request = request,
                   .sendbuf = sendbuf,
                   .sendtype = type,
                   .recvbuf = recvbuf,
                   .recvcount = recvcount,
                   .recvtype = type,
                   .op = op};
  return coll_run(&reduce_scatter_block, c);
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype type,
                             MPI_Op op, MPI_Comm comm) {
  return reduce_scatter_block_any(sendbuf, recvbuf, recvcount, type, op, comm, NULL,
                                  "MPI_Reduce_scatter_block");
}

int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype type,
                              MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  return reduce_scatter_block_any(sendbuf, recvbuf, recvcount, type, op, comm, request,
                                  "MPI_Ireduce_scatter_block");
}

/* Without recvcounts no buffer counts: MPI reports the missing array. The nonblocking form is
 * staged to MPI's on device memory, as it was before gmpi_ireduce_scatterv existed: taking it
 * to gmpi needs the counts kept alive with the request, and a test of its own. */
static void reduce_scatter_describe(coll_call_t *c) {
  c->n = size_of(c->comm);
  c->me = rank_of(c->comm);
  c->named_type = c->recvtype;
  c->no_gmpi = c->request ? "the drop-in does not take it to gmpi_ireduce_scatterv yet" : NULL;
  if (!c->recvcounts) return;
  MPI_Aint total = 0;
  for (int i = 0; i < c->n; i++)
    total += c->recvcounts[i];
  c->send = c->sendbuf;
  c->recv = c->recvbuf;
  c->send_span = total;
  c->recv_span = c->sendbuf == MPI_IN_PLACE ? total : c->recvcounts[c->me];
  c->native = !c->request && reducible(c->recvtype, c->op, &c->dtype, &c->gop);
}

/* Blocking only (describe never takes the nonblocking form to gmpi). */
static gmpi_status_t reduce_scatter_start(const coll_call_t *c, gmpi_comm_t twin, const sides_t *s,
                                          gmpi_request_t *request) {
  (void)s, (void)request;
  size_t *counts = malloc((size_t)(c->n > 0 ? c->n : 1) * sizeof(*counts));
  if (!counts) return GMPI_ERR_NO_MEMORY;
  for (int i = 0; i < c->n; i++)
    counts[i] = (size_t)c->recvcounts[i];
  gmpi_status_t st = gmpi_reduce_scatterv(in_place(c->sendbuf, c->recvbuf), c->recvbuf, counts,
                                          c->dtype, c->gop, twin);
  free(counts);
  return st;
}

static int reduce_scatter_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Ireduce_scatter(sb, rb, c->recvcounts, c->recvtype, c->op, c->comm, c->request);
  return PMPI_Reduce_scatter(sb, rb, c->recvcounts, c->recvtype, c->op, c->comm);
}

static const coll_kind_t reduce_scatter = {reduce_scatter_describe, NULL, reduce_scatter_start,
                                           reduce_scatter_mpi};

static int reduce_scatter_any(const void *sendbuf, void *recvbuf, const int recvcounts[],
                              MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *request,
                              const char *func) {
  coll_call_t c = {.func = func,
                   .comm = comm,
                   .request = request,
                   .sendbuf = sendbuf,
                   .sendtype = type,
                   .recvbuf = recvbuf,
                   .recvcounts = recvcounts,
                   .recvtype = type,
                   .op = op};
  return coll_run(&reduce_scatter, c);
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                       MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  return reduce_scatter_any(sendbuf, recvbuf, recvcounts, type, op, comm, NULL,
                            "MPI_Reduce_scatter");
}

int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                        MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  return reduce_scatter_any(sendbuf, recvbuf, recvcounts, type, op, comm, request,
                            "MPI_Ireduce_scatter");
}

/* Prefix reductions: gmpi has none, so device buffers are staged and host buffers stay MPI's. */
static void scan_describe(coll_call_t *c) {
  reduction_describe(c);
  c->native = 0;
  c->no_gmpi = "gmpi has no scan";
}

static int scan_mpi(const coll_call_t *c, const void *sb, void *rb) {
  return PMPI_Scan(sb, rb, c->recvcount, c->recvtype, c->op, c->comm);
}

static int exscan_mpi(const coll_call_t *c, const void *sb, void *rb) {
  return PMPI_Exscan(sb, rb, c->recvcount, c->recvtype, c->op, c->comm);
}

static const coll_kind_t scan = {scan_describe, NULL, NULL, scan_mpi};
static const coll_kind_t exscan = {scan_describe, NULL, NULL, exscan_mpi};

int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
             MPI_Comm comm) {
  coll_call_t c = {.func = "MPI_Scan",
                   .comm = comm,
                   .sendbuf = sendbuf,
                   .sendtype = type,
                   .recvbuf = recvbuf,
                   .recvcount = count,
                   .recvtype = type,
                   .op = op};
  return coll_run(&scan, c);
}

int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm) {
  coll_call_t c = {.func = "MPI_Exscan",
                   .comm = comm,
                   .sendbuf = sendbuf,
                   .sendtype = type,
                   .recvbuf = recvbuf,
                   .recvcount = count,
                   .recvtype = type,
                   .op = op};
  return coll_run(&exscan, c);
}

/* ---- data movement: gmpi's bytes, derived types packed (dropin_pack.c) ---------------------- */

/* Host buffers of any type take gmpi (packed), so every rank chooses alike whatever type it
 * passed; device buffers of a derived type are staged to MPI as before. */
static int gmpi_moves(MPI_Datatype a, MPI_Datatype b, const void *x, const void *y) {
  return (dropin_side_contiguous(a) && dropin_side_contiguous(b)) ||
         !(dropin_is_device(x) || dropin_is_device(y));
}

/* Elements of n blocks: the v-layout's span, or n blocks of count. */
static MPI_Aint blocks_span(const int *counts, const int *displs, int count, int n) {
  return counts ? v_span(counts, displs, n) : (MPI_Aint)count * n;
}

/* MPI_Bcast: the root sends its buffer (recvbuf here), the others receive into theirs. */
static void bcast_describe(coll_call_t *c) {
  c->recv = c->recvbuf;
  c->recv_span = c->recvcount;
  c->named_type = c->recvtype;
  c->native = gmpi_moves(c->recvtype, c->recvtype, c->recvbuf, NULL);
}

/* The root packs its side; the others unpack theirs after. */
static int bcast_prepare(coll_call_t *c, sides_t *s) {
  c->is_root = rank_of(c->comm) == c->root;
  dropin_side_t *side = c->is_root ? &s->send : &s->recv;
  int rc = dropin_side_init(side, c->recvbuf, c->recvtype, 1, NULL, NULL, c->recvcount);
  return rc == MPI_SUCCESS && c->is_root ? dropin_side_pack_all(side) : rc;
}

static gmpi_status_t bcast_start(const coll_call_t *c, gmpi_comm_t twin, const sides_t *s,
                                 gmpi_request_t *request) {
  const dropin_side_t *side = c->is_root ? &s->send : &s->recv;
  if (request) return gmpi_ibcast(side->base, side->bcounts[0], GMPI_BYTE, c->root, twin, request);
  return gmpi_bcast(side->base, side->bcounts[0], GMPI_BYTE, c->root, twin);
}

static int bcast_mpi(const coll_call_t *c, const void *sb, void *rb) {
  (void)sb;
  if (c->request) return PMPI_Ibcast(rb, c->recvcount, c->recvtype, c->root, c->comm, c->request);
  return PMPI_Bcast(rb, c->recvcount, c->recvtype, c->root, c->comm);
}

static const coll_kind_t bcast = {bcast_describe, bcast_prepare, bcast_start, bcast_mpi};

static int bcast_any(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
                     MPI_Request *request, const char *func) {
  coll_call_t c = {.func = func,
                   .comm = comm,
                   .request = request,
                   .recvbuf = buf,
                   .recvcount = count,
                   .recvtype = type,
                   .op = MPI_OP_NULL,
                   .root = root};
  return coll_run(&bcast, c);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  return bcast_any(buf, count, type, root, comm, NULL, "MPI_Bcast");
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
               MPI_Request *request) {
  return bcast_any(buf, count, type, root, comm, request, "MPI_Ibcast");
}

/* Gathering (allgather, gather and their v-forms): each rank sends one block; n blocks arrive,
 * at the root only when there is one (rooted). In place, this rank's block is in recvbuf. */
static void gathering_describe(coll_call_t *c, int rooted) {
  c->n = size_of(c->comm);
  c->me = rank_of(c->comm);
  c->is_root = !rooted || c->me == c->root;
  c->inplace = c->is_root && c->sendbuf == MPI_IN_PLACE;
  c->send = c->sendbuf;
  c->recv = c->is_root ? c->recvbuf : NULL;
  MPI_Datatype st = c->inplace ? c->recvtype : c->sendtype, rt = c->is_root ? c->recvtype : st;
  c->native = gmpi_moves(st, rt, c->send, c->recv);
  c->named_type = c->is_root ? c->recvtype : c->sendtype;
  c->send_span = c->sendcount;
  c->recv_span = c->is_root ? blocks_span(c->recvcounts, c->rdispls, c->recvcount, c->n) : 0;
}

static void allgather_describe(coll_call_t *c) { gathering_describe(c, 0); }
static void gather_describe(coll_call_t *c) { gathering_describe(c, 1); }

/* The v-forms: gmpi needs the arrays where blocks arrive. */
static void allgatherv_describe(coll_call_t *c) {
  gathering_describe(c, 0);
  c->args_missing = !c->recvcounts || !c->rdispls;
}

static void gatherv_describe(coll_call_t *c) {
  gathering_describe(c, 1);
  c->args_missing = c->is_root && (!c->recvcounts || !c->rdispls);
}

static int gathering_prepare(coll_call_t *c, sides_t *s) {
  int rc = c->is_root ? dropin_side_init(&s->recv, c->recvbuf, c->recvtype, c->n, c->recvcounts,
                                         c->rdispls, c->recvcount)
                      : MPI_SUCCESS;
  if (rc == MPI_SUCCESS && !c->inplace)
    rc = dropin_side_init(&s->send, (void *)c->sendbuf, c->sendtype, 1, NULL, NULL, c->sendcount);
  if (rc != MPI_SUCCESS) return rc;
  return c->inplace ? dropin_side_pack(&s->recv, c->me) : dropin_side_pack_all(&s->send);
}

/* What this rank sends: its block in recvbuf in place (gmpi's in place: sb == rb). */
static const void *gathering_send(const coll_call_t *c, const sides_t *s) {
  return c->inplace ? s->recv.base : s->send.base;
}

/* Bytes per block of a fixed-block call: the receive side's where this rank has one. */
static size_t gathering_block(const coll_call_t *c, const sides_t *s) {
  return c->is_root ? s->recv.bcounts[0] : s->send.bcounts[0];
}

/* Bytes this rank sends in a v-form (in place: its own block of the receive side). */
static size_t gathering_v_count(const coll_call_t *c, const sides_t *s) {
  return c->inplace ? s->recv.bcounts[c->me] : s->send.bcounts[0];
}

static gmpi_status_t allgather_start(const coll_call_t *c, gmpi_comm_t twin, const sides_t *s,
                                     gmpi_request_t *request) {
  const void *sb = gathering_send(c, s);
  size_t block = gathering_block(c, s);
  if (request) return gmpi_iallgather(sb, s->recv.base, block, GMPI_BYTE, twin, request);
  return gmpi_allgather(sb, s->recv.base, block, GMPI_BYTE, twin);
}

static gmpi_status_t gather_start(const coll_call_t *c, gmpi_comm_t twin, const sides_t *s,
                                  gmpi_request_t *request) {
  const void *sb = gathering_send(c, s);
  size_t block = gathering_block(c, s);
  if (request) return gmpi_igather(sb, s->recv.base, block, GMPI_BYTE, c->root, twin, request);
  return gmpi_gather(sb, s->recv.base, block, GMPI_BYTE, c->root, twin);
}

static gmpi_status_t allgatherv_start(const coll_call_t *c, gmpi_comm_t twin, const sides_t *s,
                                      gmpi_request_t *request) {
  const void *sb = gathering_send(c, s);
  size_t sc = gathering_v_count(c, s);
  const dropin_side_t *r = &s->recv;
  if (request)
    return gmpi_iallgatherv(sb, sc, r->base, r->bcounts, r->bdispls, GMPI_BYTE, twin, request);
  return gmpi_allgatherv(sb, sc, r->base, r->bcounts, r->bdispls, GMPI_BYTE, twin);
}

static gmpi_status_t gatherv_start(const coll_call_t *c, gmpi_comm_t twin, const sides_t *s,
                                   gmpi_request_t *request) {
  const void *sb = gathering_send(c, s);
  size_t sc = gathering_v_count(c, s);
  const dropin_side_t *r = &s->recv;
  if (request)
    return gmpi_igatherv(sb, sc, r->base, r->bcounts, r->bdispls, GMPI_BYTE, c->root, twin,
                         request);
  return gmpi_gatherv(sb, sc, r->base, r->bcounts, r->bdispls, GMPI_BYTE, c->root, twin);
}

static int allgather_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Iallgather(sb, c->sendcount, c->sendtype, rb, c->recvcount, c->recvtype, c->comm,
                           c->request);
  return PMPI_Allgather(sb, c->sendcount, c->sendtype, rb, c->recvcount, c->recvtype, c->comm);
}

static int gather_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Igather(sb, c->sendcount, c->sendtype, rb, c->recvcount, c->recvtype, c->root,
                        c->comm, c->request);
  return PMPI_Gather(sb, c->sendcount, c->sendtype, rb, c->recvcount, c->recvtype, c->root,
                     c->comm);
}

static int allgatherv_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Iallgatherv(sb, c->sendcount, c->sendtype, rb, c->recvcounts, c->rdispls,
                            c->recvtype, c->comm, c->request);
  return PMPI_Allgatherv(sb, c->sendcount, c->sendtype, rb, c->recvcounts, c->rdispls, c->recvtype,
                         c->comm);
}

static int gatherv_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Igatherv(sb, c->sendcount, c->sendtype, rb, c->recvcounts, c->rdispls, c->recvtype,
                         c->root, c->comm, c->request);
  return PMPI_Gatherv(sb, c->sendcount, c->sendtype, rb, c->recvcounts, c->rdispls, c->recvtype,
                      c->root, c->comm);
}

static const coll_kind_t allgather = {allgather_describe, gathering_prepare, allgather_start,
                                      allgather_mpi};
static const coll_kind_t gather = {gather_describe, gathering_prepare, gather_start, gather_mpi};
static const coll_kind_t allgatherv = {allgatherv_describe, gathering_prepare, allgatherv_start,
                                       allgatherv_mpi};
static const coll_kind_t gatherv = {gatherv_describe, gathering_prepare, gatherv_start,
                                    gatherv_mpi};

/* One builder for the gathering calls: the fixed-block forms pass recvcounts NULL. */
static int gathering_any(const coll_kind_t *kind, const void *sendbuf, int sendcount,
                         MPI_Datatype sendtype, void *recvbuf, int recvcount,
                         const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                         int root, MPI_Comm comm, MPI_Request *request, const char *func) {
  coll_call_t c = {.func = func,
                   .comm = comm,
                   .request = request,
                   .sendbuf = sendbuf,
                   .sendcount = sendcount,
                   .sendtype = sendtype,
                   .recvbuf = recvbuf,
                   .recvcount = recvcount,
                   .recvcounts = recvcounts,
                   .rdispls = displs,
                   .recvtype = recvtype,
                   .op = MPI_OP_NULL,
                   .root = root};
  return coll_run(kind, c);
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return gathering_any(&allgather, sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL, NULL,
                       recvtype, 0, comm, NULL, "MPI_Allgather");
}

int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  return gathering_any(&allgather, sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL, NULL,
                       recvtype, 0, comm, request, "MPI_Iallgather");
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return gathering_any(&gather, sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL, NULL,
                       recvtype, root, comm, NULL, "MPI_Gather");
}

int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                MPI_Request *request) {
  return gathering_any(&gather, sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL, NULL,
                       recvtype, root, comm, request, "MPI_Igather");
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm) {
  return gathering_any(&allgatherv, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs,
                       recvtype, 0, comm, NULL, "MPI_Allgatherv");
}

int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    MPI_Comm comm, MPI_Request *request) {
  return gathering_any(&allgatherv, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs,
                       recvtype, 0, comm, request, "MPI_Iallgatherv");
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                MPI_Comm comm) {
  return gathering_any(&gatherv, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs,
                       recvtype, root, comm, NULL, "MPI_Gatherv");
}

int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                 MPI_Comm comm, MPI_Request *request) {
  return gathering_any(&gatherv, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs,
                       recvtype, root, comm, request, "MPI_Igatherv");
}

/* Scattering (scatter, scatterv): the root sends n blocks (it alone has a send buffer that
 * counts), each rank receives one. In place, the root's block stays in sendbuf. */
static void scattering_describe(coll_call_t *c) {
  c->n = size_of(c->comm);
  c->me = rank_of(c->comm);
  c->is_root = c->me == c->root;
  c->inplace = c->is_root && c->recvbuf == MPI_IN_PLACE;
  c->send = c->is_root ? c->sendbuf : NULL;
  c->recv = c->inplace ? NULL : c->recvbuf;
  MPI_Datatype rt = c->inplace ? c->sendtype : c->recvtype, st = c->is_root ? c->sendtype : rt;
  c->native = gmpi_moves(st, rt, c->send, c->recv);
  c->named_type = c->is_root ? c->sendtype : c->recvtype;
  c->send_span = c->is_root ? blocks_span(c->sendcounts, c->sdispls, c->sendcount, c->n) : 0;
  c->recv_span = c->recvcount;
}

static void scatterv_describe(coll_call_t *c) {
  scattering_describe(c);
  c->args_missing = c->is_root && (!c->sendcounts || !c->sdispls);
}

static int scattering_prepare(coll_call_t *c, sides_t *s) {
  int rc = c->is_root ? dropin_side_init(&s->send, (void *)c->sendbuf, c->sendtype, c->n,
                                         c->sendcounts, c->sdispls, c->sendcount)
                      : MPI_SUCCESS;
  if (rc == MPI_SUCCESS && !c->inplace)
    rc = dropin_side_init(&s->recv, c->recvbuf, c->recvtype, 1, NULL, NULL, c->recvcount);
  return rc == MPI_SUCCESS ? dropin_side_pack_all(&s->send) : rc;
}

/* Where this rank's block lands: in place, the root's own block (gmpi's in place: rb == sb). */
static void *scattering_recv(const coll_call_t *c, const sides_t *s) {
  return c->inplace ? s->send.base : s->recv.base;
}

static gmpi_status_t scatter_start(const coll_call_t *c, gmpi_comm_t twin, const sides_t *s,
                                   gmpi_request_t *request) {
  void *rb = scattering_recv(c, s);
  size_t block = c->is_root ? s->send.bcounts[0] : s->recv.bcounts[0];
  if (request) return gmpi_iscatter(s->send.base, rb, block, GMPI_BYTE, c->root, twin, request);
  return gmpi_scatter(s->send.base, rb, block, GMPI_BYTE, c->root, twin);
}

static gmpi_status_t scatterv_start(const coll_call_t *c, gmpi_comm_t twin, const sides_t *s,
                                    gmpi_request_t *request) {
  void *rb = scattering_recv(c, s);
  size_t rc = c->inplace ? s->send.bcounts[c->me] : s->recv.bcounts[0];
  const dropin_side_t *sd = &s->send;
  if (request)
    return gmpi_iscatterv(sd->base, sd->bcounts, sd->bdispls, rb, rc, GMPI_BYTE, c->root, twin,
                          request);
  return gmpi_scatterv(sd->base, sd->bcounts, sd->bdispls, rb, rc, GMPI_BYTE, c->root, twin);
}

static int scatter_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Iscatter(sb, c->sendcount, c->sendtype, rb, c->recvcount, c->recvtype, c->root,
                         c->comm, c->request);
  return PMPI_Scatter(sb, c->sendcount, c->sendtype, rb, c->recvcount, c->recvtype, c->root,
                      c->comm);
}

static int scatterv_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Iscatterv(sb, c->sendcounts, c->sdispls, c->sendtype, rb, c->recvcount, c->recvtype,
                          c->root, c->comm, c->request);
  return PMPI_Scatterv(sb, c->sendcounts, c->sdispls, c->sendtype, rb, c->recvcount, c->recvtype,
                       c->root, c->comm);
}

static const coll_kind_t scatter = {scattering_describe, scattering_prepare, scatter_start,
                                    scatter_mpi};
static const coll_kind_t scatterv = {scatterv_describe, scattering_prepare, scatterv_start,
                                     scatterv_mpi};

/* One builder for the scattering calls: the fixed-block form passes sendcounts NULL. */
static int scattering_any(const coll_kind_t *kind, const void *sendbuf, int sendcount,
                          const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                          MPI_Comm comm, MPI_Request *request, const char *func) {
  coll_call_t c = {.func = func,
                   .comm = comm,
                   .request = request,
                   .sendbuf = sendbuf,
                   .sendcount = sendcount,
                   .sendcounts = sendcounts,
                   .sdispls = displs,
                   .sendtype = sendtype,
                   .recvbuf = recvbuf,
                   .recvcount = recvcount,
                   .recvtype = recvtype,
                   .op = MPI_OP_NULL,
                   .root = root};
  return coll_run(kind, c);
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return scattering_any(&scatter, sendbuf, sendcount, NULL, NULL, sendtype, recvbuf, recvcount,
                        recvtype, root, comm, NULL, "MPI_Scatter");
}

int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request *request) {
  return scattering_any(&scatter, sendbuf, sendcount, NULL, NULL, sendtype, recvbuf, recvcount,
                        recvtype, root, comm, request, "MPI_Iscatter");
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm) {
  return scattering_any(&scatterv, sendbuf, 0, sendcounts, displs, sendtype, recvbuf, recvcount,
                        recvtype, root, comm, NULL, "MPI_Scatterv");
}

int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                  MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  int root, MPI_Comm comm, MPI_Request *request) {
  return scattering_any(&scatterv, sendbuf, 0, sendcounts, displs, sendtype, recvbuf, recvcount,
                        recvtype, root, comm, request, "MPI_Iscatterv");
}

/* All to all (and its v-form): n blocks each way at every rank; in place, recvbuf holds both. */
static void alltoall_describe(coll_call_t *c) {
  c->n = size_of(c->comm);
  c->is_root = 1;
  c->inplace = c->sendbuf == MPI_IN_PLACE;
  c->send = c->sendbuf;
  c->recv = c->recvbuf;
  MPI_Datatype st = c->inplace ? c->recvtype : c->sendtype;
  c->native = gmpi_moves(st, c->recvtype, c->sendbuf, c->recvbuf);
  c->named_type = c->recvtype;
  c->send_span = c->inplace ? 0 : blocks_span(c->sendcounts, c->sdispls, c->sendcount, c->n);
  c->recv_span = blocks_span(c->recvcounts, c->rdispls, c->recvcount, c->n);
}

static void alltoallv_describe(coll_call_t *c) {
  alltoall_describe(c);
  c->args_missing =
      !c->recvcounts || !c->rdispls || (!c->inplace && (!c->sendcounts || !c->sdispls));
}

static int alltoall_prepare(coll_call_t *c, sides_t *s) {
  int rc = dropin_side_init(&s->recv, c->recvbuf, c->recvtype, c->n, c->recvcounts, c->rdispls,
                            c->recvcount);
  if (rc == MPI_SUCCESS && !c->inplace)
    rc = dropin_side_init(&s->send, (void *)c->sendbuf, c->sendtype, c->n, c->sendcounts,
                          c->sdispls, c->sendcount);
  if (rc != MPI_SUCCESS) return rc;
  return dropin_side_pack_all(c->inplace ? &s->recv : &s->send);
}

/* What this rank sends: in place, the receive side (gmpi's in place: sb == rb). */
static const dropin_side_t *alltoall_send(const coll_call_t *c, const sides_t *s) {
  return c->inplace ? &s->recv : &s->send;
}

static gmpi_status_t alltoall_start(const coll_call_t *c, gmpi_comm_t twin, const sides_t *s,
                                    gmpi_request_t *request) {
  const void *sb = alltoall_send(c, s)->base;
  size_t block = s->recv.bcounts[0];
  if (request) return gmpi_ialltoall(sb, s->recv.base, block, GMPI_BYTE, twin, request);
  return gmpi_alltoall(sb, s->recv.base, block, GMPI_BYTE, twin);
}

static gmpi_status_t alltoallv_start(const coll_call_t *c, gmpi_comm_t twin, const sides_t *s,
                                     gmpi_request_t *request) {
  const dropin_side_t *sd = alltoall_send(c, s), *r = &s->recv;
  if (request)
    return gmpi_ialltoallv(sd->base, sd->bcounts, sd->bdispls, r->base, r->bcounts, r->bdispls,
                           GMPI_BYTE, twin, request);
  return gmpi_alltoallv(sd->base, sd->bcounts, sd->bdispls, r->base, r->bcounts, r->bdispls,
                        GMPI_BYTE, twin);
}

static int alltoall_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Ialltoall(sb, c->sendcount, c->sendtype, rb, c->recvcount, c->recvtype, c->comm,
                          c->request);
  return PMPI_Alltoall(sb, c->sendcount, c->sendtype, rb, c->recvcount, c->recvtype, c->comm);
}

static int alltoallv_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Ialltoallv(sb, c->sendcounts, c->sdispls, c->sendtype, rb, c->recvcounts,
                           c->rdispls, c->recvtype, c->comm, c->request);
  return PMPI_Alltoallv(sb, c->sendcounts, c->sdispls, c->sendtype, rb, c->recvcounts, c->rdispls,
                        c->recvtype, c->comm);
}

static const coll_kind_t alltoall = {alltoall_describe, alltoall_prepare, alltoall_start,
                                     alltoall_mpi};
static const coll_kind_t alltoallv = {alltoallv_describe, alltoall_prepare, alltoallv_start,
                                      alltoallv_mpi};

/* One builder for both: the fixed-block form passes the arrays NULL. */
static int alltoall_any(const coll_kind_t *kind, const void *sendbuf, int sendcount,
                        const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                        void *recvbuf, int recvcount, const int recvcounts[], const int rdispls[],
                        MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request,
                        const char *func) {
  coll_call_t c = {.func = func,
                   .comm = comm,
                   .request = request,
                   .sendbuf = sendbuf,
                   .sendcount = sendcount,
                   .sendcounts = sendcounts,
                   .sdispls = sdispls,
                   .sendtype = sendtype,
                   .recvbuf = recvbuf,
                   .recvcount = recvcount,
                   .recvcounts = recvcounts,
                   .rdispls = rdispls,
                   .recvtype = recvtype,
                   .op = MPI_OP_NULL};
  return coll_run(kind, c);
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return alltoall_any(&alltoall, sendbuf, sendcount, NULL, NULL, sendtype, recvbuf, recvcount, NULL,
                      NULL, recvtype, comm, NULL, "MPI_Alltoall");
}

int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  return alltoall_any(&alltoall, sendbuf, sendcount, NULL, NULL, sendtype, recvbuf, recvcount, NULL,
                      NULL, recvtype, comm, request, "MPI_Ialltoall");
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm) {
  return alltoall_any(&alltoallv, sendbuf, 0, sendcounts, sdispls, sendtype, recvbuf, 0, recvcounts,
                      rdispls, recvtype, comm, NULL, "MPI_Alltoallv");
}

int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request *request) {
  return alltoall_any(&alltoallv, sendbuf, 0, sendcounts, sdispls, sendtype, recvbuf, 0, recvcounts,
                      rdispls, recvtype, comm, request, "MPI_Ialltoallv");
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

static gmpi_status_t ibarrier_start(const coll_call_t *c, gmpi_comm_t twin, const sides_t *s,
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
  return coll_run(&ibarrier, c);
}
