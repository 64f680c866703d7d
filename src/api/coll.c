/* SPDX-License-Identifier: BSD-3-Clause */
/* Public collectives: each names its arguments and hands them to core -- gmpi_coll_run for the
 * blocking call, gmpi_coll_start for its nonblocking form -- which validates, records or
 * checks, and runs them on the engine for the buffers' memory. */
#include "../core/coll_run.h"
#include "../core/comm.h"
#include "../core/error.h"
#include "../core/ops.h"

/* Each call builds its arguments in its own frame and passes their address: passed by value,
 * the struct was stored field by field and reloaded in wider pieces, a store-forwarding stall
 * that was about a fifth of a small gmpi_bcast's own time (perf, one rank). */

/* The caller has entered the public call (GMPI_API_ENTER). A NULL request is refused by core,
 * after the arguments: under GMPI_CHECK a refused call still meets the other ranks' check. */
static gmpi_status_t start(gmpi_comm_t comm, const gmpi_coll_args_t *a, gmpi_request_t *request) {
  return gmpi_coll_start(comm, a, request);
}

/* The arguments of each collective, shared by its blocking and nonblocking calls. */
static gmpi_coll_args_t allreduce_args(const void *sendbuf, void *recvbuf, size_t count,
                                       gmpi_dtype_t dtype, gmpi_op_t op) {
  return (gmpi_coll_args_t){.kind = GMPI_COLL_ALLREDUCE,
                            .sendbuf = sendbuf,
                            .recvbuf = recvbuf,
                            .count = count,
                            .dtype = dtype,
                            .op = op,
                            .root = 0};
}
static gmpi_coll_args_t bcast_args(void *buf, size_t count, gmpi_dtype_t dtype, int root) {
  return (gmpi_coll_args_t){.kind = GMPI_COLL_BCAST,
                            .sendbuf = buf,
                            .recvbuf = buf,
                            .count = count,
                            .dtype = dtype,
                            .op = GMPI_SUM,
                            .root = root};
}
static gmpi_coll_args_t reduce_args(const void *sendbuf, void *recvbuf, size_t count,
                                    gmpi_dtype_t dtype, gmpi_op_t op, int root) {
  return (gmpi_coll_args_t){.kind = GMPI_COLL_REDUCE,
                            .sendbuf = sendbuf,
                            .recvbuf = recvbuf,
                            .count = count,
                            .dtype = dtype,
                            .op = op,
                            .root = root};
}
static gmpi_coll_args_t allgather_args(const void *sendbuf, void *recvbuf, size_t sendcount,
                                       gmpi_dtype_t dtype) {
  return (gmpi_coll_args_t){.kind = GMPI_COLL_ALLGATHER,
                            .sendbuf = sendbuf,
                            .recvbuf = recvbuf,
                            .count = sendcount,
                            .dtype = dtype,
                            .op = 0,
                            .root = 0};
}
static gmpi_coll_args_t reduce_scatter_args(const void *sendbuf, void *recvbuf, size_t recvcount,
                                            gmpi_dtype_t dtype, gmpi_op_t op) {
  return (gmpi_coll_args_t){.kind = GMPI_COLL_REDUCE_SCATTER,
                            .sendbuf = sendbuf,
                            .recvbuf = recvbuf,
                            .count = recvcount,
                            .dtype = dtype,
                            .op = op,
                            .root = 0};
}
static gmpi_coll_args_t alltoall_args(const void *sendbuf, void *recvbuf, size_t count_per_peer,
                                      gmpi_dtype_t dtype) {
  return (gmpi_coll_args_t){.kind = GMPI_COLL_ALLTOALL,
                            .sendbuf = sendbuf,
                            .recvbuf = recvbuf,
                            .count = count_per_peer,
                            .dtype = dtype,
                            .op = 0,
                            .root = 0};
}
static gmpi_coll_args_t barrier_args(void) {
  return (gmpi_coll_args_t){.kind = GMPI_COLL_BARRIER,
                            .sendbuf = NULL,
                            .recvbuf = NULL,
                            .count = 0,
                            .dtype = GMPI_BYTE,
                            .op = 0,
                            .root = 0};
}
static gmpi_coll_args_t gather_args(gmpi_coll_kind_t kind, const void *sendbuf, void *recvbuf,
                                    size_t count, gmpi_dtype_t dtype, int root) {
  return (gmpi_coll_args_t){.kind = kind,
                            .sendbuf = sendbuf,
                            .recvbuf = recvbuf,
                            .count = count,
                            .dtype = dtype,
                            .op = 0,
                            .root = root};
}
static gmpi_coll_args_t allgatherv_args(const void *sendbuf, size_t sendcount, void *recvbuf,
                                        const size_t *recvcounts, const size_t *displs,
                                        gmpi_dtype_t dtype) {
  return (gmpi_coll_args_t){.kind = GMPI_COLL_ALLGATHERV,
                            .sendbuf = sendbuf,
                            .recvbuf = recvbuf,
                            .count = sendcount,
                            .dtype = dtype,
                            .recvcounts = recvcounts,
                            .rdispls = displs};
}
/* Root-only arrays are kept at the root only, so that other ranks never read them. */
static gmpi_coll_args_t gatherv_args(const void *sendbuf, size_t sendcount, void *recvbuf,
                                     const size_t *recvcounts, const size_t *displs,
                                     gmpi_dtype_t dtype, int root, gmpi_comm_t comm) {
  int at_root = comm->rank == root;
  return (gmpi_coll_args_t){.kind = GMPI_COLL_GATHERV,
                            .sendbuf = sendbuf,
                            .recvbuf = at_root ? recvbuf : NULL,
                            .count = sendcount,
                            .dtype = dtype,
                            .root = root,
                            .recvcounts = at_root ? recvcounts : NULL,
                            .rdispls = at_root ? displs : NULL};
}
static gmpi_coll_args_t scatterv_args(const void *sendbuf, const size_t *sendcounts,
                                      const size_t *displs, void *recvbuf, size_t recvcount,
                                      gmpi_dtype_t dtype, int root, gmpi_comm_t comm) {
  int at_root = comm->rank == root;
  return (gmpi_coll_args_t){.kind = GMPI_COLL_SCATTERV,
                            .sendbuf = at_root ? sendbuf : NULL,
                            .recvbuf = recvbuf,
                            .count = recvcount,
                            .dtype = dtype,
                            .root = root,
                            .sendcounts = at_root ? sendcounts : NULL,
                            .sdispls = at_root ? displs : NULL};
}
static gmpi_coll_args_t alltoallv_args(const void *sendbuf, const size_t *sendcounts,
                                       const size_t *sdispls, void *recvbuf,
                                       const size_t *recvcounts, const size_t *rdispls,
                                       gmpi_dtype_t dtype) {
  return (gmpi_coll_args_t){.kind = GMPI_COLL_ALLTOALLV,
                            .sendbuf = sendbuf,
                            .recvbuf = recvbuf,
                            .dtype = dtype,
                            .sendcounts = sendcounts,
                            .sdispls = sdispls,
                            .recvcounts = recvcounts,
                            .rdispls = rdispls};
}
static gmpi_coll_args_t reduce_scatterv_args(const void *sendbuf, void *recvbuf,
                                             const size_t *recvcounts, gmpi_dtype_t dtype,
                                             gmpi_op_t op) {
  return (gmpi_coll_args_t){.kind = GMPI_COLL_REDUCE_SCATTERV,
                            .sendbuf = sendbuf,
                            .recvbuf = recvbuf,
                            .dtype = dtype,
                            .op = op,
                            .recvcounts = recvcounts};
}
/* Root-only buffers are ignored elsewhere (gather's recvbuf, scatter's sendbuf). */
static gmpi_coll_args_t rooted_args(gmpi_coll_kind_t kind, const void *sendbuf, void *recvbuf,
                                    size_t count, gmpi_dtype_t dtype, int root, gmpi_comm_t comm) {
  int at_root = comm->rank == root;
  if (kind == GMPI_COLL_GATHER && !at_root) recvbuf = NULL;
  if (kind == GMPI_COLL_SCATTER && !at_root) sendbuf = NULL;
  return gather_args(kind, sendbuf, recvbuf, count, dtype, root);
}

/* ---- blocking ---------------------------------------------------------------------------- */

gmpi_status_t gmpi_allreduce(const void *sendbuf, void *recvbuf, size_t count, gmpi_dtype_t dtype,
                             gmpi_op_t op, gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a = allreduce_args(sendbuf, recvbuf, count, dtype, op);
  return gmpi_coll_run(comm, &a);
}

gmpi_status_t gmpi_bcast(void *buf, size_t count, gmpi_dtype_t dtype, int root, gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a = bcast_args(buf, count, dtype, root);
  return gmpi_coll_run(comm, &a);
}

gmpi_status_t gmpi_reduce(const void *sendbuf, void *recvbuf, size_t count, gmpi_dtype_t dtype,
                          gmpi_op_t op, int root, gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a = reduce_args(sendbuf, recvbuf, count, dtype, op, root);
  return gmpi_coll_run(comm, &a);
}

gmpi_status_t gmpi_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                             gmpi_dtype_t dtype, gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a = allgather_args(sendbuf, recvbuf, sendcount, dtype);
  return gmpi_coll_run(comm, &a);
}

gmpi_status_t gmpi_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                  gmpi_dtype_t dtype, gmpi_op_t op, gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a = reduce_scatter_args(sendbuf, recvbuf, recvcount, dtype, op);
  return gmpi_coll_run(comm, &a);
}

gmpi_status_t gmpi_alltoall(const void *sendbuf, void *recvbuf, size_t count_per_peer,
                            gmpi_dtype_t dtype, gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a = alltoall_args(sendbuf, recvbuf, count_per_peer, dtype);
  return gmpi_coll_run(comm, &a);
}

gmpi_status_t gmpi_barrier(gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a = barrier_args();
  return gmpi_coll_run(comm, &a);
}

gmpi_status_t gmpi_gather(const void *sendbuf, void *recvbuf, size_t count, gmpi_dtype_t dtype,
                          int root, gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a =
      rooted_args(GMPI_COLL_GATHER, sendbuf, recvbuf, count, dtype, root, comm);
  return gmpi_coll_run(comm, &a);
}

gmpi_status_t gmpi_scatter(const void *sendbuf, void *recvbuf, size_t count, gmpi_dtype_t dtype,
                           int root, gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a =
      rooted_args(GMPI_COLL_SCATTER, sendbuf, recvbuf, count, dtype, root, comm);
  return gmpi_coll_run(comm, &a);
}

gmpi_status_t gmpi_allgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                              const size_t *recvcounts, const size_t *displs, gmpi_dtype_t dtype,
                              gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a =
      allgatherv_args(sendbuf, sendcount, recvbuf, recvcounts, displs, dtype);
  return gmpi_coll_run(comm, &a);
}

gmpi_status_t gmpi_gatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                           const size_t *recvcounts, const size_t *displs, gmpi_dtype_t dtype,
                           int root, gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a =
      gatherv_args(sendbuf, sendcount, recvbuf, recvcounts, displs, dtype, root, comm);
  return gmpi_coll_run(comm, &a);
}

gmpi_status_t gmpi_scatterv(const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                            void *recvbuf, size_t recvcount, gmpi_dtype_t dtype, int root,
                            gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a =
      scatterv_args(sendbuf, sendcounts, displs, recvbuf, recvcount, dtype, root, comm);
  return gmpi_coll_run(comm, &a);
}

gmpi_status_t gmpi_alltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                             void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                             gmpi_dtype_t dtype, gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a =
      alltoallv_args(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype);
  return gmpi_coll_run(comm, &a);
}

gmpi_status_t gmpi_reduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                   gmpi_dtype_t dtype, gmpi_op_t op, gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a = reduce_scatterv_args(sendbuf, recvbuf, recvcounts, dtype, op);
  return gmpi_coll_run(comm, &a);
}

/* ---- nonblocking ------------------------------------------------------------------------- */

gmpi_status_t gmpi_iallreduce(const void *sendbuf, void *recvbuf, size_t count, gmpi_dtype_t dtype,
                              gmpi_op_t op, gmpi_comm_t comm, gmpi_request_t *request) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a = allreduce_args(sendbuf, recvbuf, count, dtype, op);
  return start(comm, &a, request);
}

gmpi_status_t gmpi_ibcast(void *buf, size_t count, gmpi_dtype_t dtype, int root, gmpi_comm_t comm,
                          gmpi_request_t *request) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a = bcast_args(buf, count, dtype, root);
  return start(comm, &a, request);
}

gmpi_status_t gmpi_ireduce(const void *sendbuf, void *recvbuf, size_t count, gmpi_dtype_t dtype,
                           gmpi_op_t op, int root, gmpi_comm_t comm, gmpi_request_t *request) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a = reduce_args(sendbuf, recvbuf, count, dtype, op, root);
  return start(comm, &a, request);
}

gmpi_status_t gmpi_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                              gmpi_dtype_t dtype, gmpi_comm_t comm, gmpi_request_t *request) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a = allgather_args(sendbuf, recvbuf, sendcount, dtype);
  return start(comm, &a, request);
}

gmpi_status_t gmpi_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                   gmpi_dtype_t dtype, gmpi_op_t op, gmpi_comm_t comm,
                                   gmpi_request_t *request) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a = reduce_scatter_args(sendbuf, recvbuf, recvcount, dtype, op);
  return start(comm, &a, request);
}

gmpi_status_t gmpi_ialltoall(const void *sendbuf, void *recvbuf, size_t count_per_peer,
                             gmpi_dtype_t dtype, gmpi_comm_t comm, gmpi_request_t *request) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a = alltoall_args(sendbuf, recvbuf, count_per_peer, dtype);
  return start(comm, &a, request);
}

gmpi_status_t gmpi_ibarrier(gmpi_comm_t comm, gmpi_request_t *request) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a = barrier_args();
  return start(comm, &a, request);
}

gmpi_status_t gmpi_igather(const void *sendbuf, void *recvbuf, size_t count, gmpi_dtype_t dtype,
                           int root, gmpi_comm_t comm, gmpi_request_t *request) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a =
      rooted_args(GMPI_COLL_GATHER, sendbuf, recvbuf, count, dtype, root, comm);
  return start(comm, &a, request);
}

gmpi_status_t gmpi_iscatter(const void *sendbuf, void *recvbuf, size_t count, gmpi_dtype_t dtype,
                            int root, gmpi_comm_t comm, gmpi_request_t *request) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a =
      rooted_args(GMPI_COLL_SCATTER, sendbuf, recvbuf, count, dtype, root, comm);
  return start(comm, &a, request);
}

gmpi_status_t gmpi_iallgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                               const size_t *recvcounts, const size_t *displs, gmpi_dtype_t dtype,
                               gmpi_comm_t comm, gmpi_request_t *request) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a =
      allgatherv_args(sendbuf, sendcount, recvbuf, recvcounts, displs, dtype);
  return start(comm, &a, request);
}

gmpi_status_t gmpi_igatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                            const size_t *recvcounts, const size_t *displs, gmpi_dtype_t dtype,
                            int root, gmpi_comm_t comm, gmpi_request_t *request) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a =
      gatherv_args(sendbuf, sendcount, recvbuf, recvcounts, displs, dtype, root, comm);
  return start(comm, &a, request);
}

gmpi_status_t gmpi_iscatterv(const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                             void *recvbuf, size_t recvcount, gmpi_dtype_t dtype, int root,
                             gmpi_comm_t comm, gmpi_request_t *request) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a =
      scatterv_args(sendbuf, sendcounts, displs, recvbuf, recvcount, dtype, root, comm);
  return start(comm, &a, request);
}

gmpi_status_t gmpi_ialltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                              void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                              gmpi_dtype_t dtype, gmpi_comm_t comm, gmpi_request_t *request) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a =
      alltoallv_args(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype);
  return start(comm, &a, request);
}

gmpi_status_t gmpi_ireduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                    gmpi_dtype_t dtype, gmpi_op_t op, gmpi_comm_t comm,
                                    gmpi_request_t *request) {
  GMPI_API_ENTER(comm);
  const gmpi_coll_args_t a = reduce_scatterv_args(sendbuf, recvbuf, recvcounts, dtype, op);
  return start(comm, &a, request);
}
