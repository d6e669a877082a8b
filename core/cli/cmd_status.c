/* `shardrun status OUTPUT_DIR`: what a run is doing, or how it ended, read from the status file its
   agent keeps there (agent/run_status.h), from any terminal or host that sees the folder.  Exit: 0
   running or finished well, 1 failed, stopped or stale, 2 bad arguments or an unreadable file, 3 no
   run there (SR__STATUS_NO_RUN). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/run_status.h"
#include "base/alloc.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "base/watch.h"
#include "trainer/output_lock.h"

enum { SR__STATUS_NO_RUN = 3 };

typedef struct status {
    char state[32], launch[96], host[256];
    long pid;
    unsigned long long pid_start, hangs;
    long long started, updated, ended;
    int attempt, exit_code, has_exit;
    double eta;
    sr__rank_status *r;
    int n;
} status;

static void usage(FILE *out) {
    fprintf(out, "usage: shardrun status OUTPUT_DIR\n"
                 "  what the run writing into OUTPUT_DIR ([task] output_dir) is doing, from any terminal or host\n"
                 "  that sees the folder: each rank's step, phase, loss, tokens/s, memory and last progress, and\n"
                 "  the run's ETA; or how it ended (exit code, when)\n"
                 "exit codes: 0 running, or finished (exit 0); 1 failed, stopped, or stale (its shardrun is gone\n"
                 "  without saying how it ended); 2 bad arguments or an unreadable status file; 3 no run in\n"
                 "  OUTPUT_DIR (no status file: not started yet, or a run from before shardrun wrote one)\n");
}

/* Parses the file's text into *s: 0, or -1 with the line that is wrong in bad[]. */
static int parse(char *text, status *s, char *bad, size_t badlen) {
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    if (!line || strcmp(line, SR__STATUS_MAGIC) != 0) {
        snprintf(bad, badlen, "its first line is not \"%s\"", SR__STATUS_MAGIC);
        return -1;
    }
    while ((line = strtok_r(NULL, "\n", &save))) {
        int ok = 1;
        if (!strncmp(line, "rank ", 5)) {
            sr__rank_status *g = sr__realloc(s->r, (size_t)(s->n + 1) * sizeof *g);
            if (!g) {
                snprintf(bad, badlen, "out of memory for %d ranks", s->n + 1);
                return -1;
            }
            s->r = g;
            sr__rank_status *r = &s->r[s->n];
            char phase[32];
            memset(r, 0, sizeof *r);
            ok = sscanf(line, "rank %d %d %63s %d %c %lld %lld %31s %lf %lf %lf %lf %llu %llu %lf %llu %d", &r->rank,
                        &r->node, r->host, &r->pid, &r->state, &r->steps_done, &r->steps_total, phase, &r->age,
                        &r->loss, &r->tok_s, &r->step_s, &r->mem_bytes, &r->ckpt_count, &r->ckpt_s, &r->ckpt_bytes,
                        &r->stale) == 17;
            r->phase = -1;
            for (int p = 0; p < 6 && ok; p++)
                if (!strcmp(phase, sr__watch_phase_name(p))) r->phase = p;
            s->n += ok;
        } else if (!strncmp(line, "state ", 6)) ok = sscanf(line, "state %31s", s->state) == 1;
        else if (!strncmp(line, "launch ", 7)) ok = sscanf(line, "launch %95s", s->launch) == 1;
        else if (!strncmp(line, "host ", 5)) ok = sscanf(line, "host %255s", s->host) == 1;
        else if (!strncmp(line, "pid ", 4)) ok = sscanf(line, "pid %ld", &s->pid) == 1;
        else if (!strncmp(line, "pid_start ", 10)) ok = sscanf(line, "pid_start %llu", &s->pid_start) == 1;
        else if (!strncmp(line, "started ", 8)) ok = sscanf(line, "started %lld", &s->started) == 1;
        else if (!strncmp(line, "updated ", 8)) ok = sscanf(line, "updated %lld", &s->updated) == 1;
        else if (!strncmp(line, "ended ", 6)) ok = sscanf(line, "ended %lld", &s->ended) == 1;
        else if (!strncmp(line, "attempt ", 8)) ok = sscanf(line, "attempt %d", &s->attempt) == 1;
        else if (!strncmp(line, "hangs ", 6)) ok = sscanf(line, "hangs %llu", &s->hangs) == 1;
        else if (!strncmp(line, "eta_s ", 6)) ok = sscanf(line, "eta_s %lf", &s->eta) == 1;
        else if (!strncmp(line, "exit ", 5)) ok = (s->has_exit = sscanf(line, "exit %d", &s->exit_code) == 1);
        /* other keys: a newer shardrun's, ignored */
        if (!ok) {
            snprintf(bad, badlen, "cannot read the line \"%.200s\"", line);
            return -1;
        }
    }
    if (!s->state[0] || !s->pid) {
        snprintf(bad, badlen, "it names no state or no pid");
        return -1;
    }
    return 0;
}

/* Why a status that says "running" is stale, or NULL when its shardrun may well be running. */
static const char *stale_why(const status *s, const char *dir, double file_age, char *buf, size_t len) {
    char *lock = sr__fmt("%s/%s", dir, SR__OUTPUT_LOCK_NAME);
    struct stat st;
    int locked = lock && stat(lock, &st) == 0;
    free(lock);
    char me[256] = "";
    if (gethostname(me, sizeof me - 1) != 0) me[0] = 0;
    if (!strcmp(me, s->host)) {
        int zombie = 0;
        unsigned long long started = sr__pid_start_time(s->pid, &zombie);
        if (!started || zombie || (s->pid_start && started != s->pid_start)) {
            snprintf(buf, len, "its shardrun (pid %ld on this host) is gone", s->pid);
            return buf;
        }
    } else if (file_age > SR__STATUS_STALE_S) {
        snprintf(buf, len, "its shardrun (host %s, pid %ld) has not written it for %.0f s (it rewrites it every %d s)",
                 s->host, s->pid, file_age, SR__STATUS_PERIOD_S);
        return buf;
    }
    if (!locked) {
        snprintf(buf, len, "the folder's lock (%s) is gone, and with it the run", SR__OUTPUT_LOCK_NAME);
        return buf;
    }
    return NULL;
}

static void duration(double s, char *buf, size_t len) {
    long long t = (long long)(s + 0.5);
    if (t >= 3600) snprintf(buf, len, "%lldh %02lldm", t / 3600, t / 60 % 60);
    else if (t >= 60) snprintf(buf, len, "%lldm %02llds", t / 60, t % 60);
    else snprintf(buf, len, "%llds", t);
}

static void bytes(unsigned long long b, char *buf, size_t len) {
    if (b >= 1ull << 30) snprintf(buf, len, "%.2f GiB", (double)b / (double)(1ull << 30));
    else snprintf(buf, len, "%.1f MiB", (double)b / (double)(1ull << 20));
}

static const char *state_word(char c) {
    switch (c) {
    case 'R': return "running";
    case 'S': return "sleeping";
    case 'T': return "stopped";
    case 'D': return "in the kernel";
    case 'Z': return "gone";
    default: return "?";
    }
}

static void print_ranks(const status *s, int ended) {
    if (!s->n) {
        printf("  (no rank has reported yet)\n");
        return;
    }
    printf("  %-5s %-4s %-16s %-8s %-13s %-10s %-10s %-11s %-10s %-9s %s\n", "rank", "node", "host", "pid", "step",
           "phase", "loss", "tokens/s", "step time", "memory", ended ? "" : "last progress");
    for (int i = 0; i < s->n; i++) {
        const sr__rank_status *r = &s->r[i];
        char step[40] = "-", loss[24] = "-", tok[24] = "-", st[24] = "-", mem[24] = "-";
        if (r->steps_total > 0) snprintf(step, sizeof step, "%lld/%lld", r->steps_done, r->steps_total);
        if (r->steps_done > 0) {
            snprintf(loss, sizeof loss, "%.4f", r->loss);
            snprintf(tok, sizeof tok, "%.0f", r->tok_s);
            snprintf(st, sizeof st, "%.3f s", r->step_s);
        }
        if (r->mem_bytes) bytes(r->mem_bytes, mem, sizeof mem);
        const char *phase = r->phase > 0 ? sr__watch_phase_name(r->phase) : "-";
        printf("  %-5d %-4d %-16.16s %-8d %-13s %-10s %-10s %-11s %-10s %-9s", r->rank, r->node, r->host, r->pid, step,
               ended ? "-" : phase, loss, tok, st, mem);
        if (!ended)
            printf(" %.1f s ago (%s%s)", r->age, state_word(r->state), r->stale ? ", as its node last said" : "");
        printf("\n");
    }
}

static void when(long long t, char *buf, size_t len) {
    time_t tt = (time_t)t;
    struct tm tm;
    buf[0] = 0;
    if (localtime_r(&tt, &tm)) strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

int sr__cmd_status(int argc, char **argv) {
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (argv[i][0] == '-' || dir) {
            sr__log(SR_LOG_ERROR, "status: %s %s: expected one OUTPUT_DIR (the run's [task] output_dir)",
                    argv[i][0] == '-' ? "unknown option" : "a second folder", argv[i]);
            usage(stderr);
            return SR__EXIT_CONFIG;
        }
        dir = argv[i];
    }
    if (!dir) {
        sr__log(SR_LOG_ERROR, "status: no OUTPUT_DIR given (the run's [task] output_dir)");
        usage(stderr);
        return SR__EXIT_CONFIG;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        sr__log(SR_LOG_ERROR, "status: %s: %s; give the run's [task] output_dir (exit %d: no such run)", dir,
                errno == ENOENT || stat(dir, &st) != 0 ? "no such folder" : "not a folder", SR__STATUS_NO_RUN);
        return SR__STATUS_NO_RUN;
    }
    char *path = sr__fmt("%s/%s", dir, SR__STATUS_NAME);
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f) {
        int e = errno;
        if (e == ENOENT)
            sr__log(SR_LOG_ERROR,
                    "status: no run in %s (no %s there: no run was started with this output_dir, or it has not "
                    "begun yet, or it ran under a shardrun without status files) (exit %d: no such run)",
                    dir, SR__STATUS_NAME, SR__STATUS_NO_RUN);
        else sr__log(SR_LOG_ERROR, "status: cannot read %s: %s", path ? path : dir, strerror(e));
        free(path);
        return e == ENOENT ? SR__STATUS_NO_RUN : SR__EXIT_CONFIG;
    }
    struct stat fst;
    double file_age = fstat(fileno(f), &fst) == 0 ? difftime(time(NULL), fst.st_mtime) : 0;
    char text[1 << 16], bad[300];
    sr__buf all = {0};
    size_t k;
    while ((k = fread(text, 1, sizeof text, f)) > 0) sr__buf_add(&all, text, k);
    fclose(f);
    status s = {.eta = -1};
    if (all.oom || !all.s || parse(all.s, &s, bad, sizeof bad) != 0) {
        sr__log(SR_LOG_ERROR, "status: %s is not a status file shardrun writes: %s", path,
                all.oom  ? "out of memory"
                : !all.s ? "it is empty"
                         : bad);
        sr__buf_free(&all), free(path), free(s.r);
        return SR__EXIT_CONFIG;
    }
    sr__buf_free(&all);
    free(path);

    char t1[64], t2[64], age[32];
    when(s.started, t1, sizeof t1);
    double since = difftime(time(NULL), (time_t)s.updated);
    int rc = 0;
    if (!strcmp(s.state, "running")) {
        char why[400];
        const char *stale = stale_why(&s, dir, file_age, why, sizeof why);
        duration(since < 0 ? 0 : since, age, sizeof age);
        if (stale) {
            printf("%s: stale: the status says running, but %s: the run ended without saying how (killed, out of "
                   "memory, its machine down); treat it as failed. What it last said, %s ago:\n",
                   dir, stale, age);
            rc = SR__EXIT_FAILED;
        } else {
            printf("%s: running since %s (launch %s, attempt %d%s, host %s, pid %ld); status written %s ago\n", dir, t1,
                   s.launch, s.attempt, s.hangs ? ", hangs found" : "", s.host, s.pid, age);
        }
        print_ranks(&s, 0);
        if (!stale && s.eta >= 0) {
            duration(s.eta, age, sizeof age);
            printf("ETA: %s\n", age);
        } else if (!stale) {
            printf("ETA: not known yet (after a few steps)\n");
        }
    } else {
        when(s.ended, t2, sizeof t2);
        duration(difftime(time(NULL), (time_t)s.ended), age, sizeof age);
        const char *how = s.has_exit && s.exit_code == 0 ? "finished" : s.exit_code > 128 ? "stopped" : "failed";
        if (s.has_exit && s.exit_code > 128) {
            const char *name = sigabbrev_np(s.exit_code - 128);
            printf("%s: %s by SIG%s (exit %d) at %s (%s ago); started %s, launch %s\n", dir, how, name ? name : "?",
                   s.exit_code, t2, age, t1, s.launch);
        } else {
            printf("%s: %s with exit %d at %s (%s ago); started %s, launch %s\n", dir, how, s.exit_code, t2, age, t1,
                   s.launch);
        }
        printf("  as last seen:\n");
        print_ranks(&s, 1);
        rc = s.has_exit && s.exit_code == 0 ? 0 : SR__EXIT_FAILED;
    }
    free(s.r);
    return rc;
}
