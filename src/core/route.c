/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory kinds are routed here and nowhere else. Host memory always goes to the host engine
 * (MPI); device memory to the backend's device engine. Operations that use no buffer (a
 * barrier, count 0) go to the device engine in stream-ordered mode, so that they stay in the
 * user's stream order, and to the host engine otherwise. */
#include "route.h"

#include "coll_run.h"
#include "comm.h"
#include "error.h"
#include "hostmem.h"
#include "ops.h"
#include "plan.h"
#include "request.h"

/* A pointer the process's layout vouches for is host memory before the backend is asked
 * (hostmem.h): a driver's answer costs more than a small host call. */
static gmpi_status_t classify(gmpi_comm_t comm, const void *ptr, const char *arg,
                              gmpi_mem_kind_t *kind) {
  *kind = ptr ? GMPI_MEM_HOST : GMPI_MEM_NONE;
  if (!ptr || !comm->ops->classify || gmpi_hostmem_surely(ptr)) return GMPI_SUCCESS;
  return comm->ops->classify(comm, ptr, arg, kind);
}

static int stream_ordered(gmpi_comm_t comm) {
  return comm->ops->stream_ordered && comm->ops->stream_ordered(comm);
}

static const gmpi_engine_t *engine_for(gmpi_comm_t comm, gmpi_mem_kind_t kind) {
  if (kind == GMPI_MEM_NONE && comm->device_engine.coll && stream_ordered(comm))
    kind = GMPI_MEM_DEVICE;
  return kind == GMPI_MEM_DEVICE ? &comm->device_engine : &comm->host_engine;
}

static const char *kind_name(gmpi_mem_kind_t kind) {
  return kind == GMPI_MEM_DEVICE ? "device" : "host";
}

/* The one kind of memory a collective uses on this rank (NONE when it uses none).
 *
 * Every rank must route a collective to the same engine. With equal counts they do: a count of
 * 0 is 0 everywhere. A v-variant may move nothing on this rank and data on others, so there
 * its buffer pointers are classified even when they span no bytes, and a rank that passes no
 * pointer at all takes the device engine on a comm that has one (docs/api.md: on cuda, a rank with
 * nothing to move passes its usual buffers, or NULL for device memory). */
static gmpi_status_t coll_kind(gmpi_comm_t comm, const gmpi_coll_args_t *a,
                               const gmpi_coll_extent_t *ext, gmpi_mem_kind_t *kind) {
  gmpi_mem_kind_t s = GMPI_MEM_NONE, r = GMPI_MEM_NONE;
  int varies = gmpi_coll_varies(a->kind);
  if (ext->send_bytes || varies) GMPI_CHECK(classify(comm, a->sendbuf, "sendbuf", &s));
  if (ext->recv_bytes || varies) GMPI_CHECK(classify(comm, a->recvbuf, "recvbuf", &r));
  if (s != GMPI_MEM_NONE && r != GMPI_MEM_NONE && s != r)
    return gmpi_error(GMPI_ERR_INVALID_ARG,
                      "%s: sendbuf %p is %s memory but recvbuf %p is %s memory; both must be "
                      "this rank's device memory or both host memory",
                      gmpi_coll_name(a->kind), a->sendbuf, kind_name(s), a->recvbuf, kind_name(r));
  *kind = s != GMPI_MEM_NONE ? s : r;
  if (*kind == GMPI_MEM_NONE && varies && comm->device_engine.coll) *kind = GMPI_MEM_DEVICE;
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_route_coll_classified(gmpi_comm_t comm, const gmpi_coll_args_t *a,
                                         const gmpi_coll_extent_t *ext,
                                         const gmpi_engine_t **engine) {
  gmpi_mem_kind_t kind = GMPI_MEM_NONE;
  GMPI_CHECK(coll_kind(comm, a, ext, &kind));
  *engine = engine_for(comm, kind);
  return GMPI_SUCCESS;
}

/* The engine for one point-to-point buffer. Matching across kinds: the device engine matches
 * every message (its mover stages host ends); on cpu the host engine is the only one anyway. */
static gmpi_status_t p2p_engine(gmpi_comm_t comm, const void *buf, const gmpi_engine_t **engine) {
  if (comm->match_across_kinds && comm->device_engine.p2p) {
    *engine = &comm->device_engine;
    return GMPI_SUCCESS;
  }
  gmpi_mem_kind_t kind = GMPI_MEM_NONE;
  GMPI_CHECK(classify(comm, buf, "buf", &kind));
  /* Messages match within one engine: a device receive matches device sends, a host receive
   * host sends (and a NULL buffer counts as host memory). docs/design.md says why. */
  *engine = kind == GMPI_MEM_DEVICE ? &comm->device_engine : &comm->host_engine;
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_route_p2p(gmpi_request_t req) {
  return p2p_engine(req->comm, req->args.buf, &req->engine);
}

gmpi_status_t gmpi_route_p2p_classified(gmpi_comm_t comm, const void *buf,
                                        const gmpi_engine_t **engine) {
  return p2p_engine(comm, buf, engine);
}

gmpi_status_t gmpi_route_p2p_pair(gmpi_comm_t comm, const gmpi_p2p_args_t *send,
                                  const gmpi_p2p_args_t *recv, const gmpi_engine_t **engine) {
  const gmpi_engine_t *s = NULL, *r = NULL;
  GMPI_CHECK(p2p_engine(comm, send->buf, &s));
  GMPI_CHECK(p2p_engine(comm, recv->buf, &r));
  *engine = s == r ? s : NULL;
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_route_is_device(gmpi_comm_t comm, const void *ptr, int *is_device) {
  gmpi_mem_kind_t kind = GMPI_MEM_NONE;
  GMPI_CHECK(classify(comm, ptr, "ptr", &kind));
  *is_device = kind == GMPI_MEM_DEVICE;
  return GMPI_SUCCESS;
}

/* The memory kind of one recorded step (NONE for barriers and empty messages). */
static gmpi_status_t step_kind(gmpi_comm_t comm, const gmpi_plan_step_t *s, gmpi_mem_kind_t *kind) {
  *kind = GMPI_MEM_NONE;
  if (s->kind == PLAN_SEND || s->kind == PLAN_RECV)
    return s->bytes ? classify(comm, s->p2p.buf, "buf", kind) : GMPI_SUCCESS;
  if (s->kind != PLAN_COLL) return GMPI_SUCCESS;
  gmpi_coll_extent_t ext;
  GMPI_CHECK(gmpi_coll_validate(comm, &s->coll, &ext));
  return coll_kind(comm, &s->coll, &ext, kind);
}

gmpi_status_t gmpi_route_plan(gmpi_comm_t comm, const struct gmpi_plan *plan,
                              const gmpi_engine_t **engine) {
  gmpi_mem_kind_t kind = GMPI_MEM_NONE;
  for (int i = 0; i < plan->n_steps; i++) {
    gmpi_mem_kind_t k = GMPI_MEM_NONE;
    GMPI_CHECK(step_kind(comm, &plan->steps[i], &k));
    if (k != GMPI_MEM_NONE && kind != GMPI_MEM_NONE && k != kind)
      return gmpi_error(GMPI_ERR_UNSUPPORTED,
                        "step %d uses %s memory but an earlier step %s memory: a plan runs on "
                        "one engine (a CUDA graph or MPI calls), so all its buffers must be "
                        "device memory or all host memory",
                        i, kind_name(k), kind_name(kind));
    if (k != GMPI_MEM_NONE) kind = k;
  }
  *engine = engine_for(comm, kind);
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_route_fence_host(gmpi_comm_t comm) {
  return stream_ordered(comm) ? comm->ops->host_fence(comm) : GMPI_SUCCESS;
}
