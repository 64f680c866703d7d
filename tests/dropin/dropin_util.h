/* SPDX-License-Identifier: BSD-3-Clause */
/* Harness for the drop-in tests: plain MPI programs that must pass under any MPI library, with
 * or without libgmpi_mpi.so interposed. Nothing here knows about gmpi.
 *
 * Use: d_init(&argc, &argv, "name", D_SCOPE_P2P or D_SCOPE_COLL) instead of MPI_Init, and
 * return d_finish() from main (it calls MPI_Finalize).
 *
 * Assertions: D_TRUE, D_EQ_INT, D_EQ_DBL, D_MPI (the call returns MPI_SUCCESS, else MPI's error
 * string is shown), D_STATUS (source, tag and MPI_Get_count of a status) and the array checks
 * d_check_int/dbl/bytes (one line naming the first wrong element and how many were wrong) print
 * the operands, the rank, its memory kind and the line, and count failures per rank; d_label()
 * formats a check's name. d_finish() sums the counts over MPI_COMM_WORLD, rank 0 prints
 * "PASS name" or "FAIL name (N failures)", and main returns 0 or 1. A test that cannot run here
 * returns 77 (skip) on every rank after rank 0 says why: d_skip(why) for a test's own reasons
 * (every rank must decide alike), d_init itself for the memory mode.
 *
 * Memory: every buffer a test hands to MPI comes from mem_alloc() or mem_alloc_p2p() and is
 * filled and read back with mem_put()/mem_get()/mem_set() (mem_dup(), mem_dup_p2p() and
 * mem_fetch() combine an allocation with a copy), so one source runs on host or device memory;
 * the mem_* calls know each buffer's kind. Plain host arrays (expected values,
 * statuses, counts) come from host_alloc(). The environment chooses:
 *   DROPIN_MEMORY=host    (default) malloc/memcpy.
 *   DROPIN_MEMORY=device  cudaMalloc/cudaMemcpy on every rank. Needs a build with -DDROPIN_CUDA
 *                         (link cudart) and a GPU; otherwise every rank skips (77) with a reason.
 *   DROPIN_MEMORY=mixed   even ranks device, odd ranks host: point-to-point between memory kinds.
 *                         Collectives need one kind on every rank, so a test that calls any
 *                         collective on mem_alloc buffers starts with D_SCOPE_COLL, and in a
 *                         mixed run its mem_alloc buffers are device memory on every rank;
 *                         buffers that only point-to-point calls touch come from mem_alloc_p2p,
 *                         which follows the rank's parity in every test. With D_SCOPE_P2P,
 *                         mem_alloc and mem_alloc_p2p are the same.
 *   DROPIN_DEVICE=N       the CUDA device every rank selects (default 0; the GPU tests run all
 *                         ranks on one GPU). It is selected before MPI_Init, so a layer that
 *                         looks at the current device in MPI_Init sees it.
 * Device copies and sets synchronize the device before returning, as a CUDA-aware MPI program
 * must before it hands a buffer to MPI.
 *
 * MPI_COMM_WORLD gets MPI_ERRORS_RETURN (communicators made from it inherit it), so a failing
 * call is reported by D_MPI instead of aborting the job. */
#ifndef DROPIN_UTIL_H
#define DROPIN_UTIL_H

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef DROPIN_CUDA
#include <cuda_runtime_api.h>
#endif

#define D_SKIP_CODE  77
#define D_MAX_PRINTS 40 /* failure messages printed per rank; the rest are only counted */

enum d_scope { D_SCOPE_P2P, D_SCOPE_COLL };
enum d_kind { D_HOST, D_DEVICE };

static struct {
  const char *name;
  int rank, size;
  int failures, printed;
  enum d_kind kind;     /* where this rank's mem_alloc buffers live */
  enum d_kind p2p_kind; /* where its mem_alloc_p2p buffers live */
  const char *mode;     /* DROPIN_MEMORY: host, device or mixed (or the unknown value given) */
  int device;           /* CUDA device index in device kind */
} d_ = {"?", -1, 0, 0, 0, D_HOST, D_HOST, "host", -1};

/* ---- failures ---------------------------------------------------------------------------- */

static inline void d_fail_at(const char *file, int line, const char *fmt, ...) {
  d_.failures++;
  if (d_.printed >= D_MAX_PRINTS) return;
  /* One write per message, so lines from different ranks do not interleave mid-line. */
  char msg[1024];
  const char *kind = d_.kind == D_DEVICE ? "device" : "host";
  if (d_.p2p_kind != d_.kind) kind = "device, p2p host";
  int len = snprintf(msg, sizeof msg, "[rank %d %s] FAIL %s:%d: ", d_.rank, kind, file, line);
  va_list ap;
  va_start(ap, fmt);
  if (len >= 0 && (size_t)len < sizeof msg) vsnprintf(msg + len, sizeof msg - (size_t)len, fmt, ap);
  va_end(ap);
  if (++d_.printed == D_MAX_PRINTS)
    fprintf(stderr, "%s\n[rank %d] (further failures on this rank are counted, not printed)\n", msg,
            d_.rank);
  else
    fprintf(stderr, "%s\n", msg);
}

#define D_FAIL(...) d_fail_at(__FILE__, __LINE__, __VA_ARGS__)

#define D_TRUE(cond)                                                                               \
  do {                                                                                             \
    if (!(cond)) D_FAIL("%s is false", #cond);                                                     \
  } while (0)

#define D_EQ_INT(a, b)                                                                             \
  do {                                                                                             \
    long long a_ = (long long)(a), b_ = (long long)(b);                                            \
    if (a_ != b_) D_FAIL("%s == %s: %lld != %lld", #a, #b, a_, b_);                                \
  } while (0)

/* Exact: the tests only use values that every type and reduction order represents exactly. */
#define D_EQ_DBL(a, b)                                                                             \
  do {                                                                                             \
    double a_ = (double)(a), b_ = (double)(b);                                                     \
    if (a_ != b_) D_FAIL("%s == %s: %.17g != %.17g", #a, #b, a_, b_);                              \
  } while (0)

/* The call returns MPI_SUCCESS; otherwise the failure shows MPI's own error string. */
#define D_MPI(call)                                                                                \
  do {                                                                                             \
    int rc_ = (call);                                                                              \
    if (rc_ != MPI_SUCCESS) {                                                                      \
      char msg_[MPI_MAX_ERROR_STRING];                                                             \
      int len_ = 0;                                                                                \
      if (MPI_Error_string(rc_, msg_, &len_) != MPI_SUCCESS) len_ = 0;                             \
      msg_[len_] = '\0';                                                                           \
      D_FAIL("%s returned %d: %s", #call, rc_, msg_);                                              \
    }                                                                                              \
  } while (0)

/* A receive status names the sender and tag, and MPI_Get_count with dt gives count. */
static inline void d_check_status_at(const char *file, int line, const MPI_Status *st,
                                     MPI_Datatype dt, int src, int tag, long long count) {
  int got = -1;
  int rc = MPI_Get_count(st, dt, &got);
  if (rc != MPI_SUCCESS) d_fail_at(file, line, "MPI_Get_count returned %d", rc);
  if (st->MPI_SOURCE != src || st->MPI_TAG != tag || got != count)
    d_fail_at(file, line, "status: source %d tag %d count %d, want source %d tag %d count %lld",
              st->MPI_SOURCE, st->MPI_TAG, got, src, tag, count);
}
#define D_STATUS(st, dt, src, tag, count)                                                          \
  d_check_status_at(__FILE__, __LINE__, (st), (dt), (src), (tag), (long long)(count))

/* Array checks: got[i] == want[i] for every i; one failure naming the first wrong index and how
 * many were wrong, so a broken 100k-element buffer prints one line. */
#define D_CHECK_ARRAY_FN(fname, type, fmt, cast)                                                   \
  static inline void fname##_at(const char *file, int line, const char *what, const type *got,     \
                                const type *want, size_t n) {                                      \
    size_t bad = 0, first = 0;                                                                     \
    for (size_t i = 0; i < n; i++)                                                                 \
      if (got[i] != want[i] && bad++ == 0) first = i;                                              \
    if (bad)                                                                                       \
      d_fail_at(file, line, "%s: %zu of %zu elements wrong, first [%zu]: got " fmt ", want " fmt,  \
                what, bad, n, first, (cast)got[first], (cast)want[first]);                         \
  }
D_CHECK_ARRAY_FN(d_check_int, int, "%d", int)
D_CHECK_ARRAY_FN(d_check_dbl, double, "%.17g", double)
D_CHECK_ARRAY_FN(d_check_bytes, unsigned char, "0x%02x", unsigned)
#define d_check_int(what, got, want, n)   d_check_int_at(__FILE__, __LINE__, what, got, want, n)
#define d_check_dbl(what, got, want, n)   d_check_dbl_at(__FILE__, __LINE__, what, got, want, n)
#define d_check_bytes(what, got, want, n) d_check_bytes_at(__FILE__, __LINE__, what, got, want, n)

/* A printf-formatted name for a check ("allreduce n=7 root=2"); the returned text lasts for the
 * next three calls (a small ring of buffers), which is long enough for one check. */
static inline const char *d_label(const char *fmt, ...) {
  static char buf[4][192];
  static int k;
  k = (k + 1) % 4;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf[k], sizeof buf[k], fmt, ap);
  va_end(ap);
  return buf[k];
}

/* ---- host helpers ------------------------------------------------------------------------ */

static inline void *host_alloc(size_t bytes) {
  void *p = calloc(1, bytes ? bytes : 1);
  if (!p) {
    fprintf(stderr, "[rank %d] out of host memory (%zu bytes)\n", d_.rank, bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return p;
}

static inline int d_rank(void) { return d_.rank; }
static inline int d_size(void) { return d_.size; }
static inline int d_next(void) { return (d_.rank + 1) % d_.size; }
static inline int d_prev(void) { return (d_.rank + d_.size - 1) % d_.size; }

/* Polling loops (Test*, Iprobe) give up after this long and fail instead of hanging. This is a
 * safety net only; no test checks how long anything takes. */
#define D_POLL_LIMIT_S 60.0
static inline int d_poll_expired(double start) { return MPI_Wtime() - start > D_POLL_LIMIT_S; }

/* ---- memory ------------------------------------------------------------------------------ */

#ifdef DROPIN_CUDA
static inline void d_cuda_check_at(const char *file, int line, cudaError_t e, const char *what) {
  if (e != cudaSuccess) d_fail_at(file, line, "%s: %s", what, cudaGetErrorString(e));
}
#define D_CUDA(call) d_cuda_check_at(__FILE__, __LINE__, (call), #call)
#endif

/* Device allocations live (start, length), so mem_* can tell a device buffer (or a pointer into
 * one) from a host one without asking CUDA. */
static struct {
  const char **start;
  size_t *len, n, cap;
} d_dev_;

static inline int d_is_device(const void *p) {
  for (size_t k = 0; k < d_dev_.n; k++)
    if ((const char *)p >= d_dev_.start[k] && (const char *)p < d_dev_.start[k] + d_dev_.len[k])
      return 1;
  return 0;
}

static inline void *d_alloc_kind(enum d_kind kind, size_t bytes) {
  void *p = NULL;
  if (bytes == 0) bytes = 1; /* a valid, distinct pointer even for empty buffers */
#ifdef DROPIN_CUDA
  if (kind == D_DEVICE) {
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
      fprintf(stderr, "[rank %d] cudaMalloc(%zu): %s\n", d_.rank, bytes, cudaGetErrorString(e));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (d_dev_.n == d_dev_.cap) {
      d_dev_.cap = d_dev_.cap ? 2 * d_dev_.cap : 64;
      d_dev_.start = realloc(d_dev_.start, d_dev_.cap * sizeof(*d_dev_.start));
      d_dev_.len = realloc(d_dev_.len, d_dev_.cap * sizeof(*d_dev_.len));
      if (!d_dev_.start || !d_dev_.len) MPI_Abort(MPI_COMM_WORLD, 1);
    }
    d_dev_.start[d_dev_.n] = p;
    d_dev_.len[d_dev_.n++] = bytes;
    return p;
  }
#else
  (void)kind;
#endif
  p = malloc(bytes);
  if (!p) {
    fprintf(stderr, "[rank %d] malloc(%zu) failed\n", d_.rank, bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return p;
}

/* A buffer for any MPI call: this rank's kind (device on every rank in a collective test run
 * mixed). */
static inline void *mem_alloc(size_t bytes) { return d_alloc_kind(d_.kind, bytes); }

/* A buffer only point-to-point calls use: in a mixed run it follows the rank's parity even in a
 * collective test (even device, odd host), so sends and receives cross memory kinds. */
static inline void *mem_alloc_p2p(size_t bytes) { return d_alloc_kind(d_.p2p_kind, bytes); }

static inline void mem_free(void *p) {
  if (!p) return;
#ifdef DROPIN_CUDA
  for (size_t k = 0; k < d_dev_.n; k++)
    if (d_dev_.start[k] == p) {
      d_dev_.start[k] = d_dev_.start[d_dev_.n - 1];
      d_dev_.len[k] = d_dev_.len[--d_dev_.n];
      D_CUDA(cudaFree(p));
      return;
    }
#endif
  free(p);
}

/* The program's cudaMemcpy from pageable memory, which may return before the device has the
 * data, and no synchronize after it -- as CUDA-aware MPI allows. */
static inline void mem_put_unsynced(void *dst_mem, const void *src_host, size_t bytes) {
  if (bytes == 0) return;
#ifdef DROPIN_CUDA
  if (d_is_device(dst_mem)) {
    D_CUDA(cudaMemcpy(dst_mem, src_host, bytes, cudaMemcpyHostToDevice));
    return;
  }
#endif
  memcpy(dst_mem, src_host, bytes);
}

static inline void mem_put(void *dst_mem, const void *src_host, size_t bytes) {
  mem_put_unsynced(dst_mem, src_host, bytes);
#ifdef DROPIN_CUDA
  if (bytes && d_is_device(dst_mem)) D_CUDA(cudaDeviceSynchronize());
#endif
}

static inline void mem_get(void *dst_host, const void *src_mem, size_t bytes) {
  if (bytes == 0) return;
#ifdef DROPIN_CUDA
  if (d_is_device(src_mem)) {
    D_CUDA(cudaMemcpy(dst_host, src_mem, bytes, cudaMemcpyDeviceToHost));
    return;
  }
#endif
  memcpy(dst_host, src_mem, bytes);
}

static inline void mem_set(void *mem, int byte, size_t bytes) {
  if (bytes == 0) return;
#ifdef DROPIN_CUDA
  if (d_is_device(mem)) {
    D_CUDA(cudaMemset(mem, byte, bytes));
    D_CUDA(cudaDeviceSynchronize()); /* cudaMemset may return before the device has run it */
    return;
  }
#endif
  memset(mem, byte, bytes);
}

/* mem_get into a fresh host copy (free() it). */
static inline void *mem_fetch(const void *mem, size_t bytes) {
  void *h = host_alloc(bytes);
  mem_get(h, mem, bytes);
  return h;
}

/* mem_alloc / mem_alloc_p2p filled from a host array. */
static inline void *mem_dup(const void *host, size_t bytes) {
  void *m = mem_alloc(bytes);
  mem_put(m, host, bytes);
  return m;
}
static inline void *mem_dup_p2p(const void *host, size_t bytes) {
  void *m = mem_alloc_p2p(bytes);
  mem_put(m, host, bytes);
  return m;
}

/* ---- start and end ----------------------------------------------------------------------- */

/* The memory mode from DROPIN_MEMORY, and in device or mixed mode the GPU selected. Runs before
 * MPI_Init (so a layer sees the current device at MPI_Init); the rank-dependent kind of mixed mode
 * is set after it. Returns 1 when usable, 0 with why[] filled when not (skip), -1 for an unknown
 * DROPIN_MEMORY (fail). */
static inline int d_pick_memory(char *why, size_t why_len) {
  const char *mode = getenv("DROPIN_MEMORY");
  if (!mode || !*mode || strcmp(mode, "host") == 0) {
    d_.mode = "host";
    return 1;
  }
  if (strcmp(mode, "device") == 0) {
    d_.mode = "device";
  } else if (strcmp(mode, "mixed") == 0) {
    d_.mode = "mixed";
  } else {
    d_.mode = mode;
    snprintf(why, why_len, "DROPIN_MEMORY=%s is not host, device or mixed", mode);
    return -1;
  }
#ifndef DROPIN_CUDA
  snprintf(why, why_len, "DROPIN_MEMORY=%s but this build has no CUDA (compile with -DDROPIN_CUDA)",
           mode);
  return 0;
#else
  const char *dev_env = getenv("DROPIN_DEVICE");
  d_.device = dev_env && *dev_env ? atoi(dev_env) : 0;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    snprintf(why, why_len, "no usable GPU: cudaGetDeviceCount: %s", cudaGetErrorString(e));
    return 0;
  }
  if (d_.device < 0 || d_.device >= count) {
    snprintf(why, why_len, "DROPIN_DEVICE=%d but %d GPU(s) are visible", d_.device, count);
    return 0;
  }
  e = cudaSetDevice(d_.device);
  if (e != cudaSuccess) {
    snprintf(why, why_len, "cudaSetDevice(%d): %s", d_.device, cudaGetErrorString(e));
    return 0;
  }
  return 1;
#endif
}

/* MPI_Init plus the memory choice. Every rank agrees on the verdict (an allreduce of the local
 * ones) before any skips, so the job skips or fails as a whole. */
static inline void d_init(int *argc, char ***argv, const char *name, enum d_scope scope) {
  char why[256] = "";
  int local = d_pick_memory(why, sizeof why);
  MPI_Init(argc, argv);
  d_.name = name;
  MPI_Comm_rank(MPI_COMM_WORLD, &d_.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &d_.size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int worst = local, local0 = local;
  MPI_Allreduce(&local, &worst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Bcast(&local0, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (worst < 1) {
    /* Rank 0 prints the verdict with its reason; when rank 0 itself was fine (say, one host
     * without a GPU), the ranks that were not give theirs on stderr. */
    if (d_.rank == 0)
      printf("%s %s: %s\n", worst < 0 ? "FAIL" : "SKIP", name,
             local < 1 ? why : "another rank cannot run here (its reason is on stderr)");
    else if (local < 1 && local0 == 1)
      fprintf(stderr, "[rank %d] %s: %s\n", d_.rank, name, why);
    fflush(stdout);
    fflush(stderr);
    MPI_Finalize();
    exit(worst < 0 ? 1 : D_SKIP_CODE);
  }
  if (strcmp(d_.mode, "device") == 0) {
    d_.kind = d_.p2p_kind = D_DEVICE;
  } else if (strcmp(d_.mode, "mixed") == 0) {
    d_.p2p_kind = d_.rank % 2 == 0 ? D_DEVICE : D_HOST;
    d_.kind = scope == D_SCOPE_COLL ? D_DEVICE : d_.p2p_kind;
  }
  if (d_.rank == 0) {
    printf("%s: %d rank(s), memory=%s%s", name, d_.size, d_.mode,
           strcmp(d_.mode, "mixed") == 0 && scope == D_SCOPE_COLL
               ? " (collective buffers device on every rank)"
               : "");
    if (d_.device >= 0) printf(", CUDA device %d", d_.device);
    printf("\n");
    fflush(stdout);
  }
}

/* All ranks call this (with the same decision) when the test cannot run, e.g. too few ranks. */
static inline int d_skip(const char *why) {
  if (d_.rank == 0) printf("SKIP %s: %s\n", d_.name, why);
  fflush(stdout);
  MPI_Finalize();
  return D_SKIP_CODE;
}

/* Every rank's failures reduced (over comm: every rank of MPI_COMM_WORLD, which a test may have
 * made unusable on purpose) to one verdict printed by rank 0; main returns what this does. */
static inline int d_finish_on(MPI_Comm comm) {
  int total = 0;
  int rc = MPI_Allreduce(&d_.failures, &total, 1, MPI_INT, MPI_SUM, comm);
  if (rc != MPI_SUCCESS) total = d_.failures + 1; /* cannot agree: fail on this rank at least */
  if (d_.rank == 0) {
    if (total)
      printf("FAIL %s (%d failures)\n", d_.name, total);
    else
      printf("PASS %s\n", d_.name);
  }
  fflush(stdout);
  free(d_dev_.start); /* the registry itself; a test frees its own buffers */
  free(d_dev_.len);
  MPI_Finalize();
  return total ? 1 : 0;
}

static inline int d_finish(void) { return d_finish_on(MPI_COMM_WORLD); }

#endif
