/* The backend interface. src/core decides *what* runs (validated arguments, plans, checks);
 * a backend decides *how*: cpu moves host memory with MPI, cuda moves device memory with
 * NCCL. Each backend is one folder that fills one gmpi_backend_ops_t. */
#ifndef GMPI_CORE_BACKEND_H
#define GMPI_CORE_BACKEND_H

#include <stddef.h>

#include "config.h"
#include "gmpi.h"

typedef enum {
  GMPI_COLL_ALLREDUCE = 0,
  GMPI_COLL_BCAST,
  GMPI_COLL_REDUCE,
  GMPI_COLL_ALLGATHER,
  GMPI_COLL_REDUCE_SCATTER,
  GMPI_COLL_ALLTOALL,
  GMPI_COLL_BARRIER,
  GMPI_COLL_KIND_COUNT
} gmpi_coll_kind_t;

/* One collective, as the user called it. count means what the public call says:
 * elements per rank for allgather (sendcount), reduce_scatter (recvcount) and alltoall
 * (count_per_peer). For bcast, sendbuf == recvbuf == buf. */
typedef struct {
  gmpi_coll_kind_t kind;
  const void *sendbuf;
  void *recvbuf;
  size_t count;
  gmpi_dtype_t dtype;
  gmpi_op_t op; /* reductions only */
  int root;     /* bcast and reduce only */
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
} gmpi_p2p_args_t;

/* What gmpi_comm_nccl / _stream / _device ask a backend for. */
typedef enum { GMPI_QUERY_NCCL_COMM, GMPI_QUERY_STREAM, GMPI_QUERY_DEVICE } gmpi_query_t;

struct gmpi_plan;

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
  /* Run one validated collective to completion (or enqueue it, in stream-ordered mode),
   * honouring GMPI_TIMEOUT. */
  gmpi_status_t (*coll)(gmpi_comm_t comm, const gmpi_coll_args_t *args);
  /* Start a validated point-to-point request; it completes through p2p_test. */
  gmpi_status_t (*p2p_post)(gmpi_request_t req);
  /* Progress the comm and tell whether req is done; on done, req->status and req->result
   * are final and the backend has released its part of req. Never blocks. */
  gmpi_status_t (*p2p_test)(gmpi_request_t req, int *done);
  /* Give up on a request that will not be waited (timeout, finalize): release what it holds. */
  void (*p2p_abandon)(gmpi_request_t req);
  /* Raw handles for interop; GMPI_ERR_UNSUPPORTED when the backend has none. */
  gmpi_status_t (*query)(gmpi_comm_t comm, gmpi_query_t what, void **out);
  /* Stream-ordered mode (cuda); NULL when unsupported. */
  gmpi_status_t (*set_stream)(gmpi_comm_t comm, void *stream);
  /* Device memory held by the library itself and by gmpi_mem_alloc, in bytes. */
  void (*mem_usage)(gmpi_comm_t comm, size_t *library, size_t *user);
  /* Plans: lower a validated, matched plan; replay it; free what lowering made. */
  gmpi_status_t (*plan_compile)(struct gmpi_plan *plan);
  gmpi_status_t (*plan_run)(struct gmpi_plan *plan);
  void (*plan_release)(struct gmpi_plan *plan);
} gmpi_backend_ops_t;

/* The backends built into this library, in the order auto tries them (best first). */
extern const gmpi_backend_ops_t *const gmpi_backends[];
extern const int gmpi_backend_count;

#endif
