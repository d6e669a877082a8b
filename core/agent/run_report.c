/* What the agent says when an attempt ends: the summary on stderr and the results list (see
   workers.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/workers.h"
#include "base/log.h"
#include "base/out_file.h"
#include "config/value.h"

const char *sr__signal_name(int sig, char *buf, size_t len) {
    const char *abbrev = sigabbrev_np(sig);
    snprintf(buf, len, "SIG%s", abbrev ? abbrev : "?");
    return buf;
}

void sr__describe_status(int status, char *buf, size_t len) {
    char name[32];
    if (WIFEXITED(status)) snprintf(buf, len, "exited with code %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "was killed by signal %s (%d)%s", sr__signal_name(WTERMSIG(status), name, sizeof name),
                 WTERMSIG(status), WCOREDUMP(status) ? ", core dumped" : "");
    else snprintf(buf, len, "ended with status 0x%x", status);
}

static void print_tail(const sr__worker *w) {
    if (!w->tail.count) {
        fprintf(stderr, "shardrun: rank %d printed nothing\n", w->rank);
        return;
    }
    fprintf(stderr, "shardrun: last %d line%s of rank %d:\n", w->tail.count, w->tail.count > 1 ? "s" : "", w->rank);
    for (int k = 0; k < w->tail.count; k++) {
        int idx = (w->tail.next - w->tail.count + k + SR__TAIL_LINES) % SR__TAIL_LINES;
        fprintf(stderr, "shardrun:   [rank%d]: %s\n", w->rank, w->tail.lines[idx]);
    }
}

/* Where a preempted run left its checkpoint, as this agent's workers said. */
static void print_preempted(const sr__attempt *st, sr__run *run) {
    const sr__worker *saved = NULL;
    int missing = 0;
    char by[32] = "a signal to a worker"; /* or what this agent received: SIGTERM, SIGUSR1 */
    if (st->signal_sent) sr__signal_name(st->signal_sent, by, sizeof by);
    for (int i = 0; i < st->n; i++) {
        if (st->ws[i].progress.preempted && !saved) saved = &st->ws[i];
        missing += !st->ws[i].progress.preempted;
    }
    if (saved && !missing && run->rdzv.elastic && (!run->rdzv.hosting || run->rdzv.etcd))
        fprintf(stderr,
                "shardrun: this node left the elastic job (%s): every rank stopped after step %lld and %s holds it; "
                "the other nodes go on from there\n",
                by, saved->progress.ckpt_step, saved->progress.ckpt_path);
    else if (saved && !missing)
        fprintf(
            stderr,
            "shardrun: preempted by %s: every rank stopped after step %lld and %s holds it; run the "
            "same job with resume_from_checkpoint = latest (--set task.resume_from_checkpoint=latest) to continue\n",
            by, saved->progress.ckpt_step, saved->progress.ckpt_path);
    else if (saved)
        sr__log(SR_LOG_ERROR,
                "preempted by %s: %s was written at step %lld, but %d rank%s of this node did not "
                "confirm it before preempt_grace (%gs) ran out: check the folder before resuming from it",
                by, saved->progress.ckpt_path, saved->progress.ckpt_step, missing, missing > 1 ? "s" : "",
                run->settings.preempt_grace);
    else
        sr__log(SR_LOG_ERROR,
                "preempted by %s before a checkpoint could be written (within preempt_grace, %gs, "
                "or before training began): the run continues only from its last regular checkpoint",
                by, run->settings.preempt_grace);
}

/* Ctrl-C (or another signal to this agent): what the model task's ranks of this node had saved
   and how to go on from there.  The newest checkpoint every rank reported as written is the
   newest complete one. */
static void print_interrupted(const sr__attempt *st, sr__run *run) {
    char name[32];
    /* a run that started from a checkpoint: resume_from_checkpoint, or a restart's automatic resume */
    const char *from = sr__config_value(&run->cfg, "task", "resume_from_checkpoint");
    int yes = 0, resumed = run->rdzv.attempt > 0 || (from && *from && !(sr__parse_bool(from, &yes) == 0 && !yes));
    const sr__worker *oldest = NULL;
    long long step = -1;
    for (int i = 0; i < st->n; i++) {
        const sr__progress *p = &st->ws[i].progress;
        if (p->step > step) step = p->step;
        if (!oldest || p->ckpt_step < oldest->progress.ckpt_step) oldest = &st->ws[i];
    }
    fprintf(stderr, "shardrun: interrupted by %s", sr__signal_name(st->agent_signal, name, sizeof name));
    if (!run->model_task || step < 0) {
        fprintf(stderr, "\n");
        return;
    }
    fprintf(stderr, " during step %lld; ", step + 1);
    if (oldest && oldest->progress.ckpt_step >= 0)
        fprintf(stderr,
                "the newest complete checkpoint is %s (step %lld): to continue from it, run the same command with "
                "--set task.resume_from_checkpoint=latest (or resume_from_checkpoint = latest under [task])\n",
                oldest->progress.ckpt_path, oldest->progress.ckpt_step);
    else if (resumed)
        fprintf(stderr,
                "no checkpoint was saved since it resumed: the one it resumed from (in output_dir) is still the "
                "newest, and the same command continues from it\n");
    else
        fprintf(stderr, "no checkpoint was saved (output_dir with save_steps saves one every N steps): running the job "
                        "again starts over\n");
}

void sr__print_summary(const sr__attempt *st, sr__run *run) {
    char what[128], name[32];
    if (st->preempting) {
        if (st->hang[0]) sr__log(SR_LOG_ERROR, "the run hung while it was preempted: %s", st->hang);
        print_preempted(st, run);
    } else if (st->hang[0]) {
        sr__log(SR_LOG_ERROR, "the run hung: %s", st->hang);
    } else if (st->failed >= 0 && st->failed < st->n) {
        const sr__worker *w = &st->ws[st->failed];
        sr__describe_status(w->status, what, sizeof what);
        if (st->blamed >= 0) {
            /* the rank that exited first only followed the one that reported the error */
            const sr__worker *b = &st->ws[st->blamed];
            sr__log(SR_LOG_ERROR,
                    "rank %d (local rank %d, pid %d) reported an error, then rank %d (local rank %d, "
                    "pid %d) %s without a word",
                    b->rank, b->local_rank, (int)b->pid, w->rank, w->local_rank, (int)w->pid, what);
            w = b;
        } else {
            sr__log(SR_LOG_ERROR, "rank %d (local rank %d, pid %d) %s", w->rank, w->local_rank, (int)w->pid, what);
        }
        print_tail(w);
        /* its collectives failed because node 0 went: that is what to act on */
        if (run->rdzv.host_gone || run->rdzv.host_lost) sr__log(SR_LOG_ERROR, "%s", run->rdzv.failed_elsewhere);
    } else if (st->agent_signal) {
        print_interrupted(st, run);
    } else if (st->failed_elsewhere && run->rdzv.refused_at) {
        sr__log(SR_LOG_ERROR, "%s", run->rdzv.failed_elsewhere); /* this agent refused another's job */
    } else if (st->failed_elsewhere) {
        /* per-process launchers run several agents on one node: "another node" only when it was */
        int same_node = run->rdzv.failed_node == run->layout.node_rank;
        sr__log(SR_LOG_ERROR, "the run failed %s: %s",
                same_node ? "in another shardrun process of this node" : "on another node", run->rdzv.failed_elsewhere);
    }
    if (st->stopped && !(st->preempting && !st->needed_kill)) /* preempted workers stop themselves */
        fprintf(stderr, "shardrun: stopped the %s%d worker%s of this node (%s, then SIGKILL after %gs)%s\n",
                st->failed >= 0 ? "other " : "", st->stopped, st->stopped > 1 ? "s" : "",
                sr__signal_name(st->signal_sent ? st->signal_sent : SIGTERM, name, sizeof name),
                st->preempting && !st->hang[0] ? run->settings.preempt_grace : run->settings.shutdown_grace,
                st->needed_kill ? "; some needed SIGKILL" : "");
    /* a job that may restart, but did not: why (a rank of this node that said a restart cannot
       fix its failure names the cause: a full disk, with its path) */
    char unfixable_buf[800];
    const char *unfixable = NULL;
    for (int i = 0; i < st->n && !unfixable; i++)
        if (st->ws[i].progress.unfixable[0]) {
            snprintf(unfixable_buf, sizeof unfixable_buf, "a restart would fail the same way: rank %d %s",
                     st->ws[i].rank, st->ws[i].progress.unfixable);
            unfixable = unfixable_buf;
        }
    if (run->rdzv.hosting && run->rdzv.max_restarts > run->rdzv.attempt && !st->agent_signal && !st->preempting &&
        (st->failed >= 0 || st->failed_elsewhere) && run->rdzv.decided_kind != SR__FAIL_RETRYABLE)
        fprintf(stderr, "shardrun: not restarted (max_restarts = %d): %s\n", run->rdzv.max_restarts,
                run->rdzv.decided_kind == SR__FAIL_CONFIG ? "a configuration error fails the same way every time"
                : run->rdzv.decided_kind == SR__FAIL_STOPPED
                    ? "the rank was asked to stop (a signal to stop is no crash: Slurm and clouds send one to every "
                      "process of a job they take back)"
                : unfixable
                    ? unfixable
                    : "the failure came before training began (set-up, data, a checkpoint to resume from), so it would "
                      "fail the same way again");
    /* every attempt of a job that restarted, as the deciding agent saw them */
    int restarts = run->rdzv.attempt - run->rdzv.restart_called_off;
    if (run->rdzv.hosting && run->rdzv.attempt > 0 && run->rdzv.attempts.n && !st->preempting &&
        (st->failed >= 0 || st->failed_elsewhere || st->agent_signal)) {
        fprintf(stderr, "shardrun: the job %s after %d restart%s (max_restarts = %d); its attempts:\n",
                st->agent_signal ? "was interrupted" : "failed", restarts, restarts == 1 ? "" : "s",
                run->rdzv.max_restarts);
        const char *s = run->rdzv.attempts.s;
        for (const char *nl; s && *s && (nl = strchr(s, '\n')); s = nl + 1)
            fprintf(stderr, "shardrun:   %.*s\n", (int)(nl - s), s);
    }
}

void sr__local_results(const sr__attempt *st, sr__buf *b) {
    char name[32];
    for (int i = 0; i < st->n; i++) {
        const sr__worker *w = &st->ws[i];
        if (i) sr__buf_add(b, ",\n", 2);
        sr__buf_add(b, "  ", 2);
        if (w->result.n) sr__buf_add(b, w->result.s, w->result.n);
        else if (w->reaped && WIFEXITED(w->status)) /* exec tasks and crashed tasks report nothing */
            sr__buf_printf(b, "{\"rank\": %d, \"exit_code\": %d}", w->rank, WEXITSTATUS(w->status));
        else if (w->reaped && WIFSIGNALED(w->status))
            sr__buf_printf(b, "{\"rank\": %d, \"exit_code\": null, \"signal\": \"%s\"}", w->rank,
                           sr__signal_name(WTERMSIG(w->status), name, sizeof name));
        else sr__buf_printf(b, "{\"rank\": %d, \"exit_code\": null}", w->rank);
    }
    /* ranks this agent never started (a fork that failed, or an attempt that never began) */
    for (int i = st->n; i < st->want; i++)
        sr__buf_printf(b, "%s  {\"rank\": %d, \"exit_code\": null}", i ? ",\n" : "", st->first_rank + i);
}

int sr__write_results(const sr__attempt *st, sr__run *run, const char *path) {
    if (run->rdzv.nagents > 1 && !run->rdzv.hosting && !st->results_local) return 0;
    sr__buf b = {0}, mine = {0};
    sr__local_results(st, &mine);
    sr__buf_add(&b, "[\n", 2);
    if (run->rdzv.hosting) {
        for (int a = 0, node = -1; a < run->rdzv.nagents; a++) {
            if (!sr__rdzv_takes_part(&run->rdzv, a)) continue; /* elastic: a slot not in the last world */
            node++;                                            /* its node rank (a fixed-size job's: a) */
            size_t len = mine.n;
            const char *part = a == run->rdzv.agent_id ? mine.s : sr__rdzv_results(&run->rdzv, a, &len);
            if (b.n > 2) sr__buf_add(&b, ",\n", 2);
            if (part && len) {
                sr__buf_add(&b, part, len);
            } else { /* an agent that never reported (it went away): its ranks' outcome is unknown */
                for (int i = 0; i < st->want; i++)
                    sr__buf_printf(&b, "%s  {\"rank\": %d, \"exit_code\": null}", i ? ",\n" : "", node * st->want + i);
            }
        }
    } else {
        sr__buf_add(&b, mine.s, mine.n);
    }
    sr__buf_add(&b, "\n]\n", 3);
    sr__buf_free(&mine);
    int rc = 0;
    if (fwrite(b.s, 1, b.n, stdout) != b.n || fflush(stdout) != 0) {
        sr__log(SR_LOG_ERROR, "cannot write the results to stdout: %s", strerror(errno));
        rc = -1;
    }
    char why[4600];
    if (path && sr__out_write(path, b.s, b.n, why, sizeof why) != 0) {
        sr__log(SR_LOG_ERROR, "--results: %s", why);
        rc = -1;
    }
    sr__buf_free(&b);
    return rc;
}

int sr__probe_results(const char *path, const sr__run *run, char *why, size_t len) {
    const char *inputs[] = {run->cfg.path, run->task.path};
    return sr__out_check(path, inputs, 2, why, len);
}
