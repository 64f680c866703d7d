/* SPDX-License-Identifier: BSD-3-Clause */
/* Device memory. One budget per process (a process owns one GPU): GMPI_GPU_MEM_FRACTION of
 * the device for gmpi_mem_alloc, either allocated block by block or, with
 * GMPI_GPU_PREALLOCATE=1, reserved at init and handed out first-fit. The blocks are also a
 * fast classification table: a pointer inside one is this rank's device memory without asking
 * the driver. Library memory (staging, scratch) is counted apart from the user's.
 *
 * GMPI_NCCL_MEM (off by default: unmeasured, docs/design.md) takes the blocks from
 * ncclMemAlloc (CUDA VMM memory, what NCCL's zero-copy paths need) and may register each one
 * with the NCCL communicator of the comm it was allocated on: locally (ncclCommRegister) or as
 * a symmetric window (ncclCommWindowRegister), which is collective over the comm, so that
 * gmpi_mem_alloc then is too. A registration is undone before its block goes back and before
 * its comm's NCCL communicator is destroyed (cuda_mem_release_comm). */
#include <cuda.h> /* the driver's types and attribute names; its calls are looked up */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/comm.h"
#include "../../core/error.h"
#include "../../core/log.h"
#include "../../core/oob.h"
#include "../../core/vote.h"
#include "cuda.h"
#include "cuda_check.h"

#define POOL_ALIGN 256
/* Blocks of NCCL memory start this far apart in the pool: a window must begin at a multiple
 * of it from its allocation's start (nccl.h; NCCL refuses others). */
#ifdef NCCL_WIN_REQUIRED_ALIGNMENT
#define NCCL_BLOCK_ALIGN NCCL_WIN_REQUIRED_ALIGNMENT
#else
#define NCCL_BLOCK_ALIGN 4096
#endif

typedef struct {
  uintptr_t base;
  size_t size;         /* what the budget counts: ncclMemAlloc's blocks at their granularity */
  int used;            /* pool blocks only: free blocks stay in the list to be merged */
  int nccl;            /* an ncclMemAlloc of its own (not a slice of the pool) */
  int sync_memops;     /* the driver made its synchronous memory calls synchronous */
  gmpi_nccl_mem_t reg; /* GMPI_NCCL_MEM_REGISTER or _WINDOW while registered, else _OFF */
  void *handle;        /* ncclCommRegister's handle, or the ncclWindow_t */
  cuda_comm_t *owner;  /* the comm whose communicator holds the registration */
  ncclComm_t nc;       /* that communicator, as it was when registering */
} block_t;

static int ensure_sync_memops(const void *p); /* below, with the driver calls */

static struct {
  pthread_mutex_t lock;
  int refs; /* comms using the device */
  int device;
  size_t budget, user_bytes, lib_bytes;
  void *pool;           /* preallocated budget, or NULL */
  int pool_nccl;        /* the pool is one ncclMemAlloc (GMPI_NCCL_MEM of the first comm) */
  int pool_sync_memops; /* the pool's synchronous memory calls are synchronous */
  int memops;           /* GMPI_DEFAULT_STREAM_ORDER=memops (the first comm's): blocks get it */
  block_t *blocks;      /* user blocks sorted by base (pool: all blocks, used or free) */
  size_t n_blocks, cap_blocks;
} mem = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const char *const nccl_mem_name[] = {"off", "alloc", "register", "window"};

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

/* Give back one allocation the way it was taken. */
static gmpi_status_t release_device_memory(void *p, int nccl) {
  if (nccl) {
    ncclResult_t r = ncclMemFree(p);
    return r == ncclSuccess ? GMPI_SUCCESS : gmpi_nccl_error(r, NULL, "ncclMemFree");
  }
  cudaError_t e = cudaFree(p);
  return e == cudaSuccess ? GMPI_SUCCESS : gmpi_cuda_error(e, "cudaFree");
}

gmpi_status_t cuda_mem_setup(const gmpi_config_t *cfg, int device) {
  gmpi_status_t st = GMPI_SUCCESS;
  pthread_mutex_lock(&mem.lock);
  if (mem.refs++ > 0) goto unlock;
  size_t free_b = 0, total = 0;
  GMPI_CUDA_CHECK_GOTO(cudaMemGetInfo(&free_b, &total), st, undo_ref);
  mem.device = device;
  mem.memops = cfg->default_stream_order == GMPI_STREAM_ORDER_MEMOPS;
  mem.budget = (size_t)(cfg->gpu_mem_fraction * (double)total) / POOL_ALIGN * POOL_ALIGN;
  mem.user_bytes = mem.lib_bytes = 0;
  if (cfg->gpu_preallocate && mem.budget) {
    mem.pool_nccl = cfg->nccl_mem != GMPI_NCCL_MEM_OFF;
    if (mem.pool_nccl)
      GMPI_NCCL_CHECK_GOTO(ncclMemAlloc(&mem.pool, mem.budget), NULL, st, undo_ref);
    else
      GMPI_CUDA_CHECK_GOTO(cudaMalloc(&mem.pool, mem.budget), st, undo_ref);
    GMPI_CHECK_GOTO(blocks_insert(0, (block_t){.base = (uintptr_t)mem.pool, .size = mem.budget}),
                    st, free_pool);
    mem.pool_sync_memops = mem.memops && ensure_sync_memops(mem.pool);
    gmpi_log(GMPI_LOG_INFO, "reserved %zu bytes of device %d for gmpi_mem_alloc (%s)", mem.budget,
             device, mem.pool_nccl ? "ncclMemAlloc" : "cudaMalloc");
  }
  goto unlock;
free_pool:
  (void)release_device_memory(mem.pool, mem.pool_nccl);
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
    /* every comm released its registrations before (cuda_mem_release_comm) */
    if (mem.pool)
      (void)release_device_memory(mem.pool, mem.pool_nccl);
    else
      for (size_t i = 0; i < mem.n_blocks; i++)
        (void)release_device_memory((void *)mem.blocks[i].base, mem.blocks[i].nccl);
    free(mem.blocks);
    mem.pool = NULL;
    mem.pool_nccl = 0;
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
      GMPI_CHECK(blocks_insert(i + 1, (block_t){.base = b->base + bytes, .size = b->size - bytes}));
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

/* Driver calls, found at run time: libgmpi does not link libcuda, so it loads on machines
 * without a GPU driver. Each is looked up once (a driver without it is not asked again). */
typedef int (*range_fn_t)(unsigned long long *base, size_t *size, unsigned long long ptr);
typedef int (*set_attribute_fn_t)(const void *value, CUpointer_attribute attribute,
                                  CUdeviceptr ptr);
typedef int (*get_attribute_fn_t)(void *value, CUpointer_attribute attribute, CUdeviceptr ptr);

static void *driver_fn(const char *name, _Atomic(void *) *fn, atomic_int *looked) {
  if (atomic_load(looked)) return atomic_load(fn);
  void *found = NULL;
  enum cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion(name, &found, 12000, cudaEnableDefault, &q) == cudaSuccess &&
      q == cudaDriverEntryPointSuccess)
    atomic_store(fn, found);
  atomic_store(looked, 1);
  return atomic_load(fn);
}

static range_fn_t range_fn(void) {
  static _Atomic(void *) fn;
  static atomic_int looked;
  return (range_fn_t)driver_fn("cuMemGetAddressRange", &fn, &looked);
}

/* Setting CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on an allocation: it is set now (memory calls made
 * before may still run), or the driver refused it. */
typedef enum { MEMOPS_REFUSED = 0, MEMOPS_SET_NOW } memops_set_t;

/* Set SYNC_MEMOPS on the allocation holding p, which does not have it yet. */
static memops_set_t set_sync_memops(const void *p) {
  static _Atomic(void *) set_fn;
  static atomic_int set_looked;
  set_attribute_fn_t set =
      (set_attribute_fn_t)driver_fn("cuPointerSetAttribute", &set_fn, &set_looked);
  unsigned int on = 1;
  if (!set || set(&on, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, (CUdeviceptr)(uintptr_t)p) != 0)
    return MEMOPS_REFUSED;
  return MEMOPS_SET_NOW;
}

/* SYNC_MEMOPS is set on the allocation holding p (0 also where the driver cannot say). */
static unsigned has_sync_memops(const void *p) {
  static _Atomic(void *) get_fn;
  static atomic_int get_looked;
  get_attribute_fn_t get =
      (get_attribute_fn_t)driver_fn("cuPointerGetAttribute", &get_fn, &get_looked);
  unsigned int on = 0;
  if (!get || get(&on, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, (CUdeviceptr)(uintptr_t)p) != 0) return 0;
  return on;
}

/* SYNC_MEMOPS is on the allocation holding p, set before or now (0: the driver refused it). */
static int ensure_sync_memops(const void *p) {
  return has_sync_memops(p) || set_sync_memops(p) == MEMOPS_SET_NOW;
}

/* What the driver knows of a pointer, asked in one call (cuPointerGetAttributes): the runtime's
 * cudaPointerGetAttributes asks more, and SYNC_MEMOPS was a second call. 0 when the driver
 * cannot answer so (then the runtime is asked). */
typedef struct {
  unsigned type; /* CU_MEMORYTYPE_*, 0 for memory CUDA does not know (pageable host) */
  int device;    /* its device, for device memory */
  unsigned managed;
  unsigned memops; /* SYNC_MEMOPS is set */
} pointer_facts_t;

typedef int (*get_attributes_fn_t)(unsigned n, CUpointer_attribute *which, void **values,
                                   CUdeviceptr ptr);

static int pointer_facts(const void *ptr, pointer_facts_t *f) {
  static _Atomic(void *) fn;
  static atomic_int looked;
  get_attributes_fn_t get = (get_attributes_fn_t)driver_fn("cuPointerGetAttributes", &fn, &looked);
  CUpointer_attribute which[4] = {
      CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
      CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS};
  void *values[4] = {&f->type, &f->device, &f->managed, &f->memops};
  *f = (pointer_facts_t){0, -1, 0, 0};
  return get && get(4, which, values, (CUdeviceptr)(uintptr_t)ptr) == 0;
}

/* The same facts from the runtime, where the driver cannot answer in one call; SYNC_MEMOPS only
 * when the caller uses it (it costs a second driver call). */
static void runtime_facts(const void *ptr, int want_memops, pointer_facts_t *f) {
  *f = (pointer_facts_t){0, -1, 0, 0};
  struct cudaPointerAttributes attr;
  if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
    cudaGetLastError(); /* older drivers: plain host memory is an "invalid value" */
    return;
  }
  f->managed = attr.type == cudaMemoryTypeManaged;
  if (attr.type != cudaMemoryTypeDevice) return;
  f->type = CU_MEMORYTYPE_DEVICE;
  f->device = attr.device;
  f->memops = want_memops && has_sync_memops(ptr);
}

int cuda_alloc_range(const void *p, uintptr_t *base, size_t *size) {
  range_fn_t range = range_fn();
  if (!range) return 0;
  unsigned long long b = 0;
  if (range(&b, size, (unsigned long long)(uintptr_t)p) != 0) return 0;
  *base = (uintptr_t)b;
  return 1;
}

/* ncclMemAlloc rounds its request up to the VMM granularity (2 MiB on current GPUs) without
 * saying by how much; the budget counts what the device gave. */
static gmpi_status_t mapped_size(void *p, size_t *bytes) {
  uintptr_t base = 0;
  if (!cuda_alloc_range(p, &base, bytes))
    return gmpi_error(GMPI_ERR_BACKEND,
                      "cuMemGetAddressRange does not know ncclMemAlloc's block %p", p);
  return GMPI_SUCCESS;
}

/* A block of its own, inserted in address order; *taken: what the budget counts. */
static gmpi_status_t own_block(int nccl, size_t rounded, void **ptr, size_t *taken) {
  void *p = NULL;
  *taken = rounded;
  if (nccl) {
    ncclResult_t r = ncclMemAlloc(&p, rounded);
    if (r != ncclSuccess) return gmpi_nccl_error(r, NULL, "gmpi_mem_alloc's ncclMemAlloc");
  } else {
    GMPI_CUDA_CHECK(cudaMalloc(&p, rounded));
  }
  gmpi_status_t st = nccl ? mapped_size(p, taken) : GMPI_SUCCESS;
  if (st == GMPI_SUCCESS && mem.user_bytes + *taken > mem.budget) st = over_budget(rounded);
  size_t at = 0;
  while (at < mem.n_blocks && mem.blocks[at].base < (uintptr_t)p)
    at++;
  if (st == GMPI_SUCCESS)
    st = blocks_insert(at, (block_t){.base = (uintptr_t)p,
                                     .size = *taken,
                                     .used = 1,
                                     .nccl = nccl,
                                     .sync_memops = mem.memops && ensure_sync_memops(p)});
  if (st != GMPI_SUCCESS)
    (void)release_device_memory(p, nccl);
  else
    *ptr = p;
  return st;
}

/* The block for gmpi_mem_alloc(bytes) under mode, counted in the budget; not registered. */
static gmpi_status_t take_block(gmpi_nccl_mem_t mode, size_t bytes, void **ptr) {
  int nccl = mode != GMPI_NCCL_MEM_OFF;
  gmpi_status_t st = GMPI_SUCCESS;
  pthread_mutex_lock(&mem.lock);
  size_t unit = nccl || mem.pool_nccl ? NCCL_BLOCK_ALIGN : POOL_ALIGN;
  size_t rounded = (bytes + unit - 1) / unit * unit, taken = 0;
  if (rounded == 0) rounded = unit;
  if (rounded < bytes || mem.user_bytes + rounded > mem.budget) {
    st = over_budget(bytes);
  } else if (mem.pool && nccl && !mem.pool_nccl) {
    st = gmpi_error(GMPI_ERR_UNSUPPORTED,
                    "GMPI_NCCL_MEM=%s on this comm, but the pool of GMPI_GPU_PREALLOCATE=1 was "
                    "reserved with cudaMalloc by the process's first comm (its GMPI_NCCL_MEM=off)",
                    nccl_mem_name[mode]);
  } else if (mem.pool) {
    st = pool_alloc(rounded, ptr);
    taken = rounded;
  } else {
    st = own_block(nccl, rounded, ptr, &taken);
  }
  if (st == GMPI_SUCCESS) mem.user_bytes += taken;
  pthread_mutex_unlock(&mem.lock);
  return st;
}

/* Undo b's registration, if any, before the block or its communicator goes. A communicator
 * that was aborted (cc->nccl cleared) dropped its registrations with it, and one of a failed
 * comm is about to be (healthy 0): NCCL is not called on either, as its deregistration waits
 * on a stream of the device a stuck collective may hold. */
static gmpi_status_t deregister(block_t *b, int healthy) {
  if (b->reg == GMPI_NCCL_MEM_OFF) return GMPI_SUCCESS;
  ncclResult_t r = ncclSuccess;
  const char *call = "ncclCommDeregister";
  if (healthy && b->owner->nccl == b->nc) {
#ifdef GMPI_HAVE_NCCL_WINDOW
    if (b->reg == GMPI_NCCL_MEM_WINDOW) {
      call = "ncclCommWindowDeregister";
      r = ncclCommWindowDeregister(b->nc, (ncclWindow_t)b->handle);
    } else
#endif
      r = ncclCommDeregister(b->nc, b->handle);
  }
  b->reg = GMPI_NCCL_MEM_OFF;
  b->handle = NULL;
  b->owner = NULL;
  return r == ncclSuccess ? GMPI_SUCCESS : gmpi_nccl_error(r, b->nc, call);
}

/* gmpi_mem_alloc's NCCL call on the comm's communicator: watched (a window registration waits
 * inside NCCL for every rank). */
static gmpi_status_t register_call(gmpi_comm_t comm, gmpi_nccl_mem_t mode, void *p, size_t size,
                                   void **handle) {
  cuda_comm_t *cc = comm->be;
  ncclResult_t r;
  const char *call = "gmpi_mem_alloc's ncclCommRegister";
  if (!cc->nccl) /* aborted: the comm failed, and gmpi_mem_alloc refuses failed comms first */
    return gmpi_error(GMPI_ERR_STATE, "%s: the comm's NCCL communicator was aborted", call);
#ifdef GMPI_HAVE_NCCL_WINDOW
  if (mode == GMPI_NCCL_MEM_WINDOW) {
    call = "gmpi_mem_alloc's ncclCommWindowRegister (collective)";
    cuda_nccl_enter(comm, call);
    r = ncclCommWindowRegister(cc->nccl, p, size, (ncclWindow_t *)handle, NCCL_WIN_COLL_SYMMETRIC);
    cuda_nccl_exit(comm);
    return r == ncclSuccess ? GMPI_SUCCESS : gmpi_nccl_error(r, cc->nccl, call);
  }
#else
  if (mode == GMPI_NCCL_MEM_WINDOW)
    return gmpi_error(GMPI_ERR_UNSUPPORTED,
                      "GMPI_NCCL_MEM=window: gmpi was built with an NCCL older than 2.27, "
                      "without ncclCommWindowRegister");
#endif
  cuda_nccl_enter(comm, call);
  r = ncclCommRegister(cc->nccl, p, size, handle);
  cuda_nccl_exit(comm);
  return r == ncclSuccess ? GMPI_SUCCESS : gmpi_nccl_error(r, cc->nccl, call);
}

/* Register the block at p (just taken) with the comm's communicator, and note it in the table
 * (outside the lock meanwhile: a window registration waits for the other ranks). */
static gmpi_status_t register_block(gmpi_comm_t comm, gmpi_nccl_mem_t mode, void *p) {
  pthread_mutex_lock(&mem.lock);
  size_t size = mem.blocks[blocks_find((uintptr_t)p)].size;
  pthread_mutex_unlock(&mem.lock);
  void *handle = NULL;
  GMPI_CHECK(register_call(comm, mode, p, size, &handle));
  cuda_comm_t *cc = comm->be;
  pthread_mutex_lock(&mem.lock);
  block_t *b = &mem.blocks[blocks_find((uintptr_t)p)];
  b->reg = mode;
  b->handle = handle;
  b->owner = cc;
  b->nc = cc->nccl;
  pthread_mutex_unlock(&mem.lock);
  return GMPI_SUCCESS;
}

/* GMPI_NCCL_MEM=window: gmpi_mem_alloc is collective, like MPI_Win_allocate, because the
 * window registration is. Every rank must ask for the same size (NCCL's windows, and the
 * symmetric kernels' same-offset rule, assume it): checked first, so that a program that
 * breaks it gets an error on every rank instead of a hang inside NCCL. */
static gmpi_status_t agree_on_size(gmpi_comm_t comm, size_t bytes) {
  uint64_t first = bytes;
  GMPI_CHECK(comm->oob.ops->bcast(comm, &first, sizeof(first), 0));
  gmpi_status_t mine = GMPI_SUCCESS;
  if (first != (uint64_t)bytes)
    mine = gmpi_error(GMPI_ERR_INVALID_ARG,
                      "argument 'bytes' = %zu on rank %d, but rank 0 asked for %llu: under "
                      "GMPI_NCCL_MEM=window gmpi_mem_alloc is collective (every rank of the "
                      "comm, in the same order, with the same size)",
                      bytes, comm->rank, (unsigned long long)first);
  return gmpi_vote(comm, mine, 0, NULL,
                   "asked gmpi_mem_alloc for another size than rank 0 (GMPI_NCCL_MEM=window)");
}

/* Collective: the size agreed, each rank's block taken (all or none go on), the window
 * registered (NCCL's own barrier, watched), and all ranks told whether every one succeeded. */
static gmpi_status_t window_alloc(gmpi_comm_t comm, size_t bytes, void **ptr) {
  GMPI_CHECK(agree_on_size(comm, bytes));
  void *p = NULL;
  gmpi_status_t st = take_block(GMPI_NCCL_MEM_WINDOW, bytes, &p);
  st = gmpi_vote(comm, st, 0, NULL, "could not take its block for gmpi_mem_alloc");
  if (st == GMPI_SUCCESS) { /* every rank has its block: all register, then all hear */
    st = register_block(comm, GMPI_NCCL_MEM_WINDOW, p);
    st = gmpi_vote(comm, st, 0, NULL, "could not register its block as an NCCL window");
  }
  if (st != GMPI_SUCCESS) {
    if (p) (void)cuda_mem_free(p);
    return st;
  }
  *ptr = p;
  return GMPI_SUCCESS;
}

gmpi_status_t cuda_mem_alloc(gmpi_comm_t comm, size_t bytes, void **ptr) {
  gmpi_nccl_mem_t mode = comm->cfg.nccl_mem;
  if (mode == GMPI_NCCL_MEM_WINDOW) return window_alloc(comm, bytes, ptr);
  void *p = NULL;
  GMPI_CHECK(take_block(mode, bytes, &p));
  if (mode == GMPI_NCCL_MEM_REGISTER) {
    gmpi_status_t st = register_block(comm, mode, p);
    if (st != GMPI_SUCCESS) {
      (void)cuda_mem_free(p);
      return st;
    }
  }
  *ptr = p;
  return GMPI_SUCCESS;
}

/* Deregistered first: NCCL must not hold a mapping of memory that is gone. */
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
  st = deregister(&mem.blocks[i], 1);
  mem.user_bytes -= mem.blocks[i].size;
  if (mem.pool) {
    pool_free((size_t)i);
  } else {
    gmpi_status_t released = release_device_memory(ptr, mem.blocks[i].nccl);
    blocks_remove((size_t)i);
    if (st == GMPI_SUCCESS) st = released;
  }
unlock:
  pthread_mutex_unlock(&mem.lock);
  return st;
}

void cuda_mem_release_comm(cuda_comm_t *cc, int healthy) {
  pthread_mutex_lock(&mem.lock);
  int released = 0;
  for (size_t i = 0; i < mem.n_blocks; i++) {
    if (mem.blocks[i].reg == GMPI_NCCL_MEM_OFF || mem.blocks[i].owner != cc) continue;
    gmpi_status_t st = deregister(&mem.blocks[i], healthy);
    if (st != GMPI_SUCCESS) gmpi_log(GMPI_LOG_WARN, "cuda: %s", gmpi_last_error());
    released++;
  }
  pthread_mutex_unlock(&mem.lock);
  if (released)
    gmpi_log(GMPI_LOG_INFO,
             "cuda: %d gmpi_mem_alloc block(s) deregistered from a comm being freed (they stay "
             "allocated, as plain device memory, until gmpi_mem_free)",
             released);
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

static gmpi_status_t wrong_device(const char *arg, const void *ptr, int device, int mine) {
  return gmpi_error(GMPI_ERR_INVALID_ARG,
                    "argument '%s' = %p is memory of device %d, but this rank uses device %d", arg,
                    ptr, device, mine);
}

/* The program's cudaMemcpy and cudaMemset into device memory return once done -- from now on:
 * ones made before the attribute was set may still be running, so an event is owed. */
static void note_memops(memops_set_t was) {
  if (was == MEMOPS_SET_NOW) cuda_memops_owed();
  if (was == MEMOPS_REFUSED) cuda_memops_unsure();
}

/* Classify memory as the driver or the runtime described it. */
static gmpi_status_t classify_known(const cuda_comm_t *cc, const void *ptr, const char *arg,
                                    const pointer_facts_t *f, int memops, gmpi_mem_kind_t *kind) {
  *kind = GMPI_MEM_HOST;
  if (f->managed) { /* pages may move: ordered by the event instead */
    if (memops) cuda_memops_unsure();
    *kind = GMPI_MEM_DEVICE;
    return GMPI_SUCCESS;
  }
  if (f->type != CU_MEMORYTYPE_DEVICE) return GMPI_SUCCESS;
  if (f->device != cc->device) return wrong_device(arg, ptr, f->device, cc->device);
  if (memops && !f->memops) note_memops(set_sync_memops(ptr));
  *kind = GMPI_MEM_DEVICE;
  return GMPI_SUCCESS;
}

gmpi_status_t cuda_classify(gmpi_comm_t comm, const void *ptr, const char *arg,
                            gmpi_mem_kind_t *kind) {
  const cuda_comm_t *cc = comm->be;
  if (!ptr) {
    *kind = GMPI_MEM_NONE;
    return GMPI_SUCCESS;
  }
  int memops = cc->default_stream_order == GMPI_STREAM_ORDER_MEMOPS && !cc->user_stream;
  pthread_mutex_lock(&mem.lock);
  long hit = blocks_find((uintptr_t)ptr);
  int synchronous = hit >= 0 && (mem.pool ? mem.pool_sync_memops : mem.blocks[hit].sync_memops);
  pthread_mutex_unlock(&mem.lock);
  if (hit >= 0) {
    if (memops && !synchronous) cuda_memops_unsure();
    *kind = GMPI_MEM_DEVICE;
    return GMPI_SUCCESS;
  }
  pointer_facts_t f;
  if (!pointer_facts(ptr, &f)) runtime_facts(ptr, memops, &f);
  return classify_known(cc, ptr, arg, &f, memops, kind);
}
