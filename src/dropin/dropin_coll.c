/* SPDX-License-Identifier: BSD-3-Clause */
/* Collectives. dropin_via decides per call: gmpi (device buffers, or every buffer under
 * GMPI_INTERPOSE=all, with types and ops gmpi has), MPI on host copies of device buffers
 * (derived types in reductions, user-defined ops, MINLOC/MAXLOC, comms without a twin), or MPI
 * as it is. Data-moving collectives move contiguous types as bytes; reductions need gmpi's
 * dtype and op. MPI_IN_PLACE becomes gmpi's in-place form (sendbuf == recvbuf). */
#include <stdio.h>
#include <stdlib.h>

#include "dropin.h"

/* Run one gmpi call; a failure goes to the comm's error handler. */
#define VIA_GMPI_CALL(comm, func, call)                                                            \
  do {                                                                                             \
    gmpi_status_t st_ = (call);                                                                    \
    return st_ == GMPI_SUCCESS ? MPI_SUCCESS : dropin_fail((comm), (func), st_);                   \
  } while (0)

/* Wrap a nonblocking gmpi call's request as the program's MPI request. */
#define VIA_GMPI_START(comm, func, call, request)                                                  \
  do {                                                                                             \
    gmpi_request_t g_ = NULL;                                                                      \
    gmpi_status_t st_ = (call);                                                                    \
    if (st_ != GMPI_SUCCESS) return dropin_fail((comm), (func), st_);                              \
    return dropin_req_wrap((comm), g_, NULL, (request));                                           \
  } while (0)

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

/* Element counts as gmpi's byte arrays: counts[i]*size, displs[i]*size (contiguous types). */
static size_t *byte_array(const int *v, int n, size_t size) {
  size_t *out = malloc((size_t)(n > 0 ? n : 1) * sizeof(*out));
  for (int i = 0; out && i < n; i++)
    out[i] = (size_t)v[i] * size;
  return out;
}

/* Elements spanned by a v-layout: max(displs[i] + counts[i]). */
static MPI_Aint v_span(const int *counts, const int *displs, int n) {
  MPI_Aint span = 0;
  for (int i = 0; counts && displs && i < n; i++)
    if (counts[i] > 0 && displs[i] + counts[i] > span) span = displs[i] + counts[i];
  return span;
}

/* ---- staging: MPI on host copies ------------------------------------------------------------ */

typedef struct {
  dropin_stage_t send, recv;
  void *sb, *rb;
} staged_t;

/* Host copies of the device buffers among sendbuf (scount elements) and recvbuf (rcount). */
static int stage(staged_t *s, MPI_Comm comm, const void *sendbuf, MPI_Aint scount,
                 MPI_Datatype stype, void *recvbuf, MPI_Aint rcount, MPI_Datatype rtype,
                 const char *func, const char *why) {
  s->sb = (void *)sendbuf;
  s->rb = recvbuf;
  int rc = dropin_stage_in(&s->send, comm, &s->sb, scount, stype);
  if (rc == MPI_SUCCESS) rc = dropin_stage_in(&s->recv, comm, &s->rb, rcount, rtype);
  if (rc != MPI_SUCCESS) dropin_stage_out(&s->send, 0);
  if (rc == MPI_SUCCESS) dropin_note_staged(func, why);
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

/* ---- reductions ----------------------------------------------------------------------------- */

/* Each collective is written once: request NULL is the blocking call, else the nonblocking one
 * (gmpi's i-form wrapped as an MPI request; a staged call keeps its host copies until MPI's
 * request completes). */

static int allreduce_any(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type,
                         MPI_Op op, MPI_Comm comm, MPI_Request *request, const char *func) {
  gmpi_comm_t g = NULL;
  gmpi_dtype_t d;
  gmpi_op_t o;
  int native = count >= 0 && reducible(type, op, &d, &o);
  switch (dropin_via(comm, sendbuf, recvbuf, native, &g)) {
  case VIA_GMPI: {
    const void *sb = in_place(sendbuf, recvbuf);
    if (request)
      VIA_GMPI_START(comm, func, gmpi_iallreduce(sb, recvbuf, (size_t)count, d, o, g, &g_),
                     request);
    VIA_GMPI_CALL(comm, func, gmpi_allreduce(sb, recvbuf, (size_t)count, d, o, g));
  }
  case VIA_STAGING: {
    staged_t s;
    int rc = stage(&s, comm, sendbuf, count, type, recvbuf, count, type, func,
                   why_staged(comm, type, op));
    if (rc != MPI_SUCCESS) return rc;
    if (!request) return unstage(&s, PMPI_Allreduce(s.sb, s.rb, count, type, op, comm));
    rc = PMPI_Iallreduce(s.sb, s.rb, count, type, op, comm, request);
    return unstage_later(&s, comm, rc, request);
  }
  default:
    if (request) return PMPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm, request);
    return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
  }
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  return allreduce_any(sendbuf, recvbuf, count, type, op, comm, NULL, "MPI_Allreduce");
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request) {
  return allreduce_any(sendbuf, recvbuf, count, type, op, comm, request, "MPI_Iallreduce");
}

static int reduce_any(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                      int root, MPI_Comm comm, MPI_Request *request, const char *func) {
  gmpi_comm_t g = NULL;
  gmpi_dtype_t d;
  gmpi_op_t o;
  int at_root = rank_of(comm) == root;
  void *rb = at_root ? recvbuf : NULL; /* significant at the root only */
  int native = count >= 0 && reducible(type, op, &d, &o);
  switch (dropin_via(comm, sendbuf, rb, native, &g)) {
  case VIA_GMPI: {
    const void *sb = in_place(sendbuf, rb);
    if (request)
      VIA_GMPI_START(comm, func, gmpi_ireduce(sb, rb, (size_t)count, d, o, root, g, &g_), request);
    VIA_GMPI_CALL(comm, func, gmpi_reduce(sb, rb, (size_t)count, d, o, root, g));
  }
  case VIA_STAGING: {
    staged_t s;
    int rc =
        stage(&s, comm, sendbuf, count, type, rb, count, type, func, why_staged(comm, type, op));
    if (rc != MPI_SUCCESS) return rc;
    void *r = at_root ? s.rb : recvbuf;
    if (!request) return unstage(&s, PMPI_Reduce(s.sb, r, count, type, op, root, comm));
    rc = PMPI_Ireduce(s.sb, r, count, type, op, root, comm, request);
    return unstage_later(&s, comm, rc, request);
  }
  default:
    if (request) return PMPI_Ireduce(sendbuf, recvbuf, count, type, op, root, comm, request);
    return PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
  }
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
               int root, MPI_Comm comm) {
  return reduce_any(sendbuf, recvbuf, count, type, op, root, comm, NULL, "MPI_Reduce");
}

int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                int root, MPI_Comm comm, MPI_Request *request) {
  return reduce_any(sendbuf, recvbuf, count, type, op, root, comm, request, "MPI_Ireduce");
}

static int reduce_scatter_block_any(const void *sendbuf, void *recvbuf, int recvcount,
                                    MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                                    MPI_Request *request, const char *func) {
  gmpi_comm_t g = NULL;
  gmpi_dtype_t d;
  gmpi_op_t o;
  int native = recvcount >= 0 && reducible(type, op, &d, &o);
  int n = size_of(comm);
  switch (dropin_via(comm, sendbuf, recvbuf, native, &g)) {
  case VIA_GMPI: {
    const void *sb = in_place(sendbuf, recvbuf);
    if (request)
      VIA_GMPI_START(comm, func, gmpi_ireduce_scatter(sb, recvbuf, (size_t)recvcount, d, o, g, &g_),
                     request);
    VIA_GMPI_CALL(comm, func, gmpi_reduce_scatter(sb, recvbuf, (size_t)recvcount, d, o, g));
  }
  case VIA_STAGING: {
    staged_t s;
    MPI_Aint rcount = sendbuf == MPI_IN_PLACE ? (MPI_Aint)recvcount * n : recvcount;
    int rc = stage(&s, comm, sendbuf, (MPI_Aint)recvcount * n, type, recvbuf, rcount, type, func,
                   why_staged(comm, type, op));
    if (rc != MPI_SUCCESS) return rc;
    if (!request)
      return unstage(&s, PMPI_Reduce_scatter_block(s.sb, s.rb, recvcount, type, op, comm));
    rc = PMPI_Ireduce_scatter_block(s.sb, s.rb, recvcount, type, op, comm, request);
    return unstage_later(&s, comm, rc, request);
  }
  default:
    if (request)
      return PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm, request);
    return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
  }
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

/* gmpi has no nonblocking reduce_scatterv: device buffers are staged to MPI's. */
int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                        MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  gmpi_comm_t g = NULL;
  int n = size_of(comm), me = rank_of(comm);
  if (dropin_via(comm, sendbuf, recvbuf, 0, &g) != VIA_STAGING || !recvcounts)
    return PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm, request);
  MPI_Aint total = 0;
  for (int i = 0; i < n; i++)
    total += recvcounts[i];
  staged_t s;
  int rc = stage(&s, comm, sendbuf, total, type, recvbuf,
                 sendbuf == MPI_IN_PLACE ? total : recvcounts[me], type, "MPI_Ireduce_scatter",
                 "gmpi has no nonblocking reduce_scatterv");
  if (rc != MPI_SUCCESS) return rc;
  rc = PMPI_Ireduce_scatter(s.sb, s.rb, recvcounts, type, op, comm, request);
  return unstage_later(&s, comm, rc, request);
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                       MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  gmpi_comm_t g = NULL;
  gmpi_dtype_t d;
  gmpi_op_t o;
  int n = size_of(comm), me = rank_of(comm);
  MPI_Aint total = 0;
  for (int i = 0; recvcounts && i < n; i++)
    total += recvcounts[i];
  int native = recvcounts && reducible(type, op, &d, &o);
  switch (dropin_via(comm, sendbuf, recvbuf, native, &g)) {
  case VIA_GMPI: {
    size_t *counts = byte_array(recvcounts, n, 1);
    if (!counts) return MPI_ERR_NO_MEM;
    gmpi_status_t st = gmpi_reduce_scatterv(in_place(sendbuf, recvbuf), recvbuf, counts, d, o, g);
    free(counts);
    return st == GMPI_SUCCESS ? MPI_SUCCESS : dropin_fail(comm, "MPI_Reduce_scatter", st);
  }
  case VIA_STAGING: {
    staged_t s;
    MPI_Aint rcount = sendbuf == MPI_IN_PLACE ? total : recvcounts[me];
    int rc = stage(&s, comm, sendbuf, total, type, recvbuf, rcount, type, "MPI_Reduce_scatter",
                   why_staged(comm, type, op));
    if (rc != MPI_SUCCESS) return rc;
    return unstage(&s, PMPI_Reduce_scatter(s.sb, s.rb, recvcounts, type, op, comm));
  }
  default: return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm);
  }
}

/* ---- data movement: every rank through gmpi, derived types packed (dropin_pack.c) ---------- */

/* Both sides of a data-moving collective; a nonblocking call's request owns them. */
typedef struct {
  dropin_side_t send, recv;
} sides_t;

/* Host buffers of any type take gmpi (packed), so every rank chooses alike whatever type it
 * passed; device buffers of a derived type are staged to MPI as before. */
static int gmpi_moves(MPI_Datatype a, MPI_Datatype b, const void *x, const void *y) {
  return (dropin_side_contiguous(a) && dropin_side_contiguous(b)) ||
         !(dropin_is_device(x) || dropin_is_device(y));
}

/* Sides on the stack for a blocking call, on the heap for a nonblocking one. */
static sides_t *sides_new(MPI_Request *request, sides_t *local) {
  sides_t *c = request ? malloc(sizeof(*c)) : local;
  if (c) dropin_side_clear(&c->send), dropin_side_clear(&c->recv);
  return c;
}

static void sides_release(void *p) {
  sides_t *c = p;
  dropin_side_free(&c->send);
  dropin_side_free(&c->recv);
  free(c);
}

static int sides_after(dropin_req_t *r) {
  return dropin_side_unpack_all(&((sides_t *)r->owned)->recv);
}

/* Finish a data-moving collective: rc is the preparation's outcome (MPI), st gmpi's. A blocking
 * call unpacks now; a nonblocking call's request unpacks when it completes. */
/* A side the layer could not lay out: MPI's class, named on stderr like gmpi's errors. */
static void refuse(MPI_Comm comm, const char *func, int rc) {
  if (rc == MPI_ERR_TYPE)
    fprintf(stderr, "[gmpi_mpi] %s: a datatype is MPI_DATATYPE_NULL or was never committed\n",
            func);
  PMPI_Comm_call_errhandler(comm, rc);
}

static int sides_finish(MPI_Comm comm, const char *func, int rc, gmpi_status_t st, gmpi_request_t g,
                        sides_t *c, MPI_Request *request) {
  if (rc == MPI_SUCCESS && st != GMPI_SUCCESS)
    rc = dropin_fail(comm, func, st);
  else if (rc != MPI_SUCCESS)
    refuse(comm, func, rc);
  if (rc == MPI_SUCCESS && request) {
    dropin_req_t *r = NULL;
    rc = dropin_req_wrap(comm, g, &r, request);
    if (rc == MPI_SUCCESS) {
      r->owned = c;
      r->after = sides_after;
      r->release = sides_release;
      return MPI_SUCCESS;
    }
  }
  if (rc == MPI_SUCCESS) rc = dropin_side_unpack_all(&c->recv);
  dropin_side_free(&c->send);
  dropin_side_free(&c->recv);
  if (request) free(c);
  return rc;
}

#define SIDES_CALL(st, request, gr, icall, call) ((st) = (request) ? (icall) : (call))

static int bcast_any(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
                     MPI_Request *request, const char *func) {
  gmpi_comm_t g = NULL;
  switch (dropin_via(comm, buf, NULL, gmpi_moves(type, type, buf, NULL), &g)) {
  case VIA_GMPI: {
    sides_t local, *c = sides_new(request, &local);
    if (!c) return MPI_ERR_NO_MEM;
    int at_root = rank_of(comm) == root; /* the root packs, the others unpack */
    dropin_side_t *s = at_root ? &c->send : &c->recv;
    int rc = dropin_side_init(s, buf, type, 1, NULL, NULL, count);
    if (rc == MPI_SUCCESS && at_root) rc = dropin_side_pack_all(s);
    gmpi_status_t st = GMPI_SUCCESS;
    gmpi_request_t gr = NULL;
    if (rc == MPI_SUCCESS)
      SIDES_CALL(st, request, gr, gmpi_ibcast(s->base, s->bcounts[0], GMPI_BYTE, root, g, &gr),
                 gmpi_bcast(s->base, s->bcounts[0], GMPI_BYTE, root, g));
    return sides_finish(comm, func, rc, st, gr, c, request);
  }
  case VIA_STAGING: {
    staged_t s;
    int rc =
        stage(&s, comm, NULL, 0, type, buf, count, type, func, why_staged(comm, type, MPI_OP_NULL));
    if (rc != MPI_SUCCESS) return rc;
    if (!request) return unstage(&s, PMPI_Bcast(s.rb, count, type, root, comm));
    return unstage_later(&s, comm, PMPI_Ibcast(s.rb, count, type, root, comm, request), request);
  }
  default:
    if (request) return PMPI_Ibcast(buf, count, type, root, comm, request);
    return PMPI_Bcast(buf, count, type, root, comm);
  }
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  return bcast_any(buf, count, type, root, comm, NULL, "MPI_Bcast");
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
               MPI_Request *request) {
  return bcast_any(buf, count, type, root, comm, request, "MPI_Ibcast");
}

static int allgather_any(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                         int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request,
                         const char *func) {
  gmpi_comm_t g = NULL;
  int n = size_of(comm), inplace = sendbuf == MPI_IN_PLACE;
  MPI_Datatype st_ = inplace ? recvtype : sendtype;
  switch (dropin_via(comm, sendbuf, recvbuf, gmpi_moves(st_, recvtype, sendbuf, recvbuf), &g)) {
  case VIA_GMPI: {
    sides_t local, *c = sides_new(request, &local);
    if (!c) return MPI_ERR_NO_MEM;
    int rc = dropin_side_init(&c->recv, recvbuf, recvtype, n, NULL, NULL, recvcount);
    if (rc == MPI_SUCCESS && !inplace)
      rc = dropin_side_init(&c->send, (void *)sendbuf, sendtype, 1, NULL, NULL, sendcount);
    if (rc == MPI_SUCCESS)
      rc = inplace ? dropin_side_pack(&c->recv, rank_of(comm)) : dropin_side_pack_all(&c->send);
    gmpi_status_t st = GMPI_SUCCESS;
    gmpi_request_t gr = NULL;
    if (rc == MPI_SUCCESS) {
      const void *sb = inplace ? c->recv.base : c->send.base; /* gmpi's in place: sb == rb */
      size_t block = c->recv.bcounts[0];
      SIDES_CALL(st, request, gr, gmpi_iallgather(sb, c->recv.base, block, GMPI_BYTE, g, &gr),
                 gmpi_allgather(sb, c->recv.base, block, GMPI_BYTE, g));
    }
    return sides_finish(comm, func, rc, st, gr, c, request);
  }
  case VIA_STAGING: {
    staged_t s;
    int rc = stage(&s, comm, sendbuf, sendcount, sendtype, recvbuf, (MPI_Aint)recvcount * n,
                   recvtype, func, why_staged(comm, recvtype, MPI_OP_NULL));
    if (rc != MPI_SUCCESS) return rc;
    if (!request)
      return unstage(&s,
                     PMPI_Allgather(s.sb, sendcount, sendtype, s.rb, recvcount, recvtype, comm));
    rc = PMPI_Iallgather(s.sb, sendcount, sendtype, s.rb, recvcount, recvtype, comm, request);
    return unstage_later(&s, comm, rc, request);
  }
  default:
    if (request)
      return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                             request);
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return allgather_any(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, NULL,
                       "MPI_Allgather");
}

int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  return allgather_any(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request,
                       "MPI_Iallgather");
}

static int alltoall_any(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request,
                        const char *func) {
  gmpi_comm_t g = NULL;
  int n = size_of(comm), inplace = sendbuf == MPI_IN_PLACE;
  MPI_Datatype st_ = inplace ? recvtype : sendtype;
  switch (dropin_via(comm, sendbuf, recvbuf, gmpi_moves(st_, recvtype, sendbuf, recvbuf), &g)) {
  case VIA_GMPI: {
    sides_t local, *c = sides_new(request, &local);
    if (!c) return MPI_ERR_NO_MEM;
    int rc = dropin_side_init(&c->recv, recvbuf, recvtype, n, NULL, NULL, recvcount);
    if (rc == MPI_SUCCESS && !inplace)
      rc = dropin_side_init(&c->send, (void *)sendbuf, sendtype, n, NULL, NULL, sendcount);
    if (rc == MPI_SUCCESS) rc = dropin_side_pack_all(inplace ? &c->recv : &c->send);
    gmpi_status_t st = GMPI_SUCCESS;
    gmpi_request_t gr = NULL;
    if (rc == MPI_SUCCESS) {
      const void *sb = inplace ? c->recv.base : c->send.base;
      size_t block = c->recv.bcounts[0];
      SIDES_CALL(st, request, gr, gmpi_ialltoall(sb, c->recv.base, block, GMPI_BYTE, g, &gr),
                 gmpi_alltoall(sb, c->recv.base, block, GMPI_BYTE, g));
    }
    return sides_finish(comm, func, rc, st, gr, c, request);
  }
  case VIA_STAGING: {
    staged_t s;
    int rc =
        stage(&s, comm, sendbuf, (MPI_Aint)sendcount * n, sendtype, recvbuf,
              (MPI_Aint)recvcount * n, recvtype, func, why_staged(comm, recvtype, MPI_OP_NULL));
    if (rc != MPI_SUCCESS) return rc;
    if (!request)
      return unstage(&s, PMPI_Alltoall(s.sb, sendcount, sendtype, s.rb, recvcount, recvtype, comm));
    rc = PMPI_Ialltoall(s.sb, sendcount, sendtype, s.rb, recvcount, recvtype, comm, request);
    return unstage_later(&s, comm, rc, request);
  }
  default:
    if (request)
      return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                            request);
    return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return alltoall_any(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, NULL,
                      "MPI_Alltoall");
}

int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  return alltoall_any(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request,
                      "MPI_Ialltoall");
}

/* Rooted: the root's block size comes from its recv (gather) or send (scatter) side. */
static int gather_any(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                      MPI_Request *request, const char *func) {
  gmpi_comm_t g = NULL;
  int me = rank_of(comm), at_root = me == root, n = size_of(comm);
  void *rb = at_root ? recvbuf : NULL;
  int inplace = at_root && sendbuf == MPI_IN_PLACE;
  MPI_Datatype st_ = inplace ? recvtype : sendtype, rt_ = at_root ? recvtype : st_;
  switch (dropin_via(comm, sendbuf, rb, gmpi_moves(st_, rt_, sendbuf, rb), &g)) {
  case VIA_GMPI: {
    sides_t local, *c = sides_new(request, &local);
    if (!c) return MPI_ERR_NO_MEM;
    int rc = at_root ? dropin_side_init(&c->recv, recvbuf, recvtype, n, NULL, NULL, recvcount)
                     : MPI_SUCCESS;
    if (rc == MPI_SUCCESS && !inplace)
      rc = dropin_side_init(&c->send, (void *)sendbuf, sendtype, 1, NULL, NULL, sendcount);
    if (rc == MPI_SUCCESS)
      rc = inplace ? dropin_side_pack(&c->recv, me) : dropin_side_pack_all(&c->send);
    gmpi_status_t st = GMPI_SUCCESS;
    gmpi_request_t gr = NULL;
    if (rc == MPI_SUCCESS) {
      const void *sb = inplace ? c->recv.base : c->send.base;
      size_t block = at_root ? c->recv.bcounts[0] : c->send.bcounts[0];
      SIDES_CALL(st, request, gr, gmpi_igather(sb, c->recv.base, block, GMPI_BYTE, root, g, &gr),
                 gmpi_gather(sb, c->recv.base, block, GMPI_BYTE, root, g));
    }
    return sides_finish(comm, func, rc, st, gr, c, request);
  }
  case VIA_STAGING: {
    staged_t s;
    int rc = stage(&s, comm, sendbuf, sendcount, sendtype, rb, (MPI_Aint)recvcount * n, recvtype,
                   func, why_staged(comm, at_root ? recvtype : sendtype, MPI_OP_NULL));
    if (rc != MPI_SUCCESS) return rc;
    void *r = at_root ? s.rb : recvbuf;
    if (!request)
      return unstage(&s,
                     PMPI_Gather(s.sb, sendcount, sendtype, r, recvcount, recvtype, root, comm));
    rc = PMPI_Igather(s.sb, sendcount, sendtype, r, recvcount, recvtype, root, comm, request);
    return unstage_later(&s, comm, rc, request);
  }
  default:
    if (request)
      return PMPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                          request);
    return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  }
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return gather_any(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, NULL,
                    "MPI_Gather");
}

int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                MPI_Request *request) {
  return gather_any(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request,
                    "MPI_Igather");
}

static int scatter_any(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                       MPI_Request *request, const char *func) {
  gmpi_comm_t g = NULL;
  int at_root = rank_of(comm) == root, n = size_of(comm);
  const void *sb = at_root ? sendbuf : NULL;
  int inplace = at_root && recvbuf == MPI_IN_PLACE;
  void *rb = inplace ? NULL : recvbuf;
  MPI_Datatype rt_ = inplace ? sendtype : recvtype, st_ = at_root ? sendtype : rt_;
  switch (dropin_via(comm, sb, rb, gmpi_moves(st_, rt_, sb, rb), &g)) {
  case VIA_GMPI: {
    sides_t local, *c = sides_new(request, &local);
    if (!c) return MPI_ERR_NO_MEM;
    int rc = at_root ? dropin_side_init(&c->send, (void *)sb, sendtype, n, NULL, NULL, sendcount)
                     : MPI_SUCCESS;
    if (rc == MPI_SUCCESS && !inplace)
      rc = dropin_side_init(&c->recv, recvbuf, recvtype, 1, NULL, NULL, recvcount);
    if (rc == MPI_SUCCESS) rc = dropin_side_pack_all(&c->send);
    gmpi_status_t st = GMPI_SUCCESS;
    gmpi_request_t gr = NULL;
    if (rc == MPI_SUCCESS) {
      void *r = inplace ? c->send.base : c->recv.base; /* gmpi's in place: the root's rb == sb */
      size_t block = at_root ? c->send.bcounts[0] : c->recv.bcounts[0];
      SIDES_CALL(st, request, gr, gmpi_iscatter(c->send.base, r, block, GMPI_BYTE, root, g, &gr),
                 gmpi_scatter(c->send.base, r, block, GMPI_BYTE, root, g));
    }
    return sides_finish(comm, func, rc, st, gr, c, request);
  }
  case VIA_STAGING: {
    staged_t s;
    int rc = stage(&s, comm, sb, (MPI_Aint)sendcount * n, sendtype, recvbuf, recvcount, recvtype,
                   func, why_staged(comm, at_root ? sendtype : recvtype, MPI_OP_NULL));
    if (rc != MPI_SUCCESS) return rc;
    const void *from = at_root ? s.sb : sendbuf;
    if (!request)
      return unstage(
          &s, PMPI_Scatter(from, sendcount, sendtype, s.rb, recvcount, recvtype, root, comm));
    rc = PMPI_Iscatter(from, sendcount, sendtype, s.rb, recvcount, recvtype, root, comm, request);
    return unstage_later(&s, comm, rc, request);
  }
  default:
    if (request)
      return PMPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                           request);
    return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  }
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return scatter_any(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, NULL,
                     "MPI_Scatter");
}

int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request *request) {
  return scatter_any(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                     request, "MPI_Iscatter");
}

/* ---- v-variants: element counts become gmpi's byte arrays ----------------------------------- */

static int allgatherv_any(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                          const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                          MPI_Comm comm, MPI_Request *request, const char *func) {
  gmpi_comm_t g = NULL;
  int n = size_of(comm), me = rank_of(comm), inplace = sendbuf == MPI_IN_PLACE;
  MPI_Datatype st_ = inplace ? recvtype : sendtype;
  switch (dropin_via(comm, sendbuf, recvbuf, gmpi_moves(st_, recvtype, sendbuf, recvbuf), &g)) {
  case VIA_GMPI: {
    if (!recvcounts || !displs) return MPI_ERR_ARG;
    sides_t local, *c = sides_new(request, &local);
    if (!c) return MPI_ERR_NO_MEM;
    int rc = dropin_side_init(&c->recv, recvbuf, recvtype, n, recvcounts, displs, 0);
    if (rc == MPI_SUCCESS && !inplace)
      rc = dropin_side_init(&c->send, (void *)sendbuf, sendtype, 1, NULL, NULL, sendcount);
    if (rc == MPI_SUCCESS)
      rc = inplace ? dropin_side_pack(&c->recv, me) : dropin_side_pack_all(&c->send);
    gmpi_status_t st = GMPI_SUCCESS;
    gmpi_request_t gr = NULL;
    if (rc == MPI_SUCCESS) {
      /* in place: sendcount is ignored (MPI_IN_PLACE comes with any value, -1 in MPICH's tests) */
      const void *sb = inplace ? c->recv.base : c->send.base;
      size_t sc = inplace ? c->recv.bcounts[me] : c->send.bcounts[0];
      dropin_side_t *r = &c->recv;
      SIDES_CALL(st, request, gr,
                 gmpi_iallgatherv(sb, sc, r->base, r->bcounts, r->bdispls, GMPI_BYTE, g, &gr),
                 gmpi_allgatherv(sb, sc, r->base, r->bcounts, r->bdispls, GMPI_BYTE, g));
    }
    return sides_finish(comm, func, rc, st, gr, c, request);
  }
  case VIA_STAGING: {
    staged_t s;
    int rc = stage(&s, comm, sendbuf, sendcount, sendtype, recvbuf, v_span(recvcounts, displs, n),
                   recvtype, func, why_staged(comm, recvtype, MPI_OP_NULL));
    if (rc != MPI_SUCCESS) return rc;
    if (!request)
      return unstage(
          &s, PMPI_Allgatherv(s.sb, sendcount, sendtype, s.rb, recvcounts, displs, recvtype, comm));
    rc = PMPI_Iallgatherv(s.sb, sendcount, sendtype, s.rb, recvcounts, displs, recvtype, comm,
                          request);
    return unstage_later(&s, comm, rc, request);
  }
  default:
    if (request)
      return PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                              comm, request);
    return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                           comm);
  }
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm) {
  return allgatherv_any(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                        NULL, "MPI_Allgatherv");
}

int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    MPI_Comm comm, MPI_Request *request) {
  return allgatherv_any(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                        request, "MPI_Iallgatherv");
}

static int gatherv_any(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                       MPI_Comm comm, MPI_Request *request, const char *func) {
  gmpi_comm_t g = NULL;
  int n = size_of(comm), me = rank_of(comm), at_root = me == root;
  void *rb = at_root ? recvbuf : NULL;
  int inplace = at_root && sendbuf == MPI_IN_PLACE;
  MPI_Datatype st_ = inplace ? recvtype : sendtype, rt_ = at_root ? recvtype : st_;
  switch (dropin_via(comm, sendbuf, rb, gmpi_moves(st_, rt_, sendbuf, rb), &g)) {
  case VIA_GMPI: {
    if (at_root && (!recvcounts || !displs)) return MPI_ERR_ARG;
    sides_t local, *c = sides_new(request, &local);
    if (!c) return MPI_ERR_NO_MEM;
    int rc = at_root ? dropin_side_init(&c->recv, recvbuf, recvtype, n, recvcounts, displs, 0)
                     : MPI_SUCCESS;
    if (rc == MPI_SUCCESS && !inplace)
      rc = dropin_side_init(&c->send, (void *)sendbuf, sendtype, 1, NULL, NULL, sendcount);
    if (rc == MPI_SUCCESS)
      rc = inplace ? dropin_side_pack(&c->recv, me) : dropin_side_pack_all(&c->send);
    gmpi_status_t st = GMPI_SUCCESS;
    gmpi_request_t gr = NULL;
    if (rc == MPI_SUCCESS) {
      const void *sb = inplace ? c->recv.base : c->send.base;
      size_t sc = inplace ? c->recv.bcounts[me] : c->send.bcounts[0];
      dropin_side_t *r = &c->recv;
      SIDES_CALL(st, request, gr,
                 gmpi_igatherv(sb, sc, r->base, r->bcounts, r->bdispls, GMPI_BYTE, root, g, &gr),
                 gmpi_gatherv(sb, sc, r->base, r->bcounts, r->bdispls, GMPI_BYTE, root, g));
    }
    return sides_finish(comm, func, rc, st, gr, c, request);
  }
  case VIA_STAGING: {
    staged_t s;
    int rc = stage(&s, comm, sendbuf, sendcount, sendtype, rb,
                   at_root ? v_span(recvcounts, displs, n) : 0, recvtype, func,
                   why_staged(comm, at_root ? recvtype : sendtype, MPI_OP_NULL));
    if (rc != MPI_SUCCESS) return rc;
    void *r = at_root ? s.rb : recvbuf;
    if (!request)
      return unstage(
          &s, PMPI_Gatherv(s.sb, sendcount, sendtype, r, recvcounts, displs, recvtype, root, comm));
    rc = PMPI_Igatherv(s.sb, sendcount, sendtype, r, recvcounts, displs, recvtype, root, comm,
                       request);
    return unstage_later(&s, comm, rc, request);
  }
  default:
    if (request)
      return PMPI_Igatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                           root, comm, request);
    return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                        comm);
  }
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                MPI_Comm comm) {
  return gatherv_any(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                     comm, NULL, "MPI_Gatherv");
}

int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                 MPI_Comm comm, MPI_Request *request) {
  return gatherv_any(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                     comm, request, "MPI_Igatherv");
}

static int scatterv_any(const void *sendbuf, const int sendcounts[], const int displs[],
                        MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                        int root, MPI_Comm comm, MPI_Request *request, const char *func) {
  gmpi_comm_t g = NULL;
  int n = size_of(comm), me = rank_of(comm), at_root = me == root;
  const void *sb = at_root ? sendbuf : NULL;
  int inplace = at_root && recvbuf == MPI_IN_PLACE;
  void *rb = inplace ? NULL : recvbuf;
  MPI_Datatype rt_ = inplace ? sendtype : recvtype, st_ = at_root ? sendtype : rt_;
  switch (dropin_via(comm, sb, rb, gmpi_moves(st_, rt_, sb, rb), &g)) {
  case VIA_GMPI: {
    if (at_root && (!sendcounts || !displs)) return MPI_ERR_ARG;
    sides_t local, *c = sides_new(request, &local);
    if (!c) return MPI_ERR_NO_MEM;
    int rc = at_root ? dropin_side_init(&c->send, (void *)sb, sendtype, n, sendcounts, displs, 0)
                     : MPI_SUCCESS;
    if (rc == MPI_SUCCESS && !inplace)
      rc = dropin_side_init(&c->recv, recvbuf, recvtype, 1, NULL, NULL, recvcount);
    if (rc == MPI_SUCCESS) rc = dropin_side_pack_all(&c->send);
    gmpi_status_t st = GMPI_SUCCESS;
    gmpi_request_t gr = NULL;
    if (rc == MPI_SUCCESS) {
      dropin_side_t *s = &c->send;
      void *r = inplace ? s->base : c->recv.base; /* gmpi's in place: the root's rb == sb */
      size_t cnt = inplace ? s->bcounts[me] : c->recv.bcounts[0];
      SIDES_CALL(st, request, gr,
                 gmpi_iscatterv(s->base, s->bcounts, s->bdispls, r, cnt, GMPI_BYTE, root, g, &gr),
                 gmpi_scatterv(s->base, s->bcounts, s->bdispls, r, cnt, GMPI_BYTE, root, g));
    }
    return sides_finish(comm, func, rc, st, gr, c, request);
  }
  case VIA_STAGING: {
    staged_t s;
    int rc = stage(&s, comm, sb, at_root ? v_span(sendcounts, displs, n) : 0, sendtype, recvbuf,
                   recvcount, recvtype, func,
                   why_staged(comm, at_root ? sendtype : recvtype, MPI_OP_NULL));
    if (rc != MPI_SUCCESS) return rc;
    const void *from = at_root ? s.sb : sendbuf;
    if (!request)
      return unstage(&s, PMPI_Scatterv(from, sendcounts, displs, sendtype, s.rb, recvcount,
                                       recvtype, root, comm));
    rc = PMPI_Iscatterv(from, sendcounts, displs, sendtype, s.rb, recvcount, recvtype, root, comm,
                        request);
    return unstage_later(&s, comm, rc, request);
  }
  default:
    if (request)
      return PMPI_Iscatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
                            root, comm, request);
    return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                         comm);
  }
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm) {
  return scatterv_any(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                      comm, NULL, "MPI_Scatterv");
}

int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                  MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  int root, MPI_Comm comm, MPI_Request *request) {
  return scatterv_any(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                      comm, request, "MPI_Iscatterv");
}

static int alltoallv_any(const void *sendbuf, const int sendcounts[], const int sdispls[],
                         MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                         const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                         MPI_Request *request, const char *func) {
  gmpi_comm_t g = NULL;
  int n = size_of(comm), inplace = sendbuf == MPI_IN_PLACE;
  MPI_Datatype st_ = inplace ? recvtype : sendtype;
  switch (dropin_via(comm, sendbuf, recvbuf, gmpi_moves(st_, recvtype, sendbuf, recvbuf), &g)) {
  case VIA_GMPI: {
    if (!recvcounts || !rdispls || (!inplace && (!sendcounts || !sdispls))) return MPI_ERR_ARG;
    sides_t local, *c = sides_new(request, &local);
    if (!c) return MPI_ERR_NO_MEM;
    int rc = dropin_side_init(&c->recv, recvbuf, recvtype, n, recvcounts, rdispls, 0);
    if (rc == MPI_SUCCESS && !inplace)
      rc = dropin_side_init(&c->send, (void *)sendbuf, sendtype, n, sendcounts, sdispls, 0);
    if (rc == MPI_SUCCESS) rc = dropin_side_pack_all(inplace ? &c->recv : &c->send);
    gmpi_status_t st = GMPI_SUCCESS;
    gmpi_request_t gr = NULL;
    if (rc == MPI_SUCCESS) {
      dropin_side_t *s = inplace ? &c->recv : &c->send, *r = &c->recv;
      SIDES_CALL(st, request, gr,
                 gmpi_ialltoallv(s->base, s->bcounts, s->bdispls, r->base, r->bcounts, r->bdispls,
                                 GMPI_BYTE, g, &gr),
                 gmpi_alltoallv(s->base, s->bcounts, s->bdispls, r->base, r->bcounts, r->bdispls,
                                GMPI_BYTE, g));
    }
    return sides_finish(comm, func, rc, st, gr, c, request);
  }
  case VIA_STAGING: {
    staged_t s;
    int rc = stage(&s, comm, sendbuf, inplace ? 0 : v_span(sendcounts, sdispls, n), sendtype,
                   recvbuf, v_span(recvcounts, rdispls, n), recvtype, func,
                   why_staged(comm, recvtype, MPI_OP_NULL));
    if (rc != MPI_SUCCESS) return rc;
    if (!request)
      return unstage(&s, PMPI_Alltoallv(s.sb, sendcounts, sdispls, sendtype, s.rb, recvcounts,
                                        rdispls, recvtype, comm));
    rc = PMPI_Ialltoallv(s.sb, sendcounts, sdispls, sendtype, s.rb, recvcounts, rdispls, recvtype,
                         comm, request);
    return unstage_later(&s, comm, rc, request);
  }
  default:
    if (request)
      return PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                             recvtype, comm, request);
    return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                          recvtype, comm);
  }
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm) {
  return alltoallv_any(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                       recvtype, comm, NULL, "MPI_Alltoallv");
}

int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request *request) {
  return alltoallv_any(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                       recvtype, comm, request, "MPI_Ialltoallv");
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

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request) {
  gmpi_comm_t g = NULL;
  if (dropin.mode == INTERPOSE_ALL && dropin_via(comm, NULL, NULL, 1, &g) == VIA_GMPI)
    VIA_GMPI_START(comm, "MPI_Ibarrier", gmpi_ibarrier(g, &g_), request);
  return PMPI_Ibarrier(comm, request);
}

/* ---- prefix reductions: gmpi has none, so device buffers are staged -------------------------- */

int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
             MPI_Comm comm) {
  gmpi_comm_t g = NULL;
  if (dropin_via(comm, sendbuf, recvbuf, 0, &g) != VIA_STAGING)
    return PMPI_Scan(sendbuf, recvbuf, count, type, op, comm);
  staged_t s;
  int rc =
      stage(&s, comm, sendbuf, count, type, recvbuf, count, type, "MPI_Scan", "gmpi has no scan");
  if (rc != MPI_SUCCESS) return rc;
  return unstage(&s, PMPI_Scan(s.sb, s.rb, count, type, op, comm));
}

int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm) {
  gmpi_comm_t g = NULL;
  if (dropin_via(comm, sendbuf, recvbuf, 0, &g) != VIA_STAGING)
    return PMPI_Exscan(sendbuf, recvbuf, count, type, op, comm);
  staged_t s;
  int rc =
      stage(&s, comm, sendbuf, count, type, recvbuf, count, type, "MPI_Exscan", "gmpi has no scan");
  if (rc != MPI_SUCCESS) return rc;
  return unstage(&s, PMPI_Exscan(s.sb, s.rb, count, type, op, comm));
}
