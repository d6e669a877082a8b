/*
 * The agents' side of the rendezvous: where the store lives, its token, and how agents learn
 * that the run failed elsewhere.
 *
 * Lifecycle (agent): sr__rdzv_prepare() before the workers start (the agent holding rank 0 starts
 * the store server; every other agent connects, publishes the run's fingerprint, waits to be
 * accepted, then watches for the run's verdict) -> inside the supervisor's poll loop: pollfds /
 * handle (the hosting agent compares fingerprints as they arrive and notices an agent that goes
 * away) -> sr__rdzv_report_failure() and sr__rdzv_report_done() -> the hosting agent decides the
 * one verdict of the run (sr__rdzv_succeed() when every agent is done and nothing failed; any
 * failure anywhere otherwise) and serves until every agent read it (sr__rdzv_settled); the other
 * agents exit only once they know it (sr__rdzv_outcome_known, then sr__rdzv_ack) ->
 * sr__rdzv_free().  Workers reach the store at host/port with token.
 *
 * A fingerprint is text, one "name=value" line each, sorted; lines starting with '#' describe the
 * agent (host, node) and are not compared.
 */
#ifndef SR_CORE_RDZV_H
#define SR_CORE_RDZV_H

#include <poll.h>
#include <stddef.h>

#include "base/diag.h"
#include "store/store.h"

typedef struct sr_rdzv {
    int enabled;
    char host[256];         /* where the store is (workers and other agents connect there) */
    int port;
    char token[128];        /* every connection presents it */
    int hosting;            /* this agent runs the store server */
    int nagents, agent_id;  /* agents of the run, and this one's index */
    sr_store_server *server;
    sr_store *watch;        /* other agents: a pending wait on run/failed */
    sr_store *ctl;          /* other agents: for reporting */
    int watch_closed;
    const char *fingerprint; /* this agent's (owned by the caller) */
    unsigned char *checked;  /* hosting agent: the agents whose fingerprint was compared */
    int failed_node;         /* the node of the failure reported elsewhere, -1 when unknown */
    int failed_config;       /* that failure was a configuration mismatch: exit 2, not 1 */
    int outcome_ok;          /* other agents: the verdict is that every rank succeeded */
    int acked;               /* other agents: told the host the verdict was read */
    double refused_at;       /* hosting agent: when it refused an agent's fingerprint, 0: never */
    double outcome_at;       /* hosting agent: when it sent the verdict, 0: not yet */
    double ack_timeout_s;    /* hosting agent: how long agents may take to read the verdict */
    unsigned char *watching; /* hosting agent: 1 an agent was seen waiting for the verdict, 2 it went away */
    int *agent_node;         /* hosting agent: each agent's node (from its fingerprint) */
    int reported_failure;   /* this agent reported the run's failure itself */
    char failed_elsewhere[1024];
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
} sr_rdzv_args;

/* Decides host, port and token (into r), starts or reaches the store.  Errors go to diag;
   returns 0 or -1. */
int sr__rdzv_prepare(sr_rdzv *r, const sr_rdzv_args *a, sr_diag *diag);
int sr__rdzv_pollfds(sr_rdzv *r, struct pollfd *pfds, int max);
/* Serves/reads what poll reported.  Returns 1 once the run failed on another agent
   (r->failed_elsewhere says how). */
int sr__rdzv_handle(sr_rdzv *r, const struct pollfd *pfds, int n);
int sr__rdzv_timeout_ms(const sr_rdzv *r);
/* Publishes the run's first failure (node: where it happened) so that every agent stops. */
void sr__rdzv_report_failure(sr_rdzv *r, int node, const char *what, int config);
/* Hands node 0 this agent's ranks' result objects (JSON, comma-separated), also when the run failed,
   and, when every rank of this agent succeeded, reports it done. */
/* Returns 1 when the results could not be handed to node 0 (too large, or the store refused) and
   stay in this node's output only, else 0. */
int sr__rdzv_report_done(sr_rdzv *r, const char *results, size_t len, int succeeded);
/* Hosting agent: the results another agent reported, or NULL. */
const char *sr__rdzv_results(const sr_rdzv *r, int agent, size_t *len);
/* Hosting agent: every agent it refused or gave the verdict has read it (or had its time to): it
   may stop serving.  1 for the other agents. */
int sr__rdzv_settled(const sr_rdzv *r);
/* Hosting agent: every agent is done and nothing failed: the verdict is success. */
void sr__rdzv_succeed(sr_rdzv *r);
/* Other agents: whether the host's verdict arrived (or the host went away); 1 for the host and a
   lone agent. */
int sr__rdzv_outcome_known(const sr_rdzv *r);
/* Other agents: tells the host the verdict was read (after reporting this agent's results). */
void sr__rdzv_ack(sr_rdzv *r);
/* Hosting agent: every agent reported done. */
int sr__rdzv_all_done(const sr_rdzv *r);
void sr__rdzv_free(sr_rdzv *r);

#endif
