/* SPDX-License-Identifier: BSD-3-Clause */
/* mpi_bench: a plain MPI benchmark (ping-pong, small collectives: allreduce, bcast, reduce,
 * allgather, alltoall; and a Jacobi solver's halo step) over host, device or staged buffers.
 *
 * It uses only <mpi.h>, libc and (with MPI_BENCH_CUDA) the CUDA runtime, so that the same binary
 * can be run as is and under LD_PRELOAD=libgmpi_mpi.so (scripts/dropin-bench compares the two).
 *
 *   host    malloc'd buffers
 *   device  cudaMalloc'd buffers handed straight to MPI (a CUDA-aware MPI, or the gmpi layer)
 *   staged  cudaMalloc'd buffers; the benchmark copies device->host before each send and
 *           host->device after each receive (around each collective) and calls MPI on host
 *           buffers: what a user of a non-CUDA-aware MPI does today
 *
 * Each size runs --rounds times (a barrier before each); a row gives the median time per call and
 * the rounds' min..max in microseconds. Ping-pong's time is half a round trip (rank 0's clock);
 * a collective's is the slowest rank's. After the timed rounds one more call with known values is
 * checked; a wrong value is reported and makes the exit status 1.
 *
 * Exit status: 0 ok, 1 wrong value or runtime failure, 2 bad option, 77 memory kind unavailable
 * (no CUDA build, no GPU).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef MPI_BENCH_CUDA
#include <cuda_runtime.h>
#endif

enum { MEM_HOST, MEM_DEVICE, MEM_STAGED };
/* The tests, in the order they run; tests[] below says what each is. */
enum {
  TEST_PINGPONG,
  TEST_ALLREDUCE,
  TEST_BCAST,
  TEST_REDUCE,
  TEST_ALLGATHER,
  TEST_ALLTOALL,
  TEST_HALO,
  TEST_SSEND,
  N_TESTS
};
#define TEST_BIT(t) (1 << (t))

#define MAX_BYTES    ((size_t)1 << 30) /* counts stay well inside int */
#define MAX_ROUNDS   1000
#define BIG_BYTES    ((size_t)1 << 20) /* above this, fewer iterations (see iters_for) */
#define EXIT_USAGE   2
#define EXIT_SKIP    77
#define PINGPONG_TAG 17
#define CHECK_TAG    18
#define HALO_TAG     19

static const char *mem_names[] = {"host", "device", "staged"};

typedef struct {
  int tests;
  size_t min_bytes, max_bytes;
  size_t factor;
  int iters, warmup, rounds;
  int memory;
  int pinned; /* staged: host side from cudaMallocHost (1) or malloc (0) */
  const char *json;
  int help;
} options_t;

static int world_rank, world_size;

/* Only rank 0 prints messages that every rank would print alike. */
static void say0(FILE *f, const char *fmt, ...) {
  if (world_rank != 0) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
}

static void usage(FILE *f) {
  say0(f,
       "usage: mpiexec -n N mpi_bench [options]\n"
       "  -t, --test LIST        pingpong, allreduce, bcast, reduce, allgather, alltoall, halo,\n"
       "                         ssend (pingpong with MPI_Ssend), all (comma separated;\n"
       "                         default pingpong,allreduce)\n"
       "  -b, --min BYTES        smallest size (default 8); suffixes K, M, G (powers of 1024)\n"
       "  -e, --max BYTES        largest size (default 4M); the sweep is MIN, MIN*F, MIN*F^2, ...\n"
       "                         and MAX itself when the steps miss it\n"
       "  -f, --factor N         size step factor, >= 2 (default 4)\n"
       "  -n, --iters N          calls per round (default 100; sizes over 1 MiB use fewer,\n"
       "                         n*1MiB/bytes but at least min(n,10))\n"
       "  -w, --warmup N         untimed calls per size before the rounds (default 10, scaled\n"
       "                         like -n)\n"
       "  -r, --rounds R         timed rounds per size (default 5); rows give the median and\n"
       "                         min..max over rounds\n"
       "  -m, --memory KIND      host | device | staged (default host); device hands cudaMalloc'd\n"
       "                         buffers to MPI: it needs a CUDA-aware MPI or the gmpi layer\n"
       "                         (LD_PRELOAD=libgmpi_mpi.so); staged copies through host buffers\n"
       "      --staging KIND     staged mode's host buffers: pinned (cudaMallocHost, default)\n"
       "                         or pageable (malloc)\n"
       "  -j, --json FILE        also write the rows as JSON to FILE (rank 0)\n"
       "  -h, --help             this text\n"
       "Rows: bytes median_us min_us max_us, then GB/s (ping-pong: bytes / one-way time) or\n"
       "busbw GB/s as nccl-tests (allreduce: bytes/time * 2(n-1)/n; bcast, reduce: bytes/time;\n"
       "allgather, alltoall: bytes/time * (n-1), bytes being one rank's block; halo: bytes/time).\n"
       "Ping-pong runs on ranks 0 and 1 (others wait); allreduce and reduce (to rank 0) sum\n"
       "floats; bcast sends bytes from rank 0; allgather and alltoall move a block of bytes per\n"
       "rank; halo is one step of a Jacobi solver cut into rows: bytes to and from each\n"
       "neighbour rank (MPI_Sendrecv), then a residual's MPI_Allreduce of one host double.\n"
       "Exit: 0 ok, 1 wrong result, 2 bad option, 77 memory kind unavailable here.\n");
}

/* ---- option parsing ---------------------------------------------------------------------- */

static int bad_value(const char *opt, const char *val, const char *expect) {
  say0(stderr, "mpi_bench: bad value for %s: '%s' (%s)\n", opt, val, expect);
  return -1;
}

static int parse_size(const char *opt, const char *s, size_t *out) {
  char *end;
  errno = 0;
  if (!*s || *s == '-' || *s == '+') return bad_value(opt, s, "expected a size like 8, 64K, 4M");
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return bad_value(opt, s, "expected a size like 8, 64K, 4M");
  unsigned long long mul = 1;
  if (*end) {
    switch (*end) {
    case 'k':
    case 'K': mul = 1ull << 10; break;
    case 'm':
    case 'M': mul = 1ull << 20; break;
    case 'g':
    case 'G': mul = 1ull << 30; break;
    default: return bad_value(opt, s, "expected a size like 8, 64K, 4M");
    }
    end++;
    if (*end == 'i' || *end == 'I') end++; /* KiB, MiB */
    if (*end == 'b' || *end == 'B') end++;
    if (*end) return bad_value(opt, s, "expected a size like 8, 64K, 4M");
  }
  if (v == 0) return bad_value(opt, s, "must be at least 1 byte");
  if (v > MAX_BYTES / mul) return bad_value(opt, s, "at most 1G");
  *out = (size_t)(v * mul);
  return 0;
}

static int parse_int(const char *opt, const char *s, int lo, int hi, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) {
    char expect[64];
    snprintf(expect, sizeof expect, "expected an integer from %d to %d", lo, hi);
    return bad_value(opt, s, expect);
  }
  *out = (int)v;
  return 0;
}

static const char *const test_names[N_TESTS] = {"pingpong",  "allreduce", "bcast", "reduce",
                                                "allgather", "alltoall",  "halo",  "ssend"};

static int parse_tests(const char *opt, const char *s, int *out) {
  const char *expect = "expected pingpong, allreduce, bcast, reduce, allgather, alltoall, halo, "
                       "ssend or all, comma separated";
  int tests = 0;
  const char *p = s;
  while (*p) {
    const char *q = strchr(p, ',');
    size_t len = q ? (size_t)(q - p) : strlen(p);
    int t = 0;
    while (t < N_TESTS && (strlen(test_names[t]) != len || strncmp(p, test_names[t], len)))
      t++;
    if (t < N_TESTS)
      tests |= TEST_BIT(t);
    else if (len == 3 && !strncmp(p, "all", len))
      tests |= TEST_BIT(N_TESTS) - 1;
    else
      return bad_value(opt, s, expect);
    p += len;
    if (*p == ',') p++;
  }
  if (!tests) return bad_value(opt, s, expect);
  *out = tests;
  return 0;
}

/* 0 ok, -1 bad option (message printed). Accepts "--opt VALUE" and "--opt=VALUE". */
static int parse_options(int argc, char **argv, options_t *o) {
  *o = (options_t){.tests = TEST_BIT(TEST_PINGPONG) | TEST_BIT(TEST_ALLREDUCE),
                   .min_bytes = 8,
                   .max_bytes = 4u << 20,
                   .factor = 4,
                   .iters = 100,
                   .warmup = 10,
                   .rounds = 5,
                   .memory = MEM_HOST,
                   .pinned = 1};
  for (int i = 1; i < argc; i++) {
    char name[64];
    const char *arg = argv[i], *val = NULL;
    const char *eq = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
    if (eq && (size_t)(eq - arg) < sizeof name) {
      memcpy(name, arg, (size_t)(eq - arg));
      name[eq - arg] = 0;
      val = eq + 1;
    } else {
      snprintf(name, sizeof name, "%s", arg);
    }
#define IS(s, l) (!strcmp(name, s) || !strcmp(name, l))
    if (IS("-h", "--help")) {
      o->help = 1;
      continue;
    }
    int known = IS("-t", "--test") || IS("-b", "--min") || IS("-e", "--max") ||
                IS("-f", "--factor") || IS("-n", "--iters") || IS("-w", "--warmup") ||
                IS("-r", "--rounds") || IS("-m", "--memory") || IS("-j", "--json") ||
                !strcmp(name, "--staging");
    if (!known) {
      say0(stderr, "mpi_bench: unknown option '%s' (see --help)\n", arg);
      return -1;
    }
    if (!val) {
      if (i + 1 >= argc) {
        say0(stderr, "mpi_bench: option %s needs a value (see --help)\n", name);
        return -1;
      }
      val = argv[++i];
    }
    int rc = 0;
    if (IS("-t", "--test"))
      rc = parse_tests(name, val, &o->tests);
    else if (IS("-b", "--min"))
      rc = parse_size(name, val, &o->min_bytes);
    else if (IS("-e", "--max"))
      rc = parse_size(name, val, &o->max_bytes);
    else if (IS("-f", "--factor")) {
      int f;
      rc = parse_int(name, val, 2, 1 << 20, &f);
      o->factor = (size_t)f;
    } else if (IS("-n", "--iters"))
      rc = parse_int(name, val, 1, 100000000, &o->iters);
    else if (IS("-w", "--warmup"))
      rc = parse_int(name, val, 0, 100000000, &o->warmup);
    else if (IS("-r", "--rounds"))
      rc = parse_int(name, val, 1, MAX_ROUNDS, &o->rounds);
    else if (IS("-j", "--json")) {
      if (!*val) rc = bad_value(name, val, "expected a file name");
      o->json = val;
    } else if (IS("-m", "--memory")) {
      if (!strcmp(val, "host"))
        o->memory = MEM_HOST;
      else if (!strcmp(val, "device"))
        o->memory = MEM_DEVICE;
      else if (!strcmp(val, "staged"))
        o->memory = MEM_STAGED;
      else
        rc = bad_value(name, val, "expected host, device or staged");
    } else if (!strcmp(name, "--staging")) {
      if (!strcmp(val, "pinned"))
        o->pinned = 1;
      else if (!strcmp(val, "pageable"))
        o->pinned = 0;
      else
        rc = bad_value(name, val, "expected pinned or pageable");
    }
#undef IS
    if (rc) return -1;
  }
  if (o->min_bytes > o->max_bytes) {
    say0(stderr, "mpi_bench: bad sizes: -b (--min) %zu is above -e (--max) %zu\n", o->min_bytes,
         o->max_bytes);
    return -1;
  }
  return 0;
}

/* ---- memory ------------------------------------------------------------------------------ */

static void die(const char *what, const char *detail) {
  fprintf(stderr, "mpi_bench: rank %d: %s: %s\n", world_rank, what, detail);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

#ifdef MPI_BENCH_CUDA
#define CK(call)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) die(#call, cudaGetErrorString(e_));                                     \
  } while (0)

/* The device of this rank: GMPI_VISIBLE_DEVICES[local rank] when set (as gmpi picks it), else
 * local rank modulo the device count. 0 ok, else *why says why not. */
static int pick_device(int local_rank, char *why, size_t why_len) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    /* Without a GPU the runtime says "driver version is insufficient": say what it means. */
    int no_gpu = e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice || count == 0;
    snprintf(why, why_len, "%s (cudaGetDeviceCount: %s)",
             no_gpu ? "no GPU or no CUDA driver on this machine" : "the CUDA runtime failed",
             e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    cudaGetLastError();
    return -1;
  }
  int dev = local_rank % count;
  const char *vis = getenv("GMPI_VISIBLE_DEVICES");
  if (vis && *vis) {
    int k = 0;
    const char *p = vis;
    while (k < local_rank && (p = strchr(p, ',')))
      p++, k++;
    if (p && k == local_rank) dev = atoi(p);
    if (dev < 0 || dev >= count) {
      snprintf(why, why_len, "GMPI_VISIBLE_DEVICES=%s gives device %d but there are %d", vis, dev,
               count);
      return -1;
    }
  }
  e = cudaSetDevice(dev);
  if (e != cudaSuccess) {
    snprintf(why, why_len, "cudaSetDevice(%d): %s", dev, cudaGetErrorString(e));
    return -1;
  }
  return 0;
}
#endif

/* Buffers of one size: dev (device/staged modes) and host (host mode's buffers, staged mode's
 * bounce buffers, and every mode's check values). */
typedef struct {
  void *send_dev, *recv_dev;
  void *send_host, *recv_host;
  int host_pinned;
} buffers_t;

static void *host_alloc(size_t bytes, int pinned) {
  void *p = NULL;
#ifdef MPI_BENCH_CUDA
  if (pinned) {
    CK(cudaMallocHost(&p, bytes));
    return p;
  }
#else
  (void)pinned;
#endif
  p = malloc(bytes);
  if (!p) die("malloc", strerror(errno));
  return p;
}

static void host_free(void *p, int pinned) {
#ifdef MPI_BENCH_CUDA
  if (pinned) {
    cudaFreeHost(p);
    return;
  }
#else
  (void)pinned;
#endif
  free(p);
}

static void buffers_alloc(buffers_t *b, size_t bytes, const options_t *o) {
  memset(b, 0, sizeof *b);
  b->host_pinned = o->memory == MEM_STAGED && o->pinned;
  b->send_host = host_alloc(bytes, b->host_pinned);
  b->recv_host = host_alloc(bytes, b->host_pinned);
  memset(b->send_host, 0, bytes);
  memset(b->recv_host, 0, bytes);
#ifdef MPI_BENCH_CUDA
  if (o->memory != MEM_HOST) {
    CK(cudaMalloc(&b->send_dev, bytes));
    CK(cudaMalloc(&b->recv_dev, bytes));
    CK(cudaMemset(b->send_dev, 0, bytes));
    CK(cudaMemset(b->recv_dev, 0, bytes));
    CK(cudaDeviceSynchronize());
  }
#endif
}

static void buffers_free(buffers_t *b) {
#ifdef MPI_BENCH_CUDA
  if (b->send_dev) cudaFree(b->send_dev);
  if (b->recv_dev) cudaFree(b->recv_dev);
#endif
  host_free(b->send_host, b->host_pinned);
  host_free(b->recv_host, b->host_pinned);
}

/* Copies (no-ops without CUDA; only device/staged modes reach them with a device pointer). */
static void to_host(void *h, const void *d, size_t bytes) {
#ifdef MPI_BENCH_CUDA
  CK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
#else
  (void)h, (void)d, (void)bytes;
#endif
}

static void to_device(void *d, const void *h, size_t bytes) {
#ifdef MPI_BENCH_CUDA
  CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
#else
  (void)h, (void)d, (void)bytes;
#endif
}

static double halo_residual; /* the last halo step's sum */

static void device_sync(int memory) {
#ifdef MPI_BENCH_CUDA
  if (memory != MEM_HOST) CK(cudaDeviceSynchronize());
#else
  (void)memory;
#endif
}

/* ---- the calls --------------------------------------------------------------------------- */

typedef int (*send_fn)(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                       MPI_Comm comm);

/* Rank 0 sends then receives, rank 1 receives then sends; one call = one round trip. */
static void pingpong_once(const buffers_t *b, size_t bytes, int memory, int tag, send_fn send) {
  int peer = world_rank == 0 ? 1 : 0;
  int n = (int)bytes;
  if (world_rank > 1) return;
  if (memory == MEM_STAGED) {
    if (world_rank == 0) {
      to_host(b->send_host, b->send_dev, bytes);
      send(b->send_host, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
      MPI_Recv(b->recv_host, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      to_device(b->recv_dev, b->recv_host, bytes);
    } else {
      MPI_Recv(b->recv_host, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      to_device(b->recv_dev, b->recv_host, bytes);
      to_host(b->send_host, b->send_dev, bytes);
      send(b->send_host, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
    }
    return;
  }
  void *s = memory == MEM_DEVICE ? b->send_dev : b->send_host;
  void *r = memory == MEM_DEVICE ? b->recv_dev : b->recv_host;
  if (world_rank == 0) {
    send(s, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
    MPI_Recv(r, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(r, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    send(s, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
  }
}

/* Rank 0 sends its send buffer; the others receive into their receive buffer. */
static void bcast_once(const buffers_t *b, size_t bytes, int memory) {
  int root = world_rank == 0, n = (int)bytes;
  if (memory == MEM_STAGED) {
    if (root) to_host(b->send_host, b->send_dev, bytes);
    MPI_Bcast(root ? b->send_host : b->recv_host, n, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (!root) to_device(b->recv_dev, b->recv_host, bytes);
    return;
  }
  void *buf = memory == MEM_DEVICE ? (root ? b->send_dev : b->recv_dev)
                                   : (root ? b->send_host : b->recv_host);
  MPI_Bcast(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
}

/* Allreduce (root < 0) or reduce to root of floats, summed; staged: through host copies. */
static void sums_once(const buffers_t *b, size_t bytes, int memory, int root) {
  int n = (int)(bytes / sizeof(float));
  int gets_result = root < 0 || world_rank == root;
  const void *s = memory == MEM_DEVICE ? b->send_dev : b->send_host;
  void *r = memory == MEM_DEVICE ? b->recv_dev : b->recv_host;
  if (memory == MEM_STAGED) to_host(b->send_host, b->send_dev, bytes);
  if (root < 0)
    MPI_Allreduce(s, r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  else
    MPI_Reduce(s, r, n, MPI_FLOAT, MPI_SUM, root, MPI_COMM_WORLD);
  if (memory == MEM_STAGED && gets_result) to_device(b->recv_dev, b->recv_host, bytes);
}

static void allreduce_once(const buffers_t *b, size_t bytes, int memory) {
  sums_once(b, bytes, memory, -1);
}
static void reduce_once(const buffers_t *b, size_t bytes, int memory) {
  sums_once(b, bytes, memory, 0);
}

/* Allgather (alltoall when to_all): bytes per rank, the buffers one block per rank. */
static void blocks_once(const buffers_t *b, size_t bytes, int memory, int to_all) {
  int n = (int)bytes;
  size_t span = bytes * (size_t)world_size;
  size_t sent = to_all ? span : bytes;
  if (memory == MEM_STAGED) {
    to_host(b->send_host, b->send_dev, sent);
    if (to_all)
      MPI_Alltoall(b->send_host, n, MPI_BYTE, b->recv_host, n, MPI_BYTE, MPI_COMM_WORLD);
    else
      MPI_Allgather(b->send_host, n, MPI_BYTE, b->recv_host, n, MPI_BYTE, MPI_COMM_WORLD);
    to_device(b->recv_dev, b->recv_host, span);
    return;
  }
  void *s = memory == MEM_DEVICE ? b->send_dev : b->send_host;
  void *r = memory == MEM_DEVICE ? b->recv_dev : b->recv_host;
  if (to_all)
    MPI_Alltoall(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
  else
    MPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
}

static void allgather_once(const buffers_t *b, size_t bytes, int memory) {
  blocks_once(b, bytes, memory, 0);
}
static void alltoall_once(const buffers_t *b, size_t bytes, int memory) {
  blocks_once(b, bytes, memory, 1);
}
/* One step of a Jacobi solver's communication, its grid cut into rows across ranks: this rank's
 * edge row of bytes to each neighbour and theirs back (MPI_Sendrecv down, then up; none past the
 * ends), then the residual, one host double, summed over every rank. The halos arrive in two
 * blocks of recv: from the rank above, then (two ranks or more) from the rank below. */
static void halo_once(const buffers_t *b, size_t bytes, int memory) {
  int up = world_rank > 0 ? world_rank - 1 : MPI_PROC_NULL;
  int down = world_rank + 1 < world_size ? world_rank + 1 : MPI_PROC_NULL;
  int n = (int)bytes;
  size_t span = world_size > 1 ? 2 * bytes : bytes;
  char *s = memory == MEM_DEVICE ? b->send_dev : b->send_host;
  char *r = memory == MEM_DEVICE ? b->recv_dev : b->recv_host;
  if (memory == MEM_STAGED) to_host(b->send_host, b->send_dev, bytes);
  MPI_Sendrecv(s, n, MPI_BYTE, down, HALO_TAG, r, n, MPI_BYTE, up, HALO_TAG, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  MPI_Sendrecv(s, n, MPI_BYTE, up, HALO_TAG, r + span - bytes, n, MPI_BYTE, down, HALO_TAG,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (memory == MEM_STAGED) to_device(b->recv_dev, b->recv_host, span);
  double mine = world_rank + 1, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  halo_residual = all;
}

static void pingpong_timed(const buffers_t *b, size_t bytes, int memory) {
  pingpong_once(b, bytes, memory, PINGPONG_TAG, MPI_Send);
}

/* Synchronous sends: each completes only once its receive took it. */
static void ssend_timed(const buffers_t *b, size_t bytes, int memory) {
  pingpong_once(b, bytes, memory, PINGPONG_TAG, MPI_Ssend);
}

/* ---- checks ------------------------------------------------------------------------------ */

static unsigned char byte_pattern(int seed, size_t i) {
  return (unsigned char)((i * 131u + (size_t)seed * 29u + (i >> 8)) & 0xffu);
}

/* Small integers: every partial sum is exact in float, whatever the reduction order. */
static float float_value(int rank, size_t i) { return (float)(rank + 1 + (int)(i % 13)); }

/* Sets the buffer the timed calls send from (device or host) to the given host values. */
static void set_send(const buffers_t *b, size_t bytes, int memory) {
  if (memory != MEM_HOST) to_device(b->send_dev, b->send_host, bytes);
}

/* Brings the received buffer to recv_host (device modes copy it back). */
static void get_recv(const buffers_t *b, size_t bytes, int memory) {
  if (memory != MEM_HOST) to_host(b->recv_host, b->recv_dev, bytes);
}

/* One ping-pong with known bytes each way, sent with send; 0 ok, 1 wrong (message printed). */
static int check_pairs(const buffers_t *b, size_t bytes, int memory, send_fn send) {
  if (world_rank > 1) return 0;
  int me = world_rank, peer = 1 - me;
  for (size_t i = 0; i < bytes; i++)
    ((unsigned char *)b->send_host)[i] = byte_pattern(me + 1, i);
  memset(b->recv_host, 0, bytes);
  if (memory != MEM_HOST) to_device(b->recv_dev, b->recv_host, bytes);
  set_send(b, bytes, memory);
  pingpong_once(b, bytes, memory, CHECK_TAG, send);
  device_sync(memory);
  get_recv(b, bytes, memory);
  const unsigned char *got = b->recv_host;
  for (size_t i = 0; i < bytes; i++) {
    unsigned char want = byte_pattern(peer + 1, i);
    if (got[i] != want) {
      fprintf(stderr,
              "mpi_bench: rank %d: %s %zu bytes (%s): wrong byte %zu from rank %d: got %u, "
              "expected %u\n",
              me, send == MPI_Ssend ? "ssend" : "pingpong", bytes, mem_names[memory], i, peer,
              got[i], want);
      return 1;
    }
  }
  return 0;
}

static int check_pingpong(const buffers_t *b, size_t bytes, int memory) {
  return check_pairs(b, bytes, memory, MPI_Send);
}

static int check_ssend(const buffers_t *b, size_t bytes, int memory) {
  return check_pairs(b, bytes, memory, MPI_Ssend);
}

/* One allreduce (root < 0) or reduce to root of known floats: every rank that gets the result
 * checks every sum. */
static int check_sums(const buffers_t *b, size_t bytes, int memory, int root) {
  size_t n = bytes / sizeof(float);
  float *s = b->send_host, *r = b->recv_host;
  for (size_t i = 0; i < n; i++)
    s[i] = float_value(world_rank, i);
  memset(r, 0, bytes);
  if (memory != MEM_HOST) to_device(b->recv_dev, b->recv_host, bytes);
  set_send(b, bytes, memory);
  sums_once(b, bytes, memory, root);
  device_sync(memory);
  if (root >= 0 && world_rank != root) return 0;
  get_recv(b, bytes, memory);
  for (size_t i = 0; i < n; i++) {
    float want = 0;
    for (int k = 0; k < world_size; k++)
      want += float_value(k, i);
    if (r[i] != want) {
      fprintf(stderr,
              "mpi_bench: rank %d: %s %zu bytes (%s): wrong sum at element %zu: got %g, "
              "expected %g\n",
              world_rank, root < 0 ? "allreduce" : "reduce", bytes, mem_names[memory], i,
              (double)r[i], (double)want);
      return 1;
    }
  }
  return 0;
}

static int check_allreduce(const buffers_t *b, size_t bytes, int memory) {
  return check_sums(b, bytes, memory, -1);
}
static int check_reduce(const buffers_t *b, size_t bytes, int memory) {
  return check_sums(b, bytes, memory, 0);
}

/* One bcast of a known pattern from rank 0: every other rank checks it byte by byte. */
static int check_bcast(const buffers_t *b, size_t bytes, int memory) {
  for (size_t i = 0; i < bytes; i++)
    ((unsigned char *)b->send_host)[i] = byte_pattern(7, i);
  memset(b->recv_host, 0, bytes);
  if (memory != MEM_HOST) to_device(b->recv_dev, b->recv_host, bytes);
  set_send(b, bytes, memory);
  bcast_once(b, bytes, memory);
  device_sync(memory);
  if (world_rank == 0) return 0;
  get_recv(b, bytes, memory);
  const unsigned char *got = b->recv_host;
  for (size_t i = 0; i < bytes; i++) {
    if (got[i] != byte_pattern(7, i)) {
      fprintf(stderr,
              "mpi_bench: rank %d: bcast %zu bytes (%s): wrong byte %zu from rank 0: got %u, "
              "expected %u\n",
              world_rank, bytes, mem_names[memory], i, got[i], byte_pattern(7, i));
      return 1;
    }
  }
  return 0;
}

/* The byte rank `from` puts at offset i of its block for rank `to` (allgather: one block for
 * all, to = -1). */
static unsigned char block_byte(int from, int to, size_t i) {
  return byte_pattern(from * 31 + to + 2, i);
}

/* One allgather (alltoall when to_all) of known blocks: every rank checks every block. */
static int check_blocks(const buffers_t *b, size_t bytes, int memory, int to_all) {
  size_t span = bytes * (size_t)world_size;
  unsigned char *s = b->send_host;
  for (int to = 0; to < (to_all ? world_size : 1); to++)
    for (size_t i = 0; i < bytes; i++)
      s[(size_t)to * bytes + i] = block_byte(world_rank, to_all ? to : -1, i);
  memset(b->recv_host, 0, span);
  if (memory != MEM_HOST) to_device(b->recv_dev, b->recv_host, span);
  set_send(b, to_all ? span : bytes, memory);
  blocks_once(b, bytes, memory, to_all);
  device_sync(memory);
  get_recv(b, span, memory);
  const unsigned char *got = b->recv_host;
  for (int from = 0; from < world_size; from++) {
    for (size_t i = 0; i < bytes; i++) {
      unsigned char want = block_byte(from, to_all ? world_rank : -1, i);
      if (got[(size_t)from * bytes + i] != want) {
        fprintf(stderr,
                "mpi_bench: rank %d: %s %zu bytes (%s): wrong byte %zu of rank %d's block: got "
                "%u, expected %u\n",
                world_rank, to_all ? "alltoall" : "allgather", bytes, mem_names[memory], i, from,
                got[(size_t)from * bytes + i], want);
        return 1;
      }
    }
  }
  return 0;
}

static int check_allgather(const buffers_t *b, size_t bytes, int memory) {
  return check_blocks(b, bytes, memory, 0);
}
static int check_alltoall(const buffers_t *b, size_t bytes, int memory) {
  return check_blocks(b, bytes, memory, 1);
}

/* One halo step of known rows: each neighbour's row where it belongs, untouched blocks where
 * there is none, and the residual's sum. */
static int check_halo(const buffers_t *b, size_t bytes, int memory) {
  size_t span = world_size > 1 ? 2 * bytes : bytes;
  for (size_t i = 0; i < bytes; i++)
    ((unsigned char *)b->send_host)[i] = block_byte(world_rank, -2, i);
  memset(b->recv_host, 0, span);
  if (memory != MEM_HOST) to_device(b->recv_dev, b->recv_host, span);
  set_send(b, bytes, memory);
  halo_once(b, bytes, memory);
  device_sync(memory);
  get_recv(b, span, memory);
  const unsigned char *got = b->recv_host;
  int from[2] = {world_rank - 1, world_rank + 1 < world_size ? world_rank + 1 : -1};
  for (int k = 0; k < (world_size > 1 ? 2 : 1); k++) {
    for (size_t i = 0; i < bytes; i++) {
      unsigned char want = from[k] >= 0 ? block_byte(from[k], -2, i) : 0;
      if (got[(size_t)k * bytes + i] != want) {
        fprintf(stderr,
                "mpi_bench: rank %d: halo %zu bytes (%s): wrong byte %zu of the row from %s: "
                "got %u, expected %u\n",
                world_rank, bytes, mem_names[memory], i, k ? "below" : "above",
                got[(size_t)k * bytes + i], want);
        return 1;
      }
    }
  }
  double want = (double)world_size * (world_size + 1) / 2;
  if (halo_residual != want) {
    fprintf(stderr, "mpi_bench: rank %d: halo %zu bytes (%s): residual %g, expected %g\n",
            world_rank, bytes, mem_names[memory], halo_residual, want);
    return 1;
  }
  return 0;
}

/* What each test is. */
typedef enum { BUS_ONE, BUS_ALLREDUCE, BUS_PEERS } bus_t;
#define EVERY_RANK 0 /* test_t.blocks: one block per rank */
typedef struct {
  void (*once)(const buffers_t *b, size_t bytes, int memory); /* one timed call */
  int (*check)(const buffers_t *b, size_t bytes, int memory); /* one checked call: 1 wrong */
  int floats;    /* moves whole floats: sizes round down to 4 bytes */
  int blocks;    /* blocks of bytes its buffers hold: 1, 2 (halo: a row from each neighbour),
                  * or EVERY_RANK (one per rank) */
  int pair_only; /* runs on ranks 0 and 1, timed on rank 0's clock as half a round trip */
  bus_t bus;     /* busbw from bytes/time: x1, x2(n-1)/n, x(n-1) */
} test_t;

static const test_t tests[N_TESTS] = {
    [TEST_PINGPONG] = {pingpong_timed, check_pingpong, 0, 1, 1, BUS_ONE},
    [TEST_ALLREDUCE] = {allreduce_once, check_allreduce, 1, 1, 0, BUS_ALLREDUCE},
    [TEST_BCAST] = {bcast_once, check_bcast, 0, 1, 0, BUS_ONE},
    [TEST_REDUCE] = {reduce_once, check_reduce, 1, 1, 0, BUS_ONE},
    [TEST_ALLGATHER] = {allgather_once, check_allgather, 0, EVERY_RANK, 0, BUS_PEERS},
    [TEST_ALLTOALL] = {alltoall_once, check_alltoall, 0, EVERY_RANK, 0, BUS_PEERS},
    [TEST_HALO] = {halo_once, check_halo, 0, 2, 0, BUS_ONE},
    [TEST_SSEND] = {ssend_timed, check_ssend, 0, 1, 1, BUS_ONE},
};

/* ---- timing ------------------------------------------------------------------------------ */

static int iters_for(int n, size_t bytes) {
  if (bytes <= BIG_BYTES) return n;
  double scaled = (double)n * (double)BIG_BYTES / (double)bytes;
  int floor_n = n < 10 ? n : 10;
  return scaled > floor_n ? (int)scaled : floor_n;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(const double *v, int n) {
  double s[MAX_ROUNDS];
  memcpy(s, v, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

typedef struct {
  size_t bytes;
  int iters;
  double median_us, min_us, max_us, gbps;
  double round_us[MAX_ROUNDS];
  int rounds;
} row_t;

/* One size: warm-up, --rounds timed rounds, one checked call. Fills *row on rank 0; returns the
 * number of ranks that saw a wrong value. */
static int run_size(int test, size_t bytes, const options_t *o, row_t *row) {
  const test_t *t = &tests[test];
  buffers_t b;
  size_t span = bytes * (size_t)(t->blocks == EVERY_RANK ? world_size : t->blocks);
  buffers_alloc(&b, span, o);
  int iters = iters_for(o->iters, bytes);
  int warmup = o->warmup ? iters_for(o->warmup, bytes) : 0;
  /* Timed calls move non-zero bytes (what a check would also see) but are not checked. */
  for (size_t i = 0; i < span; i++)
    ((unsigned char *)b.send_host)[i] = (unsigned char)(i + 1);
  if (t->floats)
    for (size_t i = 0; i < bytes / sizeof(float); i++)
      ((float *)b.send_host)[i] = 1.0f;
  set_send(&b, span, o->memory);
  device_sync(o->memory);

  for (int i = 0; i < warmup; i++)
    t->once(&b, bytes, o->memory);
  device_sync(o->memory);

  double us[MAX_ROUNDS];
  for (int r = 0; r < o->rounds; r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
      t->once(&b, bytes, o->memory);
    device_sync(o->memory);
    double call_us = (MPI_Wtime() - t0) * 1e6 / iters;
    if (t->pair_only)
      us[r] = call_us / 2; /* half a round trip; rank 0's clock */
    else                   /* the slowest rank */
      MPI_Reduce(&call_us, &us[r], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  }

  int bad = t->check(&b, bytes, o->memory);
  int bad_ranks = 0;
  MPI_Allreduce(&bad, &bad_ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  buffers_free(&b);

  if (world_rank == 0) {
    row->bytes = bytes;
    row->iters = iters;
    row->rounds = o->rounds;
    memcpy(row->round_us, us, (size_t)o->rounds * sizeof *us);
    row->median_us = median(us, o->rounds);
    row->min_us = row->max_us = us[0];
    for (int r = 1; r < o->rounds; r++) {
      row->min_us = fmin(row->min_us, us[r]);
      row->max_us = fmax(row->max_us, us[r]);
    }
    double algbw = (double)bytes / row->median_us / 1e3; /* bytes/us = MB/s */
    row->gbps = t->bus == BUS_ALLREDUCE ? algbw * 2.0 * (world_size - 1) / world_size
                : t->bus == BUS_PEERS   ? algbw * (world_size - 1)
                                        : algbw;
  }
  return bad_ranks;
}

/* ---- output ------------------------------------------------------------------------------ */

static void json_row(FILE *j, int *first, const char *test, const options_t *o, const row_t *r) {
  fprintf(j,
          "%s\n    {\"test\": \"%s\", \"memory\": \"%s\", \"ranks\": %d, \"bytes\": %zu, "
          "\"iters\": %d, \"median_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f, "
          "\"%s\": %.4f, \"rounds_us\": [",
          *first ? "" : ",", test, mem_names[o->memory], world_size, r->bytes, r->iters,
          r->median_us, r->min_us, r->max_us,
          !strcmp(test, "pingpong") || !strcmp(test, "ssend") ? "gbps" : "busbw_gbps", r->gbps);
  for (int k = 0; k < r->rounds; k++)
    fprintf(j, "%s%.3f", k ? ", " : "", r->round_us[k]);
  fprintf(j, "]}");
  *first = 0;
}

static int run_test(int test, const options_t *o, FILE *json, int *json_first) {
  const char *name = test_names[test];
  if (tests[test].pair_only && world_size < 2) {
    say0(stdout, "# %s skipped: needs at least 2 ranks (have %d)\n", name, world_size);
    return 0;
  }
  say0(stdout, "# mpi_bench test=%s memory=%s%s ranks=%d rounds=%d iters=%d warmup=%d\n", name,
       mem_names[o->memory],
       o->memory == MEM_STAGED ? (o->pinned ? " staging=pinned" : " staging=pageable") : "",
       world_size, o->rounds, o->iters, o->warmup);
  say0(stdout, "# %10s %12s %12s %12s %12s\n", "bytes", "median_us", "min_us", "max_us",
       tests[test].pair_only ? "GB/s" : "busbw_GB/s");
  int bad = 0;
  size_t last = 0;
  for (size_t bytes = o->min_bytes; bytes <= o->max_bytes;) {
    /* Reductions move whole floats: sizes round down to 4 bytes (once each; under 4: none). */
    size_t use = tests[test].floats ? bytes / sizeof(float) * sizeof(float) : bytes;
    if (use > 0 && use != last) {
      last = use;
      row_t row;
      int wrong = run_size(test, use, o, &row);
      bad |= wrong != 0;
      if (world_rank == 0) {
        printf("  %10zu %12.2f %12.2f %12.2f %12.3f%s\n", row.bytes, row.median_us, row.min_us,
               row.max_us, row.gbps, wrong ? "  WRONG" : "");
        fflush(stdout);
        if (json) json_row(json, json_first, name, o, &row);
      }
    }
    if (bytes == o->max_bytes) break;
    /* MIN, MIN*F, MIN*F^2, ... and then MAX itself when the steps miss it. */
    bytes = bytes > o->max_bytes / o->factor ? o->max_bytes : bytes * o->factor;
  }
  return bad;
}

/* ---- main -------------------------------------------------------------------------------- */

/* Every rank reaches the same verdict (options are the same everywhere); a rank-local failure
 * (no GPU on one host) is shared so that all ranks leave with the same status. */
static int agree_max(int v) {
  int m = v;
  MPI_Allreduce(&v, &m, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);

  options_t o;
  int status = 0;
  if (parse_options(argc, argv, &o)) {
    MPI_Finalize();
    return EXIT_USAGE;
  }
  if (o.help) {
    usage(stdout);
    MPI_Finalize();
    return 0;
  }

  /* Memory kind available here? */
  int skip = 0;
  char why[256] = "";
  if (o.memory != MEM_HOST) {
#ifdef MPI_BENCH_CUDA
    MPI_Comm node;
    int local_rank = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);
    skip = pick_device(local_rank, why, sizeof why) != 0;
#else
    snprintf(why, sizeof why, "built without CUDA (compile with -DMPI_BENCH_CUDA and -lcudart)");
    skip = 1;
#endif
  }
  if (agree_max(skip)) {
    /* The reason is printed by the first rank that has one. */
    int first = skip ? world_rank : world_size, who;
    MPI_Allreduce(&first, &who, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (world_rank == who)
      fprintf(stderr, "mpi_bench: --memory %s unavailable on rank %d: %s\n", mem_names[o.memory],
              who, why);
    MPI_Finalize();
    return EXIT_SKIP;
  }

  FILE *json = NULL;
  int json_bad = 0;
  if (o.json && world_rank == 0) {
    json = fopen(o.json, "w");
    if (!json) {
      fprintf(stderr, "mpi_bench: bad value for --json: cannot write '%s': %s\n", o.json,
              strerror(errno));
      json_bad = 1;
    }
  }
  if (agree_max(json_bad)) {
    MPI_Finalize();
    return EXIT_USAGE;
  }
  int json_first = 1;
  if (json)
    fprintf(json, "{\"memory\": \"%s\", \"ranks\": %d, \"rounds\": %d, \"results\": [",
            mem_names[o.memory], world_size, o.rounds);

  for (int t = 0; t < N_TESTS; t++)
    if (o.tests & TEST_BIT(t)) status |= run_test(t, &o, json, &json_first);

  if (json) {
    fprintf(json, "\n  ], \"ok\": %s}\n", status ? "false" : "true");
    if (fclose(json)) {
      fprintf(stderr, "mpi_bench: writing '%s': %s\n", o.json, strerror(errno));
      status = 1;
    }
  }
  if (status) say0(stderr, "mpi_bench: FAILED: wrong values (see above)\n");
  MPI_Finalize();
  return status ? 1 : 0;
}
