/*
 * The rendezvous as the supervisor drives it, whichever agent this is (store/rdzv.h has the
 * lifecycle): setting it up (where the store is, its token, the job's ids), then the interface's
 * calls (step, report, view) routed to node 0's side (rdzv_host.c) or another agent's
 * (rdzv_agent.c).  Restarts: rdzv_restart.c.
 */
#define _GNU_SOURCE
#include "store/rdzv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "store/fingerprint.h"
#include "store/rdzv_internal.h"
#include "store/rdzv_protocol.h"
#include "store/wire.h"

/* Under Slurm: what a requeued launch of the same job shares with the launch before it (see
   sr__rdzv.requeue_key); "" elsewhere. */
static void set_requeue_key(sr__rdzv *r, const char *fingerprint) {
    const char *slurm_job = getenv("SLURM_JOB_ID");
    if (!slurm_job || !*slurm_job || strlen(slurm_job) >= 40 || strpbrk(slurm_job, " \t\n")) return;
    char hex[17];
    snprintf(r->requeue_key, sizeof r->requeue_key, "slurm-%s-%s", slurm_job,
             sr__fingerprint_digest(fingerprint, 0x72657175u, hex));
}

/* The store's port: rdzv_port when given (port), else master_port + 1.  -1 with diag when there is
   none. */
static int store_port(const sr__rdzv_args *a, int port, sr__diag *diag) {
    if (port) return port;
    if (a->master_port == 65535) {
        sr__diag_add(diag,
                     "master_port 65535 leaves no port for the rendezvous store (master_port + 1); set rdzv_port");
        return -1;
    }
    return a->master_port + 1; /* every agent computes the same port */
}

/* A run of several agents: the token every agent presents, and where the store is.  Returns the
   store's port, or -1 with diag saying why. */
static int locate_store(sr__rdzv *r, const sr__rdzv_args *a, int port, sr__diag *diag) {
    const char *tok = getenv("SHARDRUN_RDZV_TOKEN"), *job = getenv("SLURM_JOB_ID");
    if (tok && *tok) snprintf(r->token, sizeof r->token, "%s", tok);
    else if (job && *job) snprintf(r->token, sizeof r->token, "slurm-%s", job);
    else if (a->launcher_job_id && *a->launcher_job_id) snprintf(r->token, sizeof r->token, "%s", a->launcher_job_id);
    else if (a->per_process)
        /* a launcher without a job id (MPICH's Hydra): the endpoint every rank was told is what
           they share; no secret, as torch's own TCPStore */
        snprintf(r->token, sizeof r->token, "endpoint-%s:%d", a->master_addr, a->master_port);
    else {
        sr__diag_add(diag,
                     "a run of %d agents needs a shared rendezvous token: export SHARDRUN_RDZV_TOKEN=<the "
                     "same secret> on every node (under Slurm the job id is used)",
                     r->nagents);
        return -1;
    }
    snprintf(r->host, sizeof r->host, "%s", a->master_addr);
    return store_port(a, port, diag);
}

/* Hosting agent of an elastic job: serves the store until the first world may form, then starts it
   (rdzv_elastic.c).  0, SR__RDZV_UNREACHABLE when MIN agents did not come within rdzv_timeout (a
   failed run, not a configuration error: diag says what is missing), or -1. */
static int form_first_world(sr__rdzv *r, sr__diag *diag) {
    double started = sr__now_s(), min_at = 0;
    enum { MAX_FDS = 4200 }; /* the server's connections and its socket */
    struct pollfd *pfds = sr__calloc(MAX_FDS, sizeof *pfds);
    if (!pfds) {
        sr__diag_add(diag, "out of memory for the rendezvous's poll set");
        return -1;
    }
    int rc;
    while ((sr__rdzv_etcd_count(r), rc = sr__rdzv_elastic_formable(r, started, &min_at, diag)) == 0) {
        int np = sr__store_server_pollfds(r->server, pfds, MAX_FDS);
        if (poll(pfds, (nfds_t)np, 50) < 0 && errno != EINTR) {
            sr__diag_add(diag, "rendezvous store: poll failed: %s", strerror(errno));
            rc = -2;
            break;
        }
        sr__rdzv_handle(r, pfds, np);
        if (r->phase != SR__RDZV_RUNNING) { /* an agent of another job was refused: the run fails */
            sr__diag_add(diag, "%s", r->failed_elsewhere);
            rc = -2;
            break;
        }
    }
    free(pfds);
    if (rc < 0) return rc == -1 ? SR__RDZV_UNREACHABLE : -1; /* -1: formable's, MIN never came */
    sr__rdzv_elastic_start(r, r->attempt);
    return 0;
}

static void drop_connection(sr__rdzv *r);

/* rdzv_backend = etcd: the election (rdzv_etcd.c), then this agent hosts as node 0's agent does, or
   joins the leader as an arriving agent; a leader that does not answer is waited out (its lease
   expires) and another elected.  As sr__rdzv_prepare returns. */
static int meet_in_etcd(sr__rdzv *r, const sr__rdzv_args *a, int port, sr__diag *diag) {
    double until = sr__now_s() + a->timeout_s;
    while (1) {
        int64_t rev = 0;
        sr__rdzv_random_token(r->token, sizeof r->token);
        int won = sr__rdzv_etcd_elect(r, port, &rev, diag);
        if (won < 0) return won;
        if (won) {
            r->hosting = 1;
            r->agent_id = 0;
            if (sr__rdzv_host_start(r, a, port, diag) != 0) return -1;
            return form_first_world(r, diag);
        }
        r->hosting = 0;
        r->agent_id = -1;
        sr__diag tried = {0};
        int rc = sr__rdzv_join(r, a, &tried);
        if (rc == 0 || rc == SR__RDZV_ENDED || rc == -1 || r->full) {
            for (size_t i = 0; i < tried.kept; i++) sr__diag_add(diag, "%s", tried.msgs[i]);
            sr__diag_clear(&tried);
            return rc;
        }
        /* the leader did not answer, or went while this agent joined: another is elected once its lease
           expires (what this agent met there is said if none is) */
        drop_connection(r);
        if (sr__rdzv_etcd_await_new_leader(r, rev, until, diag) != 0) {
            for (size_t i = 0; i < tried.kept; i++) sr__diag_add(diag, "the leader at %s: %s", r->host, tried.msgs[i]);
            sr__diag_clear(&tried);
            return SR__RDZV_UNREACHABLE;
        }
        sr__diag_clear(&tried);
    }
}

static void init_from_args(sr__rdzv *r, const sr__rdzv_args *a) {
    memset(r, 0, sizeof *r);
    r->nagents = a->nagents;
    r->agent_id = a->agent_id;
    r->failed_node = -1;
    r->fingerprint = a->fingerprint;
    r->max_restarts = a->max_restarts;
    r->restart_delay_s = a->restart_delay_s;
    r->timeout_s = r->rejoin_timeout_s = a->timeout_s;
    r->ack_timeout_s = a->ack_timeout_s;
    r->preempt_grace_s = a->preempt_grace_s;
    r->elastic = a->elastic;
    r->min_agents = a->min_agents;
    r->last_call_s = a->last_call_s;
    r->join_at_save = a->join_at_save;
    r->saved_step = -1;
    r->join_from = -1;
    r->world_nodes = a->nagents;
    r->world_rank = a->agent_id > 0 ? a->agent_id : 0;
    r->hosting = r->agent_id == 0; /* decides; serves the store when there is one */
    set_requeue_key(r, a->fingerprint);
}

int sr__rdzv_prepare(sr__rdzv *r, const sr__rdzv_args *a, sr__diag *diag) {
    init_from_args(r, a);
    if (r->hosting) sr__rdzv_random_token(r->job_id, 17); /* the other agents learn it when they are accepted */
    if (!a->need_store) return 0;
    r->enabled = 1;

    int p = atoi(a->port_value);
    if (a->etcd_endpoints) { /* rdzv_etcd.c: an election decides who hosts */
        int rc = sr__rdzv_etcd_open(r, a, diag);
        if (rc != 0 || (p = store_port(a, p, diag)) < 0) return rc ? rc : -1;
        return meet_in_etcd(r, a, p, diag);
    }
    if (r->nagents == 1) {
        sr__rdzv_random_token(r->token, sizeof r->token);
        snprintf(r->host, sizeof r->host, "127.0.0.1");
    } else if ((p = locate_store(r, a, p, diag)) < 0) {
        return -1;
    }
    if (r->hosting) {
        if (sr__rdzv_host_start(r, a, p, diag) != 0) return -1;
        return r->elastic && r->nagents > 1 ? form_first_world(r, diag) : 0;
    }
    r->port = p;
    return sr__rdzv_join(r, a, diag);
}

int sr__rdzv_pollfds(sr__rdzv *r, struct pollfd *pfds, int max, int *timeout_ms) {
    if (timeout_ms) *timeout_ms = sr__rdzv_timeout_ms(r);
    if (r->server) return sr__store_server_pollfds(r->server, pfds, max);
    if (r->watch && !r->watch_closed && max > 0) {
        pfds[0] = (struct pollfd){.fd = sr__store_fd(r->watch), .events = POLLIN};
        return 1;
    }
    return 0;
}

void sr__rdzv_handle(sr__rdzv *r, const struct pollfd *pfds, int n) {
    if (r->server) {
        sr__store_server_handle(r->server, pfds, n);
        unsigned long oom = sr__store_server_oom(r->server);
        if (oom != r->server_oom_said) { /* the peers fail with the store's answer; the host says why too */
            sr__log(SR_LOG_ERROR,
                    "the rendezvous store ran out of memory: %lu request(s) refused and their "
                    "connections closed",
                    oom - r->server_oom_said);
            /* and the run fails here: a refused peer may have lost its one connection to node 0
               before it could say so (an agent refused while it joined is not known here yet) */
            if (r->phase == SR__RDZV_RUNNING)
                sr__rdzv_decide(r, 0, SR__FAIL_FINAL,
                                "node 0's rendezvous store ran out of memory and refused a request");
        }
        r->server_oom_said = oom;
        sr__rdzv_host_handle(r);
        return;
    }
    for (int i = 0; r->watch && !r->watch_closed && i < n; i++)
        if (pfds[i].fd == sr__store_fd(r->watch) && pfds[i].revents) sr__rdzv_read_watch(r);
}

int sr__rdzv_timeout_ms(const sr__rdzv *r) {
    int t = r->server ? sr__store_server_timeout_ms(r->server) : -1;
    /* waiting for agents to read the verdict, or watching for one that goes away: look again soon */
    if (r->server && r->nagents > 1 && (t < 0 || t > 100)) t = 100;
    /* a restart: its delay, and the deadline for agents to come back */
    if (r->hosting && r->phase == SR__RDZV_RESTART && (t < 0 || t > 100)) t = 100;
    return t;
}

int sr__rdzv_outcome_known(const sr__rdzv *r) {
    /* node 0 silent, or gone (also while the job restarted, its next start's wait never sent) */
    if (r->host_lost || r->host_gone) return 1;
    if (r->hosting || r->nagents < 2 || !r->enabled) return r->phase != SR__RDZV_RUNNING;
    return r->watch_closed && !r->waiting_start;
}

void sr__rdzv_report_failure(sr__rdzv *r, int node, const char *what, sr__rdzv_failure kind) {
    if (r->phase != SR__RDZV_RUNNING || r->reported_failure || r->host_lost) return; /* the first one is known */
    if (r->hosting || !r->enabled) {
        r->leaving = kind == SR__FAIL_LEAVE; /* etcd: the leader itself leaves (rdzv_restart.c) */
        sr__rdzv_decide(r, node, kind, what);
    } else if (r->ctl) {
        char v[1200], key[64];
        int n = sr__rdzv_message_format(v, sizeof v, node, (char)kind, what);
        sr__store_set(r->ctl, sr__rdzv_key(key, sizeof key, "run/%d/failure", r->attempt, 0), v, (size_t)n);
    }
    r->reported_failure = 1;
}

int sr__rdzv_report_done(sr__rdzv *r, const char *results, size_t len, int succeeded) {
    char key[64];
    int kept_local = 0;
    if (r->host_lost) return 1; /* node 0 cannot take them: this node prints its own */
    if (r->ctl && len) {
        /* node 0 prints every rank's results; a node's that do not fit one store value stay local */
        sr__rdzv_key(key, sizeof key, "run/%d/results/%d", r->attempt, r->agent_id);
        if (len > SR__STORE_MAX_VALUE || sr__store_set(r->ctl, key, results, len) != 0) kept_local = 1;
    }
    if (!succeeded) return kept_local; /* "done" means: every rank of this agent succeeded */
    sr__rdzv_key(key, sizeof key, "run/%d/done/%d", r->attempt, r->agent_id);
    if (r->server) sr__store_server_set(r->server, key, "1", 1);
    else if (r->ctl) sr__store_set(r->ctl, key, "1", 1);
    return kept_local;
}

void sr__rdzv_lose_host(sr__rdzv *r, const char *what) {
    if (r->hosting || !r->enabled || r->nagents < 2) return;
    r->host_lost = 1;
    r->reported_failure = 1;
    sr__rdzv_set_failure(r, 0, 0, what);
    r->phase = SR__RDZV_FAILED;
}

void sr__rdzv_peer_silent(sr__rdzv *r, int agent) {
    if (!r->hosting || !r->peers || agent <= 0 || agent >= r->nagents) return;
    r->peers[agent].silent = 1;
    /* elastic: the next world goes on without it; its slot stays its own until its connection ends */
    if (r->elastic && r->peers[agent].state == SR__PEER_ACCEPTED) r->peers[agent].state = SR__PEER_GONE;
}

/* What a turn may bring about once what arrived was taken in: success once every agent is done
   (the host's own "done" is set only when its ranks all succeeded), and whether the next attempt
   may start once this agent's workers are gone. */
static void decide(sr__rdzv *r) {
    if (r->hosting && r->phase == SR__RDZV_RUNNING && sr__rdzv_all_done(r)) {
        /* without a store (a lone agent) all_done holds at once: its own report says it */
        if (r->server || r->done_here) sr__rdzv_succeed(r);
    }
    if (r->stopped_here && (r->phase == SR__RDZV_RESTART || r->phase == SR__RDZV_FAILED))
        r->next_ready = sr__rdzv_restart_ready(r);
}

void sr__rdzv_step(sr__rdzv *r, const struct pollfd *pfds, int n) {
    if (sr__rdzv_etcd_deposed(r) && (r->phase == SR__RDZV_RUNNING || r->phase == SR__RDZV_RESTART)) {
        /* no verdict goes out: the others see this store close and elect another leader */
        char what[1200];
        snprintf(what, sizeof what,
                 "%s: this node no longer leads the job (another may by now); its workers stop, and the other nodes "
                 "go on under a new leader",
                 sr__rdzv_etcd_lost_why(r));
        sr__rdzv_set_failure(r, 0, 0, what);
        r->phase = SR__RDZV_FAILED;
    }
    sr__rdzv_handle(r, pfds, n);
    decide(r);
}

int sr__rdzv_report(sr__rdzv *r, const sr__rdzv_news *news) {
    int rc = 0;
    switch (news->kind) {
    case SR__RDZV_FAILURE: sr__rdzv_report_failure(r, news->node, news->what, news->failure); break;
    case SR__RDZV_DONE:
        rc = sr__rdzv_report_done(r, news->results ? news->results : "", news->len, news->succeeded);
        r->done_here = news->succeeded;
        break;
    case SR__RDZV_READ: sr__rdzv_ack(r); break;
    case SR__RDZV_STOPPED:
        if (!r->stopped_here) { /* once; the host asks again each turn until the next attempt may start */
            r->stopped_here = 1;
            rc = sr__rdzv_stopped(r);
        }
        break;
    case SR__RDZV_NEXT:
        sr__rdzv_next_attempt(r);
        r->stopped_here = r->next_ready = r->done_here = 0;
        break;
    case SR__RDZV_QUIT: sr__rdzv_abandon_restart(r, news->what); break;
    case SR__RDZV_HOST_SILENT: sr__rdzv_lose_host(r, news->what); break;
    case SR__RDZV_PEER_SILENT: sr__rdzv_peer_silent(r, news->agent); break;
    case SR__RDZV_SAVED: sr__rdzv_saved(r, news->step); break;
    }
    if (news->kind != SR__RDZV_NEXT) decide(r);
    return rc;
}

sr__rdzv_view sr__rdzv_view_now(const sr__rdzv *r) {
    sr__rdzv_view v = {.phase = r->phase};
    v.verdict_known = r->phase != SR__RDZV_RUNNING && r->phase != SR__RDZV_RESTART && sr__rdzv_outcome_known(r);
    v.settled = sr__rdzv_settled(r);
    v.join_waiting = r->join_at_save && r->join_from >= 0 && r->phase == SR__RDZV_RUNNING;
    v.next_attempt = !r->stopped_here ? 0 : r->phase == SR__RDZV_FAILED ? -1 : r->next_ready;
    return v;
}

/* Other agents: closes every connection to the store (a leader that went, before another is
   elected). */
static void drop_connection(sr__rdzv *r) {
    sr__store_close(r->watch);
    sr__store_close(r->ctl);
    sr__store_close(r->alive);
    sr__store_link_release(r->link);
    r->watch = r->ctl = r->alive = NULL;
    r->link = NULL;
    r->watch_closed = r->waiting_start = r->start_ready = 0;
}

int sr__rdzv_can_fail_over(const sr__rdzv *r) {
    return r->etcd && !r->hosting && (r->host_gone || r->host_lost) && !sr__rdzv_etcd_deposed(r);
}

int sr__rdzv_fail_over(sr__rdzv *r, const sr__rdzv_args *a, sr__diag *diag) {
    /* what the job carries on with: etcd's record has the rest (rdzv_etcd.c) */
    struct sr__rdzv_etcd *e = r->etcd;
    char job_id[sizeof r->job_id];
    snprintf(job_id, sizeof job_id, "%s", r->job_id);
    int attempt = r->attempt;
    r->etcd = NULL;
    sr__rdzv_free(r);
    init_from_args(r, a);
    r->etcd = e;
    r->enabled = 1;
    r->attempt = attempt + 1;
    snprintf(r->job_id, sizeof r->job_id, "%s", job_id);
    int p = store_port(a, atoi(a->port_value), diag);
    int rc = p < 0 ? -1 : meet_in_etcd(r, a, p, diag);
    if (rc != 0 && rc != SR__RDZV_ENDED)
        sr__rdzv_set_failure(r, 0, 0, "the job's leader went away, and this node could not meet the others again");
    return rc;
}

void sr__rdzv_free(sr__rdzv *r) {
    /* the job's record in etcd goes once the job is over (a final verdict, read by every agent) */
    sr__rdzv_etcd_close(r->etcd, r->hosting && r->outcome_at > 0 && !sr__rdzv_etcd_deposed(r));
    sr__store_server_free(r->server); /* first: closing its connections calls its hook with r */
    free(r->peers);
    free(r->changed);
    free(r->in_world);
    sr__buf_free(&r->attempts);
    drop_connection(r);
    memset(r, 0, sizeof *r);
}
