/* SPDX-License-Identifier: BSD-3-Clause */
/* Configuration read from the environment by gmpi_init. A bad value fails init with
 * GMPI_ERR_INVALID_ARG naming the variable and the value. */
#ifndef GMPI_CORE_CONFIG_H
#define GMPI_CORE_CONFIG_H

#include <stddef.h>

#include "gmpi.h"
#include "log.h"

typedef enum {
  GMPI_WANT_AUTO = 0, /* cuda when built and a GPU is usable, else cpu */
  GMPI_WANT_CPU,
  GMPI_WANT_CUDA,
  GMPI_WANT_GPU, /* the GPU platform built in (cuda) */
  GMPI_WANT_ROCM
} gmpi_backend_want_t;

typedef enum {
  GMPI_P2P_AUTO = 0, /* native MPI matching on cpu (framed under GMPI_CHECK=1) */
  GMPI_P2P_NATIVE,   /* cpu: MPI matches messages itself */
  GMPI_P2P_ENVELOPE  /* gmpi matches envelopes and moves data in order (what cuda does) */
} gmpi_p2p_mode_t;

/* How device messages move between ranks (the envelope engine's mover, cuda). */
typedef enum {
  GMPI_DEVICE_P2P_AUTO =
      0,               /* CUDA IPC copies between ranks of one host, NCCL links between hosts */
  GMPI_DEVICE_P2P_NCCL /* NCCL links for every peer (tests the inter-host path on one host) */
} gmpi_device_p2p_t;

/* GMPI_DEFAULT_STREAM_ORDER: how a device call is ordered after the work the program queued on
 * CUDA's legacy default stream (cuda outside stream mode and plan capture). */
typedef enum {
  GMPI_STREAM_ORDER_NONE = 0, /* not at all: the program's buffers are ready when it calls */
  GMPI_STREAM_ORDER_EVENT,    /* an event recorded on stream 0, waited by gmpi's stream */
  GMPI_STREAM_ORDER_PENDING,  /* the same, only when stream 0 still has unfinished work */
  GMPI_STREAM_ORDER_MEMOPS    /* CUDA-aware MPI's rule: cudaMemcpy and cudaMemset into device
                               * buffers made synchronous (SYNC_MEMOPS); no event */
} gmpi_stream_order_t;

/* GMPI_TIMEOUT_ACTION: what a host collective that cannot complete within GMPI_TIMEOUT gets. */
typedef enum {
  GMPI_TIMEOUT_END_JOB = 0, /* MPI's blocking call, bounded by the watchdog: the job ends */
  GMPI_TIMEOUT_STATUS       /* a polled nonblocking call: GMPI_ERR_TIMEOUT (slower) */
} gmpi_timeout_action_t;

/* GMPI_NCCL_MEM: what gmpi_mem_alloc's device memory is on the cuda backend (docs/design.md,
 * "NCCL memory for gmpi_mem_alloc"). Each mode adds to the one before it. */
typedef enum {
  GMPI_NCCL_MEM_OFF = 0,  /* cudaMalloc, as always: the default until measured faster */
  GMPI_NCCL_MEM_ALLOC,    /* ncclMemAlloc (CUDA VMM memory), not registered */
  GMPI_NCCL_MEM_REGISTER, /* and registered (ncclCommRegister, local) with the alloc's comm */
  GMPI_NCCL_MEM_WINDOW    /* and a symmetric window (ncclCommWindowRegister): alloc collective */
} gmpi_nccl_mem_t;

/* GMPI_PLAN_PACK_BYTES when the variable is not set: each backend's own limit (host_plan.c,
 * cuda_plan.c; docs/performance.md says where they come from). */
#define GMPI_PLAN_PACK_BACKEND ((size_t)-1)

/* GMPI_TIMEOUT when the variable is not set, in seconds. */
#define GMPI_DEFAULT_TIMEOUT_S 300.0

typedef struct {
  gmpi_backend_want_t backend;          /* GMPI_BACKEND */
  double timeout_s;                     /* GMPI_TIMEOUT: seconds, 0 = wait forever */
  gmpi_timeout_action_t timeout_action; /* GMPI_TIMEOUT_ACTION: end (the job), status */
  gmpi_log_level_t debug;               /* GMPI_DEBUG */
  int check;                            /* GMPI_CHECK: 1 = agree on every collective's signature */
  int plan_fuse;                        /* GMPI_PLAN_FUSE: 1 = fuse plans' small collectives */
  size_t plan_pack_bytes;               /* GMPI_PLAN_PACK_BYTES: largest fused run packed */
  gmpi_stream_order_t default_stream_order; /* GMPI_DEFAULT_STREAM_ORDER */
  gmpi_p2p_mode_t p2p;                      /* GMPI_P2P: auto, native, envelope */
  gmpi_device_p2p_t device_p2p;             /* GMPI_DEVICE_P2P: auto, nccl */
  size_t max_chunk;          /* GMPI_MAX_CHUNK: most elements per MPI call (tests lower it) */
  char visible_devices[256]; /* GMPI_VISIBLE_DEVICES: comma list, "" = all */
  double gpu_mem_fraction;   /* GMPI_GPU_MEM_FRACTION: share of the device for gmpi_mem_alloc */
  int gpu_preallocate;       /* GMPI_GPU_PREALLOCATE: reserve that budget at init */
  gmpi_nccl_mem_t nccl_mem;  /* GMPI_NCCL_MEM: off, alloc, register, window */
  int links_eager;           /* GMPI_LINKS: 1 (eager, the default) sets every link up at
                              * comm creation; 0 (lazy) at its first message */
  int split_share;           /* GMPI_NCCL_SPLIT_SHARE: 1, 0, or -1 (auto: below
                              * MPI_THREAD_MULTIPLE) -- new comms share NCCL resources */
  int flight_records;        /* GMPI_FLIGHT_RECORDS: operations kept for the flight record */
} gmpi_config_t;

/* Fill cfg from the environment. */
gmpi_status_t gmpi_config_load(gmpi_config_t *cfg);
const char *gmpi_backend_want_name(gmpi_backend_want_t want);

#endif
