/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

typedef struct {
  const char *name;
  int value;
} config_word_t;

static const config_word_t backend_words[] = {{"auto", GMPI_WANT_AUTO}, {"cpu", GMPI_WANT_CPU},
                                              {"cuda", GMPI_WANT_CUDA}, {"gpu", GMPI_WANT_GPU},
                                              {"rocm", GMPI_WANT_ROCM}, {NULL, 0}};
static const config_word_t debug_words[] = {{"none", GMPI_LOG_NONE},
                                            {"warn", GMPI_LOG_WARN},
                                            {"info", GMPI_LOG_INFO},
                                            {"trace", GMPI_LOG_TRACE},
                                            {NULL, 0}};
static const config_word_t p2p_words[] = {{"auto", GMPI_P2P_AUTO},
                                          {"native", GMPI_P2P_NATIVE},
                                          {"envelope", GMPI_P2P_ENVELOPE},
                                          {NULL, 0}};
static const config_word_t device_p2p_words[] = {
    {"auto", GMPI_DEVICE_P2P_AUTO}, {"nccl", GMPI_DEVICE_P2P_NCCL}, {NULL, 0}};
static const config_word_t nccl_mem_words[] = {{"off", GMPI_NCCL_MEM_OFF},
                                               {"alloc", GMPI_NCCL_MEM_ALLOC},
                                               {"register", GMPI_NCCL_MEM_REGISTER},
                                               {"window", GMPI_NCCL_MEM_WINDOW},
                                               {NULL, 0}};
static const config_word_t bool_words[] = {{"0", 0}, {"1", 1}, {NULL, 0}};
static const config_word_t links_words[] = {{"lazy", 0}, {"eager", 1}, {NULL, 0}};
static const config_word_t auto_bool_words[] = {{"auto", -1}, {"0", 0}, {"1", 1}, {NULL, 0}};
static const config_word_t stream_order_words[] = {{"0", GMPI_STREAM_ORDER_NONE},
                                                   {"1", GMPI_STREAM_ORDER_EVENT},
                                                   {"pending", GMPI_STREAM_ORDER_PENDING},
                                                   {"memops", GMPI_STREAM_ORDER_MEMOPS},
                                                   {NULL, 0}};
static const config_word_t timeout_action_words[] = {
    {"end", GMPI_TIMEOUT_END_JOB}, {"status", GMPI_TIMEOUT_STATUS}, {NULL, 0}};

const char *gmpi_backend_want_name(gmpi_backend_want_t want) {
  for (const config_word_t *w = backend_words; w->name; w++)
    if (w->value == (int)want) return w->name;
  return "invalid";
}

static gmpi_status_t bad_value(const char *var, const char *value, const char *expected) {
  return gmpi_error(GMPI_ERR_INVALID_ARG, "environment variable %s='%s' is not %s", var, value,
                    expected);
}

/* A word from a fixed list; unset keeps *out. */
static gmpi_status_t read_word(const char *var, const config_word_t *words, const char *expected,
                               int *out) {
  const char *v = getenv(var);
  if (!v) return GMPI_SUCCESS;
  for (const config_word_t *w = words; w->name; w++) {
    if (!strcmp(v, w->name)) {
      *out = w->value;
      return GMPI_SUCCESS;
    }
  }
  return bad_value(var, v, expected);
}

/* A finite number in [lo, hi]; unset keeps *out. */
static gmpi_status_t read_number(const char *var, double lo, double hi, const char *expected,
                                 double *out) {
  const char *v = getenv(var);
  if (!v) return GMPI_SUCCESS;
  char *end = NULL;
  errno = 0;
  double d = strtod(v, &end);
  if (errno || end == v || *end != '\0' || !isfinite(d) || d < lo || d > hi)
    return bad_value(var, v, expected);
  *out = d;
  return GMPI_SUCCESS;
}

static gmpi_status_t read_devices(gmpi_config_t *cfg) {
  const char *v = getenv("GMPI_VISIBLE_DEVICES");
  if (!v) return GMPI_SUCCESS;
  size_t n = strlen(v);
  if (n >= sizeof(cfg->visible_devices))
    return bad_value("GMPI_VISIBLE_DEVICES", v, "a comma list shorter than 256 characters");
  for (size_t i = 0; i < n; i++) {
    int digit = v[i] >= '0' && v[i] <= '9';
    int comma_ok = v[i] == ',' && i > 0 && i + 1 < n && v[i - 1] != ',';
    if (!digit && !comma_ok)
      return bad_value("GMPI_VISIBLE_DEVICES", v, "a comma list of device numbers like 0,1,3");
  }
  memcpy(cfg->visible_devices, v, n + 1);
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_config_load(gmpi_config_t *cfg) {
  gmpi_config_t c = {.backend = GMPI_WANT_AUTO,
                     .timeout_s = GMPI_DEFAULT_TIMEOUT_S,
                     .debug = GMPI_LOG_WARN,
                     .check = 0,
                     .plan_fuse = 1,
                     .plan_pack_bytes = GMPI_PLAN_PACK_BACKEND,
                     .default_stream_order = GMPI_STREAM_ORDER_MEMOPS,
                     .p2p = GMPI_P2P_AUTO,
                     .max_chunk = (size_t)1 << 30,
                     .gpu_mem_fraction = 0.75,
                     .gpu_preallocate = 0,
                     .split_share = -1,
                     .links_eager = 1,
                     .flight_records = 16};
  int backend = (int)c.backend, debug = (int)c.debug, p2p = (int)c.p2p;
  int device_p2p = (int)GMPI_DEVICE_P2P_AUTO, timeout_action = (int)GMPI_TIMEOUT_END_JOB;
  int stream_order = (int)c.default_stream_order;
  int nccl_mem = (int)GMPI_NCCL_MEM_OFF;
  double chunk = (double)c.max_chunk, records = c.flight_records;
  double pack = -1.0; /* unset: the backend's limit */
  GMPI_CHECK(read_word("GMPI_BACKEND", backend_words, "one of auto, cpu, cuda, gpu", &backend));
  GMPI_CHECK(read_word("GMPI_DEBUG", debug_words, "one of none, warn, info, trace", &debug));
  GMPI_CHECK(read_word("GMPI_P2P", p2p_words, "one of auto, native, envelope", &p2p));
  GMPI_CHECK(read_word("GMPI_DEVICE_P2P", device_p2p_words, "one of auto, nccl", &device_p2p));
  GMPI_CHECK(read_word("GMPI_CHECK", bool_words, "0 or 1", &c.check));
  GMPI_CHECK(read_word("GMPI_PLAN_FUSE", bool_words, "0 or 1", &c.plan_fuse));
  GMPI_CHECK(read_word("GMPI_DEFAULT_STREAM_ORDER", stream_order_words,
                       "one of 0, 1, pending, memops", &stream_order));
  GMPI_CHECK(read_word("GMPI_TIMEOUT_ACTION", timeout_action_words, "one of end, status",
                       &timeout_action));
  GMPI_CHECK(read_word("GMPI_GPU_PREALLOCATE", bool_words, "0 or 1", &c.gpu_preallocate));
  GMPI_CHECK(read_word("GMPI_LINKS", links_words, "one of lazy, eager", &c.links_eager));
  GMPI_CHECK(
      read_word("GMPI_NCCL_SPLIT_SHARE", auto_bool_words, "one of auto, 0, 1", &c.split_share));
  GMPI_CHECK(
      read_word("GMPI_NCCL_MEM", nccl_mem_words, "one of off, alloc, register, window", &nccl_mem));
  GMPI_CHECK(
      read_number("GMPI_TIMEOUT", 0.0, 1e9, "a number of seconds >= 0 (0 = never)", &c.timeout_s));
  GMPI_CHECK(read_number("GMPI_GPU_MEM_FRACTION", 0.0, 1.0, "a fraction between 0 and 1",
                         &c.gpu_mem_fraction));
  GMPI_CHECK(read_number("GMPI_MAX_CHUNK", 1.0, (double)INT_MAX,
                         "a whole number of elements between 1 and 2147483647", &chunk));
  GMPI_CHECK(
      read_number("GMPI_FLIGHT_RECORDS", 1.0, 4096.0, "a number of records (1..4096)", &records));
  GMPI_CHECK(read_number("GMPI_PLAN_PACK_BYTES", 0.0, 1e15,
                         "a number of bytes >= 0 (0 = never pack a plan's fused runs)", &pack));
  GMPI_CHECK(read_devices(&c));
  if (chunk != floor(chunk))
    return bad_value("GMPI_MAX_CHUNK", getenv("GMPI_MAX_CHUNK"), "a whole number of elements");
  if (pack != floor(pack))
    return bad_value("GMPI_PLAN_PACK_BYTES", getenv("GMPI_PLAN_PACK_BYTES"),
                     "a whole number of bytes");
  c.backend = (gmpi_backend_want_t)backend;
  c.debug = (gmpi_log_level_t)debug;
  c.default_stream_order = (gmpi_stream_order_t)stream_order;
  c.p2p = (gmpi_p2p_mode_t)p2p;
  c.device_p2p = (gmpi_device_p2p_t)device_p2p;
  c.timeout_action = (gmpi_timeout_action_t)timeout_action;
  c.nccl_mem = (gmpi_nccl_mem_t)nccl_mem;
  c.max_chunk = (size_t)chunk;
  if (pack >= 0.0) c.plan_pack_bytes = (size_t)pack;
  c.flight_records = (int)records;
  *cfg = c;
  return GMPI_SUCCESS;
}
