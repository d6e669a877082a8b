/* The run's status file (see run_status.h). */
#define _GNU_SOURCE
#include "agent/run_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "base/watch.h"
#include "trainer/output_lock.h"

static struct {
    char *dir;
    sr__lock_owner me;
    long long started;      /* seconds since the epoch */
    double next;            /* sr__now_s() of the next periodic write */
    sr__buf ranks;          /* the rank lines last rendered */
    sr__rank_status *known; /* every rank seen in this launch, as last seen (a rank that ended keeps
                               its last record: the final status shows where each one stopped) */
    int nknown;
    int attempt;
    unsigned long long hangs;
    /* the ETA: the slowest rank's steps since this agent first saw them, in this attempt */
    int rate_attempt;
    long long d0;
    double t0, eta;
    int warned;
} W = {.rate_attempt = -1, .eta = -1};

/* A word fit for a field of a line (no blank, never empty). */
static void word(char *s) {
    if (!*s) s[0] = '?', s[1] = 0;
    for (; *s; s++)
        if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') *s = '_';
}

static void write_file(const char *state, int code) {
    if (!W.dir) return;
    sr__buf b = {0};
    char host[sizeof W.me.host];
    snprintf(host, sizeof host, "%s", W.me.host);
    word(host);
    long long now = (long long)time(NULL);
    sr__buf_printf(&b, "%s\nstate %s\nlaunch %s\nhost %s\npid %ld\npid_start %llu\nstarted %lld\nupdated %lld\n",
                   SR__STATUS_MAGIC, state, W.me.launch[0] ? W.me.launch : "-", host, W.me.pid, W.me.pid_start,
                   W.started, now);
    sr__buf_printf(&b, "attempt %d\nhangs %llu\neta_s %.0f\n", W.attempt, W.hangs, code < 0 ? W.eta : -1.0);
    if (code >= 0) sr__buf_printf(&b, "exit %d\nended %lld\n", code, now);
    if (W.ranks.n) sr__buf_add(&b, W.ranks.s, W.ranks.n);
    char *tmp = sr__fmt("%s/%s.tmp.%ld", W.dir, SR__STATUS_NAME, (long)getpid());
    char *path = sr__fmt("%s/%s", W.dir, SR__STATUS_NAME);
    int ok = 0;
    if (!b.oom && b.s && tmp && path) {
        FILE *f = fopen(tmp, "w");
        if (f) {
            size_t wrote = fwrite(b.s, 1, b.n, f);
            ok = fclose(f) == 0 && wrote == b.n && rename(tmp, path) == 0;
            if (!ok) unlink(tmp);
        }
    }
    /* said once: `shardrun status` then shows the run as stale, which is the truth */
    if (!ok && !W.warned)
        sr__log(SR_LOG_WARN, "cannot write the run's status file %s/%s (shardrun status shows it stale): %m", W.dir,
                SR__STATUS_NAME);
    W.warned |= !ok;
    sr__buf_free(&b), free(tmp), free(path);
}

void sr__run_status_begin(const char *dir, const char *launch) {
    free(W.dir);
    W.dir = sr__strdup(dir);
    if (!W.dir) sr__log(SR_LOG_WARN, "out of memory for the name of %s: the run's status file is not written", dir);
    sr__lock_owner_self(&W.me, launch, "");
    W.started = (long long)time(NULL);
    word(W.me.launch);
    write_file("running", -1);
    W.next = sr__now_s() + SR__STATUS_PERIOD_S;
}

/* Seconds left: the slowest rank's pace since this attempt's first sight of it, -1: not known. */
static void estimate(const sr__rank_status *rs, int n, int attempt) {
    long long done = -1, total = 0;
    for (int i = 0; i < n; i++)
        if (rs[i].steps_total > 0) {
            if (done < 0 || rs[i].steps_done < done) done = rs[i].steps_done;
            total = rs[i].steps_total;
        }
    double now = sr__now_s();
    if (done < 0) return;
    if (W.rate_attempt != attempt) W.rate_attempt = attempt, W.d0 = done, W.t0 = now, W.eta = -1;
    if (done > W.d0 && now > W.t0) W.eta = (double)(total - done) * (now - W.t0) / (double)(done - W.d0);
}

/* Keeps rs's records in W.known, by rank; 0, or -1 when memory is short. */
static int remember(const sr__rank_status *rs, int n) {
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < W.nknown && W.known[k].rank != rs[i].rank) k++;
        if (k == W.nknown) {
            sr__rank_status *g = sr__realloc(W.known, (size_t)(W.nknown + 1) * sizeof *g);
            if (!g) return -1;
            W.known = g;
            /* in rank order */
            for (k = W.nknown++; k > 0 && W.known[k - 1].rank > rs[i].rank; k--) W.known[k] = W.known[k - 1];
        }
        W.known[k] = rs[i];
    }
    return 0;
}

static void render(void) {
    W.ranks.n = 0;
    for (int i = 0; i < W.nknown; i++) {
        const sr__rank_status *r = &W.known[i];
        char host[sizeof r->host];
        snprintf(host, sizeof host, "%s", r->host);
        word(host);
        const char *phase = r->phase ? sr__watch_phase_name(r->phase) : "-";
        sr__buf_printf(&W.ranks, "rank %d %d %s %d %c %lld %lld %s %.1f %.9g %.6g %.6g %llu %llu %.6g %llu %d\n",
                       r->rank, r->node, host, r->pid, r->state, r->steps_done, r->steps_total, phase, r->age, r->loss,
                       r->tok_s, r->step_s, r->mem_bytes, r->ckpt_count, r->ckpt_s, r->ckpt_bytes, r->stale);
    }
    if (W.ranks.oom) sr__buf_free(&W.ranks), W.ranks = (sr__buf){0};
}

void sr__run_status_update(const sr__rank_status *rs, int n, int attempt, unsigned long long hangs) {
    if (!W.dir) return;
    W.attempt = attempt, W.hangs = hangs;
    estimate(rs, n, attempt);
    if (remember(rs, n) != 0) W.nknown = 0; /* out of memory: the file names no rank this time */
    if (sr__now_s() < W.next) return;
    W.next = sr__now_s() + SR__STATUS_PERIOD_S;
    render();
    write_file("running", -1);
}

void sr__run_status_end(int code) {
    if (!W.dir) return;
    render();
    write_file(code == 0 ? "finished" : code > 128 ? "stopped" : "failed", code);
    free(W.dir);
    W.dir = NULL;
    sr__buf_free(&W.ranks);
    W.ranks = (sr__buf){0};
    free(W.known);
    W.known = NULL, W.nknown = 0;
}
