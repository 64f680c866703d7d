/* SPDX-License-Identifier: BSD-3-Clause */
#include "error.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define GMPI_ERROR_LEN 1024

_Thread_local gmpi_thread_t gmpi_thread GMPI_TLS_HOT = {.call = {.func = "gmpi", .rank = -1}};

/* This thread's last error text: a heap block made at its first failure and freed when it
 * exits, so that libgmpi's thread-local block stays small (tls.h). */
static _Thread_local char *last_error GMPI_TLS_HOT;
static _Thread_local int last_error_lost GMPI_TLS_HOT; /* no memory for the block */
static pthread_key_t last_error_key;
static pthread_once_t last_error_once = PTHREAD_ONCE_INIT;
static int last_error_key_made;

static void free_last_error(void *text) {
  free(text);
  last_error = NULL;
}

static void make_last_error_key(void) {
  last_error_key_made = pthread_key_create(&last_error_key, free_last_error) == 0;
}

/* The thread's block, made now if it has none; NULL when there is no memory for it. */
static char *last_error_block(void) {
  if (last_error) return last_error;
  pthread_once(&last_error_once, make_last_error_key);
  char *text = last_error_key_made ? malloc(GMPI_ERROR_LEN) : NULL;
  if (!text || pthread_setspecific(last_error_key, text) != 0) {
    free(text);
    last_error_lost = 1;
    return NULL;
  }
  last_error = text;
  return text;
}

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

const char *gmpi_last_error(void) {
  if (last_error) return last_error;
  return last_error_lost ? "gmpi: no memory to keep this thread's last error" : "";
}

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
  char *text = last_error_block();
  if (text)
    snprintf(text, GMPI_ERROR_LEN, "%s (%s): %s [%s]", gmpi_thread.call.func, rank, detail,
             gmpi_strerror(status));
  /* The text up to the '(' of the hint is enough in the log line. */
  gmpi_log(is_loud(status) ? GMPI_LOG_WARN : GMPI_LOG_INFO, "%s: %s", gmpi_thread.call.func,
           detail);
  return status;
}
