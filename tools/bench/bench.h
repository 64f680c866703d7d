/* SPDX-License-Identifier: BSD-3-Clause */
/* gmpi-bench: nccl-tests' columns for gmpi and its baselines, every result checked. */
#ifndef GMPI_BENCH_H
#define GMPI_BENCH_H

#include <gmpi.h>
#include <stddef.h>
#include <stdio.h>

typedef enum {
  BENCH_ALLREDUCE = 0,
  BENCH_BCAST,
  BENCH_REDUCE,
  BENCH_ALLGATHER,
  BENCH_REDUCE_SCATTER,
  BENCH_ALLTOALL,
  BENCH_GATHER,
  BENCH_SCATTER,
  BENCH_ALLGATHERV,
  BENCH_GATHERV,
  BENCH_SCATTERV,
  BENCH_ALLTOALLV,
  BENCH_REDUCE_SCATTERV,
  BENCH_SENDRECV,
  BENCH_COLL_COUNT
} bench_kind_t;

typedef enum { MODE_EAGER = 0, MODE_STREAM, MODE_PLAN } bench_mode_t;

/* Buffer sizes of one row. */
typedef struct {
  size_t count;      /* the count argument of the call */
  size_t send_elems; /* elements in the send buffer */
  size_t recv_elems; /* elements in the receive buffer */
  size_t bytes;      /* nccl-tests' "size": the larger buffer, in bytes */
} bench_shape_t;

typedef struct {
  gmpi_comm_t comm;
  MPI_Comm mpi; /* a duplicate of MPI_COMM_WORLD for the raw-MPI baseline */
  int rank, size;
  gmpi_backend_t backend;
  gmpi_dtype_t dtype;
  gmpi_op_t op;
  int root;
  size_t min_bytes, max_bytes;
  double factor;
  int iters, warmup, check;
  int average; /* -a: each block's time across ranks: 0 rank 0's, 1 mean (default), 2 min, 3 max */
  int rounds;  /* --rounds: gmpi and each baseline alternate this many timed blocks */
  bench_mode_t mode;
  int plan_ops;    /* operations per recorded plan (plan mode) */
  int plan_shared; /* --plan-buffers shared: every recorded call on the same buffers (no fusion) */
  int nonblocking; /* --nonblocking: gmpi's i-form and a wait, not the blocking call */
  /* the v-variants run with equal blocks: count per rank, block r at r*count (set by fill) */
  size_t *vcounts, *vdispls;
  int *vcounts_int, *vdispls_int; /* the same for the MPI baselines */
  /* buffers: where the backend moves data (device on cuda) and their host mirrors */
  void *send, *recv;
  size_t send_cap, recv_cap; /* bytes */
  char *host_in, *host_want, *host_got, *host_stage_send, *host_stage_recv;
} bench_ctx_t;

typedef struct bench_coll {
  bench_kind_t kind;
  const char *name;
  int has_op, has_root;
  double (*busbw_factor)(int nranks);
  void (*shape)(const bench_ctx_t *c, size_t bytes, bench_shape_t *s);
  /* the gmpi call */
  gmpi_status_t (*run)(bench_ctx_t *c, const bench_shape_t *s);
  /* its nonblocking form, started: *req completes it (--nonblocking) */
  gmpi_status_t (*start)(bench_ctx_t *c, const bench_shape_t *s, gmpi_request_t *req);
  /* this rank's input (host_in) and the expected output (host_want) */
  void (*fill)(bench_ctx_t *c, const bench_shape_t *s);
} bench_coll_t;

extern const bench_coll_t bench_colls[BENCH_COLL_COUNT];

/* A baseline: the same operation on the same buffers by other means. */
typedef struct bench_baseline {
  const char *name; /* "mpi", "nccl", "staged" */
  /* 1 when usable for this backend and dtype; else fills why. */
  int (*available)(const bench_ctx_t *c, char *why, size_t why_len);
  /* One operation; returns 0 on success. */
  int (*run)(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s);
  /* 1 when one run is a whole plan's plan_ops calls (its time is divided as gmpi's is) */
  int per_plan;
  /* NULL, or: exchange c's comm and device buffers with the baseline's own, so that checks and
   * timed blocks of it run there; called again to swap back (memkind.c) */
  void (*swap)(bench_ctx_t *c);
} bench_baseline_t;

extern const bench_baseline_t bench_baseline_mpi;
extern const bench_baseline_t bench_baseline_nccl;      /* cuda builds only */
extern const bench_baseline_t bench_baseline_ncclevent; /* cuda builds only */
extern const bench_baseline_t bench_baseline_staged;    /* cuda builds only */
extern const bench_baseline_t bench_baseline_graph;     /* cuda builds only */
/* gmpi on buffers of GMPI_NCCL_MEM=alloc, register, window (memkind.c; cuda backend) */
extern const bench_baseline_t bench_baseline_ncclalloc, bench_baseline_ncclreg,
    bench_baseline_ncclwin;
const bench_baseline_t *bench_find_baseline(const char *name);

/* One measured row for the report. */
typedef struct {
  const char *coll, *impl; /* "allreduce", "gmpi" / "mpi" / ... */
  gmpi_dtype_t dtype;
  gmpi_op_t op;
  int has_op; /* the collective takes op (else it does not apply: JSON null) */
  size_t bytes, count;
  double time_us, algbw, busbw; /* time: the median block's */
  long wrong;
  /* baseline rows: gmpi's time over the baseline's, per round of alternated blocks (gmpi,
   * then the baseline, on the same buffers): the median and its spread; 0 when not measured */
  double ratio, ratio_min, ratio_max;
} bench_row_t;

/* A report file, opened before the run so that a bad path fails at once. */
typedef struct {
  const char *path;
  FILE *f;
} bench_report_t;
/* Open r->path for writing; non-zero after saying why. */
int bench_report_open(bench_report_t *r);
/* What the JSON says about the run besides its rows. */
typedef struct {
  const char *started_utc; /* ISO 8601 */
  double seconds;          /* the whole run */
} bench_run_info_t;
/* Write the rows and close; non-zero (after a message) when the file cannot be written. */
int bench_report_json(bench_report_t *r, const bench_ctx_t *c, const bench_run_info_t *info,
                      const bench_row_t *rows, int n);
int bench_report_svg(bench_report_t *r, const bench_ctx_t *c, const bench_row_t *rows, int n);

/* Helpers shared by the collective table and baselines. */
long bench_count_wrong(const bench_ctx_t *c, size_t elems);
int bench_mpi_type_ok(gmpi_dtype_t d);
/* Plan mode: the bytes between the buffers of two recorded calls (0: all share one). */
size_t bench_plan_slice_bytes(const bench_ctx_t *c, const bench_shape_t *s);
/* Wait for work enqueued on the comm's stream (cuda); nothing on cpu. */
void bench_sync(bench_ctx_t *c);
/* Release the raw-NCCL baseline's communicator (cuda builds). */
void bench_cuda_teardown(void);
/* Release the "checked" baseline's comm and every cached plan (collective). */
void bench_modes_teardown(void);
/* Release the memory baselines' comms and buffers (collective), after bench_modes_teardown. */
void bench_memkind_teardown(void);
/* gmpi's call as the run's mode makes it (eager, nonblocking, stream, plan) on c->comm. */
int bench_gmpi_impl(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s);
/* The blocking MPI call for kind on host buffers (raw-MPI and staged baselines). */
int bench_mpi_call(bench_ctx_t *c, bench_kind_t kind, const bench_shape_t *s, const void *send,
                   void *recv);

#endif
