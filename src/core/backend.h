/* SPDX-License-Identifier: BSD-3-Clause */
/* The backend interface. src/core decides *what* runs (validated arguments, plans, checks,
 * point-to-point matching); a backend binds a device and decides *how* its memory moves: NCCL
 * collectives and a data mover on cuda, nothing on cpu (host memory is the host engine's, in
 * src/host). Each backend is one folder that fills one gmpi_backend_ops_t. */
#ifndef GMPI_CORE_BACKEND_H
#define GMPI_CORE_BACKEND_H

#include <stddef.h>

#include "config.h"
#include "engine.h"
#include "gmpi.h"
#include "mover.h"

/* What gmpi_comm_nccl / _stream / _device ask a backend for. */
typedef enum { GMPI_QUERY_NCCL_COMM, GMPI_QUERY_STREAM, GMPI_QUERY_DEVICE } gmpi_query_t;

typedef struct gmpi_backend_ops {
  const char *name;    /* "cpu" or "cuda": logs, gmpi-info, error messages */
  gmpi_backend_t kind; /* the public enum value */
  /* Version of the library it drives ("NCCL 2.28.3"), or NULL. */
  const char *(*lib_version)(void);
  /* Can this rank use the backend (comm's cfg, host and local rank are set)? On no, writes
   * the reason into why. Local, not collective. */
  gmpi_status_t (*probe)(gmpi_comm_t comm, char *why, size_t why_len);
  /* Collective: attach backend state to comm (core fields and oob are set). parent is the
   * comm being split, or NULL under gmpi_init; color/key are the split's arguments. */
  gmpi_status_t (*comm_init)(gmpi_comm_t comm, gmpi_comm_t parent, int color, int key);
  /* Release backend state. Collective when the comm is healthy; local after a failure. */
  void (*comm_fini)(gmpi_comm_t comm);
  /* Memory the backend moves fastest, and its release. */
  gmpi_status_t (*mem_alloc)(gmpi_comm_t comm, size_t bytes, void **ptr);
  gmpi_status_t (*mem_free)(gmpi_comm_t comm, void *ptr);
  /* Copy between host and/or backend memory; complete on return. */
  gmpi_status_t (*mem_copy)(gmpi_comm_t comm, void *dst, const void *src, size_t bytes);
  /* Where ptr lives on this rank; NULL: everything is host memory. Memory this rank cannot
   * use (another GPU's) is GMPI_ERR_INVALID_ARG naming arg. NULL ptr is GMPI_MEM_NONE. */
  gmpi_status_t (*classify)(gmpi_comm_t comm, const void *ptr, const char *arg,
                            gmpi_mem_kind_t *kind);
  /* Stream-ordered mode is on: operations without buffers (barrier) go to the device engine,
   * and host work waits for the user's stream first (host_fence). NULL: never. */
  int (*stream_ordered)(gmpi_comm_t comm);
  /* Wait for the device work the user enqueued, before host memory is read or written. */
  gmpi_status_t (*host_fence)(gmpi_comm_t comm);
  /* The collective half of the engine for this backend's device memory, with comm->be as its
   * state; NULL on cpu. */
  const gmpi_coll_engine_ops_t *device_coll;
  /* The data mover for this backend's device memory, on which core builds the device engine's
   * point to point (core/envelope.h). Collective, after comm_init (comm->be is set): *mover and
   * *ctx are handed to core, which on success owns ctx from then on, also when building on it
   * fails (mover->destroy releases it, before comm_fini). NULL on cpu. */
  gmpi_status_t (*device_mover)(gmpi_comm_t comm, const gmpi_mover_t **mover, void **ctx);
  /* Raw handles for interop; GMPI_ERR_UNSUPPORTED when the backend has none. */
  gmpi_status_t (*query)(gmpi_comm_t comm, gmpi_query_t what, void **out);
  /* Stream-ordered mode (cuda); NULL when unsupported. */
  gmpi_status_t (*set_stream)(gmpi_comm_t comm, void *stream);
  /* Device memory held by the library itself and by gmpi_mem_alloc, in bytes. */
  void (*mem_usage)(gmpi_comm_t comm, size_t *library, size_t *user);
} gmpi_backend_ops_t;

/* Backends to choose from, in the order auto tries them (best first). Core is handed the list
 * (core/select.h) rather than naming the backends: they are built on core, not core on them.
 * The ones built into this library are src/backends/registry.h's. */
typedef struct {
  const gmpi_backend_ops_t *const *backends;
  int count;
} gmpi_backend_list_t;

#endif
