/*
 * The workers of one attempt, as the agent's supervisor (supervisor.c) keeps them and its report
 * (run_report.c) reads them: their pipes, relays, result objects, progress and exit statuses.
 */
#ifndef SR__AGENT_WORKERS_H
#define SR__AGENT_WORKERS_H

#include <sys/types.h>

#include "agent/output.h"
#include "base/progress.h"
#include "base/strbuf.h"
#include "run/run.h"

enum { SR__OUT = 0, SR__ERR = 1, SR__RES = 2, SR__NSTREAMS = 3 };

typedef struct sr__worker {
    pid_t pid;
    int local_rank, rank;
    int fd[SR__NSTREAMS]; /* read ends; -1 when closed */
    sr__relay relay[2];
    sr__tail tail;
    sr__buf result;        /* its result object (progress records removed) */
    sr__progress progress; /* what it said of its work (base/progress.h) */
    int reaped, status;
} sr__worker;

typedef struct sr__attempt {
    sr__worker *ws;
    int n;
    int failed;           /* index of the first failed worker, -1 */
    int agent_signal;     /* the signal shardrun itself received (SIGTERM, SIGINT, ...); 0: none */
    int failed_elsewhere; /* the run failed on another agent first */
    int preempting;       /* SIGTERM or SIGUSR1: every rank stops after its step with a checkpoint */
    int restart;          /* this attempt ended in a restart: the job starts again */
    double kill_at;       /* when SIGKILL follows SIGTERM; 0: not stopping */
    int killed;           /* SIGKILL sent (the grace ran out, or a second signal) */
    int needed_kill;      /* a worker was still alive when SIGKILL was sent */
    int signal_sent;      /* the signal the stop began with (SIGTERM, or the agent's own); 0: none
                             sent (a worker's own preemption) */
    int stopped;          /* workers still running when the stop began */
    int results_local;    /* this agent's results could not be handed to node 0: it prints them */
    int want, first_rank; /* the workers this agent was to start, and the first one's rank */
    int blamed;           /* a worker that reported an error before the first failed one, silent, exited; -1 */
    char hang[900];       /* the hang watchdog stopped this attempt: its one-line finding; "": it did not */
} sr__attempt;

/* run_report.c */
const char *sr__signal_name(int sig, char *buf, size_t len);
void sr__describe_status(int status, char *buf, size_t len);
/* This agent's ranks' result objects, one per line, comma-separated. */
void sr__local_results(const sr__attempt *st, sr__buf *b);
/* The failure, interruption or preemption summary on stderr (nothing after success). */
void sr__print_summary(const sr__attempt *st, sr__run *run);
/* The results list on stdout (the agent holding rank 0, or one whose results stayed local), and
   in `path`.  0, or -1 when it could not be written. */
int sr__write_results(const sr__attempt *st, sr__run *run, const char *path);
/* Whether the results file can be written where it will be, and is neither the job file nor the
   task (base/out_file.h).  0, or -1 with why[]. */
int sr__probe_results(const char *path, const sr__run *run, char *why, size_t len);

#endif
