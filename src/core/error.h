/* SPDX-License-Identifier: BSD-3-Clause */
/* Errors: one status enum (gmpi.h), a per-thread detail string, and the check macros.
 *
 * A failure is described once, where it is first seen, with gmpi_error(); callers above it
 * only pass the status up with GMPI_CHECK / GMPI_CHECK_GOTO. Foreign errors (MPI, CUDA,
 * NCCL) are converted by their own macros in the layer that calls them. */
#ifndef GMPI_CORE_ERROR_H
#define GMPI_CORE_ERROR_H

#include "gmpi.h"
#include "tls.h"

/* Thread-local context of the public call in progress, used to prefix error details. */
typedef struct {
  const char *func;     /* public function name, e.g. "gmpi_allreduce" */
  int rank;             /* rank in the comm the call is on, -1 when unknown */
  int described;        /* 1 once this call has described its failure */
  unsigned long serial; /* this thread's number for the call, from 1: state that speaks of one
                         * call only compares it (the cuda backend's memops answer) */
} gmpi_call_ctx_t;

/* What a thread keeps across its public calls, in one thread-local: in a shared library each
 * thread-local a call touches costs a call of its own to find it (a TLS descriptor), and
 * every public call touches all three of these. */
typedef struct {
  gmpi_call_ctx_t call;   /* the public call in progress (gmpi_call_ctx) */
  unsigned long serial;   /* the last serial handed out: apart from call, because a call that
                           * saves and restores call (progress.c) must not reuse a serial */
  gmpi_comm_t live_comm;  /* the comm this thread found live last (comm.h) */
  unsigned long live_gen; /* and the registry's generation then */
} gmpi_thread_t;
extern _Thread_local gmpi_thread_t gmpi_thread GMPI_TLS_HOT;

/* Start a public call: resets the "described" flag so the first failure below wins. Inline:
 * every public call starts so. */
static inline void gmpi_call_begin(const char *func, int rank) {
  gmpi_thread.call.func = func;
  gmpi_thread.call.rank = rank;
  gmpi_thread.call.described = 0;
  gmpi_thread.call.serial = ++gmpi_thread.serial;
}
/* The context of the call in progress on this thread. */
gmpi_call_ctx_t *gmpi_call_ctx(void);

/* Describe a failure (printf format) and return status. Only the first description of a call
 * is kept and logged (at info level, or warn for foreign and cross-rank failures). */
gmpi_status_t gmpi_error(gmpi_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Pass a failing status up, without describing it again. */
#define GMPI_CHECK(call)                                                                           \
  do {                                                                                             \
    gmpi_status_t gmpi_st_ = (call);                                                               \
    if (gmpi_st_ != GMPI_SUCCESS) return gmpi_st_;                                                 \
  } while (0)

/* Same, but store the status in st and jump to a cleanup label. */
#define GMPI_CHECK_GOTO(call, st, label)                                                           \
  do {                                                                                             \
    (st) = (call);                                                                                 \
    if ((st) != GMPI_SUCCESS) goto label;                                                          \
  } while (0)

#endif
