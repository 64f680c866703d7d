/* SPDX-License-Identifier: BSD-3-Clause */
/* Routing by memory kind, in one place: an operation's buffers are classified once and the
 * operation goes to the comm's engine for that memory (src/core/engine.h). */
#ifndef GMPI_CORE_ROUTE_H
#define GMPI_CORE_ROUTE_H

#include "comm.h"
#include "engine.h"
#include "ops.h"

struct gmpi_plan;

/* The engine for a validated collective (ext from gmpi_coll_validate); a collective whose
 * send and receive buffers are different kinds of memory is refused. Asks the backend the
 * memory's kind. */
gmpi_status_t gmpi_route_coll_classified(gmpi_comm_t comm, const gmpi_coll_args_t *a,
                                         const gmpi_coll_extent_t *ext,
                                         const gmpi_engine_t **engine);
/* The same, inline for a backend that tells no memory kinds apart (cpu): every collective is
 * the host engine's, and a small collective's every instruction is latency. */
static inline gmpi_status_t gmpi_route_coll(gmpi_comm_t comm, const gmpi_coll_args_t *a,
                                            const gmpi_coll_extent_t *ext,
                                            const gmpi_engine_t **engine) {
  if (comm->ops->classify || comm->device_engine.coll)
    return gmpi_route_coll_classified(comm, a, ext, engine);
  *engine = &comm->host_engine;
  return GMPI_SUCCESS;
}
/* Set req->engine from the kind of its buffer. */
gmpi_status_t gmpi_route_p2p(gmpi_request_t req);
/* The engine a point-to-point operation on buf goes to, asking the backend the memory's kind. */
gmpi_status_t gmpi_route_p2p_classified(gmpi_comm_t comm, const void *buf,
                                        const gmpi_engine_t **engine);
/* The engine a point-to-point operation on buf goes to. Inline for a backend that tells no
 * memory kinds apart (cpu): every message is host memory, and a sender waits on this. */
static inline gmpi_status_t gmpi_route_p2p_buf(gmpi_comm_t comm, const void *buf,
                                               const gmpi_engine_t **engine) {
  if (comm->ops->classify || comm->device_engine.p2p)
    return gmpi_route_p2p_classified(comm, buf, engine);
  *engine = &comm->host_engine;
  return GMPI_SUCCESS;
}
/* The one engine both ends of a sendrecv go to; NULL when their buffers go to different ones. */
gmpi_status_t gmpi_route_p2p_pair(gmpi_comm_t comm, const gmpi_p2p_args_t *send,
                                  const gmpi_p2p_args_t *recv, const gmpi_engine_t **engine);
/* Does comm's backend move ptr as device memory? (gmpi_mem_is_device) */
gmpi_status_t gmpi_route_is_device(gmpi_comm_t comm, const void *ptr, int *is_device);
/* The engine for a whole plan: one memory kind per plan (a CUDA graph cannot hold MPI calls,
 * and MPI cannot read device memory). */
gmpi_status_t gmpi_route_plan(gmpi_comm_t comm, const struct gmpi_plan *plan,
                              const gmpi_engine_t **engine);
/* Before the host engine runs a collective or a plan in stream-ordered mode, the device work
 * the user enqueued on their stream must be done (it may produce the host data). Inline: only a
 * backend with a fence has anything to do. */
gmpi_status_t gmpi_route_fence_host(gmpi_comm_t comm);
static inline gmpi_status_t gmpi_route_fence(gmpi_comm_t comm, const gmpi_engine_t *engine) {
  if (engine != &comm->host_engine || !comm->ops->host_fence) return GMPI_SUCCESS;
  return gmpi_route_fence_host(comm);
}

#endif
