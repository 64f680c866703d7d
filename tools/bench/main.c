/* SPDX-License-Identifier: BSD-3-Clause */
/* gmpi-bench: the main job. Runs under mpiexec; for each collective and size it checks the
 * result of gmpi and of each baseline, then times them on the same buffers, and prints
 * nccl-tests' columns plus one (time, ratio, #wrong) group per baseline.
 *
 *   mpiexec -n 2 gmpi-bench -b 8 -e 64M -f 2 --coll allreduce,bcast --baseline mpi */
#include <getopt.h>
#include <gmpi_version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "bench.h"

#define MAX_BASELINES    4
#define PROGRESS_EVERY_S 5.0 /* a progress line on stderr at most this often, after this long */

static const bench_baseline_t *baselines[MAX_BASELINES];
static int n_baselines;
static int coll_selected[BENCH_COLL_COUNT];
/* -d and -o: the dtypes and ops to run, each collective with each (ops: reducing ones only) */
static gmpi_dtype_t dtypes[GMPI_DTYPE_COUNT];
static int n_dtypes;
static gmpi_op_t ops[GMPI_OP_COUNT];
static int n_ops;
static bench_report_t json_report, svg_report;
static bench_row_t *rows; /* every measured row, grown as needed: the reports lose none */
static int n_rows, rows_cap;
static int tells; /* this rank prints option errors and the usage (rank 0: once per job) */
/* progress: rows printed so far of all that the run will print, and when the last line went */
static int rows_done, rows_total;
static double run_start, last_progress;

static void usage(void) {
  printf("usage: mpiexec -n N gmpi-bench [options]\n"
         "  -b, --minbytes N      smallest size (bytes; K/M/G suffixes), default 8\n"
         "  -e, --maxbytes N      largest size, default 32M\n"
         "  -f, --stepfactor F    multiply size by F each step, default 2\n"
         "  -n, --iters N         timed iterations per block, default 20\n"
         "      --rounds N        timed blocks per size (default 5); gmpi and each baseline\n"
         "                        alternate blocks; times are the median block's, the ratio\n"
         "                        the median of per-round ratios, with their spread\n"
         "  -w, --warmup_iters N  untimed iterations first, default 5\n"
         "  -c, --check 0|1       check results (default 1); a wrong value exits non-zero\n"
         "  -a, --average 0|1|2|3 time of a block across ranks: 0 rank 0's, 1 the mean\n"
         "                        (default, as nccl-tests), 2 the fastest rank's, 3 the slowest's\n"
         "  -o, --op OP[,OP...]   sum prod min max avg band bor bxor land lor lxor, or all\n"
         "                        (nccl-tests' five: sum prod max min avg); default sum\n"
         "  -d, --datatype T[,T]  int8 uint8 int16 uint16 int32 uint32 int64 uint64 float16\n"
         "                        bfloat16 float32 float64 complex64 complex128 bool byte;\n"
         "                        nccl-tests' names too: char int half float double, and all\n"
         "                        (nccl-tests' ten: int8 uint8 int32 uint32 int64 uint64 half\n"
         "                        float double bfloat16); default float32\n"
         "  -r, --root R          root of bcast and reduce, default 0\n"
         "      --coll LIST       allreduce,bcast,reduce,allgather,reduce_scatter,alltoall,\n"
         "                        gather,scatter,allgatherv,gatherv,scatterv,alltoallv,\n"
         "                        reduce_scatterv,sendrecv or all (v-variants: equal blocks)\n"
         "      --nonblocking     gmpi's nonblocking form and a wait (gmpi_iallreduce...)\n"
         "      --backend B       auto cpu cuda (sets GMPI_BACKEND)\n"
         "      --baseline LIST   mpi (cpu), nccl and staged (cuda), ncclevent (cuda: the NCCL\n"
         "                        call and an event polled to completion, as a request over raw\n"
         "                        NCCL: --nonblocking's like), graph (cuda, plan mode: the\n"
         "                        same calls raw in one CUDA graph), eager (gmpi's own eager\n"
         "                        call, for plan and stream modes), checked (gmpi with\n"
         "                        GMPI_CHECK=1): same op, same buffers; ncclalloc, ncclreg,\n"
         "                        ncclwin (cuda: gmpi's own call, in the run's mode, on a comm\n"
         "                        and buffers made with GMPI_NCCL_MEM=alloc, register, window;\n"
         "                        docs/design.md)\n"
         "      --mode M          eager (default), stream (cuda: enqueue, sync once), plan\n"
         "      --plan-ops N      operations recorded per plan in plan mode, default 100\n"
         "      --plan-buffers B  sliced (default: each recorded call its own slice of the\n"
         "                        buffers, as a model's gradients; a plan may fuse them) or\n"
         "                        shared (every call the same buffers: each depends on the one\n"
         "                        before, nothing fuses)\n"
         "  -J, --json FILE       write every row as JSON\n"
         "      --plot FILE       draw busbw against size, one panel per collective (SVG);\n"
         "                        tools/bench/plot.py draws a PNG with ratios from the JSON\n"
         "  -V, --version         print gmpi-bench's and the libraries' versions\n"
         "Columns: time in us, algbw and busbw in GB/s (nccl-tests' definitions); per baseline\n"
         "its time and ratio = gmpi time / baseline time (below 1: gmpi faster), the median of\n"
         "the rounds' ratios with its spread (lowest-highest).\n");
}

/* A value gmpi-bench cannot use: say which option and value, and why. Returns 1 (bad). */
static int bad_value(const char *opt, const char *value, const char *why) {
  if (tells) fprintf(stderr, "gmpi-bench: %s '%s': %s\n", opt, value, why);
  return 1;
}

/* An integer option; a value that is not one whole number >= min is refused by name. */
static int parse_int(const char *opt, const char *s, int min, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || *end || v < min || v > 1000000000) {
    char why[64];
    snprintf(why, sizeof(why), "not a whole number >= %d", min);
    return bad_value(opt, s, why);
  }
  *out = (int)v;
  return 0;
}

/* A size in bytes with K/M/G suffixes; 0 (refused by the caller) when it is none. */
static size_t parse_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || v < 0) return 0;
  switch (*end) {
  case 'K':
  case 'k': v *= 1024; break;
  case 'M':
  case 'm': v *= 1024 * 1024; break;
  case 'G':
  case 'g': v *= 1024.0 * 1024 * 1024; break;
  case '\0': break;
  default: return 0;
  }
  return end[0] && end[1] ? 0 : (size_t)v;
}

static int lookup(const char *word, const char *(*name)(int), int n) {
  for (int i = 0; i < n; i++)
    if (!strcasecmp(word, name(i))) return i;
  return -1;
}
static const char *dtype_name(int i) { return gmpi_dtype_name((gmpi_dtype_t)i); }
static const char *op_name(int i) { return gmpi_op_name((gmpi_op_t)i); }
static const char *coll_name(int i) { return bench_colls[i].name; }

/* nccl-tests' type names, as gmpi's. */
static const char *const dtype_aliases[][2] = {
    {"char", "int8"},      {"int", "int32"},    {"half", "float16"}, {"float", "float32"},
    {"double", "float64"}, {"fp16", "float16"}, {"bf16", "bfloat16"}};
/* -d all and -o all: nccl-tests' sets. */
static const gmpi_dtype_t nccl_tests_dtypes[] = {
    GMPI_INT8,   GMPI_UINT8,   GMPI_INT32,   GMPI_UINT32,  GMPI_INT64,
    GMPI_UINT64, GMPI_FLOAT16, GMPI_FLOAT32, GMPI_FLOAT64, GMPI_BFLOAT16};
static const gmpi_op_t nccl_tests_ops[] = {GMPI_SUM, GMPI_PROD, GMPI_MAX, GMPI_MIN, GMPI_AVG};

static int parse_list(char *list, int (*add)(const char *)) {
  for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ","))
    if (add(tok)) return 1;
  return 0;
}
static int add_coll(const char *w) {
  if (!strcmp(w, "all")) {
    for (int i = 0; i < BENCH_COLL_COUNT; i++)
      coll_selected[i] = 1;
    return 0;
  }
  int k = lookup(w, coll_name, BENCH_COLL_COUNT);
  if (k < 0)
    bad_value("--coll", w,
              "unknown collective (allreduce, bcast, reduce, allgather, reduce_scatter, "
              "alltoall, gather, scatter, allgatherv, gatherv, scatterv, alltoallv, "
              "reduce_scatterv, sendrecv, all)");
  else
    coll_selected[k] = 1;
  return k < 0;
}
static int add_dtype(const char *w) {
  if (!strcasecmp(w, "all")) {
    for (size_t i = 0; i < sizeof(nccl_tests_dtypes) / sizeof(nccl_tests_dtypes[0]); i++)
      if (add_dtype(gmpi_dtype_name(nccl_tests_dtypes[i]))) return 1;
    return 0;
  }
  const char *name = w;
  for (size_t i = 0; i < sizeof(dtype_aliases) / sizeof(dtype_aliases[0]); i++)
    if (!strcasecmp(w, dtype_aliases[i][0])) name = dtype_aliases[i][1];
  int k = lookup(name, dtype_name, GMPI_DTYPE_COUNT);
  if (k < 0)
    return bad_value("--datatype", w,
                     "unknown type (int8 ... float32 float64 bfloat16 ..., nccl-tests' char int "
                     "half float double, or all)");
  for (int i = 0; i < n_dtypes; i++)
    if (dtypes[i] == (gmpi_dtype_t)k) return 0;
  dtypes[n_dtypes++] = (gmpi_dtype_t)k;
  return 0;
}
static int add_op(const char *w) {
  if (!strcasecmp(w, "all")) {
    for (size_t i = 0; i < sizeof(nccl_tests_ops) / sizeof(nccl_tests_ops[0]); i++)
      if (add_op(gmpi_op_name(nccl_tests_ops[i]))) return 1;
    return 0;
  }
  int k = lookup(w, op_name, GMPI_OP_COUNT);
  if (k < 0)
    return bad_value("--op", w,
                     "unknown op (sum prod min max avg band bor bxor land lor lxor, or all)");
  for (int i = 0; i < n_ops; i++)
    if (ops[i] == (gmpi_op_t)k) return 0;
  ops[n_ops++] = (gmpi_op_t)k;
  return 0;
}
static int add_baseline(const char *w) {
  const bench_baseline_t *b = bench_find_baseline(w);
  if (!b)
    bad_value("--baseline", w,
              "unknown baseline (mpi, nccl, ncclevent, staged, graph, eager, checked, ncclalloc, "
              "ncclreg, "
              "ncclwin)");
  else if (n_baselines < MAX_BASELINES)
    baselines[n_baselines++] = b;
  return !b;
}

static int parse_args(int argc, char **argv, bench_ctx_t *c) {
  static const struct option opts[] = {{"minbytes", 1, 0, 'b'},
                                       {"maxbytes", 1, 0, 'e'},
                                       {"stepfactor", 1, 0, 'f'},
                                       {"iters", 1, 0, 'n'},
                                       {"warmup_iters", 1, 0, 'w'},
                                       {"check", 1, 0, 'c'},
                                       {"op", 1, 0, 'o'},
                                       {"datatype", 1, 0, 'd'},
                                       {"root", 1, 0, 'r'},
                                       {"json", 1, 0, 'J'},
                                       {"coll", 1, 0, 1},
                                       {"backend", 1, 0, 2},
                                       {"baseline", 1, 0, 3},
                                       {"plot", 1, 0, 4},
                                       {"mode", 1, 0, 5},
                                       {"plan-ops", 1, 0, 6},
                                       {"nonblocking", 0, 0, 7},
                                       {"rounds", 1, 0, 8},
                                       {"plan-buffers", 1, 0, 9},
                                       {"average", 1, 0, 'a'},
                                       {"version", 0, 0, 'V'},
                                       {"help", 0, 0, 'h'},
                                       {0, 0, 0, 0}};
  int o, bad = 0;
  while ((o = getopt_long(argc, argv, "b:e:f:n:w:c:o:d:r:J:a:Vh", opts, NULL)) != -1) {
    switch (o) {
    case 'b':
      c->min_bytes = parse_size(optarg);
      bad |= c->min_bytes == 0 && bad_value("--minbytes", optarg, "not a size > 0 (8, 4K, 1M)");
      break;
    case 'e':
      c->max_bytes = parse_size(optarg);
      bad |= c->max_bytes == 0 && bad_value("--maxbytes", optarg, "not a size > 0 (8, 4K, 1M)");
      break;
    case 'f':
      c->factor = atof(optarg);
      bad |= !(c->factor > 1) && bad_value("--stepfactor", optarg, "not a number > 1");
      break;
    case 'n': bad |= parse_int("--iters", optarg, 1, &c->iters); break;
    case 'w': bad |= parse_int("--warmup_iters", optarg, 0, &c->warmup); break;
    case 'c': bad |= parse_int("--check", optarg, 0, &c->check); break;
    case 'r': bad |= parse_int("--root", optarg, 0, &c->root); break;
    case 'J': json_report.path = optarg; break;
    case 'a':
      bad |= parse_int("--average", optarg, 0, &c->average) ||
             (c->average > 3 &&
              bad_value("--average", optarg, "0 (rank 0), 1 (mean), 2 (min) or 3 (max)"));
      break;
    case 'o': bad |= parse_list(optarg, add_op); break;
    case 'd': bad |= parse_list(optarg, add_dtype); break;
    case 1: bad |= parse_list(optarg, add_coll); break;
    case 2: setenv("GMPI_BACKEND", optarg, 1); break;
    case 3: bad |= parse_list(optarg, add_baseline); break;
    case 4: svg_report.path = optarg; break;
    case 5:
      c->mode = !strcmp(optarg, "stream") ? MODE_STREAM
                : !strcmp(optarg, "plan") ? MODE_PLAN
                                          : MODE_EAGER;
      bad |= strcmp(optarg, "stream") && strcmp(optarg, "plan") && strcmp(optarg, "eager") &&
             bad_value("--mode", optarg, "unknown mode (eager, stream, plan)");
      break;
    case 6: bad |= parse_int("--plan-ops", optarg, 1, &c->plan_ops); break;
    case 7: c->nonblocking = 1; break;
    case 9:
      c->plan_shared = !strcmp(optarg, "shared");
      bad |= strcmp(optarg, "shared") && strcmp(optarg, "sliced") &&
             bad_value("--plan-buffers", optarg, "sliced or shared");
      break;
    case 8:
      bad |= parse_int("--rounds", optarg, 1, &c->rounds) ||
             (c->rounds > 63 && bad_value("--rounds", optarg, "at most 63"));
      break;
    case 'h':
      if (tells) usage();
      return 2;
    case 'V':
      if (tells) {
        const char *g, *m, *n;
        gmpi_versions(&g, &m, &n);
        printf("gmpi-bench %s\n%s | %s | NCCL %s\n", GMPI_VERSION_STRING, g, m, n);
      }
      return 2;
    default: bad = 1; /* getopt said which */
    }
  }
  if (!bad && c->min_bytes > c->max_bytes) {
    if (tells)
      fprintf(stderr, "gmpi-bench: --minbytes %zu is larger than --maxbytes %zu\n", c->min_bytes,
              c->max_bytes);
    bad = 1;
  }
  if (bad && tells)
    fprintf(stderr, "gmpi-bench: nothing run (gmpi-bench --help lists the options)\n");
  return bad;
}

/* ---- one implementation on one row ------------------------------------------------------ */

typedef int (*impl_fn_t)(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s);

/* Nonblocking mode: the collective's i-form and a wait, where it has one. */
static gmpi_status_t run_gmpi_call(bench_ctx_t *c, const bench_coll_t *coll,
                                   const bench_shape_t *s) {
  if (!c->nonblocking || !coll->start) return coll->run(c, s);
  gmpi_request_t req = NULL;
  gmpi_status_t st = coll->start(c, s, &req);
  return st == GMPI_SUCCESS ? gmpi_wait(&req, NULL) : st;
}

static int gmpi_impl(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s) {
  gmpi_status_t st = run_gmpi_call(c, coll, s);
  if (st != GMPI_SUCCESS)
    fprintf(stderr, "[rank %d] gmpi %s failed: %s\n", c->rank, coll->name, gmpi_last_error());
  return st != GMPI_SUCCESS;
}

int bench_plan_impl(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s);
int bench_stream_impl(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s);

int bench_gmpi_impl(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s) {
  if (c->mode == MODE_PLAN) return bench_plan_impl(c, coll, s);
  if (c->mode == MODE_STREAM) return bench_stream_impl(c, coll, s);
  return gmpi_impl(c, coll, s);
}

/* A baseline with a comm and buffers of its own (b->swap) runs, is checked and timed on them;
 * the same call swaps back. */
static void swap_to(bench_ctx_t *c, const bench_baseline_t *b) {
  if (b && b->swap) b->swap(c);
}

/* Put the input in place, poison the output, run once, count wrong elements on this rank. */
static long check_on(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s,
                     impl_fn_t run, const bench_baseline_t *b) {
  size_t e = gmpi_dtype_size(c->dtype);
  memset(c->host_got, 0xa5, s->recv_elems * e);
  gmpi_mem_copy(c->comm, c->recv, c->host_got, s->recv_elems * e);
  void *input = coll->kind == BENCH_BCAST ? c->recv : c->send;
  gmpi_mem_copy(c->comm, input, c->host_in, s->send_elems * e);
  if ((b ? b->run(c, coll, s) : run(c, coll, s)) != 0) return (long)s->recv_elems + 1;
  bench_sync(c);
  gmpi_mem_copy(c->comm, c->host_got, c->recv, s->recv_elems * e);
  int rooted_result =
      coll->kind == BENCH_REDUCE || coll->kind == BENCH_GATHER || coll->kind == BENCH_GATHERV;
  int checks = !(rooted_result && c->rank != c->root);
  return c->check && checks ? bench_count_wrong(c, s->recv_elems) : 0;
}

static long check_once(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s,
                       impl_fn_t run, const bench_baseline_t *b) {
  swap_to(c, b);
  long wrong = check_on(c, coll, s, run, b);
  swap_to(c, b);
  return wrong;
}

/* Seconds per operation over one block of iters calls, the slowest rank's; < 0 on an error. */
static double time_block(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s,
                         impl_fn_t run, const bench_baseline_t *b) {
  int err = 0;
  swap_to(c, b);
  bench_sync(c);
  MPI_Barrier(c->mpi);
  double t0 = MPI_Wtime();
  for (int i = 0; i < c->iters; i++)
    err |= b ? b->run(c, coll, s) : run(c, coll, s);
  bench_sync(c); /* stream mode: the loop only enqueued */
  double t = (MPI_Wtime() - t0) / c->iters, across = 0;
  swap_to(c, b);
  /* plan mode: one gmpi "operation" is a replay of plan_ops calls */
  if ((!b || b->per_plan) && c->mode == MODE_PLAN) t /= c->plan_ops;
  if (c->average == 0) { /* rank 0's, as nccl-tests' -a 0 */
    across = t;
    MPI_Bcast(&across, 1, MPI_DOUBLE, 0, c->mpi);
  } else {
    MPI_Op how = c->average == 2 ? MPI_MIN : c->average == 3 ? MPI_MAX : MPI_SUM;
    MPI_Allreduce(&t, &across, 1, MPI_DOUBLE, how, c->mpi);
    if (c->average == 1) across /= c->size;
  }
  int any_err = 0;
  MPI_Allreduce(&err, &any_err, 1, MPI_INT, MPI_LOR, c->mpi);
  return any_err ? -1 : across;
}

static void warm_up(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s, impl_fn_t run,
                    const bench_baseline_t *b) {
  swap_to(c, b);
  for (int i = 0; i < c->warmup; i++)
    (void)(b ? b->run(c, coll, s) : run(c, coll, s));
  swap_to(c, b);
}

static int by_value(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(*v), by_value);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static bench_row_t make_row(const bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s,
                            const char *impl, double t, long wrong) {
  bench_row_t r = {coll->name, impl,     c->dtype, c->op, coll->has_op,
                   s->bytes,   s->count, t * 1e6,  0,     0,
                   wrong,      0,        0,        0};
  if (t > 0) {
    r.algbw = (double)s->bytes / t / 1e9;
    r.busbw = r.algbw * coll->busbw_factor(c->size);
  }
  return r;
}

static long checked(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s, impl_fn_t run,
                    const bench_baseline_t *b) {
  long wrong = check_once(c, coll, s, run, b), total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, c->mpi);
  return total;
}

/* gmpi alone: the median of c->rounds blocks. */
static bench_row_t measure(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s,
                           const char *impl, impl_fn_t run, const bench_baseline_t *b) {
  long wrong = checked(c, coll, s, run, b);
  warm_up(c, coll, s, run, b);
  double t[64];
  int n = c->rounds, failed = 0;
  for (int k = 0; k < n; k++)
    failed |= (t[k] = time_block(c, coll, s, run, b)) < 0;
  return make_row(c, coll, s, impl, failed ? -1 : median(t, n), wrong + failed);
}

/* gmpi and baseline b in alternating blocks on the same buffers: on a noisy machine both see
 * the same noise, so the per-round ratio means what it says. The baseline's row carries the
 * ratios' median and spread; *g gets gmpi's median block time of these rounds. */
static bench_row_t measure_against(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s,
                                   impl_fn_t gmpi_run, const bench_baseline_t *b, double *g) {
  long wrong = checked(c, coll, s, NULL, b);
  warm_up(c, coll, s, NULL, b);
  warm_up(c, coll, s, gmpi_run, NULL);
  double tg[64], tb[64], ratio[64];
  int n = c->rounds, failed = 0;
  for (int k = 0; k < n; k++) {
    tg[k] = time_block(c, coll, s, gmpi_run, NULL);
    tb[k] = time_block(c, coll, s, NULL, b);
    failed |= tg[k] < 0 || tb[k] < 0;
    ratio[k] = tb[k] > 0 ? tg[k] / tb[k] : 0;
  }
  *g = failed ? -1 : median(tg, n);
  bench_row_t r = make_row(c, coll, s, b->name, failed ? -1 : median(tb, n), wrong + failed);
  r.ratio = median(ratio, n); /* sorted now */
  r.ratio_min = ratio[0];
  r.ratio_max = ratio[n - 1];
  return r;
}

/* Keep a row for the reports (rank 0); every row is kept. */
static void add_row(const bench_ctx_t *c, const bench_row_t *r) {
  if (c->rank) return;
  if (n_rows == rows_cap) {
    int cap = rows_cap ? 2 * rows_cap : 256;
    bench_row_t *more = realloc(rows, (size_t)cap * sizeof(*rows));
    if (!more) {
      fprintf(stderr, "gmpi-bench: no memory for %d report rows\n", cap);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    rows = more, rows_cap = cap;
  }
  rows[n_rows++] = *r;
}

/* After each printed row: a line on stderr once the run has taken PROGRESS_EVERY_S, then at
 * most that often, so a long run shows it is alive and how far it is. */
static void progress(const bench_ctx_t *c, const bench_coll_t *coll, size_t bytes) {
  rows_done++;
  if (c->rank) return;
  double now = MPI_Wtime();
  if (now - run_start < PROGRESS_EVERY_S || now - last_progress < PROGRESS_EVERY_S) return;
  last_progress = now;
  fprintf(stderr, "gmpi-bench: %d of %d rows (%s %s, %zu bytes), %.0f s so far\n", rows_done,
          rows_total, coll->name, gmpi_dtype_name(c->dtype), bytes, now - run_start);
}

/* ---- driver ----------------------------------------------------------------------------- */

static void print_header(const bench_ctx_t *c, const bench_coll_t *coll) {
  static const char *const average_name[] = {"rank 0's", "mean over ranks", "fastest rank's",
                                             "slowest rank's"};
  if (c->rank) return;
  if (c->mode == MODE_PLAN)
    printf("#\n# plan mode: gmpi times are per operation of a %d-operation plan replay\n",
           c->plan_ops);
  printf("#\n# %s  (%s backend, %d ranks, mode %s%s)\n", coll->name, gmpi_backend_name(c->backend),
         c->size,
         c->mode == MODE_EAGER    ? "eager"
         : c->mode == MODE_STREAM ? "stream"
                                  : "plan",
         !c->nonblocking ? ""
         : coll->start   ? ", nonblocking: i-form + wait"
                         : ", blocking: no nonblocking form");
  printf("# time: %s median block of %d iterations (%d rounds)", average_name[c->average], c->iters,
         c->rounds);
  if (n_baselines) printf("; ratio = gmpi time / baseline time (below 1: gmpi faster)");
  printf("\n# %12s %12s %9s %7s %5s %10s %8s %8s %7s", "size", "count", "type", "redop", "root",
         "time", "algbw", "busbw", "#wrong");
  for (int i = 0; i < n_baselines; i++)
    printf(" | %6s %10s %7s %13s %6s", baselines[i]->name, "time", "ratio", "spread", "#wrong");
  printf("\n# %12s %12s %9s %7s %5s %10s %8s %8s %7s", "(B)", "(elements)", "", "", "", "(us)",
         "(GB/s)", "(GB/s)", "");
  for (int i = 0; i < n_baselines; i++)
    printf(" | %6s %10s %7s %13s %6s", "", "(us)", "(x)", "(low-high)", "");
  printf("\n");
}

static int run_coll(bench_ctx_t *c, const bench_coll_t *coll, impl_fn_t gmpi_run) {
  long wrong = 0;
  char why[160];
  int usable[MAX_BASELINES];
  for (int i = 0; i < n_baselines; i++) {
    usable[i] = baselines[i]->available(c, why, sizeof(why));
    if (!usable[i] && c->rank == 0) printf("# baseline %s skipped: %s\n", baselines[i]->name, why);
  }
  print_header(c, coll);
  for (size_t bytes = c->min_bytes; bytes <= c->max_bytes;
       bytes = (size_t)((double)bytes * c->factor) > bytes ? (size_t)((double)bytes * c->factor)
                                                           : bytes + 1) {
    bench_shape_t s;
    coll->shape(c, bytes, &s);
    if (s.count == 0) continue;
    coll->fill(c, &s);
    /* Baselines first (each alternating with gmpi), so gmpi's row can take its time from the
     * first one's rounds instead of timing gmpi again. */
    bench_row_t base[MAX_BASELINES];
    double gmpi_time = 0;
    int timed = 0;
    for (int i = 0; i < n_baselines; i++) {
      if (!usable[i]) continue;
      double t = 0;
      base[i] = measure_against(c, coll, &s, gmpi_run, baselines[i], &t);
      if (!timed++) gmpi_time = t;
      add_row(c, &base[i]);
      wrong += base[i].wrong;
    }
    bench_row_t g = timed ? make_row(c, coll, &s, "gmpi", gmpi_time,
                                     checked(c, coll, &s, gmpi_run, NULL) + (gmpi_time < 0))
                          : measure(c, coll, &s, "gmpi", gmpi_run, NULL);
    add_row(c, &g);
    wrong += g.wrong;
    if (c->rank == 0)
      printf("  %12zu %12zu %9s %7s %5d %10.2f %8.3f %8.3f %7ld", g.bytes, g.count,
             gmpi_dtype_name(c->dtype), coll->has_op ? gmpi_op_name(c->op) : "none",
             coll->has_root ? c->root : -1, g.time_us, g.algbw, g.busbw, g.wrong);
    for (int i = 0; i < n_baselines && c->rank == 0; i++) {
      if (!usable[i])
        printf(" | %6s %10s %7s %13s %6s", baselines[i]->name, "-", "-", "-", "-");
      else
        printf(" | %6s %10.2f %7.3f %6.3f-%-6.3f %6ld", base[i].impl, base[i].time_us,
               base[i].ratio, base[i].ratio_min, base[i].ratio_max, base[i].wrong);
    }
    if (c->rank == 0) printf("\n");
    fflush(stdout);
    progress(c, coll, bytes);
  }
  return wrong != 0;
}

/* Plan mode gives each recorded call its own slice (as a model's gradients each have their own)
 * when plan_ops slices of the largest size fit in 1 GiB; checks read the first slice. */
static int alloc_buffers(bench_ctx_t *c) {
  size_t cap = c->max_bytes + 64, slices = (cap + 255) / 256 * 256 * (size_t)c->plan_ops;
  if (c->mode == MODE_PLAN && slices <= ((size_t)1 << 30)) cap = slices;
  c->send_cap = c->recv_cap = cap;
  if (gmpi_mem_alloc(c->comm, cap, &c->send) || gmpi_mem_alloc(c->comm, cap, &c->recv)) {
    fprintf(stderr, "gmpi-bench: cannot allocate 2 x %zu bytes: %s\n", cap, gmpi_last_error());
    return 1;
  }
  size_t p = (size_t)c->size;
  c->vcounts = calloc(p, sizeof(size_t));
  c->vdispls = calloc(p, sizeof(size_t));
  c->vcounts_int = calloc(p, sizeof(int));
  c->vdispls_int = calloc(p, sizeof(int));
  if (!c->vcounts || !c->vdispls || !c->vcounts_int || !c->vdispls_int) return 1;
  c->host_in = malloc(cap);
  c->host_want = malloc(cap);
  c->host_got = malloc(cap);
  c->host_stage_send = malloc(cap);
  c->host_stage_recv = malloc(cap);
  return !c->host_in || !c->host_want || !c->host_got || !c->host_stage_send || !c->host_stage_recv;
}

static void free_buffers(bench_ctx_t *c) {
  gmpi_mem_free(c->comm, c->send);
  gmpi_mem_free(c->comm, c->recv);
  free(c->host_in);
  free(c->host_want);
  free(c->host_got);
  free(c->host_stage_send);
  free(c->host_stage_recv);
  free(c->vcounts);
  free(c->vdispls);
  free(c->vcounts_int);
  free(c->vdispls_int);
}

/* Options that parse but cannot run here (known only after gmpi_init): say why, end cleanly. */
static void refuse_run(bench_ctx_t *c) {
  const char *why = "";
  gmpi_comm_backend_reason(c->comm, &why);
  if (c->rank == 0 && c->root >= c->size)
    fprintf(stderr, "gmpi-bench: --root '%d': out of range for %d ranks\n", c->root, c->size);
  else if (c->rank == 0)
    fprintf(stderr,
            "gmpi-bench: --mode 'stream': needs the cuda backend (it enqueues on a CUDA stream); "
            "this run's backend is %s (%s)\n",
            gmpi_backend_name(c->backend), why);
  MPI_Comm_free(&c->mpi);
  gmpi_finalize(&c->comm);
  MPI_Finalize();
}

/* The sizes run_coll steps through. */
static int count_sizes(const bench_ctx_t *c) {
  int n = 0;
  for (size_t bytes = c->min_bytes; bytes <= c->max_bytes;
       bytes = (size_t)((double)bytes * c->factor) > bytes ? (size_t)((double)bytes * c->factor)
                                                           : bytes + 1)
    n++;
  return n;
}

/* nccl-tests' closing lines: wrong values and the average bus bandwidth over every row, gmpi's
 * and then each baseline's. */
static void print_footer(void) {
  long wrong = 0;
  for (int i = 0; i < n_rows; i++)
    wrong += rows[i].wrong;
  printf("# Out of bounds values : %ld %s\n", wrong, wrong ? "FAILED" : "OK");
  for (int b = -1; b < n_baselines; b++) {
    const char *impl = b < 0 ? "gmpi" : baselines[b]->name;
    double sum = 0;
    int n = 0;
    for (int i = 0; i < n_rows; i++)
      if (!strcmp(rows[i].impl, impl) && rows[i].time_us > 0) sum += rows[i].busbw, n++;
    if (n) printf("# Avg bus bandwidth    : %g  (%s)\n", sum / n, impl);
  }
}

int main(int argc, char **argv) {
  bench_ctx_t c = {.dtype = GMPI_FLOAT32,
                   .op = GMPI_SUM,
                   .min_bytes = 8,
                   .max_bytes = 32u << 20,
                   .factor = 2,
                   .iters = 20,
                   .warmup = 5,
                   .rounds = 5,
                   .check = 1,
                   .average = 1,
                   .plan_ops = 100};
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
  tells = c.rank == 0;
  opterr = tells; /* getopt's own messages too */
  int rc = parse_args(argc, argv, &c);
  if (rc) {
    MPI_Finalize();
    return rc == 2 ? 0 : 2;
  }
  int any = 0;
  for (int i = 0; i < BENCH_COLL_COUNT; i++)
    any |= coll_selected[i];
  if (!any) coll_selected[BENCH_ALLREDUCE] = 1;
  if (!n_dtypes) dtypes[n_dtypes++] = c.dtype;
  if (!n_ops) ops[n_ops++] = c.op;
  /* A report that cannot be written fails now, before the run, not after it. */
  int unopened = 0;
  if (c.rank == 0)
    unopened = (json_report.path && bench_report_open(&json_report)) ||
               (svg_report.path && bench_report_open(&svg_report));
  MPI_Bcast(&unopened, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (unopened) {
    if (tells) fprintf(stderr, "gmpi-bench: nothing run\n");
    MPI_Finalize();
    return 2;
  }
  time_t started = time(NULL);
  char started_utc[32];
  strftime(started_utc, sizeof(started_utc), "%Y-%m-%dT%H:%M:%SZ", gmtime(&started));
  if (gmpi_init(MPI_COMM_WORLD, &c.comm) != GMPI_SUCCESS) {
    fprintf(stderr, "[rank %d] gmpi_init failed: %s\n", c.rank, gmpi_last_error());
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &c.mpi);
  gmpi_comm_size(c.comm, &c.size);
  gmpi_comm_backend(c.comm, &c.backend);
  if (c.root >= c.size || (c.mode == MODE_STREAM && c.backend != GMPI_BACKEND_CUDA)) {
    refuse_run(&c);
    return 2;
  }
  if (alloc_buffers(&c)) MPI_Abort(MPI_COMM_WORLD, 3);
  if (c.rank == 0) {
    const char *g, *m, *n;
    gmpi_versions(&g, &m, &n);
    printf("# gmpi-bench %s: %s | %s | NCCL %s\n# ranks %d, backend %s, dtype", GMPI_VERSION_STRING,
           g, m, n, c.size, gmpi_backend_name(c.backend));
    for (int i = 0; i < n_dtypes; i++)
      printf("%s%s", i ? "," : " ", gmpi_dtype_name(dtypes[i]));
    printf(", op");
    for (int i = 0; i < n_ops; i++)
      printf("%s%s", i ? "," : " ", gmpi_op_name(ops[i]));
    printf(", iters %d, warmup %d, rounds %d, check %d, started %s\n", c.iters, c.warmup, c.rounds,
           c.check, started_utc);
    /* gmpi's own rows are on this memory; the ncclalloc/reg/win baselines on theirs */
    if (getenv("GMPI_NCCL_MEM")) printf("# GMPI_NCCL_MEM=%s\n", getenv("GMPI_NCCL_MEM"));
  }
  impl_fn_t impl = bench_gmpi_impl;
  int wrong = 0, unwritten = 0;
  for (int pass = 0; pass < 2; pass++) { /* 0: count the rows to come; 1: run them */
    for (int d = 0; d < n_dtypes; d++) {
      for (int o = 0; o < n_ops; o++) {
        c.dtype = dtypes[d], c.op = ops[o];
        for (int i = 0; i < BENCH_COLL_COUNT; i++) {
          const bench_coll_t *coll = &bench_colls[i];
          if (!coll_selected[i] || (!coll->has_op && o > 0)) continue; /* op-less: once per type */
          if (coll->has_op && !gmpi_op_valid(c.dtype, c.op)) {
            if (pass && c.rank == 0)
              printf("# %s skipped: op %s is not defined on %s\n", coll->name, gmpi_op_name(c.op),
                     gmpi_dtype_name(c.dtype));
            continue;
          }
          if (pass)
            wrong |= run_coll(&c, coll, impl);
          else
            rows_total += count_sizes(&c);
        }
      }
    }
    if (!pass) run_start = MPI_Wtime();
  }
  if (c.rank == 0) {
    print_footer();
    bench_run_info_t info = {started_utc, MPI_Wtime() - run_start};
    if (json_report.f) unwritten |= bench_report_json(&json_report, &c, &info, rows, n_rows);
    if (svg_report.f) unwritten |= bench_report_svg(&svg_report, &c, rows, n_rows);
    printf("# %s\n", wrong ? "FAILED: some results were wrong" : "all results correct");
  }
  free(rows);
  bench_cuda_teardown();
  bench_modes_teardown();
  bench_memkind_teardown();
  free_buffers(&c);
  MPI_Comm_free(&c.mpi);
  gmpi_finalize(&c.comm);
  MPI_Finalize();
  return wrong || unwritten ? 1 : 0;
}
