#define _GNU_SOURCE
#include "agent/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/guardian.h"
#include "agent/watchdog.h"
#include "agent/workers.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "pg/shm.h"
#include "worker/worker.h"

static int self_pipe[2] = {-1, -1};
static sr__watchdog *watchdog; /* NULL: no memory for it (hang_timeout = 0 still watches, without a verdict) */

/* The rendezvous hears of a failure of this attempt here (it decides what follows). */
static void tell_failure(sr__run *run, const char *what, sr__rdzv_failure kind) {
    sr__rdzv_report(
        &run->rdzv,
        &(sr__rdzv_news){.kind = SR__RDZV_FAILURE, .node = run->layout.node_rank, .what = what, .failure = kind});
}

static void on_signal(int sig) {
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    if (write(self_pipe[1], &b, 1) < 0) { /* full pipe: a wake-up is already pending */
    }
    errno = saved;
}

static void install_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGUSR1};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) sigaction(sigs[i], &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static void reset_handlers_in_child(void) {
    int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGPIPE};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) signal(sigs[i], SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Whether output written to fd reaches a person's terminal, so progress may be redrawn in place.
   Under a launcher it never does for sure: Open MPI hands every process a pseudo-terminal even
   when mpirun's own output goes to a file, and Slurm writes it to the job's .out file. */
static int is_terminal(const sr__run *run, int fd) { return !run->layout.cluster_source && isatty(fd); }

static int start_worker(sr__run *run, sr__worker *w, sr__worker *all, int nstarted) {
    int p[SR__NSTREAMS][2];
    for (int s = 0; s < SR__NSTREAMS; s++)
        if (pipe2(p[s], O_CLOEXEC) != 0) return -1;
    pid_t agent = getpid();
    fflush(NULL);
    /* Signals stay blocked across fork until the child has reset its handlers: a SIGTERM sent to
       a worker that has only just started (the run stopping at once) would otherwise run the
       agent's handler in the child, which writes into the agent's self-pipe, and the agent would
       take it for a SIGTERM of its own. */
    sigset_t every, old;
    sigfillset(&every);
    sigprocmask(SIG_BLOCK, &every, &old);
    int held = sr__watchdog_fork_begin(watchdog);
    sr__store_link_fork_begin(run->rdzv.link);
    pid_t pid = fork();
    if (pid != 0)
        sr__store_link_fork_end(run->rdzv.link), sr__watchdog_fork_end(watchdog, held),
            sigprocmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) return -1;
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != agent) _exit(SR__EXIT_FAILED); /* the agent died between fork and prctl */
        reset_handlers_in_child();
        sr__watch_attach(sr__watchdog_slot(watchdog, (int)(w - all))); /* where it says what it does */
        close(self_pipe[0]), close(self_pipe[1]);
        if (sr__guardian_fd() >= 0) close(sr__guardian_fd());
        for (int i = 0; i < nstarted; i++)
            for (int s = 0; s < SR__NSTREAMS; s++)
                if (all[i].fd[s] >= 0) close(all[i].fd[s]);
        for (int s = 0; s < SR__NSTREAMS; s++) close(p[s][0]);
        run->stdout_tty = is_terminal(run, STDOUT_FILENO); /* where the relayed output ends up */
        dup2(p[SR__OUT][1], STDOUT_FILENO);
        dup2(p[SR__ERR][1], STDERR_FILENO);
        close(p[SR__OUT][1]), close(p[SR__ERR][1]);
        sr__worker_run(run, w->local_rank, p[SR__RES][1]);
    }
    setpgid(pid, pid); /* also here, so the group exists before we ever signal it */
    sr__guardian_watch(pid);
    sr__watchdog_started(watchdog, (int)(w - all), w->rank, pid);
    w->pid = pid;
    for (int s = 0; s < SR__NSTREAMS; s++) {
        close(p[s][1]);
        w->fd[s] = p[s][0];
        fcntl(w->fd[s], F_SETFL, O_NONBLOCK);
    }
    for (int s = 0; s < 2; s++) {
        w->relay[s].rank = w->rank;
        w->relay[s].out_fd = s == SR__OUT ? STDOUT_FILENO : STDERR_FILENO;
        w->relay[s].tty = is_terminal(run, w->relay[s].out_fd);
        w->relay[s].tail = &w->tail;
    }
    return 0;
}

/* Sends sig to every live worker's process group.  A SIGTERM that stops workers because the run
   failed or restarts is queued to each worker with SR__STOP_NOW_VALUE first: a model task's
   trainer takes a plain SIGTERM for a preemption (finish the step, write a checkpoint), this one
   for what it is. */
static void signal_groups(sr__worker *ws, int n, int sig, int stop_now) {
    for (int i = 0; i < n; i++) {
        if (ws[i].pid <= 0 || ws[i].reaped) continue;
        if (stop_now && sig == SIGTERM) sigqueue(ws[i].pid, SIGTERM, (union sigval){.sival_int = SR__STOP_NOW_VALUE});
        kill(-ws[i].pid, sig);
    }
}

static int workers_reaped(const sr__attempt *st);

/* SIGKILL to every worker still alive: the grace ran out, or the agent was asked twice. */
static void kill_workers(sr__attempt *st) {
    if (!workers_reaped(st)) st->needed_kill = 1;
    signal_groups(st->ws, st->n, SIGKILL, 0);
    st->killed = 1;
}

static int exited_config(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == SR__EXIT_CONFIG; }

static void read_stream(sr__worker *w, int s) {
    char buf[65536];
    while (1) {
        ssize_t n = read(w->fd[s], buf, sizeof buf);
        if (n > 0) {
            if (s == SR__RES) {
                if (w->result.n < (1 << 20)) sr__buf_add(&w->result, buf, (size_t)n);
                if (w->result.s) sr__progress_take(&w->progress, w->result.s, &w->result.n);
            } else {
                sr__relay_feed(&w->relay[s], buf, (size_t)n);
            }
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        if (s != SR__RES) sr__relay_flush(&w->relay[s]);
        close(w->fd[s]);
        w->fd[s] = -1;
        return;
    }
}

/* Stops every worker: sig to their groups, SIGKILL after `grace` seconds. */
static void begin_stop(sr__attempt *st, int sig, double grace, int stop_now) {
    if (st->kill_at) return;
    st->signal_sent = sig;
    for (int i = 0; i < st->n; i++) st->stopped += !st->ws[i].reaped;
    signal_groups(st->ws, st->n, sig, stop_now);
    st->kill_at = sr__now_s() + grace;
}

/* The first of a worker's last lines that reports an error (the cause comes before what follows
   from it), or NULL. */
static const char *first_error_line(const sr__tail *t) {
    for (int k = 0; k < t->count; k++) {
        int idx = (t->next - t->count + k + SR__TAIL_LINES) % SR__TAIL_LINES;
        if (strstr(t->lines[idx], "error")) return t->lines[idx];
    }
    return NULL;
}

static int tail_has_error(const sr__tail *t) { return first_error_line(t) != NULL; }

/* The first worker to fail is not always the cause: when a rank hits an error (a full disk, a bad
   file) and says so, its peers can see the failure through a collective and exit first, without a
   word.  Then the rank that reported an error is the one to name.  -1: name the first failed. */
static int blame(sr__attempt *st, int first) {
    for (int i = 0; i < st->n; i++) /* what the workers wrote until now, so their tails are current */
        for (int s = 0; s < SR__NSTREAMS; s++)
            if (st->ws[i].fd[s] >= 0) read_stream(&st->ws[i], s);
    if (tail_has_error(&st->ws[first].tail)) return -1;
    for (int i = 0; i < st->n; i++)
        if (i != first && tail_has_error(&st->ws[i].tail)) return i;
    return -1;
}

/* How far a worker got, for the failure message and the list of attempts. */
static const char *reached(const sr__worker *w, int model_task, char *buf, size_t len) {
    if (!w->progress.started) snprintf(buf, len, "before its work began");
    else if (w->progress.step >= 0) snprintf(buf, len, "after step %lld", w->progress.step);
    else snprintf(buf, len, model_task ? "before its first step" : "once running");
    return buf;
}

/* A failure may be retried (max_restarts) only once the work began: a configuration error, data
   that is missing, a program that cannot start or a disk that is full (the worker says so:
   SR__PROGRESS_UNFIXABLE) fails the same way every time.  Nor is a worker
   that was asked to stop (SIGTERM, SIGINT, SIGHUP, or a model task's 143 after a checkpoint):
   Slurm and clouds signal every process of a job they take back, the agent's own signal follows. */
static inline int asks_to_stop(int sig) { return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGUSR1; }

static sr__rdzv_failure failure_kind(const sr__attempt *st, const sr__worker *w) {
    if (exited_config(w->status)) return SR__FAIL_CONFIG;
    if (w->progress.unfixable[0]) return SR__FAIL_FINAL; /* a full disk stays full */
    if (WIFEXITED(w->status) && WEXITSTATUS(w->status) == SR__EXIT_CANNOT_EXEC) return SR__FAIL_FINAL;
    if (WIFEXITED(w->status) && WEXITSTATUS(w->status) == SR__EXIT_SIGNAL_BASE + SIGTERM) return SR__FAIL_STOPPED;
    if (WIFSIGNALED(w->status) && asks_to_stop(WTERMSIG(w->status))) return SR__FAIL_STOPPED;
    if (!w->progress.started || st->agent_signal) return SR__FAIL_FINAL;
    return SR__FAIL_RETRYABLE;
}

/* A model task's rank that stopped after writing a checkpoint because it was asked to (SIGTERM or
   SIGUSR1 sent to the worker itself and not to this agent: a user's kill, or Slurm signalling
   the step's processes before this agent read its own): every rank agreed on the same step and
   writes the same checkpoint, so the run is preempted as if this agent had been asked, and the
   others are left to finish it (no signal: they stop by themselves within preempt_grace). */
static int worker_preempted(const sr__worker *w, const sr__run *run) {
    return run->model_task && w->progress.preempted && WIFEXITED(w->status) &&
           WEXITSTATUS(w->status) == SR__EXIT_SIGNAL_BASE + SIGTERM;
}

static void follow_worker_preemption(sr__attempt *st, sr__run *run, const sr__worker *w) {
    char msg[200];
    snprintf(msg, sizeof msg,
             "a worker was asked to stop by a signal (rank %d, node %d, stopped after step %lld): "
             "every rank stops after its current step with a checkpoint",
             w->rank, run->layout.node_rank, w->progress.ckpt_step);
    if (run->rdzv.phase == SR__RDZV_RUNNING) tell_failure(run, msg, SR__FAIL_PREEMPT);
    sr__log(SR_LOG_INFO,
            "a worker was asked to stop by a signal: rank %d stopped after step %lld with a checkpoint, "
            "and so do the other ranks (preempt_grace %gs)",
            w->rank, w->progress.ckpt_step, run->settings.preempt_grace);
    st->preempting = 1;
    begin_stop(st, 0, run->settings.preempt_grace, 0); /* signal 0: only the deadline */
}

static inline int exited_ok(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

/* Whether w's end is the attempt's first failure: it did not succeed, no failure was taken yet,
   and the workers are not being stopped already (then an exit is the stop's doing). */
static inline int opens_the_failure(const sr__attempt *st, const sr__worker *w) {
    return !exited_ok(w->status) && st->failed < 0 && !st->kill_at;
}

/* Whether w was killed by a signal nobody here sent (the agent sends none before the first
   failure): a rank that dies so is the cause, its peers that exit non-zero because a collective
   with it failed are the consequence. */
static inline int killed_by_a_signal(const sr__worker *w) { return w->reaped && WIFSIGNALED(w->status); }

/* How long the first failure waits for its peers before the cause is chosen: a rank killed
   outright is often reaped after the peer that saw it go through a collective. */
static const double CAUSE_GRACE_S = 0.3;

static int worker_of(const sr__attempt *st, pid_t pid) {
    for (int i = 0; i < st->n; i++)
        if (st->ws[i].pid == pid) return i;
    return -1;
}

/* Records worker i's end; whatever it left behind in its group goes with it. */
static void record_exit(sr__attempt *st, int i, int status) {
    sr__worker *w = &st->ws[i];
    w->reaped = 1;
    w->status = status;
    if (w->fd[SR__RES] >= 0) read_stream(w, SR__RES); /* its last progress records */
}

/* Reaps for up to `grace` seconds what else ends (or ended already), without deciding anything. */
static void collect_late_exits(sr__attempt *st, double grace) {
    double until = sr__now_s() + grace;
    while (!workers_reaped(st)) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        int i = pid > 0 ? worker_of(st, pid) : -1;
        if (i >= 0) record_exit(st, i, status), kill(-pid, SIGKILL);
        if (pid > 0) continue; /* a worker or an orphan of one: look again at once */
        if (pid < 0 || sr__now_s() >= until) return;
        usleep(5000);
    }
}

/* The worker whose failure caused the others', given that worker `first` was reaped failed
   first: itself when a signal killed it, else a peer that a signal killed within the grace,
   else `first`. */
static int cause_of_failure(sr__attempt *st, int first) {
    if (killed_by_a_signal(&st->ws[first]) || st->n < 2) return first;
    collect_late_exits(st, CAUSE_GRACE_S);
    for (int i = 0; i < st->n; i++)
        if (i != first && killed_by_a_signal(&st->ws[i])) return i;
    return first;
}

/* The attempt's failure, worker i's: told to the rendezvous, and every worker stopped. */
static void report_failure(sr__attempt *st, sr__run *run, int i) {
    const sr__worker *w = &st->ws[i];
    st->failed = i;
    /* a rank killed by a signal said nothing: a peer's error line is about its going */
    st->blamed = killed_by_a_signal(w) ? -1 : blame(st, i);
    char what[160], msg[1000], step[64], host[128] = "?";
    gethostname(host, sizeof host);
    sr__describe_status(w->status, what, sizeof what);
    const sr__worker *b = st->blamed >= 0 ? &st->ws[st->blamed] : w;
    if (st->blamed >= 0)
        snprintf(msg, sizeof msg, "rank %d (node %d) reported an error, then rank %d %s; %s (host %s)", b->rank,
                 run->layout.node_rank, w->rank, what, reached(b, run->model_task, step, sizeof step), host);
    else
        snprintf(msg, sizeof msg, "rank %d (node %d) %s %s (host %s)", w->rank, run->layout.node_rank, what,
                 reached(w, run->model_task, step, sizeof step), host);
    /* the other nodes learn why, not only that: their own workers may be stopped before they say it
       (a rank out of memory tells its peers through a collective, which fail first on other nodes) */
    const char *why = killed_by_a_signal(w) ? NULL : first_error_line(&b->tail);
    if (why) {
        size_t used = strlen(msg);
        snprintf(msg + used, sizeof msg - used, "; its first error: %.400s", why);
    }
    /* a worker that exits 2 found a configuration error: the run's verdict is 2 too */
    tell_failure(run, msg, failure_kind(st, b));
    begin_stop(st, SIGTERM, run->settings.shutdown_grace, 1);
}

static void reap(sr__attempt *st, sr__run *run) {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        int i = worker_of(st, pid);
        if (i < 0) continue; /* an orphan of the workers, reaped because we are their subreaper */
        record_exit(st, i, status);
        sr__worker *w = &st->ws[i];
        if (opens_the_failure(st, w) && worker_preempted(w, run)) follow_worker_preemption(st, run, w);
        if (opens_the_failure(st, w)) {
            int cause = cause_of_failure(st, i);
            report_failure(st, run, cause);
        }
        kill(-pid, SIGKILL);
    }
}

static int workers_reaped(const sr__attempt *st) {
    for (int i = 0; i < st->n; i++)
        if (!st->ws[i].reaped) return 0;
    return 1;
}

static int pipes_closed(const sr__attempt *st) {
    for (int i = 0; i < st->n; i++)
        for (int s = 0; s < SR__NSTREAMS; s++)
            if (st->ws[i].fd[s] >= 0) return 0;
    return 1;
}

static void close_pipes(sr__attempt *st) {
    for (int i = 0; i < st->n; i++)
        for (int s = 0; s < SR__NSTREAMS; s++)
            if (st->ws[i].fd[s] >= 0) read_stream(&st->ws[i], s), close(st->ws[i].fd[s]), st->ws[i].fd[s] = -1;
}

/* The exit code of an agent stopped by sig: 128 + sig, but SIGUSR1 is SIGTERM's request. */
static int signal_exit(int sig) { return SR__EXIT_SIGNAL_BASE + (sig == SIGUSR1 ? SIGTERM : sig); }

/* A signal to the agent.  SIGTERM with a model task is a preemption: every rank of the job, on
   every node, finishes its step and writes a checkpoint within preempt_grace.  Anything else (or
   the same signal again) stops the workers as before: SIGTERM, shutdown_grace, SIGKILL.  SIGUSR1
   is SIGTERM by another name (Slurm's --signal=USR1@120 asks with it ahead of the time limit,
   and its default action would kill shardrun without a checkpoint or a word): the same
   preemption or stop and the same exit, 143; the messages name it, and a model task's workers
   get it as it came (they take it as SIGTERM too). */
static void on_agent_signal(sr__attempt *st, sr__run *run, int sig) {
    char msg[200], name[32];
    int term = sig == SIGTERM || sig == SIGUSR1;
    sr__signal_name(sig, name, sizeof name);
    /* elastic: every rank saves for a new world (a node joins, or leaves with notice) */
    int saving = run->rdzv.elastic && run->rdzv.phase == SR__RDZV_RESTART && run->rdzv.save_first && run->model_task;
    if (term && (st->preempting || saving) && !st->agent_signal) {
        /* another node's SIGTERM (or a new world) started the checkpoint here first: this one asks for
           the same, and this node leaves once it is written (advance: call_off_restart) */
        st->agent_signal = sig;
        return;
    }
    if (st->agent_signal || st->kill_at) {
        /* asked twice (or while the workers stop already): no more grace */
        kill_workers(st);
        if (!st->agent_signal) st->agent_signal = sig;
        return;
    }
    st->agent_signal = sig;
    if (term && run->rdzv.elastic && (!run->rdzv.hosting || run->rdzv.etcd) && run->rdzv.phase == SR__RDZV_RUNNING) {
        /* a spot notice: this node leaves, the others go on without it once every rank saved (with
           etcd the leader too: the others elect another) */
        if (run->rdzv.hosting)
            snprintf(msg, sizeof msg, "node %d's shardrun (the leader) received %s and leaves the job",
                     run->layout.node_rank, name);
        else
            snprintf(msg, sizeof msg, "node %d's shardrun (slot %d) received %s and leaves the job",
                     run->layout.node_rank, run->rdzv.agent_id, name);
        tell_failure(run, msg, SR__FAIL_LEAVE);
        sr__log(SR_LOG_INFO, "%s: this node leaves the job%s (%s again to stop at once)", name,
                run->model_task ? " once every rank finished its step and wrote a checkpoint" : "", name);
        st->preempting = run->model_task;
        begin_stop(st, sig, run->model_task ? run->settings.preempt_grace : run->settings.shutdown_grace,
                   !run->model_task);
        return;
    }
    if (term && run->model_task && run->rdzv.phase == SR__RDZV_RUNNING) {
        snprintf(msg, sizeof msg,
                 "node %d's shardrun received %s: every rank stops after its current step with "
                 "a checkpoint",
                 run->layout.node_rank, name);
        tell_failure(run, msg, SR__FAIL_PREEMPT);
        sr__log(SR_LOG_INFO,
                "%s: asking every rank to finish its step and write a checkpoint (preempt_grace "
                "%gs; %s again to stop at once)",
                name, run->settings.preempt_grace, name);
        st->preempting = 1;
        begin_stop(st, sig, run->settings.preempt_grace, 0);
        return;
    }
    /* the other agents stop too, rather than wait in collectives for these ranks */
    snprintf(msg, sizeof msg, "node %d's shardrun was stopped by %s", run->layout.node_rank, name);
    tell_failure(run, msg, SR__FAIL_FINAL);
    begin_stop(st, sig == SIGUSR1 ? SIGTERM : sig, run->settings.shutdown_grace, term);
}

/* What the rendezvous decided elsewhere (or here) for this attempt, applied to this agent's
   workers once per change (a restart can still turn into a failure: a node that does not come
   back).  *applied: the phase applied last. */
static void follow_phase(sr__attempt *st, sr__run *run, sr__rdzv_phase *applied) {
    sr__rdzv *r = &run->rdzv;
    if (r->phase == *applied) return;
    *applied = r->phase;
    if (r->phase == SR__RDZV_RUNNING || r->phase == SR__RDZV_SUCCEEDED) return;
    if (r->phase == SR__RDZV_RESTART) {
        if (!r->elastic)
            sr__log(SR_LOG_INFO, "restarting the job (restart %d of max_restarts %d): %s", r->attempt + 1,
                    r->max_restarts, r->failed_elsewhere);
        else if (r->restart_kind == SR__FAIL_RETRYABLE)
            sr__log(SR_LOG_INFO, "restarting the job (a failure, counted by max_restarts %d): %s", r->max_restarts,
                    r->failed_elsewhere);
        else
            sr__log(SR_LOG_INFO, "the job's nodes change: %s; %s", r->failed_elsewhere,
                    r->save_first && run->model_task
                        ? "every rank finishes its step and writes a checkpoint, then the job goes on with the new set "
                          "of nodes"
                        : "the job goes on with the new set of nodes from its newest checkpoint");
        /* a node joins, or leaves with notice: nothing is lost, every rank saves first */
        if (r->save_first && run->model_task) begin_stop(st, SIGTERM, run->settings.preempt_grace, 0);
        else begin_stop(st, SIGTERM, run->settings.shutdown_grace, 1);
    } else if (r->phase == SR__RDZV_PREEMPTED) {
        if (!st->preempting && !st->kill_at) {
            st->preempting = 1;
            begin_stop(st, SIGTERM, run->settings.preempt_grace, 0);
        }
    } else if (!r->reported_failure && st->failed < 0 && !st->agent_signal) {
        st->failed_elsewhere = 1;
        begin_stop(st, SIGTERM, run->settings.shutdown_grace, 1);
    }
}

/* This agent was stopped by a signal while the job restarts: the restart is called off everywhere
   (node 0 tells the others; another agent tells node 0), and this agent's verdict is the signal's. */
static void call_off_restart(sr__attempt *st, sr__run *run) {
    char msg[200], name[32];
    snprintf(msg, sizeof msg, "node %d's shardrun was stopped by %s while the job restarted", run->layout.node_rank,
             sr__signal_name(st->agent_signal, name, sizeof name));
    sr__rdzv_report(&run->rdzv, &(sr__rdzv_news){.kind = SR__RDZV_QUIT, .what = msg});
    st->failed = st->blamed = -1; /* the failure that caused the restart is in the list of attempts */
    st->failed_elsewhere = 0;
}

/* The store server's connections (MAX_CONNS, 4096, in store/server.c) and its listening socket,
   with room to spare: the most pollfds the rendezvous asks for. */
enum { MAX_RDZV_FDS = 4200 };

/* What the supervisor's loop carries from one turn to the next. */
typedef struct sr__watch {
    struct pollfd *pfd;     /* self-pipe, the workers' pipes, then the rendezvous's sockets */
    double all_reaped_at;   /* when the last worker was reaped; 0: not yet */
    int reported;           /* this agent's results went to node 0 */
    sr__rdzv_phase applied; /* the rendezvous phase applied last (follow_phase) */
    long long saved_said;   /* the checkpoint step last told the rendezvous (tell_saved), -1: none */
    int join_said;          /* "a node waits to join" was logged, and still holds */
} sr__watch;

static inline int local_work_done(const sr__attempt *st) { return workers_reaped(st) && pipes_closed(st); }

/* Whether nothing went wrong with this agent's attempt here: no failure, no signal, no
   preemption, and every worker it was to start started. */
static inline int attempt_clean_here(const sr__attempt *st) {
    return st->failed < 0 && !st->agent_signal && !st->preempting && st->n == st->want;
}

/* This agent's part of a restart once its workers are gone: 1 when the next attempt may start. */
static int ready_to_restart(sr__attempt *st, sr__run *run, sr__watch *wt) {
    sr__rdzv *r = &run->rdzv;
    sr__rdzv_report(r, &(sr__rdzv_news){.kind = SR__RDZV_STOPPED});
    /* another agent waits for the host's start between attempts (await_start); the host starts
       the next attempt once every agent is ready for it */
    if (r->phase == SR__RDZV_RESTART && (!r->hosting || sr__rdzv_view_now(r).next_attempt > 0)) {
        st->restart = 1;
        return 1;
    }
    follow_phase(st, run, &wt->applied); /* a restart called off just now fails this agent too */
    return 0;
}

/* Every rank's exit code reaches node 0, also when the run failed. */
static void report_results(sr__attempt *st, sr__run *run) {
    sr__buf mine = {0};
    sr__local_results(st, &mine);
    sr__rdzv_news done = {.kind = SR__RDZV_DONE,
                          .results = mine.s,
                          .len = mine.n,
                          .succeeded = attempt_clean_here(st) && !st->failed_elsewhere};
    /* (an etcd job whose leader went away: this attempt's results go nowhere, the next one's count) */
    if ((st->results_local = sr__rdzv_report(&run->rdzv, &done)) && !sr__rdzv_can_fail_over(&run->rdzv))
        sr__log(SR_LOG_WARN, "this node's results (%zu bytes) stay in this node's output", mine.n);
    sr__buf_free(&mine);
}

/* The decisions of one turn, from what the workers and the rendezvous did so far; no waiting.
   1: the attempt is over (a restart, or the run's verdict known and settled). */
static int advance(sr__attempt *st, sr__run *run, sr__watch *wt) {
    sr__rdzv *r = &run->rdzv;
    follow_phase(st, run, &wt->applied);
    int local_done = local_work_done(st);
    /* interrupted while the job restarts: no restart, and every agent hears it at once */
    if (r->phase == SR__RDZV_RESTART && st->agent_signal) call_off_restart(st, run);
    if (local_done && r->phase == SR__RDZV_RESTART && ready_to_restart(st, run, wt)) return 1;
    if (local_done && !wt->reported && r->phase != SR__RDZV_RESTART) {
        report_results(st, run);
        wt->reported = 1;
    }
    /* One verdict per run.  The hosting agent decides it (store/rdzv.h): a failure anywhere, or
       success once every agent is done; it serves the store until every agent has read it.  The
       others exit only when they know it (or were interrupted), so no node reports success while
       another one fails. */
    if (local_done && wt->reported && (sr__rdzv_view_now(r).verdict_known || (st->agent_signal && !r->hosting))) {
        sr__rdzv_report(r, &(sr__rdzv_news){.kind = SR__RDZV_READ});
        if (sr__rdzv_view_now(r).settled) return 1;
    }
    return 0;
}

/* How long this turn's poll may wait: the rendezvous's next deadline, the SIGKILL deadline, and
   a short wait while the pipes of workers already gone are still open. */
static int poll_timeout_ms(const sr__attempt *st, sr__rdzv *r, const sr__watch *wt, int timeout) {
    if (st->kill_at && !st->killed) {
        int k = (int)((st->kill_at - sr__now_s()) * 1000) + 1;
        timeout = timeout < 0 || k < timeout ? (k > 0 ? k : 0) : timeout;
    }
    /* a preemption is watched too (watch_preemption) */
    int watched = r->phase == SR__RDZV_RUNNING || (st->preempting && r->phase == SR__RDZV_PREEMPTED && !st->hang[0]);
    int wd = watched ? sr__watchdog_timeout_ms(watchdog) : -1;
    if (wd >= 0 && (timeout < 0 || wd < timeout)) timeout = wd;
    /* workers gone, pipes still open: check back soon (node 0 may wait long for other nodes) */
    if (wt->all_reaped_at && !pipes_closed(st) && (timeout < 0 || timeout > 50)) timeout = 50;
    return timeout;
}

/* Asks the watchdog whether a rank of this attempt is hung; when one is, prints its report, keeps
   what it names in st->hang and returns 1 with *h filled. */
static int hang_found(sr__attempt *st, sr__hang *h) {
    int *reaped = sr__calloc((size_t)st->n + 1, sizeof *reaped);
    if (!reaped) return 0; /* next turn */
    for (int i = 0; i < st->n; i++) reaped[i] = st->ws[i].reaped;
    int hung = sr__watchdog_check(watchdog, reaped, h);
    free(reaped);
    if (!hung) return 0;
    fputs(h->report, stderr);
    fflush(stderr);
    snprintf(st->hang, sizeof st->hang, "%s", h->what);
    return 1;
}

/* A preemption waits up to preempt_grace for every rank to finish its step and write its part of
   the checkpoint.  A rank that cannot (stopped by SIGSTOP when the SIGTERM came, held in the
   kernel) never does, and its peers wait for it in a collective: the watchdog goes on watching,
   and a hang found then is reported and stops every rank now (shutdown_grace), not when
   preempt_grace runs out.  The exit stays the preemption's (143); the summary names the hang. */
static void watch_preemption(sr__attempt *st, sr__run *run) {
    static sr__hang h;
    if (st->hang[0] || st->killed || !hang_found(st, &h)) return;
    sr__log(SR_LOG_ERROR,
            "the preemption cannot finish: a rank that makes no progress writes no checkpoint; stopping every "
            "rank now (shutdown_grace %gs) instead of waiting out preempt_grace (%gs)",
            run->settings.shutdown_grace, run->settings.preempt_grace);
    signal_groups(st->ws, st->n, SIGTERM, 1);
    double kill_at = sr__now_s() + run->settings.shutdown_grace;
    if (!st->kill_at || kill_at < st->kill_at) st->kill_at = kill_at;
}

/* The hang watchdog (agent/watchdog.h), while the attempt runs and nothing stops it yet: a hang
   ends the attempt like a failure, with one report.  Another agent that finds node 0 silent ends
   on its own: the verdict would have to come through node 0's store. */
static void watch_for_hang(sr__attempt *st, sr__run *run) {
    if (watchdog && st->preempting && (run->rdzv.phase == SR__RDZV_RUNNING || run->rdzv.phase == SR__RDZV_PREEMPTED)) {
        watch_preemption(st, run);
        if (run->rdzv.phase != SR__RDZV_RUNNING) return;
    }
    if (!watchdog || run->rdzv.phase != SR__RDZV_RUNNING) return;
    if (st->kill_at || st->failed >= 0 || st->failed_elsewhere || st->agent_signal || st->preempting || st->hang[0]) {
        /* ending already (a failure here: a collective timed out on a dead link), waiting for node
           0's verdict: when node 0 went silent it never comes */
        if (sr__watchdog_host_silent(watchdog)) {
            char msg[900];
            snprintf(msg, sizeof msg,
                     "node 0's shardrun has not answered for %gs (hang_timeout): it is stopped, or the "
                     "link to it is down%s",
                     run->settings.hang_timeout, sr__rdzv_host_silent_note(&run->rdzv));
            sr__log(SR_LOG_ERROR, "%s: this node ends the run on its own (exit 1)", msg);
            sr__rdzv_report(&run->rdzv, &(sr__rdzv_news){.kind = SR__RDZV_HOST_SILENT, .what = msg});
            if (st->failed < 0 && !st->hang[0] && !st->agent_signal) st->failed_elsewhere = 1;
            if (!st->kill_at) begin_stop(st, SIGTERM, run->settings.shutdown_grace, 1);
        }
        return;
    }
    static sr__hang h;
    if (!hang_found(st, &h)) return;
    char msg[1000];
    snprintf(msg, sizeof msg, "hang (seen by node %d): %s", run->layout.node_rank, h.what);
    int started = st->n > 0;
    for (int i = 0; i < st->n; i++) started &= st->ws[i].progress.started;
    if (h.host_lost) {
        sr__log(SR_LOG_ERROR, "node 0's shardrun does not answer: this node ends the run on its own (exit 1)%s",
                sr__rdzv_host_silent_note(&run->rdzv));
        sr__rdzv_report(&run->rdzv, &(sr__rdzv_news){.kind = SR__RDZV_HOST_SILENT, .what = msg});
    } else if (run->rdzv.elastic && h.lost_agent > 0) {
        /* an elastic job goes on without a silent node (stopped, or its link cut), as without a lost one */
        sr__rdzv_report(&run->rdzv, &(sr__rdzv_news){.kind = SR__RDZV_PEER_SILENT, .agent = h.lost_agent});
        tell_failure(run, msg, SR__FAIL_LEFT);
    } else {
        if (h.lost_agent > 0) /* it will not read the verdict */
            sr__rdzv_report(&run->rdzv, &(sr__rdzv_news){.kind = SR__RDZV_PEER_SILENT, .agent = h.lost_agent});
        /* a silent node cannot take part in a restart: the run fails */
        tell_failure(run, msg, started && h.lost_node < 0 ? SR__FAIL_RETRYABLE : SR__FAIL_FINAL);
    }
    begin_stop(st, SIGTERM, run->settings.shutdown_grace, 1);
}

/* A checkpoint every local rank reported written (its save ended, so it is complete: the save's
   last collective follows rank 0's rename, fsdp/ckpt_save.c) goes to the rendezvous, where
   elastic_join = next_save takes waiting nodes in from it; not the run's last step, which leaves
   nothing for a new world to train (watch slots: the trainer's steps_total). */
static void tell_saved(const sr__attempt *st, sr__run *run, sr__watch *wt) {
    if (!run->rdzv.elastic || !run->rdzv.hosting || !run->model_task || st->n < 1) return;
    long long step = st->ws[0].progress.ckpt_step, total = 0;
    for (int i = 0; i < st->n; i++) {
        if (st->ws[i].progress.ckpt_step < step) step = st->ws[i].progress.ckpt_step;
        sr__watch_slot *slot = sr__watchdog_slot(watchdog, i);
        if (slot && atomic_load(&slot->steps_total) > total) total = atomic_load(&slot->steps_total);
    }
    if (step <= wt->saved_said || (total > 0 && step >= total)) return;
    wt->saved_said = step;
    sr__rdzv_report(&run->rdzv, &(sr__rdzv_news){.kind = SR__RDZV_SAVED, .step = step});
}

/* elastic_join = next_save: a node that waits to join is said once, with when it is taken in. */
static void tell_join_waiting(sr__run *run, sr__watch *wt) {
    int waiting = sr__rdzv_view_now(&run->rdzv).join_waiting;
    if (waiting && !wt->join_said)
        sr__log(SR_LOG_INFO,
                "a new node's shardrun waits to join the job: it is taken in once the next periodic checkpoint "
                "(save_steps) is written (elastic_join = next_save)");
    wt->join_said = waiting;
}

/* The I/O of one turn: waits for a signal, a worker's output or exit, the rendezvous or a
   deadline, and takes in what came.  -1 when poll itself failed. */
static int poll_once(sr__attempt *st, sr__run *run, sr__watch *wt) {
    sr__rdzv *r = &run->rdzv;
    struct pollfd *pfd = wt->pfd;
    int np = 0;
    pfd[np++] = (struct pollfd){.fd = self_pipe[0], .events = POLLIN};
    for (int i = 0; i < st->n; i++)
        for (int s = 0; s < SR__NSTREAMS; s++)
            if (st->ws[i].fd[s] >= 0) pfd[np++] = (struct pollfd){.fd = st->ws[i].fd[s], .events = POLLIN};
    int first_rdzv = np, rdzv_ms;
    np += sr__rdzv_pollfds(r, pfd + np, MAX_RDZV_FDS, &rdzv_ms);
    if (poll(pfd, (nfds_t)np, poll_timeout_ms(st, r, wt, rdzv_ms)) < 0 && errno != EINTR) return -1;

    if (pfd[0].revents & POLLIN) {
        unsigned char sigs[64];
        ssize_t k = read(self_pipe[0], sigs, sizeof sigs);
        for (ssize_t j = 0; j < k; j++)
            if (sigs[j] != SIGCHLD) on_agent_signal(st, run, sigs[j]);
    }
    reap(st, run);
    for (int p = 1; p < first_rdzv; p++) {
        if (!pfd[p].revents) continue;
        for (int i = 0; i < st->n; i++)
            for (int s = 0; s < SR__NSTREAMS; s++)
                if (st->ws[i].fd[s] == pfd[p].fd) read_stream(&st->ws[i], s);
    }
    tell_saved(st, run, wt);
    sr__rdzv_step(r, pfd + first_rdzv, np - first_rdzv);
    tell_join_waiting(run, wt);
    watch_for_hang(st, run);
    double t = sr__now_s();
    if (st->kill_at && !st->killed && t >= st->kill_at) kill_workers(st);
    if (workers_reaped(st) && !wt->all_reaped_at) wt->all_reaped_at = t;
    /* a process that left its group (setsid) may hold a pipe open: do not wait for it long */
    if (wt->all_reaped_at && t - wt->all_reaped_at > 1.0) close_pipes(st);
    return 0;
}

/* Without memory for its workers' records (none started) or its poll set the agent cannot watch
   its workers: it stops them, waits for them, and the run fails here (exit 1) and on every other
   node.  `what` names the memory. */
static void give_up_watching(sr__attempt *st, sr__run *run, const char *what) {
    char msg[200];
    snprintf(msg, sizeof msg, "node %d's shardrun ran out of memory (%s): its workers were stopped",
             run->layout.node_rank, what);
    sr__log(SR_LOG_ERROR, "%s; free some memory and run the job again", msg);
    tell_failure(run, msg, SR__FAIL_FINAL);
    kill_workers(st);
    for (int i = 0; i < st->n; i++)
        if (!st->ws[i].reaped && waitpid(st->ws[i].pid, &st->ws[i].status, 0) == st->ws[i].pid) st->ws[i].reaped = 1;
    close_pipes(st);
    st->failed_elsewhere = 1;
}

static void supervise(sr__attempt *st, sr__run *run) {
    size_t nfds = (size_t)st->n * SR__NSTREAMS + 1 + MAX_RDZV_FDS;
    sr__watch wt = {
        .pfd = st->ws ? sr__calloc(nfds, sizeof(struct pollfd)) : NULL, .applied = SR__RDZV_RUNNING, .saved_said = -1};
    if (!wt.pfd) {
        char what[80];
        if (!st->ws) /* start_attempt() had no memory for them: none started */
            snprintf(what, sizeof what, "the records of %d workers, %zu bytes", st->want,
                     (size_t)st->want * sizeof *st->ws);
        else snprintf(what, sizeof what, "a poll set of %zu entries", nfds);
        give_up_watching(st, run, what);
    }
    while (wt.pfd && !advance(st, run, &wt))
        if (poll_once(st, run, &wt) != 0) break;
    free(wt.pfd);
    /* a SIGTERM during the last step: every rank finished (and saved) the run; it succeeded */
    int finished = st->preempting && st->n == st->want && st->failed < 0;
    for (int i = 0; finished && i < st->n; i++)
        finished = WIFEXITED(st->ws[i].status) && WEXITSTATUS(st->ws[i].status) == 0;
    if (finished) {
        char name[32];
        sr__log(SR_LOG_INFO, "%s arrived during the last step: every rank finished the run",
                sr__signal_name(st->signal_sent ? st->signal_sent : SIGTERM, name, sizeof name));
        st->preempting = 0;
        st->agent_signal = 0;
        st->stopped = 0;
    }
}

/* Other agents between two attempts: waits for the host's start of the next one, or its verdict
   that there is none.  0 to go on, else the exit code. */
static int await_start(sr__attempt *st, sr__run *run) {
    sr__rdzv *r = &run->rdzv;
    while (1) {
        int ready = sr__rdzv_view_now(r).next_attempt;
        if (ready > 0) return 0;
        if (ready < 0) {
            /* the restart was called off: this agent's ranks' last results go with the verdict */
            st->failed_elsewhere = 1;
            st->failed = st->blamed = -1;
            sr__buf mine = {0};
            sr__local_results(st, &mine);
            st->results_local =
                sr__rdzv_report(r, &(sr__rdzv_news){.kind = SR__RDZV_DONE, .results = mine.s, .len = mine.n});
            sr__buf_free(&mine);
            sr__rdzv_report(r, &(sr__rdzv_news){.kind = SR__RDZV_READ});
            return SR__EXIT_FAILED;
        }
        struct pollfd pfd[2] = {{.fd = self_pipe[0], .events = POLLIN}};
        int np = 1 + sr__rdzv_pollfds(r, pfd + 1, 1, NULL);
        if (poll(pfd, (nfds_t)np, 1000) < 0 && errno != EINTR) return SR__EXIT_FAILED;
        if (pfd[0].revents & POLLIN) {
            unsigned char sigs[64];
            ssize_t k = read(self_pipe[0], sigs, sizeof sigs);
            for (ssize_t j = 0; j < k; j++)
                if (sigs[j] != SIGCHLD) {
                    st->agent_signal = sigs[j];
                    call_off_restart(st, run);
                    return signal_exit(sigs[j]);
                }
        }
        sr__rdzv_step(r, pfd + 1, np - 1);
    }
}

/* A stop signal while this agent meets the others again after its leader went away (fail_over):
   that meeting blocks, up to rdzv_timeout, where the self-pipe is not read, and this agent has no
   worker left to stop, so the signal ends it there, as one ends it while it first meets them (no
   handler yet), with a stopped agent's exit code; its keys in etcd go when its lease expires. */
static void on_signal_meeting(int sig) {
    static const char msg[] = "shardrun: asked to stop (a signal) while this node met the others again after the "
                              "job's leader went away: it stops\n";
    if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) { /* nothing else to do in a handler */
    }
    _exit(signal_exit(sig));
}

/* on: the stop signals end the agent (on_signal_meeting); returns one that came before and waits in
   the self-pipe (0: none).  Off: the supervisor's handlers again. */
static int meeting_signals(int on) {
    if (!on) {
        install_handlers();
        return 0;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal_meeting;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) sigaction(sigs[i], &sa, NULL);
    unsigned char b[64];
    ssize_t k;
    int sig = 0;
    while ((k = read(self_pipe[0], b, sizeof b)) > 0)
        for (ssize_t j = 0; j < k; j++)
            if (asks_to_stop(b[j]) && !sig) sig = b[j];
    return sig;
}

/* rdzv_backend = etcd: the leader went away (or this agent lost it): this agent's workers are gone;
   it elects another leader with the others (or joins it), and the job goes on in the next attempt
   from its newest checkpoint.  0 to go on, else the exit code. */
static int fail_over(sr__run *run) {
    sr__rdzv *r = &run->rdzv;
    sr__log(SR_LOG_WARN, "%s", r->failed_elsewhere);
    int sig = meeting_signals(1);
    if (sig) {
        char name[32];
        sr__signal_name(sig, name, sizeof name);
        sr__log(SR_LOG_INFO, "%s: this node stops instead of meeting the others again", name);
        meeting_signals(0);
        return signal_exit(sig);
    }
    sr__diag diag = {0};
    int rc = sr__rdzv_fail_over(r, &run->rdzv_args, &diag);
    meeting_signals(0);
    if (rc == SR__RDZV_ENDED) {
        sr__diag_clear(&diag);
        sr__log(SR_LOG_INFO, "%s", r->failed_elsewhere);
        return SR__EXIT_OK;
    }
    if (rc != 0) {
        sr__log(SR_LOG_ERROR, "the job cannot go on after its leader went away:");
        sr__diag_flush(&diag);
        return SR__EXIT_FAILED;
    }
    if (r->hosting) sr__log(SR_LOG_INFO, "this node leads the job now (elected in etcd)");
    else sr__log(SR_LOG_INFO, "the job's leader is now the node at %s", r->host);
    /* the hang watchdog swapped records through the old leader's store: a new one, on the new */
    sr__watchdog_free(watchdog);
    watchdog = sr__watchdog_new(run);
    return 0;
}

static void free_workers(sr__attempt *st) {
    for (int i = 0; i < st->n; i++) {
        sr__relay_free(&st->ws[i].relay[0]);
        sr__relay_free(&st->ws[i].relay[1]);
        sr__tail_free(&st->ws[i].tail);
        sr__buf_free(&st->ws[i].result);
        for (int s = 0; s < SR__NSTREAMS; s++)
            if (st->ws[i].fd[s] >= 0) close(st->ws[i].fd[s]);
    }
    free(st->ws);
    st->ws = NULL;
    st->n = 0;
}

/* Forks this agent's workers for the current attempt. */
static void start_attempt(sr__attempt *st, sr__run *run) {
    int n = run->layout.spawn_count;
    run->layout.restart_count = run->rdzv.attempt; /* TORCHELASTIC_RESTART_COUNT, sr_restart_count() */
    sr__run_apply_world(run);                      /* an elastic job: this attempt's nnodes and node rank */
    *st = (sr__attempt){.ws = sr__calloc((size_t)n, sizeof(sr__worker)),
                        .failed = -1,
                        .blamed = -1,
                        .want = n,
                        .first_rank = run->layout.node_rank * run->layout.nproc_per_node + run->layout.first_local};
    sr__watchdog_begin(watchdog, n, run->rdzv.attempt);
    if (!st->ws) { /* no worker starts: the run fails here and on every other node */
        char msg[200];
        snprintf(msg, sizeof msg, "node %d's shardrun ran out of memory for the records of %d workers (%zu bytes)",
                 run->layout.node_rank, n, (size_t)n * sizeof(sr__worker));
        sr__log(SR_LOG_ERROR, "%s; free some memory and run the job again", msg);
        tell_failure(run, msg, SR__FAIL_FINAL);
    }
    for (int i = 0; st->ws && i < n; i++) {
        sr__worker *w = &st->ws[i];
        w->local_rank = run->layout.first_local + i;
        w->rank = run->layout.node_rank * run->layout.nproc_per_node + w->local_rank;
        for (int s = 0; s < SR__NSTREAMS; s++) w->fd[s] = -1;
        sr__progress_init(&w->progress);
        if (start_worker(run, w, st->ws, i) != 0) {
            sr__log(SR_LOG_ERROR, "cannot start rank %d: %s", w->rank, strerror(errno));
            begin_stop(st, SIGTERM, run->settings.shutdown_grace, 1);
            break;
        }
        st->n++;
    }
    if (!st->ws) return; /* supervise() says why, and the run fails */
    int world = run->layout.nnodes * run->layout.nproc_per_node;
    char again[48] = "";
    if (run->rdzv.attempt) snprintf(again, sizeof again, ", restart %d", run->rdzv.attempt);
    if (st->n == 1)
        sr__log(SR_LOG_INFO, "started 1 worker (rank %d of %d%s%s%s)", st->ws[0].rank, world,
                run->layout.per_process ? ", one process of " : "", run->layout.per_process ? run->layout.launcher : "",
                again);
    else
        sr__log(SR_LOG_INFO, "started %d workers (ranks %d-%d of %d%s)", st->n, st->n ? st->ws[0].rank : 0,
                st->n ? st->ws[st->n - 1].rank : 0, world, again);
}

/* After an attempt: anything still in a worker's group, then every child we inherited.  Between
   attempts only what already ended is reaped (the guardian, our child too, lives on); at the end
   the guardian is gone and the orphans of the workers get a second to die. */
static void clear_leftovers(sr__attempt *st, const sr__run *run, int last) {
    for (int i = 0; i < st->n; i++) kill(-st->ws[i].pid, SIGKILL);
    if (!last) {
        while (waitpid(-1, NULL, WNOHANG) > 0) {}
        sr__shm_sweep(run->rdzv.token); /* segments of workers killed while a group was being created */
        return;
    }
    sr__guardian_release(); /* every group is stopped: the guardian goes without killing anything */
    double until = sr__now_s() + 1.0;
    while (sr__now_s() < until) {
        pid_t p = waitpid(-1, NULL, WNOHANG);
        if (p < 0) break; /* ECHILD: nothing left */
        if (p == 0) usleep(2000);
    }
    sr__shm_sweep(run->rdzv.token);
}

static int exit_code(const sr__attempt *st, const sr__run *run) {
    if (st->failed_elsewhere && run->rdzv.failed_config)
        return SR__EXIT_CONFIG; /* agents started with different jobs */
    if (st->failed >= 0 && exited_config(st->ws[st->failed].status)) return SR__EXIT_CONFIG;
    if (st->preempting) return SR__EXIT_SIGNAL_BASE + SIGTERM;
    if (st->failed >= 0 || st->failed_elsewhere || st->hang[0]) return SR__EXIT_FAILED;
    if (st->agent_signal) return signal_exit(st->agent_signal);
    if (st->n < st->want) return SR__EXIT_FAILED;
    return SR__EXIT_OK;
}

/* A main task's [task] keys that no rank of this agent read (sr_config*) when main() returned: a
   misspelt key, or one of another section (`[task] hang_timeout` is [shardrun]'s), did nothing.
   A model task's are checked before any worker starts (key_probe.c); a main task's can be known
   only once it ran.  With one agent the run fails (exit 2); with several, each knows only its own
   ranks (a key read by another node's rank only is no error), so it warns.  1: the run fails. */
static int unread_task_keys(const sr__attempt *st, const sr__run *run) {
    if (run->task.type != SR__TASK_SO || run->task.kind != SR_TASK_MAIN || st->n < 1) return 0;
    int fatal = run->rdzv.nagents < 2, any = 0;
    const char *list = st->ws[0].progress.unread;
    if (!st->ws[0].progress.keys_said) return 0;
    for (const char *p = list; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p), klen = strcspn(p, " ");
        int everywhere = 1;
        for (int i = 1; i < st->n && everywhere; i++) {
            const sr__progress *q = &st->ws[i].progress;
            if (!q->keys_said) continue;
            int found = 0;
            for (const char *r = q->unread; *r && !found;) {
                found = !strncmp(r, p, klen) && r[klen] == ' ';
                r = strchr(r, '\n');
                r = r ? r + 1 : "";
            }
            everywhere = found;
        }
        if (everywhere) {
            const char *k = run->rdzv.nagents < 2 ? "" : " of this node";
            sr__log(fatal ? SR_LOG_ERROR : SR_LOG_WARN,
                    "%.*s: [task] %.*s was never read by the task (no rank%s asked for it with sr_config): check its "
                    "spelling, or whether it belongs to another section ([shardrun] hang_timeout, say)",
                    (int)(len - klen > 0 ? len - klen - 1 : 0), p + klen + 1, (int)klen, p, k);
            any = 1;
        }
        p = nl ? nl + 1 : p + len;
    }
    return fatal && any;
}

int sr__launch(sr__run *run, const char *results_path) {
    char why[4600];
    if (results_path && (run->rdzv.nagents < 2 || run->rdzv.hosting) &&
        sr__probe_results(results_path, run, why, sizeof why) != 0) {
        sr__log(SR_LOG_ERROR, "--results: %s (checked before any worker starts)", why);
        sr__rdzv_free(&run->rdzv);
        return SR__EXIT_CONFIG;
    }
    if (pipe2(self_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        sr__log(SR_LOG_ERROR, "cannot create the supervisor's pipe: %s", strerror(errno));
        sr__rdzv_free(&run->rdzv);
        return SR__EXIT_FAILED;
    }
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    install_handlers();
    sr__store_link_fork_begin(run->rdzv.link); /* the guardian is a forked child too */
    int guardian = sr__guardian_start();
    sr__store_link_fork_end(run->rdzv.link);
    if (guardian != 0)
        sr__log(SR_LOG_WARN,
                "no guardian process (%s): if this shardrun is killed outright, what its tasks "
                "started in the background may be left running",
                strerror(errno));
    watchdog = sr__watchdog_new(run);
    sr__attempt st;
    int code = -1;
    while (1) {
        start_attempt(&st, run);
        supervise(&st, run);
        /* (an agent asked to stop or leave does not stay for a new leader) */
        int over = !st.restart && (!sr__rdzv_can_fail_over(&run->rdzv) || st.agent_signal);
        clear_leftovers(&st, run, over);
        if (over) break;
        /* every agent stopped its workers: the job starts again, with the same environment but
           TORCHELASTIC_RESTART_COUNT, and a model task resumes from its newest checkpoint.  With etcd,
           a leader that went away is replaced first */
        if (!st.restart || (!run->rdzv.hosting && (code = await_start(&st, run)) != 0)) {
            if (st.agent_signal || !sr__rdzv_can_fail_over(&run->rdzv) || (code = fail_over(run)) != 0) break;
            free_workers(&st);
            continue;
        }
        free_workers(&st);
        sr__rdzv_report(&run->rdzv, &(sr__rdzv_news){.kind = SR__RDZV_NEXT});
        if (run->rdzv.restart_delay_s > 0 || run->rdzv.nagents > 1)
            sr__log(SR_LOG_DEBUG, "attempt %d begins", run->rdzv.attempt);
    }
    if (code >= 0) clear_leftovers(&st, run, 1); /* interrupted between attempts */
    if (code < 0) code = exit_code(&st, run);
    if (code == SR__EXIT_OK && unread_task_keys(&st, run)) code = SR__EXIT_CONFIG;
    sr__print_summary(&st, run);
    /* the results list, with every rank's exit code, also when the run failed (not when agents
       started with different jobs were refused: that run never was) */
    if (!run->rdzv.refused_at && sr__write_results(&st, run, results_path) != 0 && code == SR__EXIT_OK)
        code = SR__EXIT_FAILED;
    for (int i = 0; i < st.n; i++)
        for (int k = 0; k < 2; k++)
            if (st.ws[i].relay[k].write_errno) {
                sr__log(SR_LOG_ERROR, "rank %d's output was lost: cannot write to %s: %s", st.ws[i].rank,
                        k == SR__OUT ? "stdout" : "stderr", strerror(st.ws[i].relay[k].write_errno));
                if (code == SR__EXIT_OK) code = SR__EXIT_FAILED;
                i = st.n; /* once */
                break;
            }
    sr__rdzv_free(&run->rdzv);
    free_workers(&st);
    sr__watchdog_free(watchdog);
    watchdog = NULL;
    close(self_pipe[0]), close(self_pipe[1]);
    return code;
}
