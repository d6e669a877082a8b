#!/usr/bin/python3
"""Grouped bar chart (hand-written SVG, standard library only) of peak memory per FSDP strategy.

    memory_plot.py [CSV] [--title TEXT] [--out FILE.svg]

CSV (a file, or stdin when absent or "-") has a header with at least the columns
strategy,world_size,peak_mem_gb (in any order; other columns are ignored).  One group of bars per
world size (ascending: 1, 2, 4, ...), one bar per strategy in the order NO_SHARD, SHARD_GRAD_OP,
FULL_SHARD (then any other strategy in order of appearance), each labelled with its value; a legend,
a y axis in GB with ticks, and the title.  A missing (strategy, world size) pair leaves a gap; a
pair given twice is an error.  The SVG goes to --out or stdout.

As a module: bar_panel (one grouped bar chart in a box of a larger SVG), legend and svg_open, which
bench/fsdp_study_plot.py draws its panels with.
"""
import argparse
import csv
import math
import os
import sys
from xml.sax.saxutils import escape

ORDER = ["NO_SHARD", "SHARD_GRAD_OP", "FULL_SHARD"]
COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1"]


def read_rows(f):
    rd = csv.DictReader(f)
    need = {"strategy", "world_size", "peak_mem_gb"}
    if rd.fieldnames is None or not need <= {h.strip() for h in rd.fieldnames}:
        raise ValueError(f"the CSV header must have the columns {sorted(need)}, got {rd.fieldnames}")
    data = {}
    for i, row in enumerate(rd, start=2):
        row = {k.strip(): (v or "").strip() for k, v in row.items() if k is not None}
        if not any(row.values()):
            continue
        try:
            key = (row["strategy"], int(row["world_size"]))
            val = float(row["peak_mem_gb"])
        except ValueError:
            raise ValueError(f"line {i}: cannot read {row}")
        if not key[0] or not math.isfinite(val) or val < 0:
            raise ValueError(f"line {i}: bad values {row}")
        if key in data:
            raise ValueError(f"line {i}: {key[0]} at world size {key[1]} given twice")
        data[key] = val
    if not data:
        raise ValueError("no data rows")
    return data


def nice_step(vmax, nticks=5):
    """a 1/2/2.5/5 x 10^k tick step giving about nticks ticks up to vmax"""
    raw = vmax / nticks
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def fmt(v):
    return f"{v:.3g}" if v < 10 else f"{v:.1f}" if v < 100 else f"{v:.0f}"


def bar_panel(o, box, groups, series, value, ylabel, xlabel, group_lines, group_title=None, unit="GB"):
    """Appends to o (a list of SVG elements) one grouped bar chart inside box = (left, top, width,
    height): a group of bars per item of groups (labelled by group_lines(g): one or more lines), a
    bar per item of series in the order given, value(g, s) its height (None: a gap), each bar
    labelled with its value, its tooltip "series, group_title(g): value unit"; grid, ticks and labels
    of the y axis (ylabel) and xlabel below."""
    ml, mt, pw, ph = box
    vals = [v for g in groups for s in series for v in (value(g, s),) if v is not None]
    vmax = max(vals) if vals else 0
    step = nice_step(vmax) if vmax > 0 else 1.0
    top = step * math.ceil(vmax / step * 1.08) if vmax > 0 else step  # room for the value labels
    ticks = [i * step for i in range(int(round(top / step)) + 1)]
    gw = pw / len(groups)
    bw = gw * 0.8 / len(series)
    y = lambda v: mt + ph - v / top * ph
    for t in ticks:  # grid, ticks and labels of the y axis
        yy = y(t)
        o.append(f'<line x1="{ml}" y1="{yy:.1f}" x2="{ml + pw}" y2="{yy:.1f}" stroke="#ddd"/>')
        o.append(f'<line x1="{ml - 5}" y1="{yy:.1f}" x2="{ml}" y2="{yy:.1f}" stroke="black"/>')
        o.append(f'<text x="{ml - 8}" y="{yy + 4:.1f}" text-anchor="end">{t:g}</text>')
    o.append(f'<text transform="translate({ml - 50} {mt + ph / 2:.1f}) rotate(-90)" text-anchor="middle">'
             f'{escape(ylabel)}</text>')
    for gi, g in enumerate(groups):
        x0 = ml + gi * gw + gw * 0.1
        lines = group_lines(g)
        name = group_title(g) if group_title else " ".join(lines)
        for si, s in enumerate(series):
            v = value(g, s)
            if v is None:
                continue
            x = x0 + si * bw
            o.append(f'<rect x="{x:.1f}" y="{y(v):.1f}" width="{bw * 0.92:.1f}" height="{mt + ph - y(v):.1f}" '
                     f'fill="{COLORS[si % len(COLORS)]}"><title>{escape(s)}, {escape(name)}: '
                     f'{v:g} {unit}</title></rect>')
            o.append(f'<text x="{x + bw * 0.46:.1f}" y="{y(v) - 4:.1f}" text-anchor="middle" '
                     f'font-size="11">{fmt(v)}</text>')
        for li, line in enumerate(lines):
            o.append(f'<text x="{ml + gi * gw + gw / 2:.1f}" y="{mt + ph + 20 + 14 * li}" '
                     f'text-anchor="middle">{escape(line)}</text>')
    o.append(f'<text x="{ml + pw / 2:.1f}" y="{mt + ph + 45 + 14 * (max(len(group_lines(g)) for g in groups) - 1)}" '
             f'text-anchor="middle">{escape(xlabel)}</text>')
    o.append(f'<line x1="{ml}" y1="{mt}" x2="{ml}" y2="{mt + ph}" stroke="black"/>')
    o.append(f'<line x1="{ml}" y1="{mt + ph}" x2="{ml + pw}" y2="{mt + ph}" stroke="black"/>')


def legend(o, x, y, series):
    """Appends a legend (a coloured square and the name of each series, top to bottom) at x, y."""
    for si, s in enumerate(series):
        ly = y + 10 + si * 22
        o.append(f'<rect x="{x}" y="{ly}" width="14" height="14" fill="{COLORS[si % len(COLORS)]}"/>')
        o.append(f'<text x="{x + 20}" y="{ly + 11}">{escape(s)}</text>')


def svg_open(W, H, title, title_x):
    """The SVG's opening elements: its size, a white background and the title centred on title_x."""
    return [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
            f'font-family="sans-serif" font-size="12">',
            f'<rect x="0" y="0" width="{W}" height="{H}" fill="white"/>',
            f'<text x="{title_x:.1f}" y="28" text-anchor="middle" font-size="16" '
            f'font-weight="bold">{escape(title)}</text>']


def svg_chart(data, title):
    strategies = [s for s in ORDER if any(k[0] == s for k in data)]
    for s, _ in data:  # any other strategy, in order of appearance
        if s not in strategies:
            strategies.append(s)
    sizes = sorted({w for _, w in data})
    W, H = 760, 440
    ml, mr, mt, mb = 70, 180, 50, 60  # margins; the legend sits in the right one
    pw, ph = W - ml - mr, H - mt - mb
    o = svg_open(W, H, title, ml + pw / 2)
    bar_panel(o, (ml, mt, pw, ph), sizes, strategies, lambda w, s: data.get((s, w)), "peak memory (GB)",
              "world size (ranks)", lambda w: [str(w)],
              lambda w: f"world size {w}")
    legend(o, ml + pw + 20, mt, strategies)
    o.append("</svg>")
    return "\n".join(o) + "\n"


def write_svg(svg, out):
    """svg to stdout (out "-") or to out, written whole to out.tmp and renamed: no half chart"""
    if out == "-":
        sys.stdout.write(svg)
        return
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(svg)
    os.replace(tmp, out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="?", default="-")
    ap.add_argument("--title", default="Peak memory per rank by FSDP strategy")
    ap.add_argument("--out", default="-")
    a = ap.parse_args(argv)
    try:
        if a.csv == "-":
            data = read_rows(sys.stdin)
        else:
            with open(a.csv, newline="") as f:
                data = read_rows(f)
    except (OSError, ValueError) as e:
        print(f"memory_plot.py: {e}", file=sys.stderr)
        return 1
    write_svg(svg_chart(data, a.title), a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
