#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Draw gmpi-bench's JSON (-J) as a PNG (or SVG, PDF: by the file's extension): one panel per
collective (and type and op) with gmpi's bus bandwidth against each baseline's, and under it
the ratio gmpi time / baseline time with its spread across rounds (below 1: gmpi faster).
Every row of the JSON is drawn; none is dropped.

  plot.py BENCH.json OUT.png [--title TEXT]

Needs matplotlib (scripts/install-deps puts a pinned one in .venv)."""
import argparse
import json
import math
import sys

COLORS = {"gmpi": "#1f4e9c", "mpi": "#e07b00", "nccl": "#2a9d3a", "staged": "#c0392b",
          "eager": "#8e44ad", "checked": "#7f6000"}
COLUMNS = 4
REDUCING = {"allreduce", "reduce", "reduce_scatter", "reduce_scatterv"}  # old JSON: no row op
HEAD_IN = 1.3  # inches above the panels for the title lines


def size_label(b):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= scale:
            return "%g%s" % (b / scale, unit)
    return "%g" % b


def panels_of(doc):
    """Rows grouped by (collective, dtype, op) in the order they came."""
    order, groups = [], {}
    for r in doc["rows"]:
        op = r["op"] if "op" in r else (doc.get("op") if r["coll"] in REDUCING else None)
        key = (r["coll"], r.get("dtype", doc.get("dtype", "")), op)
        if key not in groups:
            order.append(key)
            groups[key] = []
        groups[key].append(r)
    return [(k, groups[k]) for k in order]


def bandwidth(row, ranks):
    """busbw where ranks exchange data, algbw at one rank; None where not measured."""
    v = row.get("busbw_gbs") if ranks > 1 else row.get("algbw_gbs")
    return v if v else None


def draw(doc, out, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    panels = panels_of(doc)
    if not panels:
        sys.exit("plot.py: the JSON has no rows to draw")
    ranks = doc.get("ranks", 2)
    cols = min(COLUMNS, len(panels))
    lines = math.ceil(len(panels) / cols)
    height = 4.0 * lines + HEAD_IN
    fig = plt.figure(figsize=(4.3 * cols, height))
    grid = fig.add_gridspec(lines, cols, hspace=0.42, wspace=0.3, top=1 - HEAD_IN / height,
                            bottom=0.5 / height, left=0.06, right=0.98)
    impls_seen = []
    for k, ((coll, dtype, op), rows) in enumerate(panels):
        cell = grid[k // cols, k % cols].subgridspec(2, 1, height_ratios=[2.2, 1], hspace=0.08)
        top, bottom = fig.add_subplot(cell[0]), None
        bottom = fig.add_subplot(cell[1], sharex=top)
        sizes = sorted({r["bytes"] for r in rows if r["bytes"] > 0})
        impls = []
        for r in rows:
            if r["impl"] not in impls:
                impls.append(r["impl"])
        impls.sort(key=lambda i: i != "gmpi")  # gmpi first in every legend
        for impl in impls:
            if impl not in impls_seen:
                impls_seen.append(impl)
            pts = [(r["bytes"], bandwidth(r, ranks)) for r in rows if r["impl"] == impl]
            pts = [(x, y) for x, y in pts if x > 0 and y]
            if pts:
                top.plot(*zip(*pts), marker="o", markersize=3, linewidth=1.6,
                         linestyle="-" if impl == "gmpi" else "--",
                         color=COLORS.get(impl, "#555555"), label=impl)
            if impl == "gmpi":
                continue
            rat = [(r["bytes"], r.get("gmpi_over_this"), r.get("ratio_min"), r.get("ratio_max"))
                   for r in rows if r["impl"] == impl and r.get("gmpi_over_this")]
            if rat:
                xs, med, lo, hi = zip(*rat)
                color = COLORS.get(impl, "#555555")
                bottom.plot(xs, med, marker="o", markersize=3, linewidth=1.4, color=color,
                            label="gmpi / " + impl)
                if all(v is not None for v in lo + hi):
                    bottom.fill_between(xs, lo, hi, color=color, alpha=0.18, linewidth=0)
        name = "%s %s%s" % (coll, dtype, " " + op if op else "")
        top.set_title(name, fontsize=11, fontweight="bold")
        top.set_xscale("log", base=2)
        if any(bandwidth(r, ranks) for r in rows):
            top.set_yscale("log")
        top.set_ylabel("%s (GB/s)" % ("busbw" if ranks > 1 else "algbw"), fontsize=9)
        top.grid(True, which="major", alpha=0.3)
        top.legend(fontsize=8, loc="upper left")
        plt.setp(top.get_xticklabels(), visible=False)
        bottom.axhline(1.0, color="#333", linewidth=0.8)
        bottom.set_yscale("log")
        bottom.set_ylabel("gmpi/base\ntime", fontsize=8)
        bottom.grid(True, which="major", alpha=0.3)
        if bottom.has_data():
            lo, hi = bottom.get_ylim()
            bottom.set_ylim(min(lo, 0.8), max(hi, 1.25))
        else:
            bottom.text(0.5, 0.5, "no baseline", ha="center", va="center",
                        transform=bottom.transAxes, fontsize=8, color="#777")
        bottom.yaxis.set_major_formatter(FuncFormatter(lambda v, _: "%g" % v))
        bottom.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        ticks = [s for i, s in enumerate(sizes) if i % max(1, len(sizes) // 5) == 0]
        bottom.xaxis.set_major_locator(FixedLocator(ticks))
        bottom.xaxis.set_minor_locator(NullLocator())
        bottom.xaxis.set_major_formatter(FuncFormatter(lambda v, _: size_label(v)))
        bottom.set_xlabel("size (bytes)", fontsize=9)
        bottom.tick_params(labelsize=8)
        top.tick_params(labelsize=8)
    versions = doc.get("versions", {})
    info = "%d ranks, %s backend" % (ranks, doc.get("backend", "?"))
    if versions:
        info += "; %s, %s, NCCL %s" % (versions.get("gmpi"), versions.get("mpi"), versions.get("nccl"))
    if doc.get("date"):
        info += "; %s on %s" % (doc["date"], doc.get("machine", {}).get("host", "?"))
    fig.suptitle((title + "\n" if title else "") + "gmpi-bench: " + info +
                 "\nupper: bandwidth, higher is better (solid gmpi, dashed baselines); lower: "
                 "gmpi time / baseline time, median and spread of rounds (below 1: gmpi faster)",
                 fontsize=11, y=1 - 0.12 / height, va="top")
    fig.savefig(out, dpi=90)
    print("plot.py: %d panels, %d rows, implementations %s -> %s"
          % (len(panels), len(doc["rows"]), ", ".join(impls_seen), out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json")
    ap.add_argument("out")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        sys.exit("plot.py: needs matplotlib (%s has none): scripts/install-deps makes .venv with "
                 "it; run .venv/bin/python tools/bench/plot.py" % sys.executable)
    with open(a.json) as f:
        doc = json.load(f)
    draw(doc, a.out, a.title)


if __name__ == "__main__":
    main()
