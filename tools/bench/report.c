/* SPDX-License-Identifier: BSD-3-Clause */
/* Reports: every row as JSON (with what the run was: versions, date, machine, iterations),
 * and an SVG with one panel per collective (and type and op), bus bandwidth against size on log
 * axes, one line per implementation -- every row drawn, none dropped. */
#include <errno.h>
#include <gmpi_version.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bench.h"

int bench_report_open(bench_report_t *r) {
  r->f = fopen(r->path, "w");
  if (!r->f) fprintf(stderr, "gmpi-bench: cannot write %s: %s\n", r->path, strerror(errno));
  return !r->f;
}

/* Close a report; a failed write (full disk) is an error too. */
static int close_report(bench_report_t *r) {
  int failed = ferror(r->f) | (fclose(r->f) != 0);
  r->f = NULL;
  if (failed) fprintf(stderr, "gmpi-bench: writing %s failed: %s\n", r->path, strerror(errno));
  return failed;
}

/* A JSON string: the characters JSON requires escaped, escaped. */
static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch < 0x20)
      fprintf(f, "\\u%04x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

/* A number, or null where the figure does not apply (not measured, failed, no bus traffic). */
static void json_number(FILE *f, const char *key, double v, int applies, const char *fmt) {
  fprintf(f, ", \"%s\": ", key);
  if (applies)
    fprintf(f, fmt, v);
  else
    fputs("null", f);
}

static const char *mode_name(bench_mode_t m) {
  return m == MODE_STREAM ? "stream" : m == MODE_PLAN ? "plan" : "eager";
}

int bench_report_json(bench_report_t *r, const bench_ctx_t *c, const bench_run_info_t *info,
                      const bench_row_t *rows, int n) {
  static const char *const average_name[] = {"rank0", "mean", "min", "max"};
  FILE *f = r->f;
  const char *g, *m, *nc;
  gmpi_versions(&g, &m, &nc);
  struct utsname u;
  char host[256] = "";
  if (uname(&u) != 0) memset(&u, 0, sizeof(u));
  gethostname(host, sizeof(host) - 1);
  fprintf(f, "{\"tool\": \"gmpi-bench\", \"gmpi_version\": \"%s\", \"versions\": {\"gmpi\": ",
          GMPI_VERSION_STRING);
  json_string(f, g);
  fputs(", \"mpi\": ", f);
  json_string(f, m);
  fputs(", \"nccl\": ", f);
  json_string(f, nc);
  fputs("},\n \"date\": ", f);
  json_string(f, info->started_utc);
  fprintf(f, ", \"seconds\": %.1f, \"machine\": {\"host\": ", info->seconds);
  json_string(f, host);
  fputs(", \"os\": ", f);
  json_string(f, u.sysname);
  fputs(", \"release\": ", f);
  json_string(f, u.release);
  fputs(", \"arch\": ", f);
  json_string(f, u.machine);
  fprintf(f, ", \"cpus\": %ld},\n", sysconf(_SC_NPROCESSORS_ONLN));
  fprintf(f,
          " \"ranks\": %d, \"backend\": \"%s\", \"mode\": \"%s\", \"nonblocking\": %s, "
          "\"iters\": %d, \"warmup_iters\": %d, \"rounds\": %d, \"check\": %d, "
          "\"average\": \"%s\", \"plan_ops\": ",
          c->size, gmpi_backend_name(c->backend), mode_name(c->mode),
          c->nonblocking ? "true" : "false", c->iters, c->warmup, c->rounds, c->check,
          average_name[c->average]);
  if (c->mode == MODE_PLAN)
    fprintf(f, "%d", c->plan_ops);
  else
    fputs("null", f);
  fputs(",\n \"ratio\": \"gmpi time / this row's time, median of the rounds; null on gmpi's own "
        "rows\",\n \"rows\": [\n",
        f);
  for (int i = 0; i < n; i++) {
    const bench_row_t *w = &rows[i];
    int timed = w->time_us > 0, baseline = strcmp(w->impl, "gmpi") != 0 && w->ratio > 0;
    fprintf(f, "  {\"coll\": \"%s\", \"impl\": \"%s\", \"dtype\": \"%s\", \"op\": ", w->coll,
            w->impl, gmpi_dtype_name(w->dtype));
    if (w->has_op)
      fprintf(f, "\"%s\"", gmpi_op_name(w->op));
    else
      fputs("null", f);
    fprintf(f, ", \"bytes\": %zu, \"count\": %zu", w->bytes, w->count);
    json_number(f, "time_us", w->time_us, timed, "%.6g");
    json_number(f, "algbw_gbs", w->algbw, timed, "%.6g");
    json_number(f, "busbw_gbs", w->busbw, timed && c->size > 1, "%.6g");
    fprintf(f, ", \"wrong\": %ld", w->wrong);
    json_number(f, "gmpi_over_this", w->ratio, baseline, "%.4f");
    json_number(f, "ratio_min", w->ratio_min, baseline, "%.4f");
    json_number(f, "ratio_max", w->ratio_max, baseline, "%.4f");
    fprintf(f, "}%s\n", i + 1 < n ? "," : "");
  }
  fprintf(f, "]}\n");
  return close_report(r);
}

/* ---- SVG ---------------------------------------------------------------------------------- */

#define PANEL_W 440
#define PANEL_H 300
#define MARGIN  62
#define COLUMNS 3

/* One panel: the rows of one collective, type and op; a line per implementation. */
typedef struct {
  const char *coll;
  gmpi_dtype_t dtype;
  gmpi_op_t op;
  int has_op;
} panel_t;

typedef struct {
  double x0, x1, y0, y1; /* log10 ranges */
  int left, top;         /* panel's corner */
} axes_t;

/* A colour per implementation, the same in every panel. */
static const char *impl_color(const char *impl) {
  static const char *const names[] = {"gmpi", "mpi", "nccl", "staged", "eager", "checked"};
  static const char *const colors[] = {"#1f4e9c", "#e07b00", "#2a9d3a",
                                       "#c0392b", "#8e44ad", "#7f6000"};
  for (int i = 0; i < 6; i++)
    if (!strcmp(impl, names[i])) return colors[i];
  return "#555555";
}

static double px(const axes_t *a, double bytes) {
  return a->left + MARGIN + (log10(bytes) - a->x0) / (a->x1 - a->x0) * (PANEL_W - MARGIN - 16);
}
static double py(const axes_t *a, double v) {
  return a->top + 34 + (1 - (log10(v) - a->y0) / (a->y1 - a->y0)) * (PANEL_H - 80);
}

static int same_panel(const panel_t *p, const bench_row_t *r) {
  return !strcmp(p->coll, r->coll) && p->dtype == r->dtype && (!p->has_op || p->op == r->op);
}

/* The panels in the order their first rows came; *n of them. NULL when out of memory. */
static panel_t *find_panels(const bench_row_t *rows, int n, int *np) {
  panel_t *p = calloc((size_t)(n ? n : 1), sizeof(*p));
  *np = 0;
  for (int i = 0; p && i < n; i++) {
    int k = 0;
    while (k < *np && !same_panel(&p[k], &rows[i]))
      k++;
    if (k == *np) p[(*np)++] = (panel_t){rows[i].coll, rows[i].dtype, rows[i].op, rows[i].has_op};
  }
  return p;
}

/* busbw where ranks exchange data; algbw at one rank (busbw's factor is 0 there). */
static double row_value(const bench_row_t *r, int busbw) { return busbw ? r->busbw : r->algbw; }

static void draw_axes(FILE *f, const axes_t *a, const char *title) {
  int x = a->left + MARGIN, w = PANEL_W - MARGIN - 16, y = a->top + 34, h = PANEL_H - 80;
  fprintf(f, "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#333'/>\n", x, y, w,
          h);
  for (int e = (int)ceil(a->y0); e <= (int)floor(a->y1); e++) {
    double yy = py(a, pow(10, e));
    fprintf(f,
            "<line x1='%d' x2='%d' y1='%.1f' y2='%.1f' stroke='#ddd'/>"
            "<text x='%d' y='%.1f' font-size='10' text-anchor='end'>%g</text>\n",
            x, x + w, yy, yy, x - 4, yy + 4, pow(10, e));
  }
  for (int e = (int)ceil(a->x0 / log10(4)); e * log10(4) <= a->x1; e++) {
    double b = pow(4, e), xx = px(a, b);
    const char *unit = b >= 1 << 30 ? "G" : b >= 1 << 20 ? "M" : b >= 1 << 10 ? "K" : "";
    double shown = b >= 1 << 30   ? b / (1 << 30)
                   : b >= 1 << 20 ? b / (1 << 20)
                   : b >= 1 << 10 ? b / 1024
                                  : b;
    fprintf(f,
            "<line x1='%.1f' x2='%.1f' y1='%d' y2='%d' stroke='#eee'/>"
            "<text x='%.1f' y='%d' font-size='10' text-anchor='middle'>%g%s</text>\n",
            xx, xx, y, y + h, xx, y + h + 14, shown, unit);
  }
  fprintf(f, "<text x='%d' y='%d' font-size='11' text-anchor='middle'>size (bytes)</text>\n",
          x + w / 2, y + h + 30);
  fprintf(f, "<text x='%d' y='%d' font-size='13' font-weight='bold'>%s</text>\n", x, a->top + 22,
          title);
}

static void draw_panel(FILE *f, const bench_row_t *rows, int n, const panel_t *p, int busbw,
                       int left, int top) {
  axes_t a = {1e300, -1e300, 1e300, -1e300, left, top};
  const char *impls[16];
  int ni = 0;
  for (int i = 0; i < n; i++) {
    double v = row_value(&rows[i], busbw);
    if (!same_panel(p, &rows[i])) continue;
    int k = 0;
    while (k < ni && strcmp(impls[k], rows[i].impl))
      k++;
    if (k == ni && ni < 16) impls[ni++] = rows[i].impl;
    if (v <= 0 || rows[i].bytes == 0) continue;
    a.x0 = fmin(a.x0, log10((double)rows[i].bytes));
    a.x1 = fmax(a.x1, log10((double)rows[i].bytes));
    a.y0 = fmin(a.y0, log10(v));
    a.y1 = fmax(a.y1, log10(v));
  }
  char title[160];
  snprintf(title, sizeof(title), "%s %s%s%s: %s (GB/s)", p->coll, gmpi_dtype_name(p->dtype),
           p->has_op ? " " : "", p->has_op ? gmpi_op_name(p->op) : "", busbw ? "busbw" : "algbw");
  if (a.x0 > a.x1) { /* nothing timed: say so rather than leave a blank */
    a = (axes_t){0, 1, 0, 1, left, top};
    draw_axes(f, &a, title);
    fprintf(f, "<text x='%d' y='%d' font-size='12'>no timed rows</text>\n", left + 100, top + 120);
    return;
  }
  a.x0 -= 0.1, a.x1 += 0.1, a.y0 = floor(a.y0 - 0.05), a.y1 = ceil(a.y1 + 0.05);
  draw_axes(f, &a, title);
  for (int k = 0; k < ni; k++) {
    const char *dash = strcmp(impls[k], "gmpi") ? " stroke-dasharray='6,3'" : "";
    fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='2'%s points='",
            impl_color(impls[k]), dash);
    for (int i = 0; i < n; i++) {
      double v = row_value(&rows[i], busbw);
      if (!same_panel(p, &rows[i]) || strcmp(rows[i].impl, impls[k]) || v <= 0) continue;
      fprintf(f, "%.1f,%.1f ", px(&a, (double)rows[i].bytes), py(&a, v));
    }
    fprintf(f, "'/>\n");
    int ly = top + 46 + 15 * k, lx = left + MARGIN + 8;
    fprintf(f,
            "<line x1='%d' x2='%d' y1='%d' y2='%d' stroke='%s' stroke-width='2'%s/>"
            "<text x='%d' y='%d' font-size='11'>%s</text>\n",
            lx, lx + 22, ly, ly, impl_color(impls[k]), dash, lx + 26, ly + 4, impls[k]);
  }
}

int bench_report_svg(bench_report_t *r, const bench_ctx_t *c, const bench_row_t *rows, int n) {
  FILE *f = r->f;
  int np = 0;
  panel_t *panels = find_panels(rows, n, &np);
  if (!panels) {
    fprintf(stderr, "gmpi-bench: no memory for the plot's panels\n");
    fclose(f);
    r->f = NULL;
    return 1;
  }
  int cols = np < COLUMNS ? (np ? np : 1) : COLUMNS, lines = (np + cols - 1) / cols;
  fprintf(f,
          "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' "
          "font-family='sans-serif'>\n<rect width='100%%' height='100%%' fill='white'/>\n",
          cols * PANEL_W, (lines ? lines : 1) * PANEL_H + 30);
  int busbw = c->size > 1;
  for (int k = 0; k < np; k++)
    draw_panel(f, rows, n, &panels[k], busbw, (k % cols) * PANEL_W, 30 + (k / cols) * PANEL_H);
  fprintf(f,
          "<text x='10' y='20' font-size='13' fill='#333'>gmpi-bench %s: %d ranks, %s backend; "
          "solid gmpi, dashed baselines; higher is better</text>\n</svg>\n",
          GMPI_VERSION_STRING, c->size, gmpi_backend_name(c->backend));
  free(panels);
  return close_report(r);
}
