/* SPDX-License-Identifier: BSD-3-Clause */
/* The arguments of one operation, as core validated them for an engine. */
#ifndef GMPI_CORE_ARGS_H
#define GMPI_CORE_ARGS_H

#include <stddef.h>

#include "dtype.h"
#include "gmpi.h"

typedef enum {
  GMPI_COLL_ALLREDUCE = 0,
  GMPI_COLL_BCAST,
  GMPI_COLL_REDUCE,
  GMPI_COLL_ALLGATHER,
  GMPI_COLL_REDUCE_SCATTER,
  GMPI_COLL_ALLTOALL,
  GMPI_COLL_BARRIER,
  GMPI_COLL_GATHER,
  GMPI_COLL_SCATTER,
  GMPI_COLL_ALLGATHERV,
  GMPI_COLL_GATHERV,
  GMPI_COLL_SCATTERV,
  GMPI_COLL_ALLTOALLV,
  GMPI_COLL_REDUCE_SCATTERV,
  GMPI_COLL_KIND_COUNT
} gmpi_coll_kind_t;

/* One collective, as the user called it. count means what the public call says:
 * elements per rank for allgather (sendcount), reduce_scatter (recvcount), alltoall
 * (count_per_peer), gather and scatter; this rank's sendcount for allgatherv and gatherv, its
 * recvcount for scatterv; unused (0) for alltoallv and reduce_scatterv. For bcast, sendbuf ==
 * recvbuf == buf. The per-rank arrays of the v-variants are in elements, NULL where the call
 * has none or this rank does not read them (root-only arrays elsewhere). */
typedef struct {
  gmpi_coll_kind_t kind;
  const void *sendbuf;
  void *recvbuf;
  size_t count;
  gmpi_dtype_t dtype;
  gmpi_op_t op;                       /* reductions only */
  int root;                           /* rooted collectives only */
  const size_t *sendcounts, *sdispls; /* scatterv (root), alltoallv */
  const size_t *recvcounts, *rdispls; /* allgatherv, gatherv (root), alltoallv, reduce_scatterv
                                         (recvcounts only: blocks are contiguous) */
} gmpi_coll_args_t;

typedef enum { GMPI_P2P_SEND = 0, GMPI_P2P_RECV = 1 } gmpi_p2p_dir_t;

/* One point-to-point operation. peer is dest for a send, source for a receive. */
typedef struct {
  gmpi_p2p_dir_t dir;
  void *buf; /* const for sends */
  size_t count;
  gmpi_dtype_t dtype;
  int peer;
  int tag;
  int sync; /* a synchronous send (gmpi_issend): complete once a receive matched it */
} gmpi_p2p_args_t;

/* The bytes a point-to-point operation moves. */
static inline size_t gmpi_p2p_bytes(const gmpi_p2p_args_t *a) {
  return a->count * gmpi_dtype_elem_size(a->dtype);
}

#endif
