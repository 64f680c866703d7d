/* SPDX-License-Identifier: BSD-3-Clause */
/* The cpu backend's ops: host memory, everything through MPI. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/comm.h"
#include "../../core/error.h"

static gmpi_status_t cpu_probe(gmpi_comm_t comm, char *why, size_t why_len) {
  (void)comm;
  (void)why;
  (void)why_len;
  return GMPI_SUCCESS; /* MPI is all it needs */
}

/* The cpu backend's own state: no device engine, only the count of gmpi_mem_alloc bytes. */
typedef struct {
  size_t user_bytes;
} cpu_backend_t;

static gmpi_status_t cpu_comm_init(gmpi_comm_t comm, gmpi_comm_t parent, int color, int key) {
  (void)parent;
  (void)color;
  (void)key;
  if (!comm) return GMPI_SUCCESS; /* this rank joins no child of the split */
  if (!(comm->be = calloc(1, sizeof(cpu_backend_t))))
    return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for the cpu backend state");
  return GMPI_SUCCESS;
}

static void forget_owner(cpu_backend_t *owner);

static void cpu_comm_fini(gmpi_comm_t comm) {
  forget_owner(comm->be); /* its blocks stay valid, counted by no comm */
  free(comm->be);
  comm->be = NULL;
}

/* Host blocks handed out by gmpi_mem_alloc, process-wide (any cpu comm may free them): a
 * pointer that is not one of them is refused, not passed to free(). Frees are rare; a linear
 * search is enough. */
typedef struct {
  void *ptr;
  size_t bytes;
  cpu_backend_t
      *owner; /* the comm it was allocated on (and counted by); NULL once that comm is freed */
} host_block_t;

static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static host_block_t *blocks;
static size_t n_blocks, cap_blocks;

static gmpi_status_t cpu_mem_alloc(gmpi_comm_t comm, size_t bytes, void **ptr) {
  cpu_backend_t *cpu = comm->be;
  size_t rounded = (bytes + 63) / 64 * 64;
  void *p = rounded >= bytes ? aligned_alloc(64, rounded ? rounded : 64) : NULL;
  if (!p) return gmpi_error(GMPI_ERR_NO_MEMORY, "host allocation of %zu bytes failed", bytes);
  pthread_mutex_lock(&blocks_lock);
  if (n_blocks == cap_blocks) {
    size_t cap = cap_blocks ? 2 * cap_blocks : 64;
    host_block_t *grown = realloc(blocks, cap * sizeof(*grown));
    if (!grown) {
      pthread_mutex_unlock(&blocks_lock);
      free(p);
      return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for the allocation table");
    }
    blocks = grown;
    cap_blocks = cap;
  }
  blocks[n_blocks++] = (host_block_t){p, bytes, cpu};
  cpu->user_bytes += bytes; /* under the lock: a free through another comm changes it too */
  pthread_mutex_unlock(&blocks_lock);
  *ptr = p;
  return GMPI_SUCCESS;
}

/* A block may be freed through any comm: it is uncounted from the comm it was allocated on. */
static gmpi_status_t cpu_mem_free(gmpi_comm_t comm, void *ptr) {
  (void)comm;
  if (!ptr) return GMPI_SUCCESS;
  int found = 0;
  pthread_mutex_lock(&blocks_lock);
  for (size_t i = 0; i < n_blocks && !found; i++) {
    if (blocks[i].ptr != ptr) continue;
    cpu_backend_t *owner = blocks[i].owner;
    if (owner) owner->user_bytes -= blocks[i].bytes;
    blocks[i] = blocks[--n_blocks];
    found = 1;
  }
  pthread_mutex_unlock(&blocks_lock);
  if (!found)
    return gmpi_error(GMPI_ERR_INVALID_ARG,
                      "argument 'ptr' = %p was not returned by gmpi_mem_alloc (or was freed)", ptr);
  free(ptr);
  return GMPI_SUCCESS;
}

static gmpi_status_t cpu_mem_copy(gmpi_comm_t comm, void *dst, const void *src, size_t bytes) {
  (void)comm;
  if (bytes) memmove(dst, src, bytes);
  return GMPI_SUCCESS;
}

static gmpi_status_t cpu_query(gmpi_comm_t comm, gmpi_query_t what, void **out) {
  (void)comm;
  (void)out;
  return gmpi_error(GMPI_ERR_UNSUPPORTED, "the cpu backend has no %s",
                    what == GMPI_QUERY_NCCL_COMM ? "NCCL communicator"
                    : what == GMPI_QUERY_STREAM  ? "CUDA stream"
                                                 : "device");
}

static void cpu_mem_usage(gmpi_comm_t comm, size_t *library, size_t *user) {
  *library = 0;
  pthread_mutex_lock(&blocks_lock);
  *user = ((cpu_backend_t *)comm->be)->user_bytes;
  pthread_mutex_unlock(&blocks_lock);
}

static void forget_owner(cpu_backend_t *owner) {
  pthread_mutex_lock(&blocks_lock);
  for (size_t i = 0; i < n_blocks; i++)
    if (blocks[i].owner == owner) blocks[i].owner = NULL;
  pthread_mutex_unlock(&blocks_lock);
}

const gmpi_backend_ops_t gmpi_backend_cpu = {
    .name = "cpu",
    .kind = GMPI_BACKEND_CPU,
    .probe = cpu_probe,
    .comm_init = cpu_comm_init,
    .comm_fini = cpu_comm_fini,
    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .mem_copy = cpu_mem_copy,
    .classify = NULL, /* everything is host memory */
    .stream_ordered = NULL,
    .host_fence = NULL,
    .device_coll = NULL,
    .device_mover = NULL,
    .query = cpu_query,
    .set_stream = NULL,
    .mem_usage = cpu_mem_usage,
};
