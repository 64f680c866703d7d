/* SPDX-License-Identifier: BSD-3-Clause */
/* Questions about a comm, and the raw handles for interop. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "../backends/registry.h"
#include "../core/comm.h"
#include "../core/error.h"
#include "../core/log.h"
#include "../core/route.h"
#include "../core/select.h"
#include "../mpi/bootstrap.h"
#include "../mpi/oob.h"

#define NEED_OUT(p)                                                                                \
  do {                                                                                             \
    if (!(p)) return gmpi_error(GMPI_ERR_INVALID_ARG, "argument '" #p "' is NULL");                \
  } while (0)

gmpi_status_t gmpi_comm_rank(gmpi_comm_t comm, int *rank) {
  GMPI_API_ENTER(comm);
  NEED_OUT(rank);
  *rank = comm->rank;
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_comm_size(gmpi_comm_t comm, int *size) {
  GMPI_API_ENTER(comm);
  NEED_OUT(size);
  *size = comm->size;
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_comm_backend(gmpi_comm_t comm, gmpi_backend_t *backend) {
  GMPI_API_ENTER(comm);
  NEED_OUT(backend);
  *backend = comm->ops->kind;
  return GMPI_SUCCESS;
}

const char *gmpi_backend_name(gmpi_backend_t backend) {
  const gmpi_backend_ops_t *ops = gmpi_backend_by_kind(&gmpi_backends_built, backend);
  if (ops) return ops->name;
  return backend == GMPI_BACKEND_CUDA ? "cuda" : "invalid"; /* cuda: known, not built in */
}

gmpi_status_t gmpi_comm_backend_reason(gmpi_comm_t comm, const char **why) {
  GMPI_API_ENTER(comm);
  NEED_OUT(why);
  *why = comm->backend_why[0] ? comm->backend_why : "the backend of the comm it was split from";
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_comm_device(gmpi_comm_t comm, int *device) {
  GMPI_API_ENTER(comm);
  NEED_OUT(device);
  if (comm->ops->kind == GMPI_BACKEND_CPU) {
    *device = -1;
    return GMPI_SUCCESS;
  }
  void *out = NULL;
  GMPI_CHECK(comm->ops->query(comm, GMPI_QUERY_DEVICE, &out));
  *device = (int)(intptr_t)out;
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_comm_nccl(gmpi_comm_t comm, void **nccl_comm) {
  GMPI_API_ENTER(comm);
  NEED_OUT(nccl_comm);
  return comm->ops->query(comm, GMPI_QUERY_NCCL_COMM, nccl_comm);
}

gmpi_status_t gmpi_comm_stream(gmpi_comm_t comm, void **stream) {
  GMPI_API_ENTER(comm);
  NEED_OUT(stream);
  return comm->ops->query(comm, GMPI_QUERY_STREAM, stream);
}

gmpi_status_t gmpi_comm_mpi(gmpi_comm_t comm, MPI_Comm *mpi_comm) {
  GMPI_API_ENTER(comm);
  NEED_OUT(mpi_comm);
  *mpi_comm = gmpi_oob_mpi_comm(comm);
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_comm_set_stream(gmpi_comm_t comm, void *stream) {
  GMPI_API_ENTER(comm);
  if (!comm->ops->set_stream)
    return gmpi_error(GMPI_ERR_UNSUPPORTED, "the %s backend has no streams", comm->ops->name);
  if (comm->rec)
    return gmpi_error(GMPI_ERR_STATE, "cannot change the stream while recording a plan");
  return comm->ops->set_stream(comm, stream);
}

gmpi_status_t gmpi_comm_mem_usage(gmpi_comm_t comm, size_t *library_bytes, size_t *user_bytes) {
  GMPI_API_ENTER_LOCAL(comm);
  NEED_OUT(library_bytes);
  NEED_OUT(user_bytes);
  comm->ops->mem_usage(comm, library_bytes, user_bytes);
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_comm_set_matching(gmpi_comm_t comm, gmpi_matching_t matching) {
  GMPI_API_ENTER(comm);
  if (matching != GMPI_MATCH_PER_KIND && matching != GMPI_MATCH_ACROSS_KINDS)
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'matching' = %d is not a gmpi_matching_t",
                      (int)matching);
  int across = matching == GMPI_MATCH_ACROSS_KINDS;
  if (across != comm->match_across_kinds && comm->p2p_started)
    return gmpi_error(GMPI_ERR_STATE, "the comm has made point-to-point calls: matching is set "
                                      "before the first one, on every rank");
  comm->match_across_kinds = across;
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_comm_set_tags(gmpi_comm_t comm, gmpi_tags_t tags) {
  GMPI_API_ENTER(comm);
  if (tags != GMPI_TAGS_TYPED && tags != GMPI_TAGS_FULL)
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'tags' = %d is not a gmpi_tags_t", (int)tags);
  int full = tags == GMPI_TAGS_FULL;
  if (full != comm->tags_full && comm->p2p_started)
    return gmpi_error(GMPI_ERR_STATE, "the comm has made point-to-point calls: tags are set "
                                      "before the first one, on every rank");
  comm->tags_full = full;
  comm->tag_ub = full ? gmpi_mpi_tag_ub_full() : gmpi_mpi_tag_ub();
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_comm_set_sends(gmpi_comm_t comm, gmpi_sends_t sends) {
  GMPI_API_ENTER(comm);
  if (sends != GMPI_SENDS_EAGER && sends != GMPI_SENDS_AS_MPI)
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'sends' = %d is not a gmpi_sends_t",
                      (int)sends);
  comm->sends_as_mpi = sends == GMPI_SENDS_AS_MPI;
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_comm_sends(gmpi_comm_t comm, gmpi_sends_t *sends) {
  GMPI_API_ENTER(comm);
  NEED_OUT(sends);
  *sends = comm->sends_as_mpi ? GMPI_SENDS_AS_MPI : GMPI_SENDS_EAGER;
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_comm_host_wire(gmpi_comm_t comm, MPI_Comm *wire) {
  GMPI_API_ENTER(comm);
  NEED_OUT(wire);
  *wire = MPI_COMM_NULL;
  const gmpi_engine_t *engine = NULL;
  GMPI_CHECK(gmpi_route_p2p_classified(comm, NULL, &engine)); /* a host message's engine */
  if (engine->p2p && engine->p2p->wire) engine->p2p->wire(engine->p2p_state, comm, wire);
  return GMPI_SUCCESS;
}

static int inside_watch(gmpi_comm_t comm) {
  return atomic_load_explicit(&comm->watch.mark, memory_order_relaxed) & 1;
}

/* The watch calls stand around a program's every blocking MPI call on the wire (the drop-in
 * layer's small messages): the comm this thread used last, healthy, untraced, with nothing to
 * refuse, takes the inline test alone -- nothing can fail there, so no call is begun for an
 * error to name; anything else takes the public entry's checks. */
static int watch_fast(gmpi_comm_t comm, int *watched) {
  return watched && gmpi_comm_live_as_last(comm) && comm->failure == GMPI_SUCCESS &&
         !gmpi_log_tracing && !inside_watch(comm);
}

gmpi_status_t gmpi_comm_watch_enter(gmpi_comm_t comm, const char *what, size_t count, int source,
                                    int recv_tag, int dest, int send_tag, int *watched) {
  if (!watch_fast(comm, watched)) {
    GMPI_API_ENTER(comm);
    NEED_OUT(watched);
    *watched = 0;
    if (inside_watch(comm))
      return gmpi_error(GMPI_ERR_STATE,
                        "the communicator is inside a watched call already (%s): "
                        "gmpi_comm_watch_exit first",
                        atomic_load_explicit(&comm->watch.what, memory_order_relaxed));
  }
  *watched = gmpi_comm_may_block(comm);
  if (*watched)
    gmpi_watch_enter_p2p(&comm->watch, what ? what : "a blocking MPI call", count, source, recv_tag,
                         dest, send_tag);
  return GMPI_SUCCESS;
}

/* A failed comm is let out too (the call it watched may have failed it). */
gmpi_status_t gmpi_comm_watch_exit(gmpi_comm_t comm) {
  if (!gmpi_comm_live_as_last(comm) || gmpi_log_tracing || !inside_watch(comm)) {
    GMPI_API_ENTER_LOCAL(comm);
    if (!inside_watch(comm))
      return gmpi_error(GMPI_ERR_STATE, "the communicator is inside no watched call "
                                        "(gmpi_comm_watch_enter did not mark it)");
  }
  gmpi_watch_exit(&comm->watch);
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_comm_tag_ub(gmpi_comm_t comm, int *tag_ub) {
  GMPI_API_ENTER(comm);
  NEED_OUT(tag_ub);
  *tag_ub = comm->tag_ub;
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_mem_is_device(gmpi_comm_t comm, const void *ptr, int *is_device) {
  GMPI_API_ENTER_LOCAL(comm);
  NEED_OUT(is_device);
  return gmpi_route_is_device(comm, ptr, is_device);
}

gmpi_status_t gmpi_log_info(const char *fmt, ...) {
  gmpi_call_begin_nocomm(__func__);
  NEED_OUT(fmt);
  if (!gmpi_log_enabled(GMPI_LOG_INFO)) return GMPI_SUCCESS;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  gmpi_log(GMPI_LOG_INFO, "%s", line);
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_mem_alloc(gmpi_comm_t comm, size_t bytes, void **ptr) {
  GMPI_API_ENTER(comm);
  NEED_OUT(ptr);
  return comm->ops->mem_alloc(comm, bytes, ptr);
}

gmpi_status_t gmpi_mem_free(gmpi_comm_t comm, void *ptr) {
  GMPI_API_ENTER_LOCAL(comm);
  return comm->ops->mem_free(comm, ptr);
}

gmpi_status_t gmpi_mem_copy(gmpi_comm_t comm, void *dst, const void *src, size_t bytes) {
  GMPI_API_ENTER_LOCAL(comm);
  if (bytes && (!dst || !src))
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument '%s' is NULL with bytes = %zu > 0",
                      dst ? "src" : "dst", bytes);
  return comm->ops->mem_copy(comm, dst, src, bytes);
}

gmpi_status_t gmpi_versions(const char **gmpi, const char **mpi, const char **nccl) {
  gmpi_call_begin_nocomm(__func__);
  NEED_OUT(gmpi);
  NEED_OUT(mpi);
  NEED_OUT(nccl);
  const gmpi_backend_ops_t *cuda = gmpi_backend_by_kind(&gmpi_backends_built, GMPI_BACKEND_CUDA);
  *gmpi = "gmpi " GMPI_VERSION_STRING;
  *mpi = gmpi_mpi_version();
  *nccl = cuda && cuda->lib_version ? cuda->lib_version() : "none (built without CUDA)";
  return GMPI_SUCCESS;
}
