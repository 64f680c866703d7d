/* Public collectives: each names its arguments and hands them to core (gmpi_coll_run), which
 * validates, records or checks, and runs them on the comm's backend. */
#include "../core/comm.h"
#include "../core/error.h"
#include "../core/ops.h"

static gmpi_status_t run(gmpi_comm_t comm, gmpi_coll_args_t a) { return gmpi_coll_run(comm, &a); }

gmpi_status_t gmpi_allreduce(const void *sendbuf, void *recvbuf, size_t count, gmpi_dtype_t dtype,
                             gmpi_op_t op, gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  return run(comm, (gmpi_coll_args_t){GMPI_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0});
}

gmpi_status_t gmpi_bcast(void *buf, size_t count, gmpi_dtype_t dtype, int root, gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  return run(comm, (gmpi_coll_args_t){GMPI_COLL_BCAST, buf, buf, count, dtype, GMPI_SUM, root});
}

gmpi_status_t gmpi_reduce(const void *sendbuf, void *recvbuf, size_t count, gmpi_dtype_t dtype,
                          gmpi_op_t op, int root, gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  return run(comm, (gmpi_coll_args_t){GMPI_COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root});
}

gmpi_status_t gmpi_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                             gmpi_dtype_t dtype, gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  return run(comm,
             (gmpi_coll_args_t){GMPI_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, 0, 0});
}

gmpi_status_t gmpi_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                  gmpi_dtype_t dtype, gmpi_op_t op, gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  return run(comm, (gmpi_coll_args_t){GMPI_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype,
                                      op, 0});
}

gmpi_status_t gmpi_alltoall(const void *sendbuf, void *recvbuf, size_t count_per_peer,
                            gmpi_dtype_t dtype, gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  return run(comm,
             (gmpi_coll_args_t){GMPI_COLL_ALLTOALL, sendbuf, recvbuf, count_per_peer, dtype, 0, 0});
}

gmpi_status_t gmpi_barrier(gmpi_comm_t comm) {
  GMPI_API_ENTER(comm);
  return run(comm, (gmpi_coll_args_t){GMPI_COLL_BARRIER, NULL, NULL, 0, GMPI_BYTE, 0, 0});
}
