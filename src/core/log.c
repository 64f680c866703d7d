/* SPDX-License-Identifier: BSD-3-Clause */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int log_level = -1; /* -1: not set up yet */
int gmpi_log_tracing = 1;  /* until the level is known, GMPI_TRACE asks gmpi_log_enabled */
static int log_rank = -1;

static const char *const level_name[] = {[GMPI_LOG_NONE] = "NONE",
                                         [GMPI_LOG_WARN] = "WARN",
                                         [GMPI_LOG_INFO] = "INFO",
                                         [GMPI_LOG_TRACE] = "TRACE"};

void gmpi_log_setup(gmpi_log_level_t level, int world_rank) {
  log_level = (int)level;
  gmpi_log_tracing = level >= GMPI_LOG_TRACE;
  log_rank = world_rank;
}

/* Before gmpi_init has parsed the configuration, take GMPI_DEBUG at face value. */
static int level_from_env(void) {
  const char *v = getenv("GMPI_DEBUG");
  if (!v) return GMPI_LOG_WARN;
  if (!strcmp(v, "none")) return GMPI_LOG_NONE;
  if (!strcmp(v, "info")) return GMPI_LOG_INFO;
  if (!strcmp(v, "trace")) return GMPI_LOG_TRACE;
  return GMPI_LOG_WARN;
}

int gmpi_log_enabled(gmpi_log_level_t level) {
  if (log_level < 0) {
    log_level = level_from_env();
    gmpi_log_tracing = log_level >= GMPI_LOG_TRACE;
  }
  return (int)level <= log_level && level != GMPI_LOG_NONE;
}

void gmpi_log(gmpi_log_level_t level, const char *fmt, ...) {
  if (!gmpi_log_enabled(level)) return;
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  /* One fprintf per line so ranks' lines do not interleave mid-line. */
  fprintf(stderr, "[gmpi %d] %s %s\n", log_rank, level_name[level], line);
}
