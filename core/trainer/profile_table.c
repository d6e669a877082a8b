/* The step profile's table (see profile_table.h). */
#include "trainer/profile_table.h"

#include <stdio.h>
#include <string.h>

void sr__profile_step_begin(sr__step_profile *p) {
    if (sr__prof.on) p->before = sr__prof.c;
}

void sr__profile_step_end(sr__step_profile *p, long long step, double seconds) {
    if (!sr__prof.on) return;
    for (int k = 0; k < SR__PROF_CLASSES; k++) {
        double ds = sr__prof.c.sec[k] - p->before.sec[k], df = sr__prof.c.flops[k] - p->before.flops[k],
               db = sr__prof.c.bytes[k] - p->before.bytes[k];
        long long dc = sr__prof.c.calls[k] - p->before.calls[k];
        p->win.sec[k] += ds, p->win.flops[k] += df, p->win.bytes[k] += db, p->win.calls[k] += dc;
        sr__prof_counts *to = p->warm ? &p->run : &p->first;
        to->sec[k] += ds, to->flops[k] += df, to->bytes[k] += db, to->calls[k] += dc;
    }
    if (!p->win_steps) p->win_first = step;
    p->win_sec += seconds, p->win_steps++;
    if (p->warm) { /* the run's table leaves out this run's first step: it pays for first touches */
        if (!p->run_steps) p->run_first = step;
        p->run_sec += seconds, p->run_steps++;
    } else {
        p->first_step = step, p->first_sec = seconds;
    }
    p->warm = 1;
}

/* One row of the table: what it is, its seconds, and its rate (flops or bytes per second). */
typedef struct row {
    const char *name, *key; /* the table's label; the results' name (profile_<key>_ms) */
    double sec, flops, bytes;
    int in_step; /* 0: shown, not part of the step's sum (collectives overlapped) */
} row;

enum { NROWS = 13 };

static int rows_of(const sr__prof_counts *c, double step_sec, row *r) {
    const double *s = c->sec;
    double kernels = 0;
    for (int k = 0; k < SR_KERNEL_CLASSES; k++) kernels += s[k];
    double task_other = s[SR__PROF_TASK] - kernels;
    if (task_other < 0) task_other = 0; /* a task that reports kernels outside its callbacks */
    double engine = s[SR__PROF_DATA] + s[SR__PROF_OPTIM] + s[SR__PROF_CLIP] + s[SR__PROF_CAST] + s[SR__PROF_COLL_WAIT];
    double other = step_sec - (kernels + task_other) - engine;
    if (other < 0) other = 0;
    int n = 0;
    r[n++] = (row){"GEMM", "gemm", s[SR_KERNEL_GEMM], c->flops[SR_KERNEL_GEMM], 0, 1};
    r[n++] = (row){"attention", "attention", s[SR_KERNEL_ATTENTION], c->flops[SR_KERNEL_ATTENTION], 0, 1};
    r[n++] =
        (row){"softmax/cross-entropy", "softmax_ce", s[SR_KERNEL_SOFTMAX_CE], 0, c->bytes[SR_KERNEL_SOFTMAX_CE], 1};
    r[n++] = (row){"norms/activations", "norm_act", s[SR_KERNEL_NORM_ACT], 0, c->bytes[SR_KERNEL_NORM_ACT], 1};
    r[n++] = (row){"task, not in a kernel", "task_other", task_other, 0, 0, 1};
    r[n++] = (row){"optimizer", "optimizer", s[SR__PROF_OPTIM], 0, c->bytes[SR__PROF_OPTIM], 1};
    r[n++] = (row){"clipping", "clipping", s[SR__PROF_CLIP], 0, c->bytes[SR__PROF_CLIP], 1};
    r[n++] = (row){"casts/copies",
                   "casts_copies",
                   s[SR_KERNEL_COPY] + s[SR__PROF_CAST],
                   0,
                   c->bytes[SR_KERNEL_COPY] + c->bytes[SR__PROF_CAST],
                   1};
    /* a collective's rate: its bytes over the whole time it was in flight (issue to done) */
    double inflight = s[SR__PROF_COLL_WAIT] + s[SR__PROF_COLL_OVERLAP];
    r[n++] = (row){"collectives waited on", "coll_wait", s[SR__PROF_COLL_WAIT], 0, 0, 1};
    r[n - 1].bytes = inflight > 0 ? c->bytes[SR__PROF_COLL_WAIT] * s[SR__PROF_COLL_WAIT] / inflight : 0;
    r[n++] = (row){"data", "data", s[SR__PROF_DATA], 0, 0, 1};
    r[n++] = (row){"engine and trainer, other", "other", other, 0, 0, 1};
    r[n++] = (row){"step", "step", step_sec, 0, 0, 1};
    r[n++] = (row){"collectives overlapped", "coll_overlap", s[SR__PROF_COLL_OVERLAP], 0, 0, 0};
    return n;
}

static void rate_text(const row *r, char *buf, size_t len) {
    if (r->sec <= 0 || (r->flops <= 0 && r->bytes <= 0)) snprintf(buf, len, "-");
    else if (r->flops > 0) snprintf(buf, len, "%.1f GFLOP/s", r->flops / r->sec / 1e9);
    else snprintf(buf, len, "%.2f GB/s", r->bytes / r->sec / 1e9);
}

/* the run's steps without the first, or the first alone when it was the only one */
static void run_counts(const sr__step_profile *p, const sr__prof_counts **c, long long *steps, long long *first,
                       double *sec) {
    int one = p->run_steps == 0;
    *c = one ? &p->first : &p->run;
    *steps = one ? (p->warm ? 1 : 0) : p->run_steps;
    *first = one ? p->first_step : p->run_first;
    *sec = one ? p->first_sec : p->run_sec;
}

void sr__profile_print(sr__step_profile *p, int whole_run) {
    if (!sr__prof.on) return;
    const sr__prof_counts *c = &p->win;
    long long steps = p->win_steps, first = p->win_first;
    double sec = p->win_sec;
    if (whole_run) run_counts(p, &c, &steps, &first, &sec);
    if (steps > 0) {
        row r[NROWS];
        int n = rows_of(c, sec, r);
        double per = 1e3 / (double)steps, step_ms = sec * per;
        printf("profile: %ssteps %lld-%lld, per step (rank 0):\n", whole_run ? "the run, " : "", first,
               first + steps - 1);
        printf("  %-26s %10s %7s  %s\n", "", "ms", "% step", "rate");
        for (int i = 0; i < n; i++) {
            char rate[48];
            rate_text(&r[i], rate, sizeof rate);
            if (!r[i].in_step)
                printf("  %-26s %10.1f %7s  (in flight while computing: not part of the step)\n", r[i].name,
                       r[i].sec * per, "");
            else
                printf("  %-26s %10.1f %6.1f%%  %s\n", r[i].name, r[i].sec * per,
                       step_ms > 0 ? 100.0 * r[i].sec * per / step_ms : 0.0, rate);
        }
        fflush(stdout);
    }
    if (!whole_run) {
        memset(&p->win, 0, sizeof p->win);
        p->win_sec = 0, p->win_steps = 0;
    }
}

void sr__profile_report(const sr__step_profile *p, sr_ctx *ctx) {
    const sr__prof_counts *c;
    long long steps, first;
    double sec;
    run_counts(p, &c, &steps, &first, &sec);
    if (!sr__prof.on || steps <= 0) return;
    row r[NROWS];
    int n = rows_of(c, sec, r);
    double per = 1e3 / (double)steps;
    char name[64];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "profile_%s_ms", r[i].key);
        sr_report_num(ctx, name, r[i].sec * per);
        if (r[i].sec > 0 && r[i].flops > 0) {
            snprintf(name, sizeof name, "profile_%s_gflops", r[i].key);
            sr_report_num(ctx, name, r[i].flops / r[i].sec / 1e9);
        } else if (r[i].sec > 0 && r[i].bytes > 0) {
            snprintf(name, sizeof name, "profile_%s_gbps", r[i].key);
            sr_report_num(ctx, name, r[i].bytes / r[i].sec / 1e9);
        }
    }
}
