/* SPDX-License-Identifier: BSD-3-Clause */
/* Reports: every row as JSON, and an SVG with busbw and time against size on log axes, one
 * labelled line per (collective, implementation). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

/* Open path for writing; NULL after saying why (the caller then exits non-zero). */
static FILE *open_report(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) fprintf(stderr, "gmpi-bench: cannot write %s: %s\n", path, strerror(errno));
  return f;
}

/* Close a report; a failed write (full disk) is an error too. */
static int close_report(FILE *f, const char *path) {
  int failed = ferror(f) | (fclose(f) != 0);
  if (failed) fprintf(stderr, "gmpi-bench: writing %s failed: %s\n", path, strerror(errno));
  return failed;
}

int bench_report_json(const char *path, const bench_ctx_t *c, const bench_row_t *rows, int n) {
  FILE *f = open_report(path);
  if (!f) return 1;
  fprintf(f,
          "{\"ranks\": %d, \"backend\": \"%s\", \"dtype\": \"%s\", \"op\": \"%s\", \"rows\": [\n",
          c->size, gmpi_backend_name(c->backend), gmpi_dtype_name(c->dtype), gmpi_op_name(c->op));
  for (int i = 0; i < n; i++)
    fprintf(f,
            "  {\"coll\": \"%s\", \"impl\": \"%s\", \"bytes\": %zu, \"count\": %zu, "
            "\"time_us\": %.3f, \"algbw_gbs\": %.4f, \"busbw_gbs\": %.4f, \"wrong\": %ld, "
            "\"gmpi_over_this\": %.4f, \"ratio_min\": %.4f, \"ratio_max\": %.4f}%s\n",
            rows[i].coll, rows[i].impl, rows[i].bytes, rows[i].count, rows[i].time_us,
            rows[i].algbw, rows[i].busbw, rows[i].wrong, rows[i].ratio, rows[i].ratio_min,
            rows[i].ratio_max, i + 1 < n ? "," : "");
  fprintf(f, "]}\n");
  return close_report(f, path);
}

/* ---- SVG ---------------------------------------------------------------------------------- */

#define PANEL_W    520
#define PANEL_H    360
#define MARGIN     70
#define MAX_SERIES 32

typedef struct {
  const char *coll, *impl;
} series_t;

typedef struct {
  double x0, x1, y0, y1; /* log10 ranges */
  int left;              /* panel's left edge */
} axes_t;

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                      "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

static double px(const axes_t *a, double bytes) {
  return a->left + MARGIN + (log10(bytes) - a->x0) / (a->x1 - a->x0) * (PANEL_W - MARGIN - 20);
}
static double py(const axes_t *a, double v) {
  return 40 + (1 - (log10(v) - a->y0) / (a->y1 - a->y0)) * (PANEL_H - 80);
}

static int find_series(series_t *s, int *n, const bench_row_t *r) {
  for (int i = 0; i < *n; i++)
    if (!strcmp(s[i].coll, r->coll) && !strcmp(s[i].impl, r->impl)) return i;
  if (*n == MAX_SERIES) return -1;
  s[*n] = (series_t){r->coll, r->impl};
  return (*n)++;
}

/* Panel quantities: 0 time, 1 busbw, 2 algbw (busbw is 0 at one rank: nothing crosses ranks). */
static double row_value(const bench_row_t *r, int what) {
  return what == 1 ? r->busbw : what == 2 ? r->algbw : r->time_us;
}

static void draw_axes(FILE *f, const axes_t *a, const char *ylabel) {
  int x = a->left + MARGIN, w = PANEL_W - MARGIN - 20;
  fprintf(f, "<rect x='%d' y='40' width='%d' height='%d' fill='none' stroke='#333'/>\n", x, w,
          PANEL_H - 80);
  for (int e = (int)ceil(a->y0); e <= (int)floor(a->y1); e++) {
    double y = py(a, pow(10, e));
    fprintf(f,
            "<line x1='%d' x2='%d' y1='%.1f' y2='%.1f' stroke='#ddd'/>"
            "<text x='%d' y='%.1f' font-size='11' text-anchor='end'>1e%d</text>\n",
            x, x + w, y, y, x - 4, y + 4, e);
  }
  for (int e = (int)ceil(a->x0 / log10(4)); e * log10(4) <= a->x1; e++) {
    double b = pow(4, e), xx = px(a, b);
    const char *unit = b >= 1 << 30 ? "G" : b >= 1 << 20 ? "M" : b >= 1 << 10 ? "K" : "";
    double shown = b >= 1 << 30   ? b / (1 << 30)
                   : b >= 1 << 20 ? b / (1 << 20)
                   : b >= 1 << 10 ? b / 1024
                                  : b;
    fprintf(f,
            "<line x1='%.1f' x2='%.1f' y1='40' y2='%d' stroke='#eee'/>"
            "<text x='%.1f' y='%d' font-size='11' text-anchor='middle'>%g%s</text>\n",
            xx, xx, PANEL_H - 40, xx, PANEL_H - 24, shown, unit);
  }
  fprintf(f,
          "<text x='%d' y='%d' font-size='12' text-anchor='middle'>message size (bytes)</text>\n",
          x + w / 2, PANEL_H - 6);
  fprintf(f, "<text x='%d' y='24' font-size='13' font-weight='bold'>%s</text>\n", x, ylabel);
}

static void draw_panel(FILE *f, const bench_row_t *rows, int n, series_t *s, int ns, int what,
                       int left) {
  axes_t a = {1e300, -1e300, 1e300, -1e300, left};
  for (int i = 0; i < n; i++) {
    double v = row_value(&rows[i], what);
    if (v <= 0 || rows[i].bytes == 0) continue;
    a.x0 = fmin(a.x0, log10((double)rows[i].bytes));
    a.x1 = fmax(a.x1, log10((double)rows[i].bytes));
    a.y0 = fmin(a.y0, log10(v));
    a.y1 = fmax(a.y1, log10(v));
  }
  if (a.x0 > a.x1) return;
  a.x0 -= 0.1, a.x1 += 0.1, a.y0 = floor(a.y0 - 0.05), a.y1 = ceil(a.y1 + 0.05);
  static const char *const title[] = {"time per op (us), lower is better",
                                      "bus bandwidth (GB/s), higher is better",
                                      "algorithm bandwidth (GB/s; busbw is 0 at 1 rank)"};
  draw_axes(f, &a, title[what]);
  for (int k = 0; k < ns; k++) {
    const char *color = palette[k % 10];
    const char *dash = strcmp(s[k].impl, "gmpi") ? " stroke-dasharray='6,3'" : "";
    fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='2'%s points='", color, dash);
    for (int i = 0; i < n; i++) {
      double v = row_value(&rows[i], what);
      if (strcmp(rows[i].coll, s[k].coll) || strcmp(rows[i].impl, s[k].impl) || v <= 0) continue;
      fprintf(f, "%.1f,%.1f ", px(&a, (double)rows[i].bytes), py(&a, v));
    }
    fprintf(f, "'/>\n");
  }
}

int bench_report_svg(const char *path, const bench_ctx_t *c, const bench_row_t *rows, int n) {
  FILE *f = open_report(path);
  if (!f) return 1;
  series_t s[MAX_SERIES];
  int ns = 0;
  for (int i = 0; i < n; i++)
    find_series(s, &ns, &rows[i]);
  int legend_h = 20 * ns + 20;
  fprintf(f,
          "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' "
          "font-family='sans-serif'>\n<rect width='100%%' height='100%%' fill='white'/>\n",
          2 * PANEL_W, PANEL_H + legend_h + 20);
  int any_busbw = 0;
  for (int i = 0; i < n; i++)
    any_busbw |= rows[i].busbw > 0;
  draw_panel(f, rows, n, s, ns, any_busbw ? 1 : 2, 0);
  draw_panel(f, rows, n, s, ns, 0, PANEL_W);
  for (int k = 0; k < ns; k++) {
    int y = PANEL_H + 20 + 20 * k;
    fprintf(f,
            "<line x1='%d' x2='%d' y1='%d' y2='%d' stroke='%s' stroke-width='2'%s/>"
            "<text x='%d' y='%d' font-size='12'>%s: %s</text>\n",
            MARGIN, MARGIN + 30, y, y, palette[k % 10],
            strcmp(s[k].impl, "gmpi") ? " stroke-dasharray='6,3'" : "", MARGIN + 36, y + 4,
            s[k].coll, s[k].impl);
  }
  fprintf(f,
          "<text x='%d' y='%d' font-size='12' fill='#555'>gmpi-bench, %d ranks, %s backend, "
          "%s %s</text>\n</svg>\n",
          MARGIN + 300, PANEL_H + 24, c->size, gmpi_backend_name(c->backend),
          gmpi_dtype_name(c->dtype), gmpi_op_name(c->op));
  return close_report(f, path);
}
