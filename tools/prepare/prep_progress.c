/* The prepare command's progress line (prep_progress.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "prep_progress.h"

double prep_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void prep_progress_init(prep_progress *p, prep_progress_mode mode, uint64_t total_bytes, double every_s) {
    p->out = stderr;
    p->bar = mode == PREP_PROGRESS_NONE    ? -1
             : mode == PREP_PROGRESS_BAR   ? 1
             : mode == PREP_PROGRESS_LINES ? 0
                                           : isatty(STDERR_FILENO) != 0;
    p->start = p->last = prep_now();
    p->every_s = p->bar == 1 ? 0.2 : every_s;
    p->total_bytes = total_bytes;
    p->drawn = 0;
}

/* "1h02m", "3m05s", "42s" */
static void fmt_duration(char *out, size_t cap, double s) {
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(out, cap, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60) snprintf(out, cap, "%ldm%02lds", t / 60, t % 60);
    else snprintf(out, cap, "%lds", t);
}

void prep_progress_update(prep_progress *p, uint64_t bytes, uint64_t tokens, int force) {
    double now = prep_now();
    if (p->bar < 0 || (!force && now - p->last < p->every_s)) return;
    p->last = now;
    double el = now - p->start, mb = (double)bytes / 1e6, rate = el > 0 ? mb / el : 0;
    double frac = p->total_bytes ? (double)bytes / (double)p->total_bytes : 1;
    if (frac > 1) frac = 1;
    char eta[32] = "?";
    if (rate > 0) fmt_duration(eta, sizeof eta, ((double)p->total_bytes / 1e6 - mb) / rate);
    if (p->bar == 1) {
        char bar[31];
        int full = (int)(frac * 30);
        for (int i = 0; i < 30; i++) bar[i] = i < full ? '#' : '.';
        bar[30] = 0;
        fprintf(p->out, "\r[%s] %3.0f%% %.1f/%.1f MB, %.2fM tokens, %.1f MB/s, ETA %s   ", bar, 100 * frac, mb,
                (double)p->total_bytes / 1e6, (double)tokens / 1e6, rate, eta);
        p->drawn = 1;
    } else {
        fprintf(p->out, "prepare: %3.0f%% %.1f of %.1f MB, %llu tokens, %.1f MB/s, ETA %s\n", 100 * frac, mb,
                (double)p->total_bytes / 1e6, (unsigned long long)tokens, rate, eta);
    }
    fflush(p->out);
}

void prep_progress_break(prep_progress *p) {
    if (p->bar == 1 && p->drawn) fputc('\n', p->out);
    p->drawn = 0;
}
