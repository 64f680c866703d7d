/* SPDX-License-Identifier: BSD-3-Clause */
/* gmpi-bench: the main job. Runs under mpiexec; for each collective and size it checks the
 * result of gmpi and of each baseline, then times them on the same buffers, and prints
 * nccl-tests' columns plus one (time, ratio, #wrong) group per baseline.
 *
 *   mpiexec -n 2 gmpi-bench -b 8 -e 64M -f 2 --coll allreduce,bcast --baseline mpi */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench.h"

#define MAX_BASELINES 4
#define MAX_ROWS      4096

static const bench_baseline_t *baselines[MAX_BASELINES];
static int n_baselines;
static int coll_selected[BENCH_COLL_COUNT];
static const char *json_path, *svg_path;
static bench_row_t rows[MAX_ROWS];
static int n_rows;
static int tells; /* this rank prints option errors and the usage (rank 0: once per job) */

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
         "  -o, --op OP           sum prod min max avg band bor bxor land lor lxor\n"
         "  -d, --datatype T      int8 uint8 ... float16 bfloat16 float32 float64 ...\n"
         "  -r, --root R          root of bcast and reduce, default 0\n"
         "      --coll LIST       allreduce,bcast,reduce,allgather,reduce_scatter,alltoall,\n"
         "                        gather,scatter,allgatherv,gatherv,scatterv,alltoallv,\n"
         "                        reduce_scatterv,sendrecv or all (v-variants: equal blocks)\n"
         "      --nonblocking     gmpi's nonblocking form and a wait (gmpi_iallreduce...)\n"
         "      --backend B       auto cpu cuda (sets GMPI_BACKEND)\n"
         "      --baseline LIST   mpi (cpu), nccl and staged (cuda), eager (gmpi's own eager\n"
         "                        call, for plan and stream modes), checked (gmpi with\n"
         "                        GMPI_CHECK=1): same op, same buffers\n"
         "      --mode M          eager (default), stream (cuda: enqueue, sync once), plan\n"
         "      --plan-ops N      operations recorded per plan in plan mode, default 100\n"
         "  -J, --json FILE       write every row as JSON\n"
         "      --plot FILE       draw busbw and time against size (SVG)\n");
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
static int add_baseline(const char *w) {
  const bench_baseline_t *b = bench_find_baseline(w);
  if (!b)
    bad_value("--baseline", w, "unknown baseline (mpi, nccl, staged, eager, checked)");
  else if (n_baselines < MAX_BASELINES)
    baselines[n_baselines++] = b;
  return !b;
}

static int parse_args(int argc, char **argv, bench_ctx_t *c) {
  static const struct option opts[] = {{"minbytes", 1, 0, 'b'},     {"maxbytes", 1, 0, 'e'},
                                       {"stepfactor", 1, 0, 'f'},   {"iters", 1, 0, 'n'},
                                       {"warmup_iters", 1, 0, 'w'}, {"check", 1, 0, 'c'},
                                       {"op", 1, 0, 'o'},           {"datatype", 1, 0, 'd'},
                                       {"root", 1, 0, 'r'},         {"json", 1, 0, 'J'},
                                       {"coll", 1, 0, 1},           {"backend", 1, 0, 2},
                                       {"baseline", 1, 0, 3},       {"plot", 1, 0, 4},
                                       {"mode", 1, 0, 5},           {"plan-ops", 1, 0, 6},
                                       {"nonblocking", 0, 0, 7},    {"rounds", 1, 0, 8},
                                       {"help", 0, 0, 'h'},         {0, 0, 0, 0}};
  int o, bad = 0;
  while ((o = getopt_long(argc, argv, "b:e:f:n:w:c:o:d:r:J:h", opts, NULL)) != -1) {
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
    case 'J': json_path = optarg; break;
    case 'o':
      c->op = (gmpi_op_t)lookup(optarg, op_name, GMPI_OP_COUNT);
      bad |= (int)c->op < 0 && bad_value("--op", optarg,
                                         "unknown op (sum prod min max avg band "
                                         "bor bxor land lor lxor)");
      break;
    case 'd':
      c->dtype = (gmpi_dtype_t)lookup(optarg, dtype_name, GMPI_DTYPE_COUNT);
      bad |= (int)c->dtype < 0 && bad_value("--datatype", optarg,
                                            "unknown type (int8 ... "
                                            "float32 float64 bfloat16 ...)");
      break;
    case 1: bad |= parse_list(optarg, add_coll); break;
    case 2: setenv("GMPI_BACKEND", optarg, 1); break;
    case 3: bad |= parse_list(optarg, add_baseline); break;
    case 4: svg_path = optarg; break;
    case 5:
      c->mode = !strcmp(optarg, "stream") ? MODE_STREAM
                : !strcmp(optarg, "plan") ? MODE_PLAN
                                          : MODE_EAGER;
      bad |= strcmp(optarg, "stream") && strcmp(optarg, "plan") && strcmp(optarg, "eager") &&
             bad_value("--mode", optarg, "unknown mode (eager, stream, plan)");
      break;
    case 6: bad |= parse_int("--plan-ops", optarg, 1, &c->plan_ops); break;
    case 7: c->nonblocking = 1; break;
    case 8:
      bad |= parse_int("--rounds", optarg, 1, &c->rounds) ||
             (c->rounds > 63 && bad_value("--rounds", optarg, "at most 63"));
      break;
    case 'h':
      if (tells) usage();
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

/* Put the input in place, poison the output, run once, count wrong elements on this rank. */
static long check_once(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s,
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

/* Seconds per operation over one block of iters calls, the slowest rank's; < 0 on an error. */
static double time_block(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s,
                         impl_fn_t run, const bench_baseline_t *b) {
  int err = 0;
  bench_sync(c);
  MPI_Barrier(c->mpi);
  double t0 = MPI_Wtime();
  for (int i = 0; i < c->iters; i++)
    err |= b ? b->run(c, coll, s) : run(c, coll, s);
  bench_sync(c); /* stream mode: the loop only enqueued */
  double t = (MPI_Wtime() - t0) / c->iters, tmax = 0;
  /* plan mode: one gmpi "operation" is a replay of plan_ops calls */
  if (!b && c->mode == MODE_PLAN) t /= c->plan_ops;
  MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, c->mpi);
  int any_err = 0;
  MPI_Allreduce(&err, &any_err, 1, MPI_INT, MPI_LOR, c->mpi);
  return any_err ? -1 : tmax;
}

static void warm_up(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s, impl_fn_t run,
                    const bench_baseline_t *b) {
  for (int i = 0; i < c->warmup; i++)
    (void)(b ? b->run(c, coll, s) : run(c, coll, s));
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
  bench_row_t r = {coll->name, impl, s->bytes, s->count, t * 1e6, 0, 0, wrong, 0, 0, 0};
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

static void add_row(const bench_row_t *r) {
  if (n_rows < MAX_ROWS) rows[n_rows++] = *r;
}

/* ---- driver ----------------------------------------------------------------------------- */

static void print_header(const bench_ctx_t *c, const bench_coll_t *coll) {
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
  printf("# %12s %12s %9s %7s %5s %10s %8s %8s %7s", "size", "count", "type", "redop", "root",
         "time(us)", "algbw", "busbw", "#wrong");
  for (int i = 0; i < n_baselines; i++)
    printf(" | %6s %10s %7s %13s %6s", baselines[i]->name, "time(us)", "ratio", "spread", "#wrong");
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
      add_row(&base[i]);
      wrong += base[i].wrong;
    }
    bench_row_t g = timed ? make_row(c, coll, &s, "gmpi", gmpi_time,
                                     checked(c, coll, &s, gmpi_run, NULL) + (gmpi_time < 0))
                          : measure(c, coll, &s, "gmpi", gmpi_run, NULL);
    add_row(&g);
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
  }
  return wrong != 0;
}

static int alloc_buffers(bench_ctx_t *c) {
  size_t cap = c->max_bytes + 64;
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

int bench_plan_impl(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s);
int bench_stream_impl(bench_ctx_t *c, const bench_coll_t *coll, const bench_shape_t *s);

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
    printf("# gmpi-bench: %s | %s | NCCL %s\n# ranks %d, backend %s, dtype %s, op %s, "
           "iters %d, warmup %d, check %d\n",
           g, m, n, c.size, gmpi_backend_name(c.backend), gmpi_dtype_name(c.dtype),
           gmpi_op_name(c.op), c.iters, c.warmup, c.check);
  }
  impl_fn_t impl = c.mode == MODE_PLAN     ? bench_plan_impl
                   : c.mode == MODE_STREAM ? bench_stream_impl
                                           : gmpi_impl;
  int wrong = 0, unwritten = 0;
  for (int i = 0; i < BENCH_COLL_COUNT; i++) {
    if (!coll_selected[i]) continue;
    const bench_coll_t *coll = &bench_colls[i];
    if (coll->has_op && !gmpi_op_valid(c.dtype, c.op)) {
      if (c.rank == 0)
        printf("# %s skipped: op %s is not defined on %s\n", coll->name, gmpi_op_name(c.op),
               gmpi_dtype_name(c.dtype));
      continue;
    }
    wrong |= run_coll(&c, coll, impl);
  }
  if (c.rank == 0) {
    if (json_path) unwritten |= bench_report_json(json_path, &c, rows, n_rows);
    if (svg_path) unwritten |= bench_report_svg(svg_path, &c, rows, n_rows);
    printf("# %s\n", wrong ? "FAILED: some results were wrong" : "all results correct");
  }
  bench_cuda_teardown();
  bench_modes_teardown();
  free_buffers(&c);
  MPI_Comm_free(&c.mpi);
  gmpi_finalize(&c.comm);
  MPI_Finalize();
  return wrong || unwritten ? 1 : 0;
}
