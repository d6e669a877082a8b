/* A plain SIGTERM or SIGUSR1 asks for a checkpoint and a stop; a queued "stop now" stops (see
   preempt.h). */
#define _GNU_SOURCE
#include "trainer/preempt.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/progress.h"
#include "config/worker_settings.h"

/* the signal that asked this rank to stop (SIGTERM or SIGUSR1), 0: none */
static volatile sig_atomic_t asked;

static void on_stop_signal(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    if (sig == SIGTERM && si && si->si_code == SI_QUEUE && si->si_value.sival_int == SR__STOP_NOW_VALUE) {
        /* die by SIGTERM as if no handler were installed: it is delivered again when we return */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    /* later plain SIGTERMs change nothing: Slurm signals every process of a step and the agent
       passes its own on, so one preemption may arrive twice; the agent enforces preempt_grace */
    if (!asked) asked = sig;
}

void sr__preempt_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_stop_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    /* Slurm's --signal=USR1@120 and others ask with SIGUSR1 ahead of the time limit: the same
       request (whose default action would kill the rank without a checkpoint) */
    sigaction(SIGUSR1, &sa, NULL);
}

int sr__preempt_signal(void) { return asked ? asked : SIGTERM; }

void sr__debug_kill_at(int rank, int restart_count, long long step) {
    const struct sr__debug_at *k = &sr__worker_settings_get()->kill_at; /* SHARDRUN_DEBUG_KILL_AT */
    /* ":every": in every attempt, not only the first; ":stop": SIGSTOP rather than SIGKILL (a rank
       that hangs, for the hang watchdog's tests) */
    if (k->set && k->rank == rank && k->step == step && (k->every || !restart_count)) {
        fflush(NULL);
        raise(k->stop ? SIGSTOP : SIGKILL);
    }
}

/* how long SHARDRUN_DEBUG_PAUSE_AT waits for a stop request before it gives up and goes on */
enum { PAUSE_LIMIT_S = 120 };

void sr__debug_pause_at(int rank, int restart_count, long long step) {
    const sr__worker_settings *ws = sr__worker_settings_get();
    int hit = 0; /* SHARDRUN_DEBUG_PAUSE_AT: this rank, step and attempt */
    for (int i = 0; i < ws->npause; i++) {
        const struct sr__debug_at *p = &ws->pause_at[i];
        hit |= p->set && p->rank == rank && p->step == step && p->attempt == restart_count;
    }
    if (!hit) return;
    /* the step's line is out before the test, which waits for it, sends its signal */
    if (fflush(NULL) != 0) sr__log(SR_LOG_WARN, "SHARDRUN_DEBUG_PAUSE_AT: flushing the output: %s", strerror(errno));
    const struct timespec nap = {0, 5 * 1000 * 1000};
    double until = sr__now_s() + PAUSE_LIMIT_S;
    while (!asked && sr__now_s() < until)
        if (nanosleep(&nap, NULL) != 0 && errno != EINTR) break; /* EINTR: the signal we wait for, or another */
    if (!asked)
        sr__log(SR_LOG_WARN, "SHARDRUN_DEBUG_PAUSE_AT=%s: the pause ran out (no stop request within %d s); going on",
                ws->pause_at_text, PAUSE_LIMIT_S);
}

int sr__preempt_agreed(sr__engine *e) {
    double any = sr__engine_mean(e, asked ? 1.0 : 0.0);
    if (isnan(any)) return -1;
    return any > 0;
}
