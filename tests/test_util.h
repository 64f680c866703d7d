/* SPDX-License-Identifier: BSD-3-Clause */
/* Test harness: typed assertions that print both operands and the rank, buffers that live
 * where the backend wants them (host on cpu, device on cuda), and one verdict for all ranks.
 * A test exits 0 when every rank passed, 1 when any failed, 77 (ctest: skipped) when it
 * cannot run here, always after printing why. */
#ifndef GMPI_TEST_UTIL_H
#define GMPI_TEST_UTIL_H

#include <gmpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_failures;
static int t_rank_ = -1;
static gmpi_comm_t t_comm_;

static inline const char *t_status_name(gmpi_status_t s) { return gmpi_status_name(s); }

#define T_FAIL_(...)                                                                               \
  do {                                                                                             \
    t_failures++;                                                                                  \
    fprintf(stderr, "[rank %d] FAIL %s:%d: ", t_rank_, __FILE__, __LINE__);                        \
    fprintf(stderr, __VA_ARGS__);                                                                  \
    fputc('\n', stderr);                                                                           \
  } while (0)

#define T_TRUE(cond)                                                                               \
  do {                                                                                             \
    if (!(cond)) T_FAIL_("%s is false", #cond);                                                    \
  } while (0)

#define T_EQ_INT(a, b)                                                                             \
  do {                                                                                             \
    long long a_ = (long long)(a), b_ = (long long)(b);                                            \
    if (a_ != b_) T_FAIL_("%s == %s: %lld != %lld", #a, #b, a_, b_);                               \
  } while (0)

#define T_EQ_SIZE(a, b)                                                                            \
  do {                                                                                             \
    size_t a_ = (size_t)(a), b_ = (size_t)(b);                                                     \
    if (a_ != b_) T_FAIL_("%s == %s: %zu != %zu", #a, #b, a_, b_);                                 \
  } while (0)

/* A gmpi_msg_status_t names source src, tag tg and cnt elements. */
#define T_STATUS_IS(st, src, tg, cnt)                                                              \
  do {                                                                                             \
    T_EQ_INT((st).source, (src));                                                                  \
    T_EQ_INT((st).tag, (tg));                                                                      \
    T_EQ_SIZE((st).count, (cnt));                                                                  \
  } while (0)

#define T_EQ_PTR(a, b)                                                                             \
  do {                                                                                             \
    const void *a_ = (a), *b_ = (b);                                                               \
    if (a_ != b_) T_FAIL_("%s == %s: %p != %p", #a, #b, a_, b_);                                   \
  } while (0)

#define T_NEAR(a, b, rel)                                                                          \
  do {                                                                                             \
    double a_ = (double)(a), b_ = (double)(b);                                                     \
    if (!(fabs(a_ - b_) <= (rel) * (fabs(b_) > 1 ? fabs(b_) : 1)))                                 \
      T_FAIL_("%s ~= %s: %.9g != %.9g (tolerance %g)", #a, #b, a_, b_, (double)(rel));             \
  } while (0)

/* The call returns the expected status (and on failure its detail names something). */
#define T_STATUS(call, expect)                                                                     \
  do {                                                                                             \
    gmpi_status_t s_ = (call), e_ = (expect);                                                      \
    if (s_ != e_)                                                                                  \
      T_FAIL_("%s returned %s, expected %s; last error: %s", #call, t_status_name(s_),             \
              t_status_name(e_), gmpi_last_error());                                               \
    else if (e_ != GMPI_SUCCESS && gmpi_last_error()[0] == '\0')                                   \
      T_FAIL_("%s failed without a gmpi_last_error() detail", #call);                              \
  } while (0)

#define T_OK(call) T_STATUS(call, GMPI_SUCCESS)

/* The failure detail mentions a word (an argument name, a value). */
#define T_ERROR_MENTIONS(word)                                                                     \
  do {                                                                                             \
    if (!strstr(gmpi_last_error(), (word)))                                                        \
      T_FAIL_("gmpi_last_error() does not mention '%s': %s", (word), gmpi_last_error());           \
  } while (0)

/* Start: MPI and gmpi on MPI_COMM_WORLD. */
static inline gmpi_comm_t t_init(int *argc, char ***argv) {
  int provided;
  MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &t_rank_);
  gmpi_status_t st = gmpi_init(MPI_COMM_WORLD, &t_comm_);
  if (st != GMPI_SUCCESS) {
    fprintf(stderr, "[rank %d] gmpi_init failed: %s: %s\n", t_rank_, t_status_name(st),
            gmpi_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return t_comm_;
}

/* Every rank's failures reduced to one verdict, printed once. */
static inline int t_finish(const char *name) {
  int total = 0;
  MPI_Allreduce(&t_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (t_comm_ && gmpi_finalize(&t_comm_) != GMPI_SUCCESS) total++;
  if (t_rank_ == 0)
    printf("%s: %s (%d failed checks over all ranks)\n", name, total ? "FAIL" : "PASS", total);
  MPI_Finalize();
  return total ? 1 : 0;
}

/* Skip: printed reason, exit 77 on every rank (ctest shows it as skipped, not passed). */
static inline int t_skip(const char *name, const char *why) {
  if (t_rank_ <= 0) printf("%s: SKIP: %s\n", name, why);
  if (t_comm_) gmpi_finalize(&t_comm_);
  MPI_Finalize();
  return 77;
}

/* GMPI_TEST_HOST_BUFFERS=1: t_alloc gives plain host memory, so a cuda run exercises the host
 * (MPI engine) paths of a cuda comm. */
static inline int t_host_buffers(void) {
  const char *v = getenv("GMPI_TEST_HOST_BUFFERS");
  return v && strcmp(v, "1") == 0;
}

/* Buffers where the backend moves data fastest, filled and read back through host mirrors. */
static inline void *t_alloc(size_t bytes) {
  void *p = NULL;
  if (t_host_buffers()) {
    p = calloc(1, bytes ? bytes : 1);
    if (!p) MPI_Abort(MPI_COMM_WORLD, 1);
    return p;
  }
  gmpi_status_t st = gmpi_mem_alloc(t_comm_, bytes ? bytes : 1, &p);
  if (st != GMPI_SUCCESS) {
    fprintf(stderr, "[rank %d] gmpi_mem_alloc(%zu) failed: %s\n", t_rank_, bytes,
            gmpi_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return p;
}
static inline void t_free(void *p) {
  if (t_host_buffers())
    free(p);
  else
    gmpi_mem_free(t_comm_, p);
}
static inline void t_put(void *dev, const void *host, size_t bytes) {
  if (gmpi_mem_copy(t_comm_, dev, host, bytes) != GMPI_SUCCESS)
    T_FAIL_("t_put: %s", gmpi_last_error());
}
static inline void t_get(void *host, const void *dev, size_t bytes) {
  if (gmpi_mem_copy(t_comm_, host, dev, bytes) != GMPI_SUCCESS)
    T_FAIL_("t_get: %s", gmpi_last_error());
}
static inline void *t_host(size_t bytes) {
  void *p = calloc(1, bytes ? bytes : 1);
  if (!p) MPI_Abort(MPI_COMM_WORLD, 1);
  return p;
}

#endif
