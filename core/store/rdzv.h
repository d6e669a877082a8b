/*
 * The agents' side of the rendezvous: where the store lives, its token, how agents learn that the
 * run failed, must start again or stop elsewhere, and who decides.
 *
 * Lifecycle (agent): sr__rdzv_prepare() before the workers start (the agent holding rank 0 hosts
 * the store server and decides; every other agent connects, publishes the run's fingerprint and
 * is accepted into an attempt: the first, or, when it comes back after its node was lost, the next
 * one) -> per attempt, inside the supervisor's poll loop: sr__rdzv_pollfds / sr__rdzv_step (the
 * hosting agent compares fingerprints as they arrive, notices an agent that goes away, decides) and
 * sr__rdzv_report (a failure here, this agent's ranks done, the verdict read, ...) ->
 * sr__rdzv_view_now says what the hosting agent decided:
 *   SUCCEEDED   every agent is done and nothing failed
 *   FAILED      a failure that may not or can no longer be retried
 *   RESTART     a rank failed after training began and restarts are left: every agent stops its
 *               workers and reports it (SR__RDZV_STOPPED); once all did (an agent that went away
 *               must come back within rdzv_timeout) and restart_delay passed (view.next_attempt),
 *               SR__RDZV_NEXT starts the next attempt everywhere
 *   PREEMPTED   an agent was asked to stop (SIGTERM): every rank stops with a checkpoint
 * -> for a final verdict the host serves until every agent read it (view.settled); the other
 * agents exit only once they know it (view.verdict_known, then SR__RDZV_READ) -> sr__rdzv_free().
 * Those five calls are the whole interface the supervisor uses: who decides what stays here.
 * Workers reach the store at host/port with token; their keys are scoped by the attempt
 * (pg/world.h).
 *
 * A fingerprint is text, one "name=value" line each, sorted; lines starting with '#' describe the
 * agent (host, node) and are not compared.
 *
 * Errors: sr__rdzv_prepare fills diag; later failures (a host gone, an agent lost) become the phase
 * and r->failed_elsewhere.  Never prints.  The work is split by who does it (node 0's agent, the
 * others, restarts; store/rdzv_internal.h says which file does what), and the keys and values
 * agents exchange are in store/rdzv_protocol.h.
 */
#ifndef SR__CORE_RDZV_H
#define SR__CORE_RDZV_H

#include <poll.h>
#include <stddef.h>

#include "base/diag.h"
#include "base/strbuf.h"
#include "store/store.h"

typedef enum sr__rdzv_phase {
    SR__RDZV_RUNNING = 0, /* no verdict for this attempt yet */
    SR__RDZV_RESTART,     /* this attempt ends; the job starts again */
    SR__RDZV_FAILED,
    SR__RDZV_PREEMPTED,
    SR__RDZV_SUCCEEDED
} sr__rdzv_phase;

/* What a failure report says of the failure (the host decides what follows). */
typedef enum sr__rdzv_failure {
    SR__FAIL_FINAL = 'f',     /* never retried: before training began, or an interrupted agent */
    SR__FAIL_CONFIG = 'c',    /* a configuration error (exit 2), or agents started with different jobs */
    SR__FAIL_RETRYABLE = 'x', /* a rank failed once its work had begun, or an agent went away */
    SR__FAIL_STOPPED = 's',   /* never retried: a rank was asked to stop (SIGTERM, SIGINT, SIGHUP) */
    SR__FAIL_PREEMPT = 'p',   /* not a failure: an agent was asked to stop with a checkpoint */
    /* elastic jobs only: */
    SR__FAIL_LEFT = 'm',      /* an agent went away: the others go on without it (a new world at once) */
    SR__FAIL_LEAVE = 'l',     /* an agent was asked to stop (a spot notice): every rank stops with a
                             checkpoint, then the others go on without it */
    SR__FAIL_JOIN = 'j',      /* an agent is waiting to join: every rank stops with a checkpoint, then
                             the world grows */
    SR__FAIL_JOIN_SAVED = 'J' /* elastic_join = next_save, the hosting agent only: an agent waited to join
                                 until a periodic checkpoint was written; every rank stops at once and
                                 the world grows from that checkpoint */
} sr__rdzv_failure;

/* Hosting agent: where another agent stands in the run (its current join). */
typedef enum sr__rdzv_peer_state {
    SR__PEER_UNSEEN = 0, /* no join answered yet */
    SR__PEER_REFUSED,    /* its first join was refused: it read why and leaves (the run fails) */
    SR__PEER_ACCEPTED,   /* accepted: its workers take part in the current attempt */
    SR__PEER_BACK,       /* accepted while the job restarts (it came back, or came late): it is
                           ready for the next attempt, and ACCEPTED once that starts */
    SR__PEER_GONE        /* it was accepted and went away: it must come back (a later join) while
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
    int changed;       /* on the host's list of agents to look at again */
    double last_heard; /* when it was last heard from (sr__now_s): its accepted join; the hang
                          watchdog's heartbeats will refresh it.  0: never */
    int silent;        /* the hang watchdog found it silent (stopped, or cut off): the verdict's
                         acknowledgement is not awaited from it */
    int assigned;      /* elastic: the slot was given to an arriving agent whose fingerprint has not
                         come yet (no other arrival gets it) */
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
    double timeout_s; /* [shardrun] rdzv_timeout */
    double preempt_grace_s;
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
    int *changed, nchanged;        /* agents whose fingerprint or "alive" wait changed since the last
                                      look (the store's hook fills it: rdzv_host.c) */
    int done_from;                 /* agents 0 .. done_from-1 are known done in this attempt */
    int done_attempt;
    double refused_at; /* when it refused an agent's fingerprint, 0: never */
    double outcome_at; /* when it sent the final verdict, 0: not yet */
    double restart_at; /* when it decided the restart */
    /* other agents */
    sr__store_link *link; /* the one connection to node 0's store; the three below are its channels */
    sr__store *ctl;       /* for reporting */
    sr__store *watch;     /* a pending wait on the verdict (or the next attempt's start) */
    sr__store *alive;     /* holds a wait on run/alive/<agent>/<join> for its whole life: the host
                               learns that it went away when the wait is gone */
    int watch_closed;     /* the watch's wait ended (it was read) */
    int waiting_start;    /* the watch waits for the next attempt's start */
    int start_ready;      /* the next attempt's start arrived */
    int acked;            /* told the host the verdict was read */
    int host_lost;        /* the hang watchdog found node 0's agent silent: this agent decided the run
                               failed on its own and talks to the store no more (SR__RDZV_HOST_SILENT) */
    int host_gone;        /* node 0's agent went away (its store closed): failed_elsewhere says so */
    /* an elastic job (nnodes = MIN:MAX, docs/elastic.md): agents are slots 0 .. nagents-1 (nagents
       is MAX); node 0's agent is slot 0 and gives each arriving agent a free slot.  Each attempt's
       world is the slots taking part, in slot order: world_rank is this agent's place */
    int elastic, min_agents;
    double last_call_s;          /* [shardrun] rdzv_last_call */
    int join_at_save;            /* [shardrun] elastic_join = next_save: an arriving agent is taken in once a
                                    periodic checkpoint was written after it came, not at once */
    long long saved_step;        /* hosting agent: the step of the last checkpoint this agent's workers
                                    reported complete (SR__RDZV_SAVED), -1: none */
    int saves;                   /* hosting agent: how many SR__RDZV_SAVED it heard */
    int join_from;               /* hosting agent, join_at_save: `saves` when agents were first seen waiting to
                                    join the running world (a checkpoint reported after that takes them in);
                                    -1: none waits */
    int world_nodes, world_rank; /* the current attempt's node count and this agent's node rank */
    int formed;                  /* hosting agent: the first world was formed */
    unsigned char *in_world;     /* hosting agent: per slot, 1 when it takes part in the current world
                                    (as the attempt began: one that went away since stays in it) */
    int tickets_seen;            /* hosting agent: tickets 1 .. tickets_seen were all answered (a slot, or full) */
    int restarts_used;           /* hosting agent: restarts after a failure (max_restarts counts them) */
    int save_first;              /* RESTART: every rank stops with a checkpoint first (a node joins, or leaves with
                           notice); 0: at once (a failure, a node lost) */
    char restart_kind;           /* the failure (sr__rdzv_failure) the current restart answers */
    /* hosting agent of an elastic job: a rank's failure waits a moment before it is decided, for an
       agent that went away at the same time (its peers' collectives fail with it): then the world
       changes without using a restart */
    double pending_at; /* when it arrived, 0: none, -1: being decided */
    int pending_node;
    char pending_what[1024];
    /* a restart, both sides */
    /* rdzv_backend = etcd (rdzv_etcd.c): the agents elect the one that hosts; when it goes, the others
       elect another and the job goes on (sr__rdzv_fail_over) */
    struct sr__rdzv_etcd *etcd; /* NULL with the built-in store */
    int expect_agents;          /* hosting agent: the live agents etcd knows of (a new world waits for them) */
    int took_over;              /* this agent leads a job another leader began */
    int full;                   /* the job had its MAX agents when this one asked for a slot */
    int leaving;                /* hosting agent: it leaves the job itself (a notice to the leader, etcd) */
    int stopped_here;           /* this agent's workers are gone (SR__RDZV_STOPPED was reported) */
    int next_ready;             /* sr__rdzv_view.next_attempt, as the last step or report found it */
    int done_here;              /* this agent's ranks all succeeded in this attempt (SR__RDZV_DONE) */
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
    int elastic, min_agents;             /* nnodes = MIN:MAX: nagents is MAX; agent_id 0 hosts, -1 the others
                                            (they are given a slot) */
    double last_call_s;                  /* [shardrun] rdzv_last_call */
    int join_at_save;                    /* [shardrun] elastic_join = next_save */
    double preempt_grace_s;              /* [shardrun] preempt_grace: how long a checkpoint may take */
    const char *etcd_endpoints;          /* rdzv_backend = etcd: rdzv_endpoint (NULL: the built-in store) */
    const char *etcd_job;                /* the job's name in etcd (its keys' prefix) */
} sr__rdzv_args;

/* The interface the supervisor drives, whatever keeps the rendezvous (node 0's store today): it
   calls these and reads the fields above that describe the run (hosting, nagents, attempt, phase,
   failed_elsewhere...), never the store.

   Decides host, port and token (into r), starts or reaches the store; another agent is accepted
   into an attempt (r->attempt), and waits for that attempt's start when it is not the first.
   Errors go to diag; returns 0, SR__RDZV_UNREACHABLE when node 0's shardrun did not answer within
   rdzv_timeout, or its store failed or went away while this agent joined, or (elastic) the job
   failed before this agent was taken in (a failed run: exit 1, not a configuration error), or -1
   (the rest: diag says which). */
#define SR__RDZV_UNREACHABLE (-3)
/* Elastic, an agent waiting to join: the job ended well before it was taken in (r->failed_elsewhere
   says so); it exits 0. */
#define SR__RDZV_ENDED (-4)
int sr__rdzv_prepare(sr__rdzv *r, const sr__rdzv_args *a, sr__diag *diag);
/* The descriptors to watch (at most max; returns how many) and, in *timeout_ms, how long the
   caller's poll may wait at most (-1: as long as it likes). */
int sr__rdzv_pollfds(sr__rdzv *r, struct pollfd *pfds, int max, int *timeout_ms);
/* One turn, after the caller's poll: serves or reads what poll reported on those descriptors, and
   decides (the hosting agent: admissions, an agent gone, a failure reported elsewhere, success
   once every agent is done, whether a restart may begin).  sr__rdzv_view says what came of it. */
void sr__rdzv_step(sr__rdzv *r, const struct pollfd *pfds, int n);

/* What this agent tells the rendezvous (sr__rdzv_report). */
typedef enum sr__rdzv_news_kind {
    SR__RDZV_FAILURE = 1, /* a failure of this attempt: node, what, failure (the host decides what
                             follows from the first one anywhere) */
    SR__RDZV_DONE,        /* this agent's ranks ended: their result objects (results, len; JSON,
                             comma-separated) go to node 0 also when the run failed, and when
                             `succeeded` (every rank of this agent did) it counts as done.  Returns 1
                             when the results stay in this node's output only (too large, refused) */
    SR__RDZV_READ,        /* the final verdict was read here (after DONE) */
    SR__RDZV_STOPPED,     /* RESTART: this agent's workers are all gone (other agents: says so and
                             waits for the next attempt's start; -1 when the host went away) */
    SR__RDZV_NEXT,        /* RESTART, once sr__rdzv_view says next_attempt: the next attempt begins
                             (the host tells every agent to start) */
    SR__RDZV_QUIT,        /* RESTART, this agent was interrupted (what): the restart is called off
                             everywhere */
    SR__RDZV_HOST_SILENT, /* other agents: node 0's agent stopped answering (what; the hang
                             watchdog): the attempt fails here, and no later call touches the store */
    SR__RDZV_PEER_SILENT, /* hosting agent: agent `agent` stopped answering: its reading of the
                             verdict is not awaited */
    SR__RDZV_SAVED        /* this agent's workers all reported checkpoint `step` written (complete: the
                             save's last collective follows its rename, fsdp/ckpt_save.c), and it is not
                             the run's last step.  The hosting agent with elastic_join = next_save takes
                             agents waiting to join in from it; ignored elsewhere */
} sr__rdzv_news_kind;

typedef struct sr__rdzv_news {
    sr__rdzv_news_kind kind;
    int node;                 /* FAILURE: where it happened */
    const char *what;         /* FAILURE, QUIT, HOST_SILENT: the message */
    sr__rdzv_failure failure; /* FAILURE */
    const char *results;      /* DONE */
    size_t len;               /* DONE */
    int succeeded;            /* DONE */
    int agent;                /* PEER_SILENT */
    long long step;           /* SAVED */
} sr__rdzv_news;

/* Tells the rendezvous what happened here; 0 (DONE: 1 when the results stay local; STOPPED: -1
   when the host went away). */
int sr__rdzv_report(sr__rdzv *r, const sr__rdzv_news *news);

/* Where the attempt stands, as this agent knows it. */
typedef struct sr__rdzv_view {
    sr__rdzv_phase phase;
    int verdict_known; /* the phase is a final verdict (neither running nor restarting), known here */
    int settled;       /* the hosting agent: every agent read the verdict (or had its time to): it
                          may stop serving.  1 for the others */
    int join_waiting;  /* the hosting agent, elastic_join = next_save: agents wait to join the running
                          world until the next checkpoint */
    int next_attempt;  /* RESTART, once STOPPED was reported: 1 the next attempt may start, 0 not
                          yet, -1 it never will (phase FAILED, failed_elsewhere says why) */
} sr__rdzv_view;
sr__rdzv_view sr__rdzv_view_now(const sr__rdzv *r);

/* Whether agent `agent` takes part in the current attempt: always in a fixed-size job; in an
   elastic one (the hosting agent's view) the slots of the current world. */
int sr__rdzv_takes_part(const sr__rdzv *r, int agent);

/* What follows "node 0's shardrun went away" (or is silent): in an elastic job, what that means and
   what to do; "" otherwise. */
const char *sr__rdzv_host_gone_note(const sr__rdzv *r);
/* The same when node 0's agent is silent (the hang watchdog): it may be this node that is cut off. */
const char *sr__rdzv_host_silent_note(const sr__rdzv *r);

/* rdzv_backend = etcd: after the leader went away (r->host_gone or host_lost), or this agent could
   not reach it, whether this agent may elect another and go on (1), with the job's ids, attempt and
   restarts carried; sr__rdzv_fail_over then does so, as sr__rdzv_prepare did (its return values:
   0, SR__RDZV_ENDED, SR__RDZV_UNREACHABLE or -1 with diag).  a: what sr__rdzv_prepare was given. */
int sr__rdzv_can_fail_over(const sr__rdzv *r);
int sr__rdzv_fail_over(sr__rdzv *r, const sr__rdzv_args *a, sr__diag *diag);
/* rdzv_backend = etcd, hosting agent: its lease in etcd expired (it was cut off from etcd), so another
   agent may lead by now: it must end its part (1); sr__rdzv_etcd_lost_why says what happened. */
int sr__rdzv_etcd_deposed(const sr__rdzv *r);
const char *sr__rdzv_etcd_lost_why(const sr__rdzv *r);

/* Hosting agent: the results another agent reported, or NULL. */
const char *sr__rdzv_results(const sr__rdzv *r, int agent, size_t *len);
void sr__rdzv_free(sr__rdzv *r);

#endif
