/* SPDX-License-Identifier: BSD-3-Clause */
/* Data-moving collectives (dropin_coll.h): gmpi moves this rank's sides as bytes, a derived
 * type packed in host memory first (dropin_pack.c; on device memory its packed bytes move from a
 * device block). So on a comm with a twin every rank takes gmpi whatever type and memory it
 * passed: MPI asks only that the type signatures match, and ranks that chose their engine from
 * their own types (a vector on some, contiguous ints on others) took different ones and waited
 * (MPICH's dtpools bcast on device memory). Comms without a twin are staged or MPI's. */
#include "dropin_coll.h"

/* Elements spanned by a v-layout: max(displs[i] + counts[i]). */
static MPI_Aint v_span(const int *counts, const int *displs, int n) {
  MPI_Aint span = 0;
  for (int i = 0; counts && displs && i < n; i++)
    if (counts[i] > 0 && displs[i] + counts[i] > span) span = displs[i] + counts[i];
  return span;
}

/* Elements of n blocks: the v-layout's span, or n blocks of count. */
static MPI_Aint blocks_span(const int *counts, const int *displs, int count, int n) {
  return counts ? v_span(counts, displs, n) : (MPI_Aint)count * n;
}

/* MPI_Bcast: the root sends its buffer (the call's recv side), the others receive into theirs. */
DROPIN_COLL_INLINE void bcast_describe(coll_call_t *c) {
  c->recv_used = c->recv.buf;
  c->recv_span = c->recv.count;
  c->named_type = c->recv.type;
  c->native = 1; /* any type, any memory (above) */
}

/* The root packs its side; the others unpack theirs after. */
static int bcast_prepare(coll_call_t *c, coll_sides_t *s) {
  c->is_root = dropin_rank_of(c->comm) == c->root;
  dropin_side_t *side = c->is_root ? &s->send : &s->recv;
  int rc = dropin_side_init(side, c->comm, c->recv.buf, c->recv.type, 1, NULL, NULL, c->recv.count);
  return rc == MPI_SUCCESS && c->is_root ? dropin_side_pack_all(side) : rc;
}

DROPIN_COLL_INLINE gmpi_status_t bcast_start(const coll_call_t *c, gmpi_comm_t twin,
                                             const coll_sides_t *s, gmpi_request_t *request) {
  const dropin_side_t *side = c->is_root ? &s->send : &s->recv;
  if (request) return gmpi_ibcast(side->base, side->bcounts[0], GMPI_BYTE, c->root, twin, request);
  return gmpi_bcast(side->base, side->bcounts[0], GMPI_BYTE, c->root, twin);
}

static int bcast_mpi(const coll_call_t *c, const void *sb, void *rb) {
  (void)sb;
  if (c->request) return PMPI_Ibcast(rb, c->recv.count, c->recv.type, c->root, c->comm, c->request);
  return PMPI_Bcast(rb, c->recv.count, c->recv.type, c->root, c->comm);
}

DROPIN_COLL_INLINE int bcast_view(coll_call_t *c, coll_sides_t *s) {
  c->is_root = dropin_rank_of(c->comm) == c->root;
  dropin_side_t *side = c->is_root ? &s->send : &s->recv;
  return dropin_side_view(side, c->recv.buf, c->recv.type, c->recv.count);
}

static const coll_kind_t bcast = {bcast_describe, bcast_prepare, bcast_start, bcast_mpi,
                                  bcast_view};

/* Gathering (allgather, gather and their v-forms): each rank sends one block; n blocks arrive,
 * at the root only when there is one (rooted). In place, this rank's block is in recvbuf. */
DROPIN_COLL_INLINE void gathering_describe(coll_call_t *c, int rooted) {
  c->n = dropin_size_of(c->comm);
  c->me = dropin_rank_of(c->comm);
  c->is_root = !rooted || c->me == c->root;
  c->inplace = c->is_root && c->send.buf == MPI_IN_PLACE;
  c->send_used = c->send.buf;
  c->recv_used = c->is_root ? c->recv.buf : NULL;
  c->native = 1;
  c->named_type = c->is_root ? c->recv.type : c->send.type;
  c->send_span = c->send.count;
  c->recv_span = c->is_root ? blocks_span(c->recv.counts, c->recv.displs, c->recv.count, c->n) : 0;
}

DROPIN_COLL_INLINE void allgather_describe(coll_call_t *c) { gathering_describe(c, 0); }
DROPIN_COLL_INLINE void gather_describe(coll_call_t *c) { gathering_describe(c, 1); }

/* The v-forms: gmpi needs the arrays where blocks arrive. */
static void allgatherv_describe(coll_call_t *c) {
  gathering_describe(c, 0);
  c->args_missing = !c->recv.counts || !c->recv.displs;
}

static void gatherv_describe(coll_call_t *c) {
  gathering_describe(c, 1);
  c->args_missing = c->is_root && (!c->recv.counts || !c->recv.displs);
}

static int gathering_prepare(coll_call_t *c, coll_sides_t *s) {
  int rc = c->is_root ? dropin_side_init(&s->recv, c->comm, c->recv.buf, c->recv.type, c->n,
                                         c->recv.counts, c->recv.displs, c->recv.count)
                      : MPI_SUCCESS;
  if (rc == MPI_SUCCESS && !c->inplace)
    rc = dropin_side_init(&s->send, c->comm, (void *)c->send.buf, c->send.type, 1, NULL, NULL,
                          c->send.count);
  if (rc != MPI_SUCCESS) return rc;
  return c->inplace ? dropin_side_pack(&s->recv, c->me) : dropin_side_pack_all(&s->send);
}

/* The fixed-block forms on contiguous types: a non-root of gather passes no receive side. */
DROPIN_COLL_INLINE int gathering_view(coll_call_t *c, coll_sides_t *s) {
  s->recv.base = NULL;
  if (c->is_root && !dropin_side_view(&s->recv, c->recv.buf, c->recv.type, c->recv.count)) return 0;
  return c->inplace || dropin_side_view(&s->send, (void *)c->send.buf, c->send.type, c->send.count);
}

/* What this rank sends: its block in recvbuf in place (gmpi's in place: sb == rb). */
static const void *gathering_send(const coll_call_t *c, const coll_sides_t *s) {
  return c->inplace ? s->recv.base : s->send.base;
}

/* Bytes per block of a fixed-block call: the receive side's where this rank has one. */
static size_t gathering_block(const coll_call_t *c, const coll_sides_t *s) {
  return c->is_root ? s->recv.bcounts[0] : s->send.bcounts[0];
}

/* Bytes this rank sends in a v-form (in place: its own block of the receive side). */
static size_t gathering_v_count(const coll_call_t *c, const coll_sides_t *s) {
  return c->inplace ? s->recv.bcounts[c->me] : s->send.bcounts[0];
}

DROPIN_COLL_INLINE gmpi_status_t allgather_start(const coll_call_t *c, gmpi_comm_t twin,
                                                 const coll_sides_t *s, gmpi_request_t *request) {
  const void *sb = gathering_send(c, s);
  size_t block = gathering_block(c, s);
  if (request) return gmpi_iallgather(sb, s->recv.base, block, GMPI_BYTE, twin, request);
  return gmpi_allgather(sb, s->recv.base, block, GMPI_BYTE, twin);
}

DROPIN_COLL_INLINE gmpi_status_t gather_start(const coll_call_t *c, gmpi_comm_t twin,
                                              const coll_sides_t *s, gmpi_request_t *request) {
  const void *sb = gathering_send(c, s);
  size_t block = gathering_block(c, s);
  if (request) return gmpi_igather(sb, s->recv.base, block, GMPI_BYTE, c->root, twin, request);
  return gmpi_gather(sb, s->recv.base, block, GMPI_BYTE, c->root, twin);
}

static gmpi_status_t allgatherv_start(const coll_call_t *c, gmpi_comm_t twin, const coll_sides_t *s,
                                      gmpi_request_t *request) {
  const void *sb = gathering_send(c, s);
  size_t sc = gathering_v_count(c, s);
  const dropin_side_t *r = &s->recv;
  if (request)
    return gmpi_iallgatherv(sb, sc, r->base, r->bcounts, r->bdispls, GMPI_BYTE, twin, request);
  return gmpi_allgatherv(sb, sc, r->base, r->bcounts, r->bdispls, GMPI_BYTE, twin);
}

static gmpi_status_t gatherv_start(const coll_call_t *c, gmpi_comm_t twin, const coll_sides_t *s,
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
    return PMPI_Iallgather(sb, c->send.count, c->send.type, rb, c->recv.count, c->recv.type,
                           c->comm, c->request);
  return PMPI_Allgather(sb, c->send.count, c->send.type, rb, c->recv.count, c->recv.type, c->comm);
}

static int gather_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Igather(sb, c->send.count, c->send.type, rb, c->recv.count, c->recv.type, c->root,
                        c->comm, c->request);
  return PMPI_Gather(sb, c->send.count, c->send.type, rb, c->recv.count, c->recv.type, c->root,
                     c->comm);
}

static int allgatherv_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Iallgatherv(sb, c->send.count, c->send.type, rb, c->recv.counts, c->recv.displs,
                            c->recv.type, c->comm, c->request);
  return PMPI_Allgatherv(sb, c->send.count, c->send.type, rb, c->recv.counts, c->recv.displs,
                         c->recv.type, c->comm);
}

static int gatherv_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Igatherv(sb, c->send.count, c->send.type, rb, c->recv.counts, c->recv.displs,
                         c->recv.type, c->root, c->comm, c->request);
  return PMPI_Gatherv(sb, c->send.count, c->send.type, rb, c->recv.counts, c->recv.displs,
                      c->recv.type, c->root, c->comm);
}

static const coll_kind_t allgather = {allgather_describe, gathering_prepare, allgather_start,
                                      allgather_mpi, gathering_view};
static const coll_kind_t gather = {gather_describe, gathering_prepare, gather_start, gather_mpi,
                                   gathering_view};
static const coll_kind_t allgatherv = {allgatherv_describe, gathering_prepare, allgatherv_start,
                                       allgatherv_mpi, NULL};
static const coll_kind_t gatherv = {gatherv_describe, gathering_prepare, gatherv_start, gatherv_mpi,
                                    NULL};

/* Scattering (scatter, scatterv): the root sends n blocks (it alone uses a send buffer), each
 * rank receives one. In place, the root's block stays in sendbuf. */
DROPIN_COLL_INLINE void scattering_describe(coll_call_t *c) {
  c->n = dropin_size_of(c->comm);
  c->me = dropin_rank_of(c->comm);
  c->is_root = c->me == c->root;
  c->inplace = c->is_root && c->recv.buf == MPI_IN_PLACE;
  c->send_used = c->is_root ? c->send.buf : NULL;
  c->recv_used = c->inplace ? NULL : c->recv.buf;
  c->native = 1;
  c->named_type = c->is_root ? c->send.type : c->recv.type;
  c->send_span = c->is_root ? blocks_span(c->send.counts, c->send.displs, c->send.count, c->n) : 0;
  c->recv_span = c->recv.count;
}

static void scatterv_describe(coll_call_t *c) {
  scattering_describe(c);
  c->args_missing = c->is_root && (!c->send.counts || !c->send.displs);
}

static int scattering_prepare(coll_call_t *c, coll_sides_t *s) {
  int rc = c->is_root ? dropin_side_init(&s->send, c->comm, (void *)c->send.buf, c->send.type, c->n,
                                         c->send.counts, c->send.displs, c->send.count)
                      : MPI_SUCCESS;
  if (rc == MPI_SUCCESS && !c->inplace)
    rc = dropin_side_init(&s->recv, c->comm, c->recv.buf, c->recv.type, 1, NULL, NULL,
                          c->recv.count);
  return rc == MPI_SUCCESS ? dropin_side_pack_all(&s->send) : rc;
}

/* scatter on contiguous types: only the root passes a send side. */
DROPIN_COLL_INLINE int scatter_view(coll_call_t *c, coll_sides_t *s) {
  s->send.base = NULL;
  if (c->is_root && !dropin_side_view(&s->send, (void *)c->send.buf, c->send.type, c->send.count))
    return 0;
  return c->inplace || dropin_side_view(&s->recv, c->recv.buf, c->recv.type, c->recv.count);
}

/* Where this rank's block lands: in place, the root's own block (gmpi's in place: rb == sb). */
static void *scattering_recv(const coll_call_t *c, const coll_sides_t *s) {
  return c->inplace ? s->send.base : s->recv.base;
}

DROPIN_COLL_INLINE gmpi_status_t scatter_start(const coll_call_t *c, gmpi_comm_t twin,
                                               const coll_sides_t *s, gmpi_request_t *request) {
  void *rb = scattering_recv(c, s);
  size_t block = c->is_root ? s->send.bcounts[0] : s->recv.bcounts[0];
  if (request) return gmpi_iscatter(s->send.base, rb, block, GMPI_BYTE, c->root, twin, request);
  return gmpi_scatter(s->send.base, rb, block, GMPI_BYTE, c->root, twin);
}

static gmpi_status_t scatterv_start(const coll_call_t *c, gmpi_comm_t twin, const coll_sides_t *s,
                                    gmpi_request_t *request) {
  void *rb = scattering_recv(c, s);
  size_t count = c->inplace ? s->send.bcounts[c->me] : s->recv.bcounts[0];
  const dropin_side_t *sd = &s->send;
  if (request)
    return gmpi_iscatterv(sd->base, sd->bcounts, sd->bdispls, rb, count, GMPI_BYTE, c->root, twin,
                          request);
  return gmpi_scatterv(sd->base, sd->bcounts, sd->bdispls, rb, count, GMPI_BYTE, c->root, twin);
}

static int scatter_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Iscatter(sb, c->send.count, c->send.type, rb, c->recv.count, c->recv.type, c->root,
                         c->comm, c->request);
  return PMPI_Scatter(sb, c->send.count, c->send.type, rb, c->recv.count, c->recv.type, c->root,
                      c->comm);
}

static int scatterv_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Iscatterv(sb, c->send.counts, c->send.displs, c->send.type, rb, c->recv.count,
                          c->recv.type, c->root, c->comm, c->request);
  return PMPI_Scatterv(sb, c->send.counts, c->send.displs, c->send.type, rb, c->recv.count,
                       c->recv.type, c->root, c->comm);
}

static const coll_kind_t scatter = {scattering_describe, scattering_prepare, scatter_start,
                                    scatter_mpi, scatter_view};
static const coll_kind_t scatterv = {scatterv_describe, scattering_prepare, scatterv_start,
                                     scatterv_mpi, NULL};

/* All to all (and its v-form): n blocks each way at every rank; in place, recvbuf holds both. */
DROPIN_COLL_INLINE void alltoall_describe(coll_call_t *c) {
  c->n = dropin_size_of(c->comm);
  c->is_root = 1;
  c->inplace = c->send.buf == MPI_IN_PLACE;
  c->send_used = c->send.buf;
  c->recv_used = c->recv.buf;
  c->native = 1;
  c->named_type = c->recv.type;
  c->send_span = c->inplace ? 0 : blocks_span(c->send.counts, c->send.displs, c->send.count, c->n);
  c->recv_span = blocks_span(c->recv.counts, c->recv.displs, c->recv.count, c->n);
}

static void alltoallv_describe(coll_call_t *c) {
  alltoall_describe(c);
  c->args_missing =
      !c->recv.counts || !c->recv.displs || (!c->inplace && (!c->send.counts || !c->send.displs));
}

static int alltoall_prepare(coll_call_t *c, coll_sides_t *s) {
  int rc = dropin_side_init(&s->recv, c->comm, c->recv.buf, c->recv.type, c->n, c->recv.counts,
                            c->recv.displs, c->recv.count);
  if (rc == MPI_SUCCESS && !c->inplace)
    rc = dropin_side_init(&s->send, c->comm, (void *)c->send.buf, c->send.type, c->n,
                          c->send.counts, c->send.displs, c->send.count);
  if (rc != MPI_SUCCESS) return rc;
  return dropin_side_pack_all(c->inplace ? &s->recv : &s->send);
}

DROPIN_COLL_INLINE int alltoall_view(coll_call_t *c, coll_sides_t *s) {
  if (!dropin_side_view(&s->recv, c->recv.buf, c->recv.type, c->recv.count)) return 0;
  return c->inplace || dropin_side_view(&s->send, (void *)c->send.buf, c->send.type, c->send.count);
}

/* What this rank sends: in place, the receive side (gmpi's in place: sb == rb). */
static const dropin_side_t *alltoall_send(const coll_call_t *c, const coll_sides_t *s) {
  return c->inplace ? &s->recv : &s->send;
}

DROPIN_COLL_INLINE gmpi_status_t alltoall_start(const coll_call_t *c, gmpi_comm_t twin,
                                                const coll_sides_t *s, gmpi_request_t *request) {
  const void *sb = alltoall_send(c, s)->base;
  size_t block = s->recv.bcounts[0];
  if (request) return gmpi_ialltoall(sb, s->recv.base, block, GMPI_BYTE, twin, request);
  return gmpi_alltoall(sb, s->recv.base, block, GMPI_BYTE, twin);
}

static gmpi_status_t alltoallv_start(const coll_call_t *c, gmpi_comm_t twin, const coll_sides_t *s,
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
    return PMPI_Ialltoall(sb, c->send.count, c->send.type, rb, c->recv.count, c->recv.type, c->comm,
                          c->request);
  return PMPI_Alltoall(sb, c->send.count, c->send.type, rb, c->recv.count, c->recv.type, c->comm);
}

static int alltoallv_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Ialltoallv(sb, c->send.counts, c->send.displs, c->send.type, rb, c->recv.counts,
                           c->recv.displs, c->recv.type, c->comm, c->request);
  return PMPI_Alltoallv(sb, c->send.counts, c->send.displs, c->send.type, rb, c->recv.counts,
                        c->recv.displs, c->recv.type, c->comm);
}

static const coll_kind_t alltoall = {alltoall_describe, alltoall_prepare, alltoall_start,
                                     alltoall_mpi, alltoall_view};
static const coll_kind_t alltoallv = {alltoallv_describe, alltoall_prepare, alltoallv_start,
                                      alltoallv_mpi, NULL};

/* ---- the MPI functions ---------------------------------------------------------------------- */

/* One side of a fixed-block call, and of a v-form. */
static coll_side_t block(const void *buf, int count, MPI_Datatype type) {
  return (coll_side_t){(void *)buf, count, NULL, NULL, type};
}

static coll_side_t blocks(const void *buf, const int *counts, const int *displs,
                          MPI_Datatype type) {
  return (coll_side_t){(void *)buf, 0, counts, displs, type};
}

static coll_call_t moving(const char *func, MPI_Comm comm, MPI_Request *request, coll_side_t send,
                          coll_side_t recv, int root) {
  return (coll_call_t){.func = func,
                       .comm = comm,
                       .request = request,
                       .send = send,
                       .recv = recv,
                       .op = MPI_OP_NULL,
                       .root = root};
}

/* MPI_Bcast and MPI_Ibcast, routed (dropin_coll_run). */
static int bcast_run(const char *func, void *buf, int count, MPI_Datatype type, int root,
                     MPI_Comm comm, MPI_Request *request) {
  coll_side_t none = block(NULL, 0, type);
  coll_call_t c = moving(func, comm, request, none, block(buf, count, type), root);
  return dropin_coll_run(&bcast, &c);
}

DROPIN_COLL_GENERIC int bcast_blocking(void *buf, int count, MPI_Datatype type, int root,
                                       MPI_Comm comm) {
  return bcast_run("MPI_Bcast", buf, count, type, root, comm, NULL);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  gmpi_comm_t twin;
  const dropin_type_row_t *row = dropin_coll_fast(comm, type, count, &twin);
  MPI_Comm wire = row ? dropin_coll_wire(buf, NULL, "MPI_Bcast", count) : MPI_COMM_NULL;
  if (wire != MPI_COMM_NULL)
    return dropin_wire_done(comm, PMPI_Bcast(buf, count, type, root, wire));
  if (row) /* bcast_view and bcast_start's call */
    return dropin_coll_fast_done(comm, "MPI_Bcast",
                                 gmpi_bcast(buf, (size_t)count * row->size, GMPI_BYTE, root, twin));
  return bcast_blocking(buf, count, type, root, comm);
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
               MPI_Request *request) {
  return bcast_run("MPI_Ibcast", buf, count, type, root, comm, request);
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  coll_side_t send = block(sendbuf, sendcount, sendtype),
              recv = block(recvbuf, recvcount, recvtype);
  coll_call_t c = moving("MPI_Allgather", comm, NULL, send, recv, 0);
  return dropin_coll_run(&allgather, &c);
}

int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  coll_side_t send = block(sendbuf, sendcount, sendtype),
              recv = block(recvbuf, recvcount, recvtype);
  coll_call_t c = moving("MPI_Iallgather", comm, request, send, recv, 0);
  return dropin_coll_run(&allgather, &c);
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  coll_side_t send = block(sendbuf, sendcount, sendtype),
              recv = block(recvbuf, recvcount, recvtype);
  coll_call_t c = moving("MPI_Gather", comm, NULL, send, recv, root);
  return dropin_coll_run(&gather, &c);
}

int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                MPI_Request *request) {
  coll_side_t send = block(sendbuf, sendcount, sendtype),
              recv = block(recvbuf, recvcount, recvtype);
  coll_call_t c = moving("MPI_Igather", comm, request, send, recv, root);
  return dropin_coll_run(&gather, &c);
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm) {
  coll_side_t send = block(sendbuf, sendcount, sendtype);
  coll_side_t recv = blocks(recvbuf, recvcounts, displs, recvtype);
  coll_call_t c = moving("MPI_Allgatherv", comm, NULL, send, recv, 0);
  return dropin_coll_run(&allgatherv, &c);
}

int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    MPI_Comm comm, MPI_Request *request) {
  coll_side_t send = block(sendbuf, sendcount, sendtype);
  coll_side_t recv = blocks(recvbuf, recvcounts, displs, recvtype);
  coll_call_t c = moving("MPI_Iallgatherv", comm, request, send, recv, 0);
  return dropin_coll_run(&allgatherv, &c);
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                MPI_Comm comm) {
  coll_side_t send = block(sendbuf, sendcount, sendtype);
  coll_side_t recv = blocks(recvbuf, recvcounts, displs, recvtype);
  coll_call_t c = moving("MPI_Gatherv", comm, NULL, send, recv, root);
  return dropin_coll_run(&gatherv, &c);
}

int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                 MPI_Comm comm, MPI_Request *request) {
  coll_side_t send = block(sendbuf, sendcount, sendtype);
  coll_side_t recv = blocks(recvbuf, recvcounts, displs, recvtype);
  coll_call_t c = moving("MPI_Igatherv", comm, request, send, recv, root);
  return dropin_coll_run(&gatherv, &c);
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  coll_side_t send = block(sendbuf, sendcount, sendtype),
              recv = block(recvbuf, recvcount, recvtype);
  coll_call_t c = moving("MPI_Scatter", comm, NULL, send, recv, root);
  return dropin_coll_run(&scatter, &c);
}

int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request *request) {
  coll_side_t send = block(sendbuf, sendcount, sendtype),
              recv = block(recvbuf, recvcount, recvtype);
  coll_call_t c = moving("MPI_Iscatter", comm, request, send, recv, root);
  return dropin_coll_run(&scatter, &c);
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm) {
  coll_side_t send = blocks(sendbuf, sendcounts, displs, sendtype);
  coll_side_t recv = block(recvbuf, recvcount, recvtype);
  coll_call_t c = moving("MPI_Scatterv", comm, NULL, send, recv, root);
  return dropin_coll_run(&scatterv, &c);
}

int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                  MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  int root, MPI_Comm comm, MPI_Request *request) {
  coll_side_t send = blocks(sendbuf, sendcounts, displs, sendtype);
  coll_side_t recv = block(recvbuf, recvcount, recvtype);
  coll_call_t c = moving("MPI_Iscatterv", comm, request, send, recv, root);
  return dropin_coll_run(&scatterv, &c);
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  coll_side_t send = block(sendbuf, sendcount, sendtype),
              recv = block(recvbuf, recvcount, recvtype);
  coll_call_t c = moving("MPI_Alltoall", comm, NULL, send, recv, 0);
  return dropin_coll_run(&alltoall, &c);
}

int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  coll_side_t send = block(sendbuf, sendcount, sendtype),
              recv = block(recvbuf, recvcount, recvtype);
  coll_call_t c = moving("MPI_Ialltoall", comm, request, send, recv, 0);
  return dropin_coll_run(&alltoall, &c);
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm) {
  coll_side_t send = blocks(sendbuf, sendcounts, sdispls, sendtype);
  coll_side_t recv = blocks(recvbuf, recvcounts, rdispls, recvtype);
  coll_call_t c = moving("MPI_Alltoallv", comm, NULL, send, recv, 0);
  return dropin_coll_run(&alltoallv, &c);
}

int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request *request) {
  coll_side_t send = blocks(sendbuf, sendcounts, sdispls, sendtype);
  coll_side_t recv = blocks(recvbuf, recvcounts, rdispls, recvtype);
  coll_call_t c = moving("MPI_Ialltoallv", comm, request, send, recv, 0);
  return dropin_coll_run(&alltoallv, &c);
}
