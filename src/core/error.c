#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

#define GMPI_ERROR_LEN 1024

static _Thread_local gmpi_call_ctx_t call_ctx = {.func = "gmpi", .rank = -1};
static _Thread_local char last_error[GMPI_ERROR_LEN];

static const char *const status_text[] = {
#define GMPI_STATUS_TEXT_(name, value, text)                                                       \
  [value] = text " (run with GMPI_DEBUG=info for details)",
    GMPI_STATUS_MAP(GMPI_STATUS_TEXT_)
#undef GMPI_STATUS_TEXT_
};

const char *gmpi_strerror(gmpi_status_t status) {
  if (status == GMPI_SUCCESS) return "success";
  if ((unsigned)status >= sizeof(status_text) / sizeof(status_text[0]) || !status_text[status])
    return "unknown gmpi status (not a gmpi_status_t value)";
  return status_text[status];
}

const char *gmpi_last_error(void) { return last_error; }

void gmpi_call_begin(const char *func, int rank) {
  call_ctx.func = func;
  call_ctx.rank = rank;
  call_ctx.described = 0;
}

gmpi_call_ctx_t *gmpi_call_ctx(void) { return &call_ctx; }

/* Failures that come from outside the caller's arguments are worth a warning in the log. */
static int is_loud(gmpi_status_t status) {
  return status == GMPI_ERR_MPI || status == GMPI_ERR_BACKEND || status == GMPI_ERR_TIMEOUT ||
         status == GMPI_ERR_MISMATCH || status == GMPI_ERR_INTERNAL || status == GMPI_ERR_NO_DEVICE;
}

gmpi_status_t gmpi_error(gmpi_status_t status, const char *fmt, ...) {
  if (call_ctx.described) return status;
  call_ctx.described = 1;
  char detail[GMPI_ERROR_LEN - 64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof(detail), fmt, ap);
  va_end(ap);
  snprintf(last_error, sizeof(last_error), "%s (rank %d): %s [%s]", call_ctx.func, call_ctx.rank,
           detail, gmpi_strerror(status));
  /* The text up to the '(' of the hint is enough in the log line. */
  gmpi_log(is_loud(status) ? GMPI_LOG_WARN : GMPI_LOG_INFO, "%s: %s", call_ctx.func, detail);
  return status;
}
