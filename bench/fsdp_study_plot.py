#!/usr/bin/python3
"""The FSDP strategy study's chart (bench/fsdp_study.sh): hand-written SVG, standard library only.

    fsdp_study_plot.py CSV [--title TEXT] [--out FILE.svg]

CSV: the study's table (a header with at least config,strategy,nodes,ranks_per_node,offload,step_s,
engine_gb,rss_gb; other columns are ignored), one row per training run, in the order to draw.  Two
panels, one group of bars per run in that order: the median step time (s), and memory per rank (GB:
the engine's peak and the process's peak RSS, the largest over the ranks).  The bars are drawn by
memory_plot.bar_panel (same axes, ticks and labels as bench/memory_plot.py's chart).
"""
import argparse
import csv
import math
import sys

from memory_plot import bar_panel, legend, svg_open, write_svg

NEED = ("config", "strategy", "nodes", "ranks_per_node", "offload", "step_s", "engine_gb", "rss_gb")
SHORT = {"none": "no FSDP", "FULL_SHARD": "FULL", "SHARD_GRAD_OP": "GRAD_OP", "NO_SHARD": "NO_SHARD",
         "HYBRID_SHARD": "HYBRID", "HYBRID_SHARD_ZERO2": "HYBRID_Z2"}


def read_rows(f):
    rd = csv.DictReader(f)
    if rd.fieldnames is None or not set(NEED) <= set(rd.fieldnames):
        raise ValueError(f"the CSV header must have the columns {list(NEED)}, got {rd.fieldnames}")
    rows = []
    for i, r in enumerate(rd, start=2):
        try:
            row = {k: r[k] for k in NEED}
            for k in ("step_s", "engine_gb", "rss_gb"):
                row[k] = float(r[k])
                if not math.isfinite(row[k]) or row[k] < 0:
                    raise ValueError
            row["nodes"], row["ranks_per_node"] = int(r["nodes"]), int(r["ranks_per_node"])
        except (TypeError, ValueError):
            raise ValueError(f"line {i}: cannot read {r}")
        rows.append(row)
    if not rows:
        raise ValueError("no data rows")
    if len({r["config"] for r in rows}) != len(rows):
        raise ValueError("a config is given twice")
    return rows


def lines(r):
    """a run's label under its bars: the strategy, then ranks (nodes x per node) and offload"""
    n = r["nodes"] * r["ranks_per_node"]
    ranks = f"{r['nodes']}x{r['ranks_per_node']}" if r["nodes"] > 1 else str(n)
    return [SHORT.get(r["strategy"], r["strategy"]), ranks + (" +offl" if r["offload"] == "on" else "")]


def svg_chart(rows, title):
    ml, mr, mt = 80, 190, 50
    pw = max(560, 80 * len(rows))
    ph, gap = 230, 110  # each panel's height; the space under the upper panel for its labels
    W, H = ml + pw + mr, mt + 2 * ph + gap + 75
    by = {r["config"]: r for r in rows}
    groups = [r["config"] for r in rows]
    o = svg_open(W, H, title, ml + pw / 2)
    label = lambda c: lines(by[c])
    xlabel = "configuration (strategy; ranks: N on one node, or nodes x per node; +offl: CPU offload)"
    step = ["median step time (s)"]
    bar_panel(o, (ml, mt, pw, ph), groups, step, lambda c, s: by[c]["step_s"], "step time (s)", xlabel, label,
              unit="s")
    legend(o, ml + pw + 20, mt, step)
    mem = ["engine peak per rank", "peak RSS per rank"]
    top2 = mt + ph + gap
    bar_panel(o, (ml, top2, pw, ph), groups, mem,
              lambda c, s: by[c]["engine_gb" if s == mem[0] else "rss_gb"], "memory per rank (GB)", xlabel, label)
    legend(o, ml + pw + 20, top2, mem)
    o.append("</svg>")
    return "\n".join(o) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--title", default="FSDP strategy study: step time and memory per rank")
    ap.add_argument("--out", default="-")
    a = ap.parse_args(argv)
    try:
        with open(a.csv, newline="") as f:
            rows = read_rows(f)
    except (OSError, ValueError) as e:
        print(f"fsdp_study_plot.py: {e}", file=sys.stderr)
        return 1
    write_svg(svg_chart(rows, a.title), a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
