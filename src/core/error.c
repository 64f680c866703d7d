/* SPDX-License-Identifier: BSD-3-Clause */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

#define GMPI_ERROR_LEN 1024

_Thread_local gmpi_thread_t gmpi_thread = {.call = {.func = "gmpi", .rank = -1}};
static _Thread_local char last_error[GMPI_ERROR_LEN];

/* One entry per status: its name and its text. The hint at GMPI_DEBUG=info only where the log
 * says more than gmpi_last_error() (the flight record, NCCL's or MPI's own words). */
#define GMPI_HINT " (run with GMPI_DEBUG=info for the flight record)"
static const struct {
  const char *name;
  const char *text;
} status_info[] = {
    [GMPI_SUCCESS] = {"GMPI_SUCCESS", "success"},
    [GMPI_ERR_INVALID_ARG] = {"GMPI_ERR_INVALID_ARG", "invalid argument"},
    [GMPI_ERR_UNSUPPORTED] = {"GMPI_ERR_UNSUPPORTED",
                              "operation not supported on this backend or buffer"},
    [GMPI_ERR_NO_DEVICE] = {"GMPI_ERR_NO_DEVICE", "no usable device for the requested backend"},
    [GMPI_ERR_NO_MEMORY] = {"GMPI_ERR_NO_MEMORY", "out of memory or over the memory budget"},
    [GMPI_ERR_TRUNCATE] = {"GMPI_ERR_TRUNCATE", "message longer than the receive buffer"},
    [GMPI_ERR_MISMATCH] = {"GMPI_ERR_MISMATCH", "ranks disagree on an operation" GMPI_HINT},
    [GMPI_ERR_TIMEOUT] = {"GMPI_ERR_TIMEOUT",
                          "operation did not complete within GMPI_TIMEOUT" GMPI_HINT},
    [GMPI_ERR_STATE] = {"GMPI_ERR_STATE",
                        "communicator or object in a state that forbids this call"},
    [GMPI_ERR_MPI] = {"GMPI_ERR_MPI", "MPI call failed" GMPI_HINT},
    [GMPI_ERR_BACKEND] = {"GMPI_ERR_BACKEND", "backend (CUDA/NCCL) call failed" GMPI_HINT},
    [GMPI_ERR_INTERNAL] = {"GMPI_ERR_INTERNAL", "internal error in gmpi" GMPI_HINT},
};

static int is_status(gmpi_status_t status) {
  return (unsigned)status < sizeof(status_info) / sizeof(status_info[0]) &&
         status_info[status].name;
}

const char *gmpi_strerror(gmpi_status_t status) {
  return is_status(status) ? status_info[status].text
                           : "unknown gmpi status (not a gmpi_status_t value)";
}

const char *gmpi_status_name(gmpi_status_t status) {
  return is_status(status) ? status_info[status].name : "GMPI_?";
}

const char *gmpi_last_error(void) { return last_error; }

gmpi_call_ctx_t *gmpi_call_ctx(void) { return &gmpi_thread.call; }

/* Failures that come from outside the caller's arguments are worth a warning in the log. */
static int is_loud(gmpi_status_t status) {
  return status == GMPI_ERR_MPI || status == GMPI_ERR_BACKEND || status == GMPI_ERR_TIMEOUT ||
         status == GMPI_ERR_MISMATCH || status == GMPI_ERR_INTERNAL || status == GMPI_ERR_NO_DEVICE;
}

gmpi_status_t gmpi_error(gmpi_status_t status, const char *fmt, ...) {
  if (gmpi_thread.call.described) return status;
  gmpi_thread.call.described = 1;
  char detail[GMPI_ERROR_LEN - 64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof(detail), fmt, ap);
  va_end(ap);
  char rank[24] = "rank not known yet"; /* before MPI, or no comm named */
  if (gmpi_thread.call.rank >= 0) snprintf(rank, sizeof(rank), "rank %d", gmpi_thread.call.rank);
  snprintf(last_error, sizeof(last_error), "%s (%s): %s [%s]", gmpi_thread.call.func, rank, detail,
           gmpi_strerror(status));
  /* The text up to the '(' of the hint is enough in the log line. */
  gmpi_log(is_loud(status) ? GMPI_LOG_WARN : GMPI_LOG_INFO, "%s: %s", gmpi_thread.call.func,
           detail);
  return status;
}
