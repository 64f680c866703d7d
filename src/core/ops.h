/* SPDX-License-Identifier: BSD-3-Clause */
/* The operations as core sees them: validation, recording into a plan, checking across
 * ranks, dispatch to the backend. The public entry points (src/api) are thin wrappers. */
#ifndef GMPI_CORE_OPS_H
#define GMPI_CORE_OPS_H

#include "backend.h"
#include "dtype.h"
#include "gmpi.h"

/* Byte extents a collective reads and writes on this rank (0 when the buffer is unused). */
typedef struct {
  size_t send_bytes, recv_bytes;
  int in_place;
} gmpi_coll_extent_t;

/* What core knows of each collective kind; read inline: every collective asks. Defined here,
 * static, so that a call whose kind is a constant (each public collective's) reads it at
 * compile time and keeps only its own kind's checks (coll_run.h). */
typedef struct {
  const char *name, *iname; /* the blocking call's and the nonblocking one's */
  int has_root, has_op;
  int varies; /* counts differ between ranks (the v-variants): count is not compared */
} gmpi_coll_info_t;
static const gmpi_coll_info_t gmpi_coll_info[GMPI_COLL_KIND_COUNT] = {
    [GMPI_COLL_ALLREDUCE] = {"allreduce", "iallreduce", 0, 1, 0},
    [GMPI_COLL_BCAST] = {"bcast", "ibcast", 1, 0, 0},
    [GMPI_COLL_REDUCE] = {"reduce", "ireduce", 1, 1, 0},
    [GMPI_COLL_ALLGATHER] = {"allgather", "iallgather", 0, 0, 0},
    [GMPI_COLL_REDUCE_SCATTER] = {"reduce_scatter", "ireduce_scatter", 0, 1, 0},
    [GMPI_COLL_ALLTOALL] = {"alltoall", "ialltoall", 0, 0, 0},
    [GMPI_COLL_BARRIER] = {"barrier", "ibarrier", 0, 0, 0},
    [GMPI_COLL_GATHER] = {"gather", "igather", 1, 0, 0},
    [GMPI_COLL_SCATTER] = {"scatter", "iscatter", 1, 0, 0},
    [GMPI_COLL_ALLGATHERV] = {"allgatherv", "iallgatherv", 0, 0, 1},
    [GMPI_COLL_GATHERV] = {"gatherv", "igatherv", 1, 0, 1},
    [GMPI_COLL_SCATTERV] = {"scatterv", "iscatterv", 1, 0, 1},
    [GMPI_COLL_ALLTOALLV] = {"alltoallv", "ialltoallv", 0, 0, 1},
    [GMPI_COLL_REDUCE_SCATTERV] = {"reduce_scatterv", "ireduce_scatterv", 0, 1, 1},
};

static inline const char *gmpi_coll_name(gmpi_coll_kind_t kind) {
  return (unsigned)kind < GMPI_COLL_KIND_COUNT ? gmpi_coll_info[kind].name : "invalid";
}
/* "iallreduce": the nonblocking form's name, a static string (the flight record keeps it). */
static inline const char *gmpi_coll_iname(gmpi_coll_kind_t kind) {
  return (unsigned)kind < GMPI_COLL_KIND_COUNT ? gmpi_coll_info[kind].iname : "invalid";
}
/* Is the root/op field meaningful for this kind? */
static inline int gmpi_coll_has_root(gmpi_coll_kind_t kind) {
  return gmpi_coll_info[kind].has_root;
}
static inline int gmpi_coll_has_op(gmpi_coll_kind_t kind) { return gmpi_coll_info[kind].has_op; }
/* Do counts differ between ranks (the v-variants)? */
static inline int gmpi_coll_varies(gmpi_coll_kind_t kind) { return gmpi_coll_info[kind].varies; }
/* Is this rank's part of a validated collective in place (the forms in gmpi.h)? */
int gmpi_coll_in_place(gmpi_comm_t comm, const gmpi_coll_args_t *a);
/* What this rank sends to and receives from peer in a validated data-moving collective
 * (gather, scatter, and the v-variants but reduce_scatterv), in elements at sendbuf and at
 * recvbuf. An in-place rank's block to itself is {0}: it is already where it belongs; an
 * in-place alltoallv sends from a copy of recvbuf laid out as recvcounts/rdispls say. */
typedef struct {
  size_t send_count, send_displ, recv_count, recv_displ;
} gmpi_coll_pair_t;
gmpi_coll_pair_t gmpi_coll_pair(gmpi_comm_t comm, const gmpi_coll_args_t *a, int peer);
/* Elements a validated per-rank layout spans: the furthest end of a non-empty block. */
size_t gmpi_layout_span(int nranks, const size_t *counts, const size_t *displs);
/* Validation and the blocking run (gmpi_coll_run) are inline for the public calls:
 * coll_run.h. */
/* A collective as a request (the nonblocking collectives): validated and started now,
 * completed by any wait or test. While a plan records, it is recorded like the blocking call
 * and *req waits nothing. */
gmpi_status_t gmpi_coll_start(gmpi_comm_t comm, const gmpi_coll_args_t *a, gmpi_request_t *req);

/* Probe for a message (wait: until one arrives, bounded by GMPI_TIMEOUT; else one look). */
gmpi_status_t gmpi_p2p_probe(gmpi_comm_t comm, int source, int tag, int wait, int *flag,
                             gmpi_msg_status_t *status);
/* gmpi_sendrecv as one exchange on one engine, with no request (engine.h p2p_exchange), when
 * it can be: not recording, not synchronous, a definite other rank on each side that is not
 * GMPI_PROC_NULL (such a side is left out, one side at least remaining), the buffers on one
 * engine that can. *ran 0: nothing was done (but validation), post two requests. */
gmpi_status_t gmpi_p2p_exchange(gmpi_comm_t comm, const gmpi_p2p_args_t *send,
                                const gmpi_p2p_args_t *recv, gmpi_msg_status_t *status, int *ran);
/* A blocking send or receive (a->dir) as a one-sided exchange (engine.h p2p_exchange), when it
 * can be: not recording, a definite other rank, a buffer on an engine that can. *ran 0:
 * nothing was done (but validation), post a request. */
gmpi_status_t gmpi_p2p_single(gmpi_comm_t comm, const gmpi_p2p_args_t *a, gmpi_msg_status_t *status,
                              int *ran);
/* Validate a point-to-point operation's arguments. */
gmpi_status_t gmpi_p2p_validate(gmpi_comm_t comm, const gmpi_p2p_args_t *a);

/* The INVALID_ARG of gmpi_count_bytes, out of line: described once, off the per-call path. */
gmpi_status_t gmpi_count_bytes_overflow(size_t count, gmpi_dtype_t dtype, size_t multiple,
                                        const char *arg);

/* Bytes of count elements of dtype, or an INVALID_ARG naming arg when it overflows. Inline:
 * every call's validation runs it (checked multiplications, not divisions). */
static inline gmpi_status_t gmpi_count_bytes(size_t count, gmpi_dtype_t dtype, size_t multiple,
                                             const char *arg, size_t *bytes) {
  size_t per_rank, all;
  if (__builtin_mul_overflow(count, gmpi_dtype_elem_size(dtype), &per_rank) ||
      __builtin_mul_overflow(per_rank, multiple, &all))
    return gmpi_count_bytes_overflow(count, dtype, multiple, arg);
  *bytes = all;
  return GMPI_SUCCESS;
}

#endif
