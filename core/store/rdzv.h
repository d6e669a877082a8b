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
 *
 * Errors: sr__rdzv_prepare fills diag; later failures (a host gone, an agent lost) become the phase
 * and r->failed_elsewhere.  Never prints.  The work is split by who does it (node 0's agent, the
 * others, restarts; store/rdzv_internal.h says which file does what), and the keys and values
 * agents exchange are in store/rdzv_protocol.h.
 */
#ifndef SR_CORE_RDZV_H
#define SR_CORE_RDZV_H

#include <poll.h>
#include <stddef.h>

#include "base/diag.h"
#include "base/strbuf.h"
#include "store/store.h"

typedef enum sr__rdzv_phase {
    SR_RDZV_RUNNING = 0, /* no verdict for this attempt yet */
    SR_RDZV_RESTART,     /* this attempt ends; the job starts again */
    SR_RDZV_FAILED,
    SR_RDZV_PREEMPTED,
    SR_RDZV_SUCCEEDED
} sr__rdzv_phase;

/* What a failure report says of the failure (the host decides what follows). */
typedef enum sr__rdzv_failure {
    SR_FAIL_FINAL = 'f',     /* never retried: before training began, or an interrupted agent */
    SR_FAIL_CONFIG = 'c',    /* a configuration error (exit 2), or agents started with different jobs */
    SR_FAIL_RETRYABLE = 'x', /* a rank failed once its work had begun, or an agent went away */
    SR_FAIL_STOPPED = 's',   /* never retried: a rank was asked to stop (SIGTERM, SIGINT, SIGHUP) */
    SR_FAIL_PREEMPT = 'p'    /* not a failure: an agent was asked to stop with a checkpoint */
} sr__rdzv_failure;

/* Hosting agent: where another agent stands in the run (its current join). */
typedef enum sr__rdzv_peer_state {
    SR_PEER_UNSEEN = 0, /* no join answered yet */
    SR_PEER_REFUSED,    /* its first join was refused: it read why and leaves (the run fails) */
    SR_PEER_ACCEPTED,   /* accepted: its workers take part in the current attempt */
    SR_PEER_BACK,       /* accepted while the job restarts (it came back, or came late): it is
                           ready for the next attempt, and ACCEPTED once that starts */
    SR_PEER_GONE        /* it was accepted and went away: it must come back (a later join) while
                           the job restarts, or the restart is called off */
} sr__rdzv_peer_state;

/* Hosting agent: what it knows of another agent (index 1 .. nagents-1). */
typedef struct sr__rdzv_peer {
    sr__rdzv_peer_state state;
    int node;          /* its node, from its fingerprint's #node line (-1 without one; 0 before
                         its fingerprint arrived) */
    int answered;      /* the last of its joins answered (accepted or refused); 0: none */
    int join;          /* its accepted join: its "alive" key run/alive/<agent>/<join> names it */
    int watching;      /* its "alive" wait was seen, so the wait's end means it went away */
    double last_heard; /* when it was last heard from (sr__now_s): its accepted join; the hang
                          watchdog's heartbeats will refresh it.  0: never */
    int silent;        /* the hang watchdog found it silent (stopped, or cut off): the verdict's
                         acknowledgement is not awaited from it */
} sr__rdzv_peer;

typedef struct sr__rdzv {
    /* where the store is (workers and other agents connect there) */
    int enabled;
    char host[256];
    int port;
    char token[128]; /* every connection presents it */
    /* this agent, the run, and its limits */
    int hosting;             /* this agent runs the store server (and decides) */
    int nagents, agent_id;   /* agents of the run, and this one's index */
    const char *fingerprint; /* this agent's (owned by the caller) */
    char job_id[80];         /* one launch of the job: random, from node 0, the same on every agent
                                and in every attempt; a model task restarted by shardrun resumes only
                                from checkpoints this launch wrote */
    char requeue_key[96];    /* under Slurm: "slurm-<job id>-<digest of the job's fingerprint>", what a
                                requeued launch of the same job shares with the launch before it
                                (another run in the same allocation, or another configuration, has
                                another); "" elsewhere */
    int max_restarts;
    double restart_delay_s, rejoin_timeout_s;
    double timeout_s;     /* [shardrun] rdzv_timeout */
    double ack_timeout_s; /* hosting agent: how long agents may take to read the verdict */
    /* the current attempt, and what became of it */
    int attempt;                   /* the job-wide attempt: 0, then one more per restart */
    sr__rdzv_phase phase;          /* what this agent knows of the current attempt */
    int reported_failure;          /* this agent reported the run's failure itself */
    char failed_elsewhere[1024];   /* the failure that decided the phase, as text */
    int failed_node;               /* the node of the failure reported elsewhere, -1 when unknown */
    int failed_config;             /* that failure was a configuration mismatch: exit 2, not 1 */
    sr__rdzv_failure decided_kind; /* deciding agent: the failure that decided the phase, 0: none */
    sr__buf attempts;              /* hosting agent: one line per attempt that failed */
    int restart_called_off;        /* the last restart never began (a node did not come back, a signal) */
    /* hosting agent */
    sr__store_server *server;
    unsigned long server_oom_said; /* its out-of-memory refusals already in the log */
    sr__rdzv_peer *peers;          /* one per agent; [0] (this one) unused */
    double refused_at;             /* when it refused an agent's fingerprint, 0: never */
    double outcome_at;             /* when it sent the final verdict, 0: not yet */
    double restart_at;             /* when it decided the restart */
    /* other agents */
    sr__store *ctl;    /* for reporting */
    sr__store *watch;  /* a pending wait on the verdict (or the next attempt's start) */
    sr__store *alive;  /* holds a wait on run/alive/<agent>/<join> for its whole life: the host
                               learns that it went away when the wait is gone */
    int watch_closed;  /* the watch's wait ended (it was read) */
    int waiting_start; /* the watch waits for the next attempt's start */
    int start_ready;   /* the next attempt's start arrived */
    int acked;         /* told the host the verdict was read */
    int host_lost;     /* the hang watchdog found node 0's agent silent: this agent decided the run
                               failed on its own and talks to the store no more (sr__rdzv_lose_host) */
} sr__rdzv;

/* What the run decided that the rendezvous needs (filled by run/run.c from the layout and the
   [shardrun] keys): the store layer sees nothing else of the run. */
typedef struct sr__rdzv_args {
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
} sr__rdzv_args;

/* Decides host, port and token (into r), starts or reaches the store; another agent is accepted
   into an attempt (r->attempt), and waits for that attempt's start when it is not the first.
   Errors go to diag; returns 0, SR__RDZV_UNREACHABLE when node 0's shardrun did not answer within
   rdzv_timeout, or its store failed or went away while this agent joined (a failed run: exit 1,
   not a configuration error), or -1 (the rest: diag says which). */
#define SR__RDZV_UNREACHABLE (-3)
int sr__rdzv_prepare(sr__rdzv *r, const sr__rdzv_args *a, sr__diag *diag);
int sr__rdzv_pollfds(sr__rdzv *r, struct pollfd *pfds, int max);
/* Serves/reads what poll reported, and decides (hosting agent): r->phase, and r->failed_elsewhere
   for why, say what became of the attempt. */
void sr__rdzv_handle(sr__rdzv *r, const struct pollfd *pfds, int n);
int sr__rdzv_timeout_ms(const sr__rdzv *r);
/* Publishes a failure of this attempt (node: where it happened; host: its name, or NULL); the
   hosting agent decides what follows from the first one. */
void sr__rdzv_report_failure(sr__rdzv *r, int node, const char *what, sr__rdzv_failure kind);
/* Hands node 0 this agent's ranks' result objects (JSON, comma-separated), also when the run failed,
   and, when every rank of this agent succeeded, reports it done.  Returns 1 when the results could
   not be handed to node 0 (too large, or the store refused) and stay in this node's output only. */
int sr__rdzv_report_done(sr__rdzv *r, const char *results, size_t len, int succeeded);
/* Hosting agent: the results another agent reported, or NULL. */
const char *sr__rdzv_results(const sr__rdzv *r, int agent, size_t *len);
/* Hosting agent: every agent it refused or gave the verdict has read it (or had its time to): it
   may stop serving.  1 for the other agents. */
int sr__rdzv_settled(const sr__rdzv *r);
/* Hosting agent: every agent is done and nothing failed: the verdict is success. */
void sr__rdzv_succeed(sr__rdzv *r);
/* Whether this attempt's outcome is known here; 1 for the host and a lone agent once decided. */
int sr__rdzv_outcome_known(const sr__rdzv *r);
/* Other agents: tells the host the verdict was read (after reporting this agent's results). */
void sr__rdzv_ack(sr__rdzv *r);
/* Hosting agent: every agent reported done. */
int sr__rdzv_all_done(const sr__rdzv *r);

/* RESTART, once this agent's workers are all gone: other agents report it and start waiting for
   the next attempt's start.  0 or -1 (the host went away: r->failed_elsewhere says so). */
int sr__rdzv_stopped(sr__rdzv *r);
/* RESTART: 1 when the next attempt may start (host: every agent stopped or came back, and
   restart_delay passed; others: the host said so), 0 not yet, -1 it never will (phase FAILED,
   r->failed_elsewhere says why: a node that did not come back, the host gone). */
int sr__rdzv_restart_ready(sr__rdzv *r);
/* RESTART -> RUNNING in the next attempt (host: tells every agent to start). */
void sr__rdzv_next_attempt(sr__rdzv *r);
/* RESTART, this agent was interrupted (a signal): the hosting agent calls the restart off (every
   agent waiting for the next attempt hears `what` and fails); another agent tells the host so. */
void sr__rdzv_abandon_restart(sr__rdzv *r, const char *what);
/* Other agents: node 0's agent stopped answering (its store is unreachable or stopped: the hang
   watchdog saw no news from it for hang_timeout).  The attempt fails here with `what`, without
   waiting for a verdict that cannot come; from now on no call touches the store (it could block
   for good). */
void sr__rdzv_lose_host(sr__rdzv *r, const char *what);
/* Hosting agent: agent `agent` stopped answering (the hang watchdog): the run does not wait for it
   to read the verdict. */
void sr__rdzv_peer_silent(sr__rdzv *r, int agent);
void sr__rdzv_free(sr__rdzv *r);

#endif
