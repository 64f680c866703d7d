/* SPDX-License-Identifier: BSD-3-Clause */
/* The raw MPI baseline: the plain blocking MPI call on the very buffers gmpi used (host
 * memory, so cpu backend only), on a duplicate of MPI_COMM_WORLD. */
#include <stdio.h>
#include <string.h>

#include "bench.h"

/* MPI's datatype for each gmpi dtype that has one (16-bit floats and bool have none). */
static const struct {
  MPI_Datatype type;
  int ok;
} mpi_types[GMPI_DTYPE_COUNT] = {
    [GMPI_INT8] = {MPI_INT8_T, 1},
    [GMPI_UINT8] = {MPI_UINT8_T, 1},
    [GMPI_INT16] = {MPI_INT16_T, 1},
    [GMPI_UINT16] = {MPI_UINT16_T, 1},
    [GMPI_INT32] = {MPI_INT32_T, 1},
    [GMPI_UINT32] = {MPI_UINT32_T, 1},
    [GMPI_INT64] = {MPI_INT64_T, 1},
    [GMPI_UINT64] = {MPI_UINT64_T, 1},
    [GMPI_FLOAT32] = {MPI_FLOAT, 1},
    [GMPI_FLOAT64] = {MPI_DOUBLE, 1},
    [GMPI_COMPLEX64] = {MPI_C_FLOAT_COMPLEX, 1},
    [GMPI_COMPLEX128] = {MPI_C_DOUBLE_COMPLEX, 1},
    [GMPI_BYTE] = {MPI_BYTE, 1},
};
static const MPI_Op mpi_ops[GMPI_OP_COUNT] = {
    [GMPI_SUM] = MPI_SUM,   [GMPI_PROD] = MPI_PROD, [GMPI_MIN] = MPI_MIN,   [GMPI_MAX] = MPI_MAX,
    [GMPI_BAND] = MPI_BAND, [GMPI_BOR] = MPI_BOR,   [GMPI_BXOR] = MPI_BXOR, [GMPI_LAND] = MPI_LAND,
    [GMPI_LOR] = MPI_LOR,   [GMPI_LXOR] = MPI_LXOR,
};

int bench_mpi_type_ok(gmpi_dtype_t d) { return mpi_types[d].ok; }

static int mpi_available(const bench_ctx_t *c, char *why, size_t len) {
  if (c->backend != GMPI_BACKEND_CPU) {
    snprintf(why, len, "buffers are on the device; raw MPI needs host memory (see 'staged')");
    return 0;
  }
  if (!bench_mpi_type_ok(c->dtype)) {
    snprintf(why, len, "MPI has no %s datatype", gmpi_dtype_name(c->dtype));
    return 0;
  }
  if (c->op == GMPI_AVG) {
    snprintf(why, len, "MPI has no average op");
    return 0;
  }
  return 1;
}

/* Any collective, blocking, on host buffers. Shared with the staged baseline. */
int bench_mpi_call(bench_ctx_t *c, bench_kind_t kind, const bench_shape_t *s, const void *send,
                   void *recv) {
  MPI_Datatype t = mpi_types[c->dtype].type;
  MPI_Op op = mpi_ops[c->op];
  int n = (int)s->count, next = (c->rank + 1) % c->size, prev = (c->rank + c->size - 1) % c->size;
  switch (kind) {
  case BENCH_ALLREDUCE: return MPI_Allreduce(send, recv, n, t, op, c->mpi);
  case BENCH_BCAST: return MPI_Bcast(recv, n, t, c->root, c->mpi);
  case BENCH_REDUCE: return MPI_Reduce(send, recv, n, t, op, c->root, c->mpi);
  case BENCH_ALLGATHER: return MPI_Allgather(send, n, t, recv, n, t, c->mpi);
  case BENCH_REDUCE_SCATTER: return MPI_Reduce_scatter_block(send, recv, n, t, op, c->mpi);
  case BENCH_ALLTOALL: return MPI_Alltoall(send, n, t, recv, n, t, c->mpi);
  case BENCH_GATHER: return MPI_Gather(send, n, t, recv, n, t, c->root, c->mpi);
  case BENCH_SCATTER: return MPI_Scatter(send, n, t, recv, n, t, c->root, c->mpi);
  case BENCH_ALLGATHERV:
    return MPI_Allgatherv(send, n, t, recv, c->vcounts_int, c->vdispls_int, t, c->mpi);
  case BENCH_GATHERV:
    return MPI_Gatherv(send, n, t, recv, c->vcounts_int, c->vdispls_int, t, c->root, c->mpi);
  case BENCH_SCATTERV:
    return MPI_Scatterv(send, c->vcounts_int, c->vdispls_int, t, recv, n, t, c->root, c->mpi);
  case BENCH_ALLTOALLV:
    return MPI_Alltoallv(send, c->vcounts_int, c->vdispls_int, t, recv, c->vcounts_int,
                         c->vdispls_int, t, c->mpi);
  case BENCH_REDUCE_SCATTERV: return MPI_Reduce_scatter(send, recv, c->vcounts_int, t, op, c->mpi);
  case BENCH_SENDRECV:
    return MPI_Sendrecv(send, n, t, next, 0, recv, n, t, prev, 0, c->mpi, MPI_STATUS_IGNORE);
  case BENCH_COLL_COUNT: break;
  }
  return 1;
}

static int mpi_run(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s) {
  return bench_mpi_call(c, coll->kind, s, c->send, c->recv);
}

const bench_baseline_t bench_baseline_mpi = {"mpi", mpi_available, mpi_run, 0, NULL};
