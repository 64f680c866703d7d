/* SPDX-License-Identifier: BSD-3-Clause */
/* Reductions and prefix reductions (dropin_coll.h): gmpi takes them on the program's own
 * buffers when it has the type and op, else they are staged (device memory) or left to MPI. */
#include <stdlib.h>

#include "dropin_coll.h"

static const void *in_place(const void *sendbuf, const void *recvbuf) {
  return sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
}

static int reducible(MPI_Datatype type, MPI_Op op, gmpi_dtype_t *d, gmpi_op_t *o) {
  const dropin_type_row_t *row = dropin_memo_type(type); /* the common case, inline */
  if (row)
    *d = row->g;
  else if (!dropin_dtype(type, d))
    return 0;
  return dropin_op(op, o) && gmpi_op_valid(*d, *o);
}

/* Every rank reduces count elements of one type (MPI_Allreduce, MPI_Reduce). */
DROPIN_COLL_INLINE void reduction_describe(coll_call_t *c) {
  c->send_used = c->send.buf;
  c->recv_used = c->recv.buf;
  c->send_span = c->recv_span = c->recv.count;
  c->named_type = c->recv.type;
  c->native = c->recv.count >= 0 && reducible(c->recv.type, c->op, &c->dtype, &c->gop);
}

DROPIN_COLL_INLINE gmpi_status_t allreduce_start(const coll_call_t *c, gmpi_comm_t twin,
                                                 const coll_sides_t *s, gmpi_request_t *request) {
  (void)s;
  const void *sb = in_place(c->send.buf, c->recv.buf);
  size_t count = (size_t)c->recv.count;
  if (request) return gmpi_iallreduce(sb, c->recv.buf, count, c->dtype, c->gop, twin, request);
  return gmpi_allreduce(sb, c->recv.buf, count, c->dtype, c->gop, twin);
}

static int allreduce_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Iallreduce(sb, rb, c->recv.count, c->recv.type, c->op, c->comm, c->request);
  return PMPI_Allreduce(sb, rb, c->recv.count, c->recv.type, c->op, c->comm);
}

static const coll_kind_t allreduce = {reduction_describe, NULL, allreduce_start, allreduce_mpi,
                                      NULL};

/* The receive buffer counts at the root only. */
DROPIN_COLL_INLINE void reduce_describe(coll_call_t *c) {
  c->is_root = dropin_rank_of(c->comm) == c->root;
  reduction_describe(c);
  c->recv_used = c->is_root ? c->recv.buf : NULL;
}

DROPIN_COLL_INLINE gmpi_status_t reduce_start(const coll_call_t *c, gmpi_comm_t twin,
                                              const coll_sides_t *s, gmpi_request_t *request) {
  (void)s;
  const void *sb = in_place(c->send.buf, c->recv_used);
  size_t count = (size_t)c->recv.count;
  if (request)
    return gmpi_ireduce(sb, c->recv_used, count, c->dtype, c->gop, c->root, twin, request);
  return gmpi_reduce(sb, c->recv_used, count, c->dtype, c->gop, c->root, twin);
}

static int reduce_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Ireduce(sb, rb, c->recv.count, c->recv.type, c->op, c->root, c->comm, c->request);
  return PMPI_Reduce(sb, rb, c->recv.count, c->recv.type, c->op, c->root, c->comm);
}

static const coll_kind_t reduce = {reduce_describe, NULL, reduce_start, reduce_mpi, NULL};

/* n blocks of recvcount elements are reduced; in place, the whole input is in recvbuf. */
static void reduce_scatter_block_describe(coll_call_t *c) {
  c->n = dropin_size_of(c->comm);
  reduction_describe(c);
  c->send_span = (MPI_Aint)c->recv.count * c->n;
  if (c->send.buf == MPI_IN_PLACE) c->recv_span = c->send_span;
}

static gmpi_status_t reduce_scatter_block_start(const coll_call_t *c, gmpi_comm_t twin,
                                                const coll_sides_t *s, gmpi_request_t *request) {
  (void)s;
  const void *sb = in_place(c->send.buf, c->recv.buf);
  size_t count = (size_t)c->recv.count;
  if (request) return gmpi_ireduce_scatter(sb, c->recv.buf, count, c->dtype, c->gop, twin, request);
  return gmpi_reduce_scatter(sb, c->recv.buf, count, c->dtype, c->gop, twin);
}

static int reduce_scatter_block_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Ireduce_scatter_block(sb, rb, c->recv.count, c->recv.type, c->op, c->comm,
                                      c->request);
  return PMPI_Reduce_scatter_block(sb, rb, c->recv.count, c->recv.type, c->op, c->comm);
}

static const coll_kind_t reduce_scatter_block = {reduce_scatter_block_describe, NULL,
                                                 reduce_scatter_block_start,
                                                 reduce_scatter_block_mpi, NULL};

/* Without recvcounts no buffer is used (MPI reports the missing array). The nonblocking form is
 * staged to MPI's on device memory, as it was before gmpi_ireduce_scatterv existed: taking it
 * to gmpi needs the counts kept alive with the request, and a test of its own. */
static void reduce_scatter_describe(coll_call_t *c) {
  c->n = dropin_size_of(c->comm);
  c->me = dropin_rank_of(c->comm);
  c->named_type = c->recv.type;
  c->no_gmpi = c->request ? "the drop-in does not take it to gmpi_ireduce_scatterv yet" : NULL;
  if (!c->recv.counts) return;
  MPI_Aint total = 0;
  for (int i = 0; i < c->n; i++)
    total += c->recv.counts[i];
  c->send_used = c->send.buf;
  c->recv_used = c->recv.buf;
  c->send_span = total;
  c->recv_span = c->send.buf == MPI_IN_PLACE ? total : c->recv.counts[c->me];
  c->native = !c->request && reducible(c->recv.type, c->op, &c->dtype, &c->gop);
}

/* Blocking only (describe never takes the nonblocking form to gmpi). */
static gmpi_status_t reduce_scatter_start(const coll_call_t *c, gmpi_comm_t twin,
                                          const coll_sides_t *s, gmpi_request_t *request) {
  (void)s, (void)request;
  size_t *counts = malloc((size_t)(c->n > 0 ? c->n : 1) * sizeof(*counts));
  if (!counts) return GMPI_ERR_NO_MEMORY;
  for (int i = 0; i < c->n; i++)
    counts[i] = (size_t)c->recv.counts[i];
  gmpi_status_t st = gmpi_reduce_scatterv(in_place(c->send.buf, c->recv.buf), c->recv.buf, counts,
                                          c->dtype, c->gop, twin);
  free(counts);
  return st;
}

static int reduce_scatter_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Ireduce_scatter(sb, rb, c->recv.counts, c->recv.type, c->op, c->comm, c->request);
  return PMPI_Reduce_scatter(sb, rb, c->recv.counts, c->recv.type, c->op, c->comm);
}

static const coll_kind_t reduce_scatter = {reduce_scatter_describe, NULL, reduce_scatter_start,
                                           reduce_scatter_mpi, NULL};

/* Prefix reductions: gmpi has none, so device buffers are staged and host buffers stay MPI's. */
static void scan_describe(coll_call_t *c) {
  reduction_describe(c);
  c->native = 0;
  c->no_gmpi = "gmpi has no scan";
}

static int scan_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Iscan(sb, rb, c->recv.count, c->recv.type, c->op, c->comm, c->request);
  return PMPI_Scan(sb, rb, c->recv.count, c->recv.type, c->op, c->comm);
}

static int exscan_mpi(const coll_call_t *c, const void *sb, void *rb) {
  if (c->request)
    return PMPI_Iexscan(sb, rb, c->recv.count, c->recv.type, c->op, c->comm, c->request);
  return PMPI_Exscan(sb, rb, c->recv.count, c->recv.type, c->op, c->comm);
}

static const coll_kind_t scan = {scan_describe, NULL, NULL, scan_mpi, NULL};
static const coll_kind_t exscan = {scan_describe, NULL, NULL, exscan_mpi, NULL};

/* ---- the MPI functions ---------------------------------------------------------------------- */

/* A reduction's call: one type for both sides; recvcounts in MPI_Reduce_scatter only. */
static coll_call_t reduction(const char *func, MPI_Comm comm, MPI_Request *request,
                             const void *sendbuf, void *recvbuf, int count, const int *recvcounts,
                             MPI_Datatype type, MPI_Op op, int root) {
  return (coll_call_t){.func = func,
                       .comm = comm,
                       .request = request,
                       .send = {(void *)sendbuf, count, NULL, NULL, type},
                       .recv = {recvbuf, count, recvcounts, NULL, type},
                       .op = op,
                       .root = root};
}

/* MPI_Allreduce and MPI_Iallreduce, MPI_Reduce and MPI_Ireduce, routed (dropin_coll_run). */
static int allreduce_run(const char *func, const void *sendbuf, void *recvbuf, int count,
                         MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  coll_call_t c = reduction(func, comm, request, sendbuf, recvbuf, count, NULL, type, op, 0);
  return dropin_coll_run(&allreduce, &c);
}

DROPIN_COLL_GENERIC int allreduce_blocking(const void *sendbuf, void *recvbuf, int count,
                                           MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  return allreduce_run("MPI_Allreduce", sendbuf, recvbuf, count, type, op, comm, NULL);
}

static int reduce_run(const char *func, const void *sendbuf, void *recvbuf, int count,
                      MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm, MPI_Request *request) {
  coll_call_t c = reduction(func, comm, request, sendbuf, recvbuf, count, NULL, type, op, root);
  return dropin_coll_run(&reduce, &c);
}

DROPIN_COLL_GENERIC int reduce_blocking(const void *sendbuf, void *recvbuf, int count,
                                        MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm) {
  return reduce_run("MPI_Reduce", sendbuf, recvbuf, count, type, op, root, comm, NULL);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  gmpi_comm_t twin;
  gmpi_op_t gop;
  const dropin_type_row_t *row = dropin_coll_fast(comm, type, count, &twin);
  if (dropin_coll_fast_op(row, op, &gop)) { /* allreduce_start's call, or MPI's on the wire */
    MPI_Comm wire = dropin_coll_wire(sendbuf, recvbuf, "MPI_Allreduce", count);
    if (wire != MPI_COMM_NULL)
      return dropin_wire_done(comm, PMPI_Allreduce(sendbuf, recvbuf, count, type, op, wire));
    return dropin_coll_fast_done(
        comm, "MPI_Allreduce",
        gmpi_allreduce(in_place(sendbuf, recvbuf), recvbuf, (size_t)count, row->g, gop, twin));
  }
  return allreduce_blocking(sendbuf, recvbuf, count, type, op, comm);
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request) {
  return allreduce_run("MPI_Iallreduce", sendbuf, recvbuf, count, type, op, comm, request);
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
               int root, MPI_Comm comm) {
  gmpi_comm_t twin;
  gmpi_op_t gop;
  const dropin_type_row_t *row = dropin_coll_fast(comm, type, count, &twin);
  if (dropin_coll_fast_op(row, op, &gop)) { /* reduce_describe, _start, or MPI's on the wire */
    void *rb = dropin.last_rank == root ? recvbuf : NULL;
    MPI_Comm wire = dropin_coll_wire(sendbuf, rb, "MPI_Reduce", count);
    if (wire != MPI_COMM_NULL)
      return dropin_wire_done(comm, PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, wire));
    return dropin_coll_fast_done(
        comm, "MPI_Reduce",
        gmpi_reduce(in_place(sendbuf, rb), rb, (size_t)count, row->g, gop, root, twin));
  }
  return reduce_blocking(sendbuf, recvbuf, count, type, op, root, comm);
}

int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                int root, MPI_Comm comm, MPI_Request *request) {
  return reduce_run("MPI_Ireduce", sendbuf, recvbuf, count, type, op, root, comm, request);
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype type,
                             MPI_Op op, MPI_Comm comm) {
  coll_call_t c = reduction("MPI_Reduce_scatter_block", comm, NULL, sendbuf, recvbuf, recvcount,
                            NULL, type, op, 0);
  return dropin_coll_run(&reduce_scatter_block, &c);
}

int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype type,
                              MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  coll_call_t c = reduction("MPI_Ireduce_scatter_block", comm, request, sendbuf, recvbuf, recvcount,
                            NULL, type, op, 0);
  return dropin_coll_run(&reduce_scatter_block, &c);
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                       MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  coll_call_t c =
      reduction("MPI_Reduce_scatter", comm, NULL, sendbuf, recvbuf, 0, recvcounts, type, op, 0);
  return dropin_coll_run(&reduce_scatter, &c);
}

int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                        MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  coll_call_t c =
      reduction("MPI_Ireduce_scatter", comm, request, sendbuf, recvbuf, 0, recvcounts, type, op, 0);
  return dropin_coll_run(&reduce_scatter, &c);
}

int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
             MPI_Comm comm) {
  coll_call_t c = reduction("MPI_Scan", comm, NULL, sendbuf, recvbuf, count, NULL, type, op, 0);
  return dropin_coll_run(&scan, &c);
}

int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm) {
  coll_call_t c = reduction("MPI_Exscan", comm, NULL, sendbuf, recvbuf, count, NULL, type, op, 0);
  return dropin_coll_run(&exscan, &c);
}

/* Not wrapped until MPICH's op_coll met them on device buffers, which MPI (not CUDA-aware) then
 * read: a segfault. Staged as the blocking forms are. */
int MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
              MPI_Comm comm, MPI_Request *request) {
  coll_call_t c = reduction("MPI_Iscan", comm, request, sendbuf, recvbuf, count, NULL, type, op, 0);
  return dropin_coll_run(&scan, &c);
}

int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                MPI_Comm comm, MPI_Request *request) {
  coll_call_t c =
      reduction("MPI_Iexscan", comm, request, sendbuf, recvbuf, count, NULL, type, op, 0);
  return dropin_coll_run(&exscan, &c);
}
