/*
 * The agents' side of the rendezvous: where the store lives, its token, how agents learn that the
 * run failed, must start again or stop elsewhere, and who decides.
 *
 * Lifecycle (agent): sr__rdzv_prepare() before the workers start (the agent holding rank 0 hosts
 * the store server and decides; every other agent connects, publishes the run's fingerprint and
 * is accepted into an attempt: the first, or, when it comes back after its node was lost, the next
 * one) -> per attempt, inside the supervisor's poll loop: pollfds / handle (the hosting agent
 * compares fingerprints as they arrive and notices an agent that goes away) ->
 * sr__rdzv_report_failure() / sr__rdzv_report_done() -> the hosting agent decides (sr__rdzv_phase):
 *   SUCCEEDED   every agent is done and nothing failed (sr__rdzv_succeed)
 *   FAILED      a failure that may not or can no longer be retried
 *   RESTART     a rank failed after training began and restarts are left: every agent stops its
 *               workers and reports it (sr__rdzv_stopped); once all did (an agent that went away must
 *               come back within rdzv_timeout) and restart_delay passed (sr__rdzv_restart_ready),
 *               sr__rdzv_next_attempt() starts the next attempt everywhere
 *   PREEMPTED   an agent was asked to stop (SIGTERM): every rank stops with a checkpoint
 * -> for a final verdict the host serves until every agent read it (sr__rdzv_settled); the other
 * agents exit only once they know it (sr__rdzv_outcome_known, then sr__rdzv_ack) ->
 * sr__rdzv_free().  Workers reach the store at host/port with token; their keys are scoped by
 * the attempt (pg/world.h).
 *
 * A fingerprint is text, one "name=value" line each, sorted; lines starting with '#' describe the
 * agent (host, node) and are not compared.
 */
#ifndef SR_CORE_RDZV_H
#define SR_CORE_RDZV_H

#include <poll.h>
#include <stddef.h>

#include "base/diag.h"
#include "base/strbuf.h"
#include "store/store.h"

typedef enum sr_rdzv_phase {
    SR_RDZV_RUNNING = 0, /* no verdict for this attempt yet */
    SR_RDZV_RESTART,     /* this attempt ends; the job starts again */
    SR_RDZV_FAILED,
    SR_RDZV_PREEMPTED,
    SR_RDZV_SUCCEEDED
} sr_rdzv_phase;

/* What a failure report says of the failure (the host decides what follows). */
typedef enum sr_rdzv_failure {
    SR_FAIL_FINAL = 'f',     /* never retried: before training began, or an interrupted agent */
    SR_FAIL_CONFIG = 'c',    /* a configuration error (exit 2), or agents started with different jobs */
    SR_FAIL_RETRYABLE = 'x', /* a rank failed once its work had begun, or an agent went away */
    SR_FAIL_STOPPED = 's',   /* never retried: a rank was asked to stop (SIGTERM, SIGINT, SIGHUP) */
    SR_FAIL_PREEMPT = 'p'    /* not a failure: an agent was asked to stop with a checkpoint */
} sr_rdzv_failure;

typedef struct sr_rdzv {
    int enabled;
    char host[256];         /* where the store is (workers and other agents connect there) */
    int port;
    char token[128];        /* every connection presents it */
    int hosting;            /* this agent runs the store server (and decides) */
    int nagents, agent_id;  /* agents of the run, and this one's index */
    int attempt;            /* the job-wide attempt: 0, then one more per restart */
    int max_restarts;
    double restart_delay_s, rejoin_timeout_s;
    sr_rdzv_phase phase;    /* what this agent knows of the current attempt */
    sr_store_server *server;
    sr_store *watch;        /* other agents: a pending wait on the outcome (or the next start) */
    sr_store *ctl;          /* other agents: for reporting */
    sr_store *alive;        /* other agents: holds a wait on run/alive/<agent>/<join> for its whole life:
                               the host learns that it went away when the wait is gone */
    int watch_closed;
    int waiting_start;      /* other agents: the watch waits for the next attempt's start */
    int start_ready;        /* other agents: the next attempt's start arrived */
    double timeout_s;       /* [shardrun] rdzv_timeout */
    const char *fingerprint; /* this agent's (owned by the caller) */
    unsigned char *checked;  /* hosting agent: 1 accepted, 2 refused (the agent's current join) */
    int *joins;              /* hosting agent: each agent's accepted join (its alive key names it) */
    int *answered;           /* hosting agent: each agent's last join answered (accepted or refused) */
    unsigned char *gone;     /* hosting agent: the agent went away and must come back */
    unsigned char *back;     /* hosting agent: the agent was accepted while the job restarts (it came
                                back, or came late): it is ready for the next attempt */
    int failed_node;         /* the node of the failure reported elsewhere, -1 when unknown */
    int failed_config;       /* that failure was a configuration mismatch: exit 2, not 1 */
    int outcome_ok;          /* other agents: the verdict is that every rank succeeded */
    int acked;               /* other agents: told the host the verdict was read */
    double refused_at;       /* hosting agent: when it refused an agent's fingerprint, 0: never */
    double outcome_at;       /* hosting agent: when it sent the verdict, 0: not yet */
    double restart_at;       /* hosting agent: when it decided the restart */
    double ack_timeout_s;    /* hosting agent: how long agents may take to read the verdict */
    unsigned char *watching; /* hosting agent: the agent's "alive" wait was seen (so its end means it left) */
    int *agent_node;         /* hosting agent: each agent's node (from its fingerprint) */
    int reported_failure;    /* this agent reported the run's failure itself */
    char failed_elsewhere[1024]; /* the failure that decided the phase, as text */
    sr_buf attempts;         /* hosting agent: one line per attempt that failed */
    char decided_kind;       /* deciding agent: the sr_rdzv_failure that decided the phase, 0: none */
    char job_id[80];         /* one launch of the job: random, from node 0, the same on every agent
                                and in every attempt; a model task restarted by shardrun resumes only
                                from checkpoints this launch wrote */
    char requeue_key[96];    /* under Slurm: "slurm-<job id>-<digest of the job's fingerprint>", what a
                                requeued launch of the same job shares with the launch before it
                                (another run in the same allocation, or another configuration, has
                                another); "" elsewhere */
    int restart_called_off;  /* the last restart never began (a node did not come back, a signal) */
} sr_rdzv;

/* What the run decided that the rendezvous needs (filled by run/run.c from the layout and the
   [shardrun] keys): the store layer sees nothing else of the run. */
typedef struct sr_rdzv_args {
    int nagents, agent_id; /* agents of the run, and this one's index */
    int need_store;        /* 0: one agent running an exec: task, whose program forms its own group */
    const char *master_addr;
    int master_port;
    const char *port_value, *port_where; /* [shardrun] rdzv_port as resolved, and where it was set */
    double timeout_s;                    /* [shardrun] rdzv_timeout */
    int per_process;                     /* a launcher started each agent as one rank */
    const char *launcher_job_id;         /* what every process of that launch shares, or "" */
    const char *fingerprint;             /* what defines the run, as this agent sees it */
    double ack_timeout_s;                /* how long the host waits for agents to read the verdict */
    int max_restarts;                    /* [shardrun] max_restarts */
    double restart_delay_s;              /* [shardrun] restart_delay */
} sr_rdzv_args;

/* Decides host, port and token (into r), starts or reaches the store; another agent is accepted
   into an attempt (r->attempt), and waits for that attempt's start when it is not the first.
   Errors go to diag; returns 0 or -1. */
int sr__rdzv_prepare(sr_rdzv *r, const sr_rdzv_args *a, sr_diag *diag);
int sr__rdzv_pollfds(sr_rdzv *r, struct pollfd *pfds, int max);
/* Serves/reads what poll reported, and decides (hosting agent): r->phase, and r->failed_elsewhere
   for why, say what became of the attempt. */
void sr__rdzv_handle(sr_rdzv *r, const struct pollfd *pfds, int n);
int sr__rdzv_timeout_ms(const sr_rdzv *r);
/* Publishes a failure of this attempt (node: where it happened; host: its name, or NULL); the
   hosting agent decides what follows from the first one. */
void sr__rdzv_report_failure(sr_rdzv *r, int node, const char *what, sr_rdzv_failure kind);
/* Hands node 0 this agent's ranks' result objects (JSON, comma-separated), also when the run failed,
   and, when every rank of this agent succeeded, reports it done.  Returns 1 when the results could
   not be handed to node 0 (too large, or the store refused) and stay in this node's output only. */
int sr__rdzv_report_done(sr_rdzv *r, const char *results, size_t len, int succeeded);
/* Hosting agent: the results another agent reported, or NULL. */
const char *sr__rdzv_results(const sr_rdzv *r, int agent, size_t *len);
/* Hosting agent: every agent it refused or gave the verdict has read it (or had its time to): it
   may stop serving.  1 for the other agents. */
int sr__rdzv_settled(const sr_rdzv *r);
/* Hosting agent: every agent is done and nothing failed: the verdict is success. */
void sr__rdzv_succeed(sr_rdzv *r);
/* Whether this attempt's outcome is known here; 1 for the host and a lone agent once decided. */
int sr__rdzv_outcome_known(const sr_rdzv *r);
/* Other agents: tells the host the verdict was read (after reporting this agent's results). */
void sr__rdzv_ack(sr_rdzv *r);
/* Hosting agent: every agent reported done. */
int sr__rdzv_all_done(const sr_rdzv *r);

/* RESTART, once this agent's workers are all gone: other agents report it and start waiting for
   the next attempt's start.  0 or -1 (the host went away: r->failed_elsewhere says so). */
int sr__rdzv_stopped(sr_rdzv *r);
/* RESTART: 1 when the next attempt may start (host: every agent stopped or came back, and
   restart_delay passed; others: the host said so), 0 not yet, -1 it never will (phase FAILED,
   r->failed_elsewhere says why: a node that did not come back, the host gone). */
int sr__rdzv_restart_ready(sr_rdzv *r);
/* RESTART -> RUNNING in the next attempt (host: tells every agent to start). */
void sr__rdzv_next_attempt(sr_rdzv *r);
/* RESTART, this agent was interrupted (a signal): the hosting agent calls the restart off (every
   agent waiting for the next attempt hears `what` and fails); another agent tells the host so. */
void sr__rdzv_abandon_restart(sr_rdzv *r, const char *what);
void sr__rdzv_free(sr_rdzv *r);

#endif
