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
#include "agent/output.h"
#include "base/clock.h"
#include "base/log.h"
#include "worker/worker.h"

enum { OUT = 0, ERR = 1, RES = 2, NSTREAMS = 3 };

typedef struct sr_worker {
    pid_t pid;
    int local_rank, rank;
    int fd[NSTREAMS]; /* read ends; -1 when closed */
    sr_relay relay[2];
    sr_tail tail;
    sr_buf result;
    int reaped, status;
} sr_worker;

static int self_pipe[2] = {-1, -1};

static void on_signal(int sig) {
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    if (write(self_pipe[1], &b, 1) < 0) { /* full pipe: a wake-up is already pending */ }
    errno = saved;
}

static const char *sig_name(int sig, char *buf, size_t len) {
    const char *abbrev = sigabbrev_np(sig);
    snprintf(buf, len, "SIG%s", abbrev ? abbrev : "?");
    return buf;
}

static void install_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) sigaction(sigs[i], &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static void reset_handlers_in_child(void) {
    int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) signal(sigs[i], SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Whether output written to fd reaches a person's terminal, so progress may be redrawn in place.
   Under a launcher it never does for sure: Open MPI hands every process a pseudo-terminal even
   when mpirun's own output goes to a file, and Slurm writes it to the job's .out file. */
static int is_terminal(const sr_run *run, int fd) { return !run->layout.cluster_source && isatty(fd); }

static int start_worker(sr_run *run, sr_worker *w, sr_worker *all, int nstarted) {
    int p[NSTREAMS][2];
    for (int s = 0; s < NSTREAMS; s++)
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
    pid_t pid = fork();
    if (pid != 0) sigprocmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) return -1;
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != agent) _exit(SR_EXIT_FAILED); /* the agent died between fork and prctl */
        reset_handlers_in_child();
        close(self_pipe[0]), close(self_pipe[1]);
        if (sr__guardian_fd() >= 0) close(sr__guardian_fd());
        for (int i = 0; i < nstarted; i++)
            for (int s = 0; s < NSTREAMS; s++)
                if (all[i].fd[s] >= 0) close(all[i].fd[s]);
        for (int s = 0; s < NSTREAMS; s++) close(p[s][0]);
        run->stdout_tty = is_terminal(run, STDOUT_FILENO); /* where the relayed output ends up */
        dup2(p[OUT][1], STDOUT_FILENO);
        dup2(p[ERR][1], STDERR_FILENO);
        close(p[OUT][1]), close(p[ERR][1]);
        sr__worker_run(run, w->local_rank, p[RES][1]);
    }
    setpgid(pid, pid); /* also here, so the group exists before we ever signal it */
    sr__guardian_watch(pid);
    w->pid = pid;
    for (int s = 0; s < NSTREAMS; s++) {
        close(p[s][1]);
        w->fd[s] = p[s][0];
        fcntl(w->fd[s], F_SETFL, O_NONBLOCK);
    }
    for (int s = 0; s < 2; s++) {
        w->relay[s].rank = w->rank;
        w->relay[s].out_fd = s == OUT ? STDOUT_FILENO : STDERR_FILENO;
        w->relay[s].tty = is_terminal(run, w->relay[s].out_fd);
        w->relay[s].tail = &w->tail;
    }
    return 0;
}

static void signal_groups(sr_worker *ws, int n, int sig) {
    for (int i = 0; i < n; i++)
        if (ws[i].pid > 0 && !ws[i].reaped) kill(-ws[i].pid, sig);
}

static int exited_config(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == SR_EXIT_CONFIG; }

static void describe_status(int status, char *buf, size_t len) {
    char name[32];
    if (WIFEXITED(status)) snprintf(buf, len, "exited with code %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "was killed by signal %s (%d)%s", sig_name(WTERMSIG(status), name, sizeof name),
                 WTERMSIG(status), WCOREDUMP(status) ? ", core dumped" : "");
    else snprintf(buf, len, "ended with status 0x%x", status);
}

static void read_stream(sr_worker *w, int s) {
    char buf[65536];
    while (1) {
        ssize_t n = read(w->fd[s], buf, sizeof buf);
        if (n > 0) {
            if (s == RES) {
                if (w->result.n < (1 << 20)) sr__buf_add(&w->result, buf, (size_t)n);
            } else {
                sr__relay_feed(&w->relay[s], buf, (size_t)n);
            }
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        if (s != RES) sr__relay_flush(&w->relay[s]);
        close(w->fd[s]);
        w->fd[s] = -1;
        return;
    }
}

typedef struct supervise_state {
    sr_worker *ws;
    int n;
    int failed;          /* index of the first failed worker, -1 */
    int stop_signal;     /* signal that stopped shardrun, 0 */
    int failed_elsewhere;/* another agent's worker failed first */
    double kill_at;      /* when SIGKILL follows SIGTERM; 0: not stopping */
    int killed;          /* SIGKILL sent */
    int stopped;         /* workers still running when the stop began */
    int results_local;   /* this agent's results could not be handed to node 0: it prints them */
    int want, first_rank; /* the workers this agent was to start, and the first one's rank */
    int blamed;          /* a worker that reported an error before the first failed one, silent, exited; -1 */
} supervise_state;

static void begin_stop(supervise_state *st, sr_run *run, int sig) {
    if (st->kill_at) return;
    for (int i = 0; i < st->n; i++) st->stopped += !st->ws[i].reaped;
    signal_groups(st->ws, st->n, sig);
    st->kill_at = sr__now_s() + run->grace;
}

static int tail_has_error(const sr_tail *t) {
    for (int k = 0; k < t->count; k++) {
        int idx = (t->next - t->count + k + SR_TAIL_LINES) % SR_TAIL_LINES;
        if (strstr(t->lines[idx], "error")) return 1;
    }
    return 0;
}

/* The first worker to fail is not always the cause: when a rank hits an error (a full disk, a bad
   file) and says so, its peers can see the failure through a collective and exit first, without a
   word.  Then the rank that reported an error is the one to name.  -1: name the first failed. */
static int blame(supervise_state *st, int first) {
    for (int i = 0; i < st->n; i++) /* what the workers wrote until now, so their tails are current */
        for (int s = 0; s < NSTREAMS; s++)
            if (st->ws[i].fd[s] >= 0) read_stream(&st->ws[i], s);
    if (tail_has_error(&st->ws[first].tail)) return -1;
    for (int i = 0; i < st->n; i++)
        if (i != first && tail_has_error(&st->ws[i].tail)) return i;
    return -1;
}

static void reap(supervise_state *st, sr_run *run) {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (int i = 0; i < st->n; i++) {
            sr_worker *w = &st->ws[i];
            if (w->pid != pid) continue;
            w->reaped = 1;
            w->status = status;
            int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
            if (!ok && st->failed < 0 && !st->kill_at) {
                st->failed = i;
                st->blamed = blame(st, i);
                char what[160], msg[400];
                describe_status(status, what, sizeof what);
                if (st->blamed >= 0)
                    snprintf(msg, sizeof msg, "rank %d (node %d) reported an error, then rank %d %s",
                             st->ws[st->blamed].rank, run->layout.node_rank, w->rank, what);
                else
                    snprintf(msg, sizeof msg, "rank %d (node %d) %s", w->rank, run->layout.node_rank, what);
                /* a worker that exits 2 found a configuration error: the run's verdict is 2 too */
                sr__rdzv_report_failure(&run->rdzv, run->layout.node_rank, msg, exited_config(status));
                begin_stop(st, run, SIGTERM);
            }
            /* whatever the worker left behind in its group goes with it */
            kill(-pid, SIGKILL);
        }
        /* other pids: orphans of the workers, reaped because we are their subreaper */
    }
}

static int workers_reaped(const supervise_state *st) {
    for (int i = 0; i < st->n; i++)
        if (!st->ws[i].reaped) return 0;
    return 1;
}

static int pipes_closed(const supervise_state *st) {
    for (int i = 0; i < st->n; i++)
        for (int s = 0; s < NSTREAMS; s++)
            if (st->ws[i].fd[s] >= 0) return 0;
    return 1;
}

static void close_pipes(supervise_state *st) {
    for (int i = 0; i < st->n; i++)
        for (int s = 0; s < NSTREAMS; s++)
            if (st->ws[i].fd[s] >= 0) read_stream(&st->ws[i], s), close(st->ws[i].fd[s]), st->ws[i].fd[s] = -1;
}

static void local_results(const supervise_state *st, sr_buf *b);

static void supervise(supervise_state *st, sr_run *run) {
    enum { MAX_RDZV_FDS = 4200 };
    double all_reaped_at = 0;
    int reported = 0;
    struct pollfd *pfd = calloc((size_t)st->n * NSTREAMS + 1 + MAX_RDZV_FDS, sizeof *pfd);
    while (1) {
        int local_done = workers_reaped(st) && pipes_closed(st);
        if (local_done && !reported) {
            /* every rank's exit code reaches node 0, also when the run failed */
            int ok = st->failed < 0 && !st->stop_signal && !st->failed_elsewhere && st->n == st->want;
            sr_buf mine = {0};
            local_results(st, &mine);
            if ((st->results_local = sr__rdzv_report_done(&run->rdzv, mine.s ? mine.s : "", mine.n, ok)))
                sr__log(SR_LOG_WARN, "this node's results (%zu bytes) stay in this node's output", mine.n);
            sr__buf_free(&mine);
            reported = 1;
        }
        /* One verdict per run.  The hosting agent decides it: a failure anywhere, or success once
           every agent is done; it serves the store until every agent has read it.  The others
           exit only when they know it (or were interrupted), so no node reports success while
           another one fails. */
        int all_done = local_done && run->rdzv.hosting && sr__rdzv_all_done(&run->rdzv);
        if (all_done && st->failed < 0 && !st->stop_signal && !st->failed_elsewhere) sr__rdzv_succeed(&run->rdzv);
        int decided = run->rdzv.hosting ? st->failed >= 0 || st->stop_signal || st->failed_elsewhere || all_done
                                        : sr__rdzv_outcome_known(&run->rdzv) || st->stop_signal;
        if (local_done && decided) {
            if (!run->rdzv.hosting) sr__rdzv_ack(&run->rdzv);
            if (sr__rdzv_settled(&run->rdzv)) break;
        }
        int np = 0;
        pfd[np++] = (struct pollfd){.fd = self_pipe[0], .events = POLLIN};
        for (int i = 0; i < st->n; i++)
            for (int s = 0; s < NSTREAMS; s++)
                if (st->ws[i].fd[s] >= 0) pfd[np++] = (struct pollfd){.fd = st->ws[i].fd[s], .events = POLLIN};
        int first_rdzv = np;
        np += sr__rdzv_pollfds(&run->rdzv, pfd + np, MAX_RDZV_FDS);
        int timeout = sr__rdzv_timeout_ms(&run->rdzv);
        double t = sr__now_s();
        if (st->kill_at && !st->killed) {
            int k = (int)((st->kill_at - t) * 1000) + 1;
            timeout = timeout < 0 || k < timeout ? (k > 0 ? k : 0) : timeout;
        }
        /* workers gone, pipes still open: check back soon (node 0 may wait long for other nodes) */
        if (all_reaped_at && !pipes_closed(st) && (timeout < 0 || timeout > 50)) timeout = 50;
        if (poll(pfd, (nfds_t)np, timeout) < 0 && errno != EINTR) break;

        if (pfd[0].revents & POLLIN) {
            unsigned char sigs[64];
            ssize_t k = read(self_pipe[0], sigs, sizeof sigs);
            for (ssize_t j = 0; j < k; j++) {
                if (sigs[j] == SIGCHLD) continue;
                if (st->stop_signal || st->kill_at) {
                    /* asked twice: no more grace */
                    signal_groups(st->ws, st->n, SIGKILL);
                    st->killed = 1;
                }
                if (!st->stop_signal) {
                    /* the other agents stop too, rather than wait in collectives for these ranks */
                    char msg[160], name[32];
                    snprintf(msg, sizeof msg, "node %d's shardrun was stopped by %s", run->layout.node_rank,
                             sig_name(sigs[j], name, sizeof name));
                    sr__rdzv_report_failure(&run->rdzv, run->layout.node_rank, msg, 0);
                    st->stop_signal = sigs[j];
                }
                begin_stop(st, run, sigs[j]);
            }
        }
        reap(st, run);
        for (int p = 1; p < first_rdzv; p++) {
            if (!pfd[p].revents) continue;
            for (int i = 0; i < st->n; i++)
                for (int s = 0; s < NSTREAMS; s++)
                    if (st->ws[i].fd[s] == pfd[p].fd) read_stream(&st->ws[i], s);
        }
        /* another agent failed first (even after ours finished: the run as a whole failed) */
        if (sr__rdzv_handle(&run->rdzv, pfd + first_rdzv, np - first_rdzv) && !st->failed_elsewhere &&
            st->failed < 0) {
            st->failed_elsewhere = 1;
            begin_stop(st, run, SIGTERM);
        }
        t = sr__now_s();
        if (st->kill_at && !st->killed && t >= st->kill_at) {
            signal_groups(st->ws, st->n, SIGKILL);
            st->killed = 1;
        }
        if (workers_reaped(st) && !all_reaped_at) all_reaped_at = t;
        /* a process that left its group (setsid) may hold a pipe open: do not wait for it long */
        if (all_reaped_at && t - all_reaped_at > 1.0) close_pipes(st);
    }
    free(pfd);
}

static void print_summary(const supervise_state *st, sr_run *run) {
    char what[128], name[32];
    if (st->failed >= 0) {
        const sr_worker *w = &st->ws[st->failed];
        describe_status(w->status, what, sizeof what);
        if (st->blamed >= 0) {
            /* the rank that exited first only followed the one that reported the error */
            const sr_worker *b = &st->ws[st->blamed];
            sr__log(SR_LOG_ERROR, "rank %d (local rank %d, pid %d) reported an error, then rank %d (local rank %d, "
                    "pid %d) %s without a word", b->rank, b->local_rank, (int)b->pid, w->rank, w->local_rank,
                    (int)w->pid, what);
            w = b;
        } else {
            sr__log(SR_LOG_ERROR, "rank %d (local rank %d, pid %d) %s", w->rank, w->local_rank, (int)w->pid,
                    what);
        }
        if (w->tail.count) {
            fprintf(stderr, "shardrun: last %d line%s of rank %d:\n", w->tail.count, w->tail.count > 1 ? "s" : "",
                    w->rank);
            for (int k = 0; k < w->tail.count; k++) {
                int idx = (w->tail.next - w->tail.count + k + SR_TAIL_LINES) % SR_TAIL_LINES;
                fprintf(stderr, "shardrun:   [rank%d]: %s\n", w->rank, w->tail.lines[idx]);
            }
        } else {
            fprintf(stderr, "shardrun: rank %d printed nothing\n", w->rank);
        }
    } else if (st->stop_signal) {
        fprintf(stderr, "shardrun: interrupted by %s\n", sig_name(st->stop_signal, name, sizeof name));
    } else if (st->failed_elsewhere && run->rdzv.refused_at) {
        sr__log(SR_LOG_ERROR, "%s", run->rdzv.failed_elsewhere); /* this agent refused another's job */
    } else if (st->failed_elsewhere) {
        /* per-process launchers run several agents on one node: "another node" only when it was */
        int same_node = run->rdzv.failed_node == run->layout.node_rank;
        sr__log(SR_LOG_ERROR, "the run failed %s: %s",
                same_node ? "in another shardrun process of this node" : "on another node", run->rdzv.failed_elsewhere);
    }
    int others = st->stopped;
    if (others)
        fprintf(stderr, "shardrun: stopped the %s%d worker%s of this node (%s, then SIGKILL after %gs)%s\n",
                st->failed >= 0 ? "other " : "", others, others > 1 ? "s" : "",
                sig_name(st->stop_signal ? st->stop_signal : SIGTERM, name, sizeof name), run->grace,
                st->killed ? "; some needed SIGKILL" : "");
}

/* This agent's ranks' result objects, one per line, comma-separated. */
static void local_results(const supervise_state *st, sr_buf *b) {
    char name[32];
    for (int i = 0; i < st->n; i++) {
        const sr_worker *w = &st->ws[i];
        if (i) sr__buf_add(b, ",\n", 2);
        sr__buf_add(b, "  ", 2);
        if (w->result.n) sr__buf_add(b, w->result.s, w->result.n);
        else if (w->reaped && WIFEXITED(w->status)) /* exec tasks and crashed tasks report nothing */
            sr__buf_printf(b, "{\"rank\": %d, \"exit_code\": %d}", w->rank, WEXITSTATUS(w->status));
        else if (w->reaped && WIFSIGNALED(w->status))
            sr__buf_printf(b, "{\"rank\": %d, \"exit_code\": null, \"signal\": \"%s\"}", w->rank,
                           sig_name(WTERMSIG(w->status), name, sizeof name));
        else
            sr__buf_printf(b, "{\"rank\": %d, \"exit_code\": null}", w->rank);
    }
    /* ranks this agent never started (a fork that failed) */
    for (int i = st->n; i < st->want; i++)
        sr__buf_printf(b, "%s  {\"rank\": %d, \"exit_code\": null}", i ? ",\n" : "", st->first_rank + i);
}

/* One results list per run: the agent holding rank 0 prints every agent's ranks and writes `path`
   (through a temporary file); the others print and write nothing of it, unless their results
   could not reach node 0. */
static int write_results(const supervise_state *st, sr_run *run, const char *path) {
    if (run->rdzv.nagents > 1 && !run->rdzv.hosting && !st->results_local) return 0;
    sr_buf b = {0}, mine = {0};
    local_results(st, &mine);
    sr__buf_add(&b, "[\n", 2);
    if (run->rdzv.hosting) {
        for (int a = 0; a < run->rdzv.nagents; a++) {
            size_t len = mine.n;
            const char *part = a == run->rdzv.agent_id ? mine.s : sr__rdzv_results(&run->rdzv, a, &len);
            if (b.n > 2) sr__buf_add(&b, ",\n", 2);
            if (part && len) {
                sr__buf_add(&b, part, len);
            } else { /* an agent that never reported (it went away): its ranks' outcome is unknown */
                for (int i = 0; i < st->want; i++)
                    sr__buf_printf(&b, "%s  {\"rank\": %d, \"exit_code\": null}", i ? ",\n" : "", a * st->want + i);
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
    if (path) {
        char *tmp = NULL;
        if (asprintf(&tmp, "%s.tmp.%d", path, (int)getpid()) < 0) tmp = NULL;
        FILE *f = tmp ? fopen(tmp, "w") : NULL;
        if (!f || fwrite(b.s, 1, b.n, f) != b.n || fclose(f) != 0 || rename(tmp, path) != 0) {
            sr__log(SR_LOG_ERROR, "cannot write results to %s: %s", path, strerror(errno));
            if (tmp) unlink(tmp);
            rc = -1;
        }
        free(tmp);
    }
    sr__buf_free(&b);
    return rc;
}

/* Whether the results file can be written where it will be (its temporary name, next to it). */
static int probe_results(const char *path) {
    char *tmp = NULL;
    if (asprintf(&tmp, "%s.tmp.%d", path, (int)getpid()) < 0) return -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644), saved = errno;
    if (fd >= 0) close(fd), unlink(tmp);
    free(tmp);
    errno = saved;
    return fd >= 0 ? 0 : -1;
}

int sr__launch(sr_run *run, const char *results_path) {
    if (results_path && (run->rdzv.nagents < 2 || run->rdzv.hosting) && probe_results(results_path) != 0) {
        sr__log(SR_LOG_ERROR, "cannot write results to %s: %s; fix --results (checked before any worker starts)",
                results_path, strerror(errno));
        sr__rdzv_free(&run->rdzv);
        return SR_EXIT_CONFIG;
    }
    int n = run->layout.spawn_count;
    supervise_state st = {.ws = calloc((size_t)n, sizeof(sr_worker)), .n = 0, .failed = -1, .blamed = -1, .want = n,
                          .first_rank = run->layout.node_rank * run->layout.nproc_per_node + run->layout.first_local};
    if (pipe2(self_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        sr__log(SR_LOG_ERROR, "cannot create the supervisor's pipe: %s", strerror(errno));
        return SR_EXIT_FAILED;
    }
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    install_handlers();
    if (sr__guardian_start() != 0)
        sr__log(SR_LOG_WARN, "no guardian process (%s): if this shardrun is killed outright, what its tasks "
                "started in the background may be left running", strerror(errno));
    for (int i = 0; i < n; i++) {
        sr_worker *w = &st.ws[i];
        w->local_rank = run->layout.first_local + i;
        w->rank = run->layout.node_rank * run->layout.nproc_per_node + w->local_rank;
        for (int s = 0; s < NSTREAMS; s++) w->fd[s] = -1;
        if (start_worker(run, w, st.ws, i) != 0) {
            sr__log(SR_LOG_ERROR, "cannot start rank %d: %s", w->rank, strerror(errno));
            st.failed = -1;
            st.stop_signal = 0;
            begin_stop(&st, run, SIGTERM);
            break;
        }
        st.n++;
    }
    int world = run->layout.nnodes * run->layout.nproc_per_node;
    if (st.n == 1)
        sr__log(SR_LOG_INFO, "started 1 worker (rank %d of %d%s%s)", st.ws[0].rank, world,
                run->layout.per_process ? ", one process of " : "", run->layout.per_process ? run->layout.launcher : "");
    else
        sr__log(SR_LOG_INFO, "started %d workers (ranks %d-%d of %d)", st.n, st.n ? st.ws[0].rank : 0,
                st.n ? st.ws[st.n - 1].rank : 0, world);
    supervise(&st, run);

    /* leftovers: anything still in a worker's group, then every child we inherited */
    for (int i = 0; i < st.n; i++) kill(-st.ws[i].pid, SIGKILL);
    sr__guardian_release(); /* every group is stopped: the guardian goes without killing anything */
    double until = sr__now_s() + 1.0;
    while (sr__now_s() < until) {
        pid_t p = waitpid(-1, NULL, WNOHANG);
        if (p < 0) break; /* ECHILD: nothing left */
        if (p == 0) usleep(2000);
    }

    int code = SR_EXIT_OK;
    if (st.failed_elsewhere && run->rdzv.failed_config) code = SR_EXIT_CONFIG; /* agents started with different jobs */
    else if (st.failed >= 0 && exited_config(st.ws[st.failed].status)) code = SR_EXIT_CONFIG;
    else if (st.failed >= 0 || st.failed_elsewhere) code = SR_EXIT_FAILED;
    else if (st.stop_signal) code = SR_EXIT_SIGNAL_BASE + st.stop_signal;
    else if (st.n < n) code = SR_EXIT_FAILED;
    print_summary(&st, run);
    /* the results list, with every rank's exit code, also when the run failed (not when agents
       started with different jobs were refused: that run never was) */
    if (!run->rdzv.refused_at && write_results(&st, run, results_path) != 0 && code == SR_EXIT_OK)
        code = SR_EXIT_FAILED;
    for (int i = 0; i < st.n; i++)
        for (int k = 0; k < 2; k++)
            if (st.ws[i].relay[k].write_errno) {
                sr__log(SR_LOG_ERROR, "rank %d's output was lost: cannot write to %s: %s", st.ws[i].rank,
                        k == OUT ? "stdout" : "stderr", strerror(st.ws[i].relay[k].write_errno));
                if (code == SR_EXIT_OK) code = SR_EXIT_FAILED;
                i = st.n; /* once */
                break;
            }
    sr__rdzv_free(&run->rdzv);
    for (int i = 0; i < st.n; i++) {
        sr__relay_free(&st.ws[i].relay[0]);
        sr__relay_free(&st.ws[i].relay[1]);
        sr__tail_free(&st.ws[i].tail);
        sr__buf_free(&st.ws[i].result);
        for (int s = 0; s < NSTREAMS; s++)
            if (st.ws[i].fd[s] >= 0) close(st.ws[i].fd[s]);
    }
    free(st.ws);
    close(self_pipe[0]), close(self_pipe[1]);
    return code;
}
