/* A test task whose behaviour the job file chooses, per rank:
     [task] pid_dir = DIR       each rank writes DIR/rank<R>.pid first (tests check no pid survives)
            act_rank = R        the rank that acts (others `others`, default: sleep)
            act = segv|exit3|sleep|ok|ignore_term    what that rank does
            others = sleep|ok
            say = TEXT          printed by every rank before acting (the last lines in a summary)
            act_until_restart = N   the acting rank acts only in the job's first N attempts
                                (sr_restart_count() < N), then succeeds; every rank prints
                                "restart count C" first */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shardrun/task.h"

/* temp + rename: a reader never sees an empty pid file, even if we are killed mid-write */
static void write_pid(const char *dir, int rank) {
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/rank%d.pid", dir, rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f) {
        fprintf(f, "%d\n", (int)getpid());
        if (fclose(f) == 0) rename(tmp, path);
    }
}

static int act(const char *what) {
    if (!strcmp(what, "segv")) {
        fflush(NULL);
        raise(SIGSEGV);
    }
    if (!strcmp(what, "exit3")) return 3;
    if (!strcmp(what, "ok")) return 0;
    for (int i = 0; i < 600; i++) sleep(1); /* "sleep": until someone stops us */
    return 0;
}

static int behave_main(sr_ctx *ctx, int argc, char **argv) {
    const char *dir = sr_config(ctx, "pid_dir");
    const char *say = sr_config(ctx, "say");
    long long who;
    if (sr_config_int(ctx, "act_rank", -1, &who) != 0) return 2;
    const char *a = sr_config(ctx, "act");
    /* before the pid file, so a test that saw the file knows SIGTERM is already ignored */
    if (sr_rank(ctx) == who && a && !strcmp(a, "ignore_term")) signal(SIGTERM, SIG_IGN);
    if (dir) write_pid(dir, sr_rank(ctx));
    for (int i = 1; i < argc; i++) printf("arg%d=%s\n", i, argv[i]);
    if (say) printf("%s (rank %d)\n", say, sr_rank(ctx));
    long long until;
    if (sr_config_int(ctx, "act_until_restart", -1, &until) != 0) return 2;
    if (until >= 0) {
        printf("restart count %d\n", sr_restart_count(ctx));
        fflush(stdout);
        if (sr_restart_count(ctx) >= until) return 0;
    }
    if (sr_rank(ctx) == who) return act(a ? a : "segv");
    const char *others = sr_config(ctx, "others");
    sr_report_int(ctx, "pid", (long long)getpid());
    return act(others ? others : "sleep");
}

SR_MAIN_TASK("behave", behave_main);
