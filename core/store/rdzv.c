#define _GNU_SOURCE
#include "store/rdzv.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/hash64.h"
#include "base/rand.h"
#include "store/fingerprint.h"
#include "store/wire.h"

/* Keys of the agents' rendezvous (k: an agent's index, j: its join, A: the attempt):
     run/joins/k                a counter: how many times an agent k joined (2 and up: it came back)
     run/fingerprint/k[/j]      agent k -> host: what defines the run as agent k sees it
     run/accepted/k[/j]         host -> agent k: "ok A" (the attempt it joins), or why it is refused
     run/A/failure              any agent -> host: the first failure it saw ("node:kind:message",
                                kind an sr_rdzv_failure)
     run/A/done/k, run/A/results/k   agent k -> host: its workers are done, and their results
     run/A/outcome/k            host -> agent k: what follows the attempt ("node:kind:message"; kind
                                o = every rank succeeded, f = failed, c = agents started with
                                different jobs, r = restart, p = preempted); agent k's watch
                                connection waits on it
     run/A/ack/k                agent k -> host: it read the final verdict (and reported its results)
     run/A/stopped/k            agent k -> host: after a restart verdict, its workers are gone
     run/A/start/k              host -> agent k: "go" (start attempt A's workers), or "fail:why"
     run/A/quit/k               agent k -> host: it was interrupted while attempt A ends in a restart
                                (why): the host calls the restart off
     run/alive/k/j              never set: agent k's j-th join waits on it from a connection of its
                                own as long as it lives
   (j is left out for an agent's first join, A is 0 for the first attempt.) */

static char *key_of(char *buf, size_t len, const char *fmt, int a, int b) {
    snprintf(buf, len, fmt, a, b);
    return buf;
}

/* "node:kind:message" */
static int format_outcome(char *v, size_t vlen, int node, char kind, const char *what) {
    int n = snprintf(v, vlen, "%d:%c:%s", node, kind, what);
    if (n < 0) return 0;
    return (size_t)n >= vlen ? (int)vlen - 1 : n;
}

static void parse_outcome(const char *v, size_t len, int *node, char *kind, char *msg, size_t mlen) {
    char *end = NULL;
    long n = strtol(v, &end, 10);
    const char *m = v;
    *kind = 'f';
    if (end && end + 3 <= v + len && end[0] == ':' && end[2] == ':') *kind = end[1], m = end + 3;
    else n = -1;
    *node = (int)n;
    snprintf(msg, mlen, "%.*s", (int)(v + len - m), m);
}

static void set_failure(sr_rdzv *r, int node, int config, const char *what) {
    snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere, "%s", what);
    r->failed_node = node;
    r->failed_config = config;
}

/* Hosting agent: tells every other agent what follows this attempt. */
static void publish_outcome(sr_rdzv *r, int node, char kind, const char *what) {
    if (!r->server || r->outcome_at) return;
    char v[1200], key[64];
    int n = format_outcome(v, sizeof v, node, kind, what);
    for (int a = 1; a < r->nagents; a++)
        sr__store_server_set(r->server, key_of(key, sizeof key, "run/%d/outcome/%d", r->attempt, a), v, (size_t)n);
    if (kind != 'r') r->outcome_at = sr__now_s(); /* a final verdict: agents acknowledge it */
}

/* The deciding agent (the host, or a lone agent): what the first failure of an attempt means for
   the job. */
static void decide(sr_rdzv *r, int node, char kind, const char *what) {
    if (r->phase != SR_RDZV_RUNNING) return;
    set_failure(r, node, kind == SR_FAIL_CONFIG, what);
    r->decided_kind = kind;
    if (kind != SR_FAIL_PREEMPT) sr__buf_printf(&r->attempts, "attempt %d: %s\n", r->attempt, what);
    if (kind == SR_FAIL_RETRYABLE && r->attempt < r->max_restarts) {
        r->phase = SR_RDZV_RESTART;
        r->restart_at = sr__now_s();
        publish_outcome(r, node, 'r', what);
    } else if (kind == SR_FAIL_PREEMPT) {
        r->phase = SR_RDZV_PREEMPTED;
        publish_outcome(r, node, 'p', what);
    } else {
        r->phase = SR_RDZV_FAILED;
        publish_outcome(r, node, kind == SR_FAIL_CONFIG ? 'c' : 'f', what);
    }
}

static void random_token(char out[33]) {
    unsigned char b[16];
    sr__random_bytes(b, sizeof b);
    for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* Other agents: a fresh watch connection with a pending wait on `key`.  0 or -1. */
static int rewatch(sr_rdzv *r, const char *key, char *err, size_t errlen) {
    sr__store_close(r->watch);
    r->watch = sr__store_connect(r->host, r->port, r->token, r->timeout_s, err, errlen);
    r->watch_closed = 0;
    if (!r->watch) return -1;
    if (sr__store_wait_send(r->watch, key) != 0) {
        snprintf(err, errlen, "%s", sr__store_error(r->watch));
        return -1;
    }
    return 0;
}

/* Other agents: joins the run through node 0's agent, which compares fingerprints and says which
   attempt this agent joins.  0 or -1 (diag says why). */
static int join(sr_rdzv *r, const sr_rdzv_args *a, sr_diag *diag) {
    char err[512], key[64], akey[64], missing[64];
    int p = r->port;
    r->ctl = sr__store_connect(r->host, p, r->token, a->timeout_s, err, sizeof err);
    if (!r->ctl) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, p, err);
        return -1;
    }
    long long j = sr__store_add(r->ctl, key_of(key, sizeof key, "run/joins/%d", r->agent_id, 0), 1);
    const char *fp = a->fingerprint ? a->fingerprint : "";
    const char *vkey[1] = {akey};
    if (j <= 0 || j > 1000000) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, p, sr__store_error(r->ctl));
        return -1;
    }
    if (j == 1) key_of(key, sizeof key, "run/fingerprint/%d", r->agent_id, 0), key_of(akey, sizeof akey, "run/accepted/%d", r->agent_id, 0);
    else key_of(key, sizeof key, "run/fingerprint/%d/%d", r->agent_id, (int)j), key_of(akey, sizeof akey, "run/accepted/%d/%d", r->agent_id, (int)j);
    /* node 0's agent compares what defines the run before this agent starts anything */
    if (sr__store_set(r->ctl, key, fp, strlen(fp)) != 0) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, p, sr__store_error(r->ctl));
        return -1;
    }
    int wrc = sr__store_wait(r->ctl, vkey, 1, a->timeout_s, missing, sizeof missing);
    void *verdict = NULL;
    size_t vlen = 0;
    if (wrc != 0 || sr__store_get(r->ctl, akey, &verdict, &vlen) != 0) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, p,
                     wrc > 0 ? "node 0's shardrun did not answer within rdzv_timeout" : sr__store_error(r->ctl));
        free(verdict);
        return -1;
    }
    int attempt = -1, at = 0;
    char id[80] = "";
    if (sscanf((char *)verdict, "ok %d %79s%n", &attempt, id, &at) != 2 || ((char *)verdict)[at] || attempt < 0) {
        sr__diag_add(diag, "%s", (char *)verdict);
        free(verdict);
        /* node 0 may now go (a refused later join leaves the acknowledgement to the agent running) */
        if (j == 1) sr__store_set(r->ctl, key_of(key, sizeof key, "run/%d/ack/%d", r->attempt, r->agent_id), "1", 1);
        return -1;
    }
    free(verdict);
    /* a connection that waits as long as this agent lives: node 0 sees it go */
    r->alive = sr__store_connect(r->host, p, r->token, a->timeout_s, err, sizeof err);
    if (!r->alive || sr__store_wait_send(r->alive, key_of(key, sizeof key, "run/alive/%d/%d", r->agent_id, (int)j)) != 0) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, p, r->alive ? sr__store_error(r->alive) : err);
        return -1;
    }
    r->attempt = attempt;
    snprintf(r->job_id, sizeof r->job_id, "%s", id);
    if (attempt > 0) { /* it came back after its node was lost: the job restarts with it */
        void *go = NULL;
        size_t glen = 0;
        const char *skey[1] = {key_of(key, sizeof key, "run/%d/start/%d", attempt, r->agent_id)};
        wrc = sr__store_wait(r->ctl, skey, 1, a->timeout_s + r->restart_delay_s, missing, sizeof missing);
        if (wrc != 0 || sr__store_get(r->ctl, skey[0], &go, &glen) != 0 || strcmp((char *)go, "go")) {
            sr__diag_add(diag, "node 0's shardrun did not restart the job with this node: %s",
                         wrc > 0 ? "no start within rdzv_timeout"
                         : go && !strncmp((char *)go, "fail:", 5) ? (char *)go + 5 : sr__store_error(r->ctl));
            free(go);
            return -1;
        }
        free(go);
    }
    if (rewatch(r, key_of(key, sizeof key, "run/%d/outcome/%d", attempt, r->agent_id), err, sizeof err) != 0) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, p, err);
        return -1;
    }
    return 0;
}

int sr__rdzv_prepare(sr_rdzv *r, const sr_rdzv_args *a, sr_diag *diag) {
    memset(r, 0, sizeof *r);
    r->nagents = a->nagents;
    r->agent_id = a->agent_id;
    r->failed_node = -1;
    r->fingerprint = a->fingerprint;
    r->max_restarts = a->max_restarts;
    r->restart_delay_s = a->restart_delay_s;
    r->timeout_s = r->rejoin_timeout_s = a->timeout_s;
    r->ack_timeout_s = a->ack_timeout_s;
    r->hosting = r->agent_id == 0; /* decides; serves the store when there is one */
    if (r->hosting) {
        random_token(r->job_id); /* the other agents learn it when they are accepted */
        r->job_id[16] = 0;
    }
    const char *slurm_job = getenv("SLURM_JOB_ID");
    if (slurm_job && *slurm_job && strlen(slurm_job) < 40 && !strpbrk(slurm_job, " \t\n")) {
        /* what defines the job, without the lines that describe this agent (#host, #node) */
        sr__hash64_state h;
        sr__hash64_init(&h, 0x72657175u);
        for (const char *l = a->fingerprint ? a->fingerprint : ""; *l;) {
            const char *nl = strchr(l, '\n');
            size_t len = nl ? (size_t)(nl - l) + 1 : strlen(l);
            if (*l != '#') sr__hash64_update(&h, l, len);
            l += len;
        }
        char hex[17];
        snprintf(r->requeue_key, sizeof r->requeue_key, "slurm-%s-%s", slurm_job, sr__hash64_hex(sr__hash64_final(&h), hex));
    }
    int single = r->nagents == 1;
    if (!a->need_store) return 0;
    r->enabled = 1;

    int p = atoi(a->port_value);
    if (single) {
        random_token(r->token);
        snprintf(r->host, sizeof r->host, "127.0.0.1");
    } else {
        const char *tok = getenv("SHARDRUN_RDZV_TOKEN"), *job = getenv("SLURM_JOB_ID");
        if (tok && *tok) snprintf(r->token, sizeof r->token, "%s", tok);
        else if (job && *job) snprintf(r->token, sizeof r->token, "slurm-%s", job);
        else if (a->launcher_job_id && *a->launcher_job_id) snprintf(r->token, sizeof r->token, "%s", a->launcher_job_id);
        else if (a->per_process)
            /* a launcher without a job id (MPICH's Hydra): the endpoint every rank was told is what
               they share; no secret, as torch's own TCPStore */
            snprintf(r->token, sizeof r->token, "endpoint-%s:%d", a->master_addr, a->master_port);
        else {
            sr__diag_add(diag, "a run of %d agents needs a shared rendezvous token: export SHARDRUN_RDZV_TOKEN=<the "
                         "same secret> on every node (under Slurm the job id is used)", r->nagents);
            return -1;
        }
        snprintf(r->host, sizeof r->host, "%s", a->master_addr);
        if (p == 0) {
            if (a->master_port == 65535) {
                sr__diag_add(diag, "master_port 65535 leaves no port for the rendezvous store (master_port + 1); "
                             "set rdzv_port");
                return -1;
            }
            p = a->master_port + 1; /* every agent computes the same port */
        }
    }
    char err[512];
    if (r->hosting) {
        r->server = sr__store_server_start(single ? "127.0.0.1" : NULL, p, r->token, err, sizeof err);
        if (!r->server) {
            sr__diag_add(diag, "rendezvous store ([shardrun] rdzv_port = %s, %s%s): %s; choose another port (rdzv_port, "
                         "the same on every node) or stop what uses it", a->port_value, a->port_where,
                         single || atoi(a->port_value) ? "" : ", so master_port + 1", err);
            return -1;
        }
        r->port = sr__store_server_port(r->server);
        size_t n = (size_t)r->nagents;
        r->checked = calloc(n, 1);
        r->watching = calloc(n, 1);
        r->gone = calloc(n, 1);
        r->back = calloc(n, 1);
        r->joins = calloc(n, sizeof *r->joins);
        r->answered = calloc(n, sizeof *r->answered);
        r->agent_node = calloc(n, sizeof *r->agent_node);
        if (!r->checked || !r->watching || !r->gone || !r->back || !r->joins || !r->answered || !r->agent_node) {
            sr__diag_add(diag, "out of memory for the rendezvous of %d agents", r->nagents);
            return -1;
        }
        return 0;
    }
    r->port = p;
    return join(r, a, diag);
}

/* Hosting agent: what it answers agent a's join: "ok A" (the attempt it joins) or why not. */
static int admit(sr_rdzv *r, int a, int join_no, const char *theirs, char *why, size_t wlen) {
    if (sr__fingerprint_differ(r->fingerprint ? r->fingerprint : "", theirs, why, wlen)) return -1;
    if (join_no > 1 && !(r->gone[a] && r->phase == SR_RDZV_RESTART)) {
        snprintf(why, wlen, "node %d's shardrun (agent %d) is already part of this run%s; start each node's shardrun "
                 "once (a node whose shardrun was lost may come back while the job restarts)", r->agent_node[a], a,
                 r->phase == SR_RDZV_RUNNING ? "" : ", which is ending");
        return -1;
    }
    snprintf(why, wlen, "ok %d %s", r->phase == SR_RDZV_RESTART ? r->attempt + 1 : r->attempt, r->job_id);
    return 0;
}

/* Hosting agent: compares every fingerprint that arrived with this agent's.  A mismatch on an
   agent's first join fails the run (a configuration failure); every answer goes to the agent that
   sent it. */
static void check_fingerprints(sr_rdzv *r) {
    char key[64], why[1000];
    for (int a = 1; a < r->nagents && r->checked; a++) {
        int j = r->answered[a] + 1;
        size_t len = 0;
        const char *theirs = sr__store_server_get(
            r->server, j == 1 ? key_of(key, sizeof key, "run/fingerprint/%d", a, 0) : key_of(key, sizeof key, "run/fingerprint/%d/%d", a, j),
            &len);
        if (!theirs) continue;
        char *copy = strndup(theirs, len);
        if (!copy) continue;
        const char *node = strstr(copy, "#node=");
        r->agent_node[a] = node ? atoi(node + 6) : -1;
        int refused = admit(r, a, j, copy, why, sizeof why) != 0;
        free(copy);
        r->answered[a] = j;
        if (j == 1) sr__store_server_set(r->server, key_of(key, sizeof key, "run/accepted/%d", a, 0), why, strlen(why));
        else sr__store_server_set(r->server, key_of(key, sizeof key, "run/accepted/%d/%d", a, j), why, strlen(why));
        if (!refused) {
            r->checked[a] = 1;
            r->joins[a] = j;
            r->watching[a] = 0; /* its new "alive" wait is watched from now on */
            /* accepted while the job restarts (back after its node was lost, or late): it joins the
               next attempt */
            if (r->phase == SR_RDZV_RESTART) r->gone[a] = 0, r->back[a] = 1;
        } else if (j == 1) {
            r->checked[a] = 2;
            if (!r->refused_at) r->refused_at = sr__now_s();
            decide(r, 0, SR_FAIL_CONFIG, why);
        }
    }
}

/* Hosting agent: an accepted agent whose "alive" connection closed went away (killed, or its
   machine lost): its ranks failed, and waiting for them inside a collective would only end at the
   process group's timeout.  While the job restarts, one that goes away must come back before the
   next attempt starts; once the run ended, the host no longer waits for it to read the verdict. */
static void check_agents(sr_rdzv *r) {
    char key[64], why[300];
    for (int a = 1; a < r->nagents; a++) {
        if (r->checked[a] != 1 || r->gone[a]) continue;
        if (sr__store_server_waiting(r->server, key_of(key, sizeof key, "run/alive/%d/%d", a, r->joins[a]))) {
            r->watching[a] = 1;
        } else if (r->watching[a]) {
            r->watching[a] = 0;
            r->gone[a] = 1;
            r->back[a] = 0;
            snprintf(why, sizeof why, "node %d's shardrun (agent %d) went away%s", r->agent_node[a], a,
                     r->phase == SR_RDZV_RUNNING ? " before the run ended" : r->phase == SR_RDZV_RESTART ? " while the job restarted" : "");
            if (r->phase == SR_RDZV_RUNNING) decide(r, r->agent_node[a], SR_FAIL_RETRYABLE, why);
        }
    }
}

int sr__rdzv_pollfds(sr_rdzv *r, struct pollfd *pfds, int max) {
    if (r->server) return sr__store_server_pollfds(r->server, pfds, max);
    if (r->watch && !r->watch_closed && max > 0) {
        pfds[0] = (struct pollfd){.fd = sr__store_fd(r->watch), .events = POLLIN};
        return 1;
    }
    return 0;
}

/* Other agents: the watch connection's wait ended: read what arrived. */
static void read_watch(sr_rdzv *r) {
    void *v = NULL;
    size_t len = 0;
    char key[64];
    int rc;
    r->watch_closed = 1;
    if (r->waiting_start) {
        rc = sr__store_get(r->ctl, key_of(key, sizeof key, "run/%d/start/%d", r->attempt + 1, r->agent_id), &v, &len);
        r->waiting_start = 0;
        if (rc == 0 && !strcmp((char *)v, "go")) {
            r->start_ready = 1;
        } else {
            r->attempt++; /* the host's verdict, and its acknowledgement, belong to the next attempt */
            r->phase = SR_RDZV_FAILED;
            set_failure(r, 0, 0, rc == 0 && !strncmp((char *)v, "fail:", 5) ? (char *)v + 5 : "node 0's shardrun went away while the job restarted");
        }
        free(v);
        return;
    }
    rc = sr__store_get(r->ctl, key_of(key, sizeof key, "run/%d/outcome/%d", r->attempt, r->agent_id), &v, &len);
    if (rc == 0) {
        int node;
        char kind, msg[1024];
        parse_outcome((char *)v, len, &node, &kind, msg, sizeof msg);
        if (kind == 'o') {
            r->outcome_ok = 1;
            r->phase = SR_RDZV_SUCCEEDED;
        } else {
            set_failure(r, node, kind == 'c', msg);
            r->phase = kind == 'r' ? SR_RDZV_RESTART : kind == 'p' ? SR_RDZV_PREEMPTED : SR_RDZV_FAILED;
        }
    } else if (r->phase == SR_RDZV_RUNNING) {
        set_failure(r, 0, 0, "");
        snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere, "node 0's shardrun went away (%s)",
                 rc < 0 ? sr__store_error(r->ctl) : "its store closed");
        r->phase = SR_RDZV_FAILED;
    }
    free(v);
}

void sr__rdzv_handle(sr_rdzv *r, const struct pollfd *pfds, int n) {
    if (r->server) {
        sr__store_server_handle(r->server, pfds, n);
        check_agents(r);
        check_fingerprints(r);
        char key[64];
        size_t len;
        const char *v = sr__store_server_get(r->server, key_of(key, sizeof key, "run/%d/failure", r->attempt, 0), &len);
        if (v && r->phase == SR_RDZV_RUNNING && !r->reported_failure) {
            int node;
            char kind, msg[1024];
            parse_outcome(v, len, &node, &kind, msg, sizeof msg);
            decide(r, node, kind, msg);
        }
        return;
    }
    for (int i = 0; r->watch && !r->watch_closed && i < n; i++)
        if (pfds[i].fd == sr__store_fd(r->watch) && pfds[i].revents) read_watch(r);
}

int sr__rdzv_outcome_known(const sr_rdzv *r) {
    if (r->hosting || r->nagents < 2 || !r->enabled) return r->phase != SR_RDZV_RUNNING;
    return r->watch_closed && !r->waiting_start;
}

void sr__rdzv_succeed(sr_rdzv *r) {
    if (r->phase != SR_RDZV_RUNNING) return;
    r->phase = SR_RDZV_SUCCEEDED;
    publish_outcome(r, 0, 'o', "every rank succeeded");
}

void sr__rdzv_ack(sr_rdzv *r) {
    char key[64];
    if (!r->ctl || r->acked) return;
    sr__store_set(r->ctl, key_of(key, sizeof key, "run/%d/ack/%d", r->attempt, r->agent_id), "1", 1);
    r->acked = 1;
}

int sr__rdzv_timeout_ms(const sr_rdzv *r) {
    int t = r->server ? sr__store_server_timeout_ms(r->server) : -1;
    /* waiting for agents to read the verdict, or watching for one that goes away: look again soon */
    if (r->server && r->nagents > 1 && (t < 0 || t > 100)) t = 100;
    /* a restart: its delay, and the deadline for agents to come back */
    if (r->hosting && r->phase == SR_RDZV_RESTART && (t < 0 || t > 100)) t = 100;
    return t;
}

void sr__rdzv_report_failure(sr_rdzv *r, int node, const char *what, sr_rdzv_failure kind) {
    if (r->phase != SR_RDZV_RUNNING || r->reported_failure) return; /* the first one is known */
    if (r->hosting || !r->enabled) {
        decide(r, node, (char)kind, what);
    } else if (r->ctl) {
        char v[1200], key[64];
        int n = format_outcome(v, sizeof v, node, (char)kind, what);
        sr__store_set(r->ctl, key_of(key, sizeof key, "run/%d/failure", r->attempt, 0), v, (size_t)n);
    }
    r->reported_failure = 1;
}

int sr__rdzv_report_done(sr_rdzv *r, const char *results, size_t len, int succeeded) {
    char key[64];
    int kept_local = 0;
    if (r->ctl && len) {
        /* node 0 prints every rank's results; a node's that do not fit one store value stay local */
        key_of(key, sizeof key, "run/%d/results/%d", r->attempt, r->agent_id);
        if (len > SR_STORE_MAX_VALUE || sr__store_set(r->ctl, key, results, len) != 0) kept_local = 1;
    }
    if (!succeeded) return kept_local; /* "done" means: every rank of this agent succeeded */
    key_of(key, sizeof key, "run/%d/done/%d", r->attempt, r->agent_id);
    if (r->server) sr__store_server_set(r->server, key, "1", 1);
    else if (r->ctl) sr__store_set(r->ctl, key, "1", 1);
    return kept_local;
}

const char *sr__rdzv_results(const sr_rdzv *r, int agent, size_t *len) {
    char key[64];
    return r->server ? sr__store_server_get(r->server, key_of(key, sizeof key, "run/%d/results/%d", r->attempt, agent), len)
                     : NULL;
}

int sr__rdzv_all_done(const sr_rdzv *r) {
    if (!r->server) return 1;
    char key[64];
    for (int a = 0; a < r->nagents; a++)
        if (!sr__store_server_get(r->server, key_of(key, sizeof key, "run/%d/done/%d", r->attempt, a), NULL)) return 0;
    return 1;
}

int sr__rdzv_settled(const sr_rdzv *r) {
    if (!r->server || (!r->refused_at && !r->outcome_at)) return 1;
    /* refused agents read why at once; the others first stop their workers and report */
    double since = r->outcome_at ? r->outcome_at : r->refused_at;
    if (sr__now_s() - since > (r->outcome_at ? r->ack_timeout_s : 3.0)) return 1;
    char key[64];
    for (int a = 1; a < r->nagents; a++) {
        if (!r->checked[a] || r->gone[a]) continue; /* never arrived, or gone */
        if (r->checked[a] == 1 && !r->outcome_at) continue;                 /* accepted, and no verdict yet */
        if (!sr__store_server_get(r->server, key_of(key, sizeof key, "run/%d/ack/%d", r->attempt, a), NULL)) return 0;
    }
    return 1;
}

/* ---- restarts ------------------------------------------------------------------------------- */

int sr__rdzv_stopped(sr_rdzv *r) {
    char key[64], err[512];
    if (r->hosting || !r->ctl) return 0;
    sr__store_set(r->ctl, key_of(key, sizeof key, "run/%d/stopped/%d", r->attempt, r->agent_id), "1", 1);
    if (rewatch(r, key_of(key, sizeof key, "run/%d/start/%d", r->attempt + 1, r->agent_id), err, sizeof err) != 0) {
        r->phase = SR_RDZV_FAILED;
        snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere, "node 0's shardrun went away while the job restarted "
                 "(%s)", err);
        return -1;
    }
    r->waiting_start = 1;
    r->start_ready = 0;
    return 0;
}

/* Hosting agent: every agent still waiting for the next attempt hears that there is none. */
static void fail_restart(sr_rdzv *r, const char *what) {
    char v[1100], key[64];
    int n = snprintf(v, sizeof v, "fail:%s", what);
    r->attempt++;
    for (int a = 1; a < r->nagents && r->server; a++)
        sr__store_server_set(r->server, key_of(key, sizeof key, "run/%d/start/%d", r->attempt, a), v,
                             (size_t)(n < (int)sizeof v ? n : (int)sizeof v - 1));
    set_failure(r, r->failed_node, 0, what);
    sr__buf_printf(&r->attempts, "restart %d called off: %s\n", r->attempt, what);
    r->restart_called_off = 1;
    r->phase = SR_RDZV_FAILED;
    r->outcome_at = sr__now_s();
}

void sr__rdzv_abandon_restart(sr_rdzv *r, const char *what) {
    char key[64];
    if (r->phase != SR_RDZV_RESTART) return;
    if (r->hosting || !r->ctl) {
        fail_restart(r, what);
        return;
    }
    sr__store_set(r->ctl, key_of(key, sizeof key, "run/%d/quit/%d", r->attempt, r->agent_id), what, strlen(what));
    r->attempt++; /* as if the host's answer came: what follows belongs to the next attempt's keys */
    r->restart_called_off = 1;
    r->phase = SR_RDZV_FAILED;
    set_failure(r, r->agent_id, 0, what);
}

int sr__rdzv_restart_ready(sr_rdzv *r) {
    if (r->phase == SR_RDZV_FAILED) return -1;
    if (r->phase != SR_RDZV_RESTART) return 0;
    if (!r->hosting) return r->start_ready || !r->enabled || r->nagents < 2 ? 1 : 0;
    double now = sr__now_s();
    char key[64], why[600];
    for (int a = 1; a < r->nagents && r->server; a++) {
        size_t qlen = 0;
        const char *quit = sr__store_server_get(r->server, key_of(key, sizeof key, "run/%d/quit/%d", r->attempt, a), &qlen);
        if (quit) {
            snprintf(why, sizeof why, "%.*s", (int)qlen, quit);
            r->failed_node = r->agent_node[a];
            r->gone[a] = 1; /* it leaves: no verdict to wait for */
            fail_restart(r, why);
            return -1;
        }
    }
    for (int a = 1; a < r->nagents && r->server; a++) {
        int back = r->back[a];
        int stopped = !r->gone[a] && sr__store_server_get(r->server, key_of(key, sizeof key, "run/%d/stopped/%d", r->attempt, a), NULL);
        if (back || stopped) continue;
        if (now - r->restart_at < r->rejoin_timeout_s) return 0;
        if (r->gone[a])
            snprintf(why, sizeof why, "node %d's shardrun (agent %d) went away and did not come back within rdzv_timeout "
                     "(%gs): start it again with the same command, or raise rdzv_timeout", r->agent_node[a], a,
                     r->rejoin_timeout_s);
        else
            snprintf(why, sizeof why, "node %d's shardrun (agent %d) did not stop its workers for the restart within "
                     "rdzv_timeout (%gs)", r->agent_node[a], a, r->rejoin_timeout_s);
        r->failed_node = r->agent_node[a];
        fail_restart(r, why);
        return -1;
    }
    return now - r->restart_at >= r->restart_delay_s ? 1 : 0;
}

void sr__rdzv_next_attempt(sr_rdzv *r) {
    char key[64], err[512];
    r->attempt++;
    r->phase = SR_RDZV_RUNNING;
    r->failed_elsewhere[0] = 0;
    r->failed_node = -1;
    r->failed_config = 0;
    r->reported_failure = 0;
    r->outcome_at = 0;
    r->acked = 0;
    if (r->server) {
        memset(r->back, 0, (size_t)r->nagents);
        for (int a = 1; a < r->nagents; a++)
            sr__store_server_set(r->server, key_of(key, sizeof key, "run/%d/start/%d", r->attempt, a), "go", 2);
    } else if (r->ctl) {
        r->start_ready = 0;
        if (rewatch(r, key_of(key, sizeof key, "run/%d/outcome/%d", r->attempt, r->agent_id), err, sizeof err) != 0) {
            r->phase = SR_RDZV_FAILED;
            snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere, "node 0's shardrun went away (%s)", err);
        }
    }
}

void sr__rdzv_free(sr_rdzv *r) {
    free(r->checked);
    free(r->watching);
    free(r->gone);
    free(r->back);
    free(r->joins);
    free(r->answered);
    free(r->agent_node);
    sr__buf_free(&r->attempts);
    sr__store_server_free(r->server);
    sr__store_close(r->watch);
    sr__store_close(r->ctl);
    sr__store_close(r->alive);
    memset(r, 0, sizeof *r);
}
