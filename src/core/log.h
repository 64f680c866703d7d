/* SPDX-License-Identifier: BSD-3-Clause */
/* One logging function, levels from GMPI_DEBUG (none, warn, info, trace), lines prefixed by
 * the rank: "[gmpi 3] WARN gmpi_init: ...". */
#ifndef GMPI_CORE_LOG_H
#define GMPI_CORE_LOG_H

typedef enum { GMPI_LOG_NONE = 0, GMPI_LOG_WARN, GMPI_LOG_INFO, GMPI_LOG_TRACE } gmpi_log_level_t;

/* Set by gmpi_init from the configuration; before that, read from GMPI_DEBUG on first use. */
void gmpi_log_setup(gmpi_log_level_t level, int world_rank);
int gmpi_log_enabled(gmpi_log_level_t level);
void gmpi_log(gmpi_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 1 once trace logging is on (set with the level): the per-call test GMPI_TRACE makes without
 * a function call, since every operation passes here. */
extern int gmpi_log_tracing;

#define GMPI_TRACE(...)                                                                            \
  do {                                                                                             \
    if (gmpi_log_tracing && gmpi_log_enabled(GMPI_LOG_TRACE))                                      \
      gmpi_log(GMPI_LOG_TRACE, __VA_ARGS__);                                                       \
  } while (0)

#endif
