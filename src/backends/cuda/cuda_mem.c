/* SPDX-License-Identifier: BSD-3-Clause */
/* Device memory. One budget per process (a process owns one GPU): GMPI_GPU_MEM_FRACTION of
 * the device for gmpi_mem_alloc, either allocated block by block or, with
 * GMPI_GPU_PREALLOCATE=1, reserved at init and handed out first-fit. The blocks are also a
 * fast classification table: a pointer inside one is this rank's device memory without asking
 * the driver. Library memory (staging, scratch) is counted apart from the user's. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/comm.h"
#include "../../core/error.h"
#include "../../core/log.h"
#include "cuda.h"
#include "cuda_check.h"

#define POOL_ALIGN 256

typedef struct {
  uintptr_t base;
  size_t size;
  int used; /* pool blocks only: free blocks stay in the list to be merged */
} block_t;

static struct {
  pthread_mutex_t lock;
  int refs; /* comms using the device */
  int device;
  size_t budget, user_bytes, lib_bytes;
  void *pool;      /* preallocated budget, or NULL */
  block_t *blocks; /* user blocks sorted by base (pool: all blocks, used or free) */
  size_t n_blocks, cap_blocks;
} mem = {.lock = PTHREAD_MUTEX_INITIALIZER};

static gmpi_status_t blocks_insert(size_t at, block_t b) {
  if (mem.n_blocks == mem.cap_blocks) {
    size_t cap = mem.cap_blocks ? 2 * mem.cap_blocks : 64;
    block_t *grown = realloc(mem.blocks, cap * sizeof(*grown));
    if (!grown) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for the allocation table");
    mem.blocks = grown;
    mem.cap_blocks = cap;
  }
  memmove(&mem.blocks[at + 1], &mem.blocks[at], (mem.n_blocks - at) * sizeof(block_t));
  mem.blocks[at] = b;
  mem.n_blocks++;
  return GMPI_SUCCESS;
}

static void blocks_remove(size_t at) {
  memmove(&mem.blocks[at], &mem.blocks[at + 1], (mem.n_blocks - at - 1) * sizeof(block_t));
  mem.n_blocks--;
}

/* Index of the block containing p, or -1. */
static long blocks_find(uintptr_t p) {
  size_t lo = 0, hi = mem.n_blocks;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (mem.blocks[mid].base + mem.blocks[mid].size <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < mem.n_blocks && mem.blocks[lo].base <= p && mem.blocks[lo].used) return (long)lo;
  return -1;
}

gmpi_status_t cuda_mem_setup(const gmpi_config_t *cfg, int device) {
  gmpi_status_t st = GMPI_SUCCESS;
  pthread_mutex_lock(&mem.lock);
  if (mem.refs++ > 0) goto unlock;
  size_t free_b = 0, total = 0;
  GMPI_CUDA_CHECK_GOTO(cudaMemGetInfo(&free_b, &total), st, undo_ref);
  mem.device = device;
  mem.budget = (size_t)(cfg->gpu_mem_fraction * (double)total) / POOL_ALIGN * POOL_ALIGN;
  mem.user_bytes = mem.lib_bytes = 0;
  if (cfg->gpu_preallocate && mem.budget) {
    GMPI_CUDA_CHECK_GOTO(cudaMalloc(&mem.pool, mem.budget), st, undo_ref);
    GMPI_CHECK_GOTO(blocks_insert(0, (block_t){(uintptr_t)mem.pool, mem.budget, 0}), st, free_pool);
    gmpi_log(GMPI_LOG_INFO, "reserved %zu bytes of device %d for gmpi_mem_alloc", mem.budget,
             device);
  }
  goto unlock;
free_pool:
  cudaFree(mem.pool);
  mem.pool = NULL;
undo_ref:
  mem.refs--;
unlock:
  pthread_mutex_unlock(&mem.lock);
  return st;
}

void cuda_mem_teardown(void) {
  pthread_mutex_lock(&mem.lock);
  if (--mem.refs == 0) {
    if (mem.pool)
      cudaFree(mem.pool);
    else
      for (size_t i = 0; i < mem.n_blocks; i++)
        cudaFree((void *)mem.blocks[i].base);
    free(mem.blocks);
    mem.pool = NULL;
    mem.blocks = NULL;
    mem.n_blocks = mem.cap_blocks = 0;
  }
  pthread_mutex_unlock(&mem.lock);
}

static gmpi_status_t over_budget(size_t bytes) {
  return gmpi_error(GMPI_ERR_NO_MEMORY,
                    "gmpi_mem_alloc of %zu bytes exceeds the budget: %zu bytes used of %zu "
                    "(GMPI_GPU_MEM_FRACTION of device %d)",
                    bytes, mem.user_bytes, mem.budget, mem.device);
}

/* First fit in the preallocated pool. */
static gmpi_status_t pool_alloc(size_t bytes, void **ptr) {
  for (size_t i = 0; i < mem.n_blocks; i++) {
    block_t *b = &mem.blocks[i];
    if (b->used || b->size < bytes) continue;
    if (b->size > bytes)
      GMPI_CHECK(blocks_insert(i + 1, (block_t){b->base + bytes, b->size - bytes, 0}));
    b = &mem.blocks[i];
    b->size = bytes;
    b->used = 1;
    *ptr = (void *)b->base;
    return GMPI_SUCCESS;
  }
  return over_budget(bytes);
}

static void pool_free(size_t i) {
  mem.blocks[i].used = 0;
  if (i + 1 < mem.n_blocks && !mem.blocks[i + 1].used) {
    mem.blocks[i].size += mem.blocks[i + 1].size;
    blocks_remove(i + 1);
  }
  if (i > 0 && !mem.blocks[i - 1].used) {
    mem.blocks[i - 1].size += mem.blocks[i].size;
    blocks_remove(i);
  }
}

gmpi_status_t cuda_mem_alloc(size_t bytes, void **ptr) {
  size_t rounded = (bytes + POOL_ALIGN - 1) / POOL_ALIGN * POOL_ALIGN;
  if (rounded == 0) rounded = POOL_ALIGN;
  gmpi_status_t st = GMPI_SUCCESS;
  pthread_mutex_lock(&mem.lock);
  if (rounded < bytes || mem.user_bytes + rounded > mem.budget) {
    st = over_budget(bytes);
  } else if (mem.pool) {
    st = pool_alloc(rounded, ptr);
  } else {
    void *p = NULL;
    GMPI_CUDA_CHECK_GOTO(cudaMalloc(&p, rounded), st, unlock);
    long at = 0;
    while ((size_t)at < mem.n_blocks && mem.blocks[at].base < (uintptr_t)p)
      at++;
    st = blocks_insert((size_t)at, (block_t){(uintptr_t)p, rounded, 1});
    if (st != GMPI_SUCCESS)
      cudaFree(p);
    else
      *ptr = p;
  }
  if (st == GMPI_SUCCESS) mem.user_bytes += rounded;
unlock:
  pthread_mutex_unlock(&mem.lock);
  return st;
}

gmpi_status_t cuda_mem_free(void *ptr) {
  if (!ptr) return GMPI_SUCCESS;
  gmpi_status_t st = GMPI_SUCCESS;
  pthread_mutex_lock(&mem.lock);
  long i = blocks_find((uintptr_t)ptr);
  if (i < 0 || mem.blocks[i].base != (uintptr_t)ptr) {
    st = gmpi_error(GMPI_ERR_INVALID_ARG,
                    "argument 'ptr' = %p was not returned by gmpi_mem_alloc (or was freed)", ptr);
    goto unlock;
  }
  mem.user_bytes -= mem.blocks[i].size;
  if (mem.pool) {
    pool_free((size_t)i);
  } else {
    cudaError_t e = cudaFree(ptr);
    blocks_remove((size_t)i);
    if (e != cudaSuccess) st = gmpi_cuda_error(e, "cudaFree");
  }
unlock:
  pthread_mutex_unlock(&mem.lock);
  return st;
}

gmpi_status_t cuda_lib_alloc(size_t bytes, void **ptr) {
  GMPI_CUDA_CHECK(cudaMalloc(ptr, bytes ? bytes : 1));
  pthread_mutex_lock(&mem.lock);
  mem.lib_bytes += bytes;
  pthread_mutex_unlock(&mem.lock);
  return GMPI_SUCCESS;
}

void cuda_lib_free(void *ptr, size_t bytes) {
  if (!ptr) return;
  cudaFree(ptr);
  pthread_mutex_lock(&mem.lock);
  mem.lib_bytes -= bytes;
  pthread_mutex_unlock(&mem.lock);
}

void cuda_mem_usage(size_t *library, size_t *user) {
  pthread_mutex_lock(&mem.lock);
  *library = mem.lib_bytes;
  *user = mem.user_bytes;
  pthread_mutex_unlock(&mem.lock);
}

gmpi_status_t cuda_classify(gmpi_comm_t comm, const void *ptr, const char *arg,
                            gmpi_mem_kind_t *kind) {
  const cuda_comm_t *cc = comm->be;
  if (!ptr) {
    *kind = GMPI_MEM_NONE;
    return GMPI_SUCCESS;
  }
  pthread_mutex_lock(&mem.lock);
  long hit = blocks_find((uintptr_t)ptr);
  pthread_mutex_unlock(&mem.lock);
  if (hit >= 0) {
    *kind = GMPI_MEM_DEVICE;
    return GMPI_SUCCESS;
  }
  struct cudaPointerAttributes attr;
  cudaError_t e = cudaPointerGetAttributes(&attr, ptr);
  if (e != cudaSuccess) { /* older drivers: plain host memory is an "invalid value" */
    cudaGetLastError();
    *kind = GMPI_MEM_HOST;
    return GMPI_SUCCESS;
  }
  switch (attr.type) {
  case cudaMemoryTypeDevice:
    if (attr.device != cc->device)
      return gmpi_error(GMPI_ERR_INVALID_ARG,
                        "argument '%s' = %p is memory of device %d, but this rank uses device %d",
                        arg, ptr, attr.device, cc->device);
    *kind = GMPI_MEM_DEVICE;
    return GMPI_SUCCESS;
  case cudaMemoryTypeManaged: *kind = GMPI_MEM_DEVICE; return GMPI_SUCCESS;
  default: *kind = GMPI_MEM_HOST; return GMPI_SUCCESS;
  }
}
