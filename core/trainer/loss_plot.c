/* The loss plot (see loss_plot.h). */
#define _GNU_SOURCE
#include "trainer/loss_plot.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/out_file.h"
#include "base/strbuf.h"

enum { W = 900, H = 520, X0 = 80, X1 = 640, Y0 = 60, Y1 = 460 }; /* the chart and its plot area */

static const char *const COLORS[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                     "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};
#define NCOLORS ((int)(sizeof COLORS / sizeof *COLORS))

static void xml_text(sr__buf *b, const char *s) {
    for (; *s; s++) {
        if (*s == '&') sr__buf_printf(b, "&amp;");
        else if (*s == '<') sr__buf_printf(b, "&lt;");
        else if (*s == '>') sr__buf_printf(b, "&gt;");
        else if (*s == '"') sr__buf_printf(b, "&quot;");
        else sr__buf_add(b, s, 1);
    }
}

/* A tick spacing of 1, 2 or 5 x 10^k giving about `want` ticks over `range`. */
static double nice_step(double range, int want) {
    double raw = range / want, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

/* Whether entry e has a finite `key` and a step: its point. */
static int point(const sr__hist_entry *e, const char *key, double *x, double *y) {
    *x = sr__hist_get(e, "step"), *y = sr__hist_get(e, key);
    return isfinite(*x) && isfinite(*y);
}

static void polyline(sr__buf *b, const sr__plot_run *r, const char *key, const char *cls, const char *color,
                     const char *dash) {
    const sr__history *h = r->h;
    int any = 0;
    for (int i = 0; i < h->n; i++) {
        double x, y;
        if (!point(&h->e[i], key, &x, &y)) continue;
        if (!any) {
            sr__buf_printf(b, "    <polyline class=\"%s\" data-run=\"", cls);
            xml_text(b, r->name);
            sr__buf_printf(b,
                           "\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s vector-effect=\"non-scaling-stroke\" "
                           "points=\"",
                           color, dash);
        }
        char xs[48], ys[48];
        sr__hist_number(xs, sizeof xs, sr__hist_key("step"), x);
        sr__hist_number(ys, sizeof ys, sr__hist_key(key), y);
        sr__buf_printf(b, "%s%s,%s", any++ ? " " : "", xs, ys);
    }
    if (any) sr__buf_printf(b, "\"/>\n");
}

int sr__loss_svg_write(const char *path, const sr__plot_run *runs, int n, char *why, size_t len) {
    double xmin = 0, xmax = 1, ymin = INFINITY, ymax = -INFINITY;
    for (int r = 0; r < n; r++)
        for (int i = 0; i < runs[r].h->n; i++) {
            static const char *const keys[] = {"loss", "eval_loss"};
            for (int k = 0; k < 2; k++) {
                double x, y;
                if (!point(&runs[r].h->e[i], keys[k], &x, &y)) continue;
                if (x > xmax) xmax = x;
                if (y < ymin) ymin = y;
                if (y > ymax) ymax = y;
            }
        }
    if (!(ymin <= ymax)) ymin = 0, ymax = 1; /* nothing logged yet */
    double pad = (ymax - ymin) * 0.05;
    if (pad <= 0) pad = fabs(ymax) > 0 ? fabs(ymax) * 0.1 : 0.5;
    ymin -= pad, ymax += pad;
    double sx = (X1 - X0) / (xmax - xmin), sy = (Y1 - Y0) / (ymax - ymin);

    sr__buf b = {0};
    sr__buf_printf(&b,
                   "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                   "font-family=\"sans-serif\" font-size=\"13\">\n"
                   "  <rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n"
                   "  <text x=\"%d\" y=\"30\" font-size=\"17\">Loss against step%s</text>\n",
                   W, H, W, H, W, H, X0, n > 1 ? " (several runs)" : "");
    /* ticks and grid */
    double ys = nice_step(ymax - ymin, 6), xs = nice_step(xmax - xmin, 8);
    for (double v = ceil(ymin / ys) * ys; v <= ymax; v += ys) {
        double py = Y1 - (v - ymin) * sy;
        sr__buf_printf(&b,
                       "  <line x1=\"%d\" x2=\"%d\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"#e0e0e0\"/>"
                       "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\">%g</text>\n",
                       X0, X1, py, py, X0 - 6, py + 4, fabs(v) < ys * 1e-9 ? 0 : v);
    }
    for (double v = ceil(xmin / xs) * xs; v <= xmax; v += xs) {
        double px = X0 + (v - xmin) * sx;
        sr__buf_printf(&b,
                       "  <line x1=\"%.2f\" x2=\"%.2f\" y1=\"%d\" y2=\"%d\" stroke=\"#e0e0e0\"/>"
                       "<text x=\"%.2f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
                       px, px, Y0, Y1, px, Y1 + 18, v);
    }
    sr__buf_printf(&b,
                   "  <rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n"
                   "  <text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n"
                   "  <text x=\"20\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 20 %d)\">loss</text>\n",
                   X0, Y0, X1 - X0, Y1 - Y0, (X0 + X1) / 2, Y1 + 40, (Y0 + Y1) / 2, (Y0 + Y1) / 2);
    /* the curves, in data coordinates: x = step, y = loss */
    sr__buf_printf(&b, "  <g class=\"data\" transform=\"matrix(%.9g 0 0 %.9g %.9g %.9g)\">\n", sx, -sy, X0 - xmin * sx,
                   Y1 + ymin * sy);
    for (int r = 0; r < n; r++) {
        const char *c = COLORS[r % NCOLORS];
        polyline(&b, &runs[r], "loss", "train", c, "");
        polyline(&b, &runs[r], "eval_loss", "eval", c, " stroke-dasharray=\"7 4\"");
    }
    sr__buf_printf(&b, "  </g>\n");
    /* eval points as dots (few, and one alone draws no line) and the legend */
    for (int r = 0; r < n; r++) {
        const char *c = COLORS[r % NCOLORS];
        int has_eval = 0;
        for (int i = 0; i < runs[r].h->n; i++) {
            double x, y;
            if (!point(&runs[r].h->e[i], "eval_loss", &x, &y)) continue;
            has_eval = 1;
            sr__buf_printf(&b, "  <circle cx=\"%.2f\" cy=\"%.2f\" r=\"3.5\" fill=\"%s\"/>\n", X0 + (x - xmin) * sx,
                           Y1 - (y - ymin) * sy, c);
        }
        int ly = Y0 + 10 + r * 44;
        sr__buf_printf(&b,
                       "  <line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>"
                       "<text x=\"%d\" y=\"%d\">",
                       X1 + 20, X1 + 50, ly, ly, c, X1 + 58, ly + 4);
        xml_text(&b, runs[r].name);
        sr__buf_printf(&b, " train</text>\n");
        if (has_eval) {
            sr__buf_printf(&b,
                           "  <line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\" "
                           "stroke-dasharray=\"7 4\"/><text x=\"%d\" y=\"%d\">",
                           X1 + 20, X1 + 50, ly + 20, ly + 20, c, X1 + 58, ly + 24);
            xml_text(&b, runs[r].name);
            sr__buf_printf(&b, " eval</text>\n");
        }
    }
    sr__buf_printf(&b, "</svg>\n");

    int rc = b.oom ? -1 : sr__out_write(path, b.s, b.n, why, len);
    if (b.oom) snprintf(why, len, "cannot write %s: out of memory", path);
    sr__buf_free(&b);
    return rc;
}
