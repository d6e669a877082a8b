#define _GNU_SOURCE
#include "store/rdzv.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/rand.h"
#include "store/fingerprint.h"
#include "store/wire.h"

/* Keys of the agents' rendezvous (k: an agent's index):
     run/fingerprint/k   agent k -> host: what defines the run as agent k sees it
     run/accepted/k      host -> agent k: "ok", or why agent k is refused
     run/failure         any agent -> host: the first failure it saw ("node:kind:message")
     run/done/k, run/results/k   agent k -> host: its workers are done, and their results
     run/outcome/k       host -> agent k: the run's one verdict ("node:kind:message"; kind o = every
                         rank succeeded, f = a rank failed or an agent went away, c = agents
                         started with different jobs); agent k's watch connection waits on it
     run/ack/k           agent k -> host: it read the verdict (and reported its results) */

/* "node:kind:message" */
static int format_outcome(char *v, size_t vlen, int node, char kind, const char *what) {
    int n = snprintf(v, vlen, "%d:%c:%s", node, kind, what);
    if (n < 0) return 0;
    return (size_t)n >= vlen ? (int)vlen - 1 : n;
}

static void parse_outcome(sr_rdzv *r, const char *v, size_t len) {
    char *end = NULL;
    long node = strtol(v, &end, 10);
    char kind = 'f';
    const char *msg = v;
    if (end && end + 3 <= v + len && end[0] == ':' && end[2] == ':') kind = end[1], msg = end + 3;
    else node = -1;
    if (kind == 'o') {
        r->outcome_ok = 1;
        return;
    }
    r->failed_node = (int)node;
    r->failed_config = kind == 'c';
    snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere, "%.*s", (int)(v + len - msg), msg);
}

/* Hosting agent: sends the run's verdict to every other agent, once. */
static void publish_outcome(sr_rdzv *r, int node, char kind, const char *what) {
    if (!r->server || r->outcome_at) return;
    char v[1200], key[64];
    int n = format_outcome(v, sizeof v, node, kind, what);
    for (int a = 1; a < r->nagents; a++) {
        snprintf(key, sizeof key, "run/outcome/%d", a);
        sr__store_server_set(r->server, key, v, (size_t)n);
    }
    r->outcome_at = sr__now_s();
}

/* Hosting agent: it found the run's failure itself (first failure wins); every agent hears it. */
static void host_failure(sr_rdzv *r, int node, char kind, const char *what) {
    if (r->failed_elsewhere[0] || r->reported_failure) return;
    snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere, "%s", what);
    r->failed_node = node;
    r->failed_config = kind == 'c';
    publish_outcome(r, node, kind, what);
}

static void random_token(char out[33]) {
    unsigned char b[16];
    sr__random_bytes(b, sizeof b);
    for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
}

int sr__rdzv_prepare(sr_rdzv *r, const sr_rdzv_args *a, sr_diag *diag) {
    memset(r, 0, sizeof *r);
    r->nagents = a->nagents;
    r->agent_id = a->agent_id;
    r->failed_node = -1;
    r->fingerprint = a->fingerprint;
    int single = r->nagents == 1;
    if (!a->need_store) return 0;
    r->enabled = 1;
    r->hosting = r->agent_id == 0;

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
        r->checked = calloc((size_t)r->nagents, 1);
        r->watching = calloc((size_t)r->nagents, 1);
        r->agent_node = calloc((size_t)r->nagents, sizeof *r->agent_node);
        r->ack_timeout_s = a->ack_timeout_s;
        return 0;
    }
    r->port = p;
    r->ctl = sr__store_connect(r->host, p, r->token, a->timeout_s, err, sizeof err);
    r->watch = r->ctl ? sr__store_connect(r->host, p, r->token, a->timeout_s, err, sizeof err) : NULL;
    if (!r->watch) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, p, err);
        return -1;
    }
    /* node 0's agent compares what defines the run before this agent starts anything */
    char key[64], missing[64];
    const char *fp = a->fingerprint ? a->fingerprint : "";
    const char *vkey[1] = {key};
    snprintf(key, sizeof key, "run/fingerprint/%d", r->agent_id);
    if (sr__store_set(r->ctl, key, fp, strlen(fp)) != 0) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, p, sr__store_error(r->ctl));
        return -1;
    }
    snprintf(key, sizeof key, "run/accepted/%d", r->agent_id);
    int wrc = sr__store_wait(r->ctl, vkey, 1, a->timeout_s, missing, sizeof missing);
    void *verdict = NULL;
    size_t vlen = 0;
    if (wrc != 0 || sr__store_get(r->ctl, key, &verdict, &vlen) != 0) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, p,
                     wrc > 0 ? "node 0's shardrun did not answer within rdzv_timeout" : sr__store_error(r->ctl));
        free(verdict);
        return -1;
    }
    if (strcmp((char *)verdict, "ok")) {
        sr__diag_add(diag, "%s", (char *)verdict);
        free(verdict);
        snprintf(key, sizeof key, "run/ack/%d", r->agent_id); /* node 0 may now go */
        sr__store_set(r->ctl, key, "1", 1);
        return -1;
    }
    free(verdict);
    snprintf(key, sizeof key, "run/outcome/%d", r->agent_id);
    if (sr__store_wait_send(r->watch, key) != 0) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, p, sr__store_error(r->watch));
        return -1;
    }
    return 0;
}

/* Hosting agent: compares every fingerprint that arrived with this agent's; the first mismatch
   fails the run (a configuration failure) and is answered to the agent that sent it. */
static void check_fingerprints(sr_rdzv *r) {
    char key[64], why[1000];
    for (int a = 1; a < r->nagents && r->checked; a++) {
        if (r->checked[a]) continue;
        size_t len = 0;
        snprintf(key, sizeof key, "run/fingerprint/%d", a);
        const char *theirs = sr__store_server_get(r->server, key, &len);
        if (!theirs) continue;
        char *copy = strndup(theirs, len);
        const char *node = copy ? strstr(copy, "#node=") : NULL;
        r->agent_node[a] = node ? atoi(node + 6) : -1;
        int differ = copy && sr__fingerprint_differ(r->fingerprint ? r->fingerprint : "", copy, why, sizeof why);
        free(copy);
        r->checked[a] = differ ? 2 : 1;
        snprintf(key, sizeof key, "run/accepted/%d", a);
        sr__store_server_set(r->server, key, differ ? why : "ok", differ ? strlen(why) : 2);
        if (differ) {
            if (!r->refused_at) r->refused_at = sr__now_s();
            host_failure(r, 0, 'c', why);
        }
    }
}

/* Hosting agent: an accepted agent whose watch connection closed before the verdict went away
   (killed, or its machine lost): the run cannot succeed, and waiting for its ranks inside a
   collective would only end at the process group's timeout. */
static void check_agents(sr_rdzv *r) {
    char key[64], why[300];
    for (int a = 1; a < r->nagents && !r->outcome_at; a++) {
        if (r->checked[a] != 1) continue;
        snprintf(key, sizeof key, "run/outcome/%d", a);
        if (sr__store_server_waiting(r->server, key)) {
            r->watching[a] = 1;
        } else if (r->watching[a] == 1) {
            r->watching[a] = 2; /* gone */
            snprintf(why, sizeof why, "node %d's shardrun (agent %d) went away before the run ended",
                     r->agent_node[a], a);
            host_failure(r, r->agent_node[a], 'f', why);
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

int sr__rdzv_handle(sr_rdzv *r, const struct pollfd *pfds, int n) {
    if (r->server) {
        sr__store_server_handle(r->server, pfds, n);
        check_fingerprints(r);
        size_t len;
        const char *v = sr__store_server_get(r->server, "run/failure", &len);
        if (v && !r->failed_elsewhere[0] && !r->reported_failure) {
            parse_outcome(r, v, len);
            publish_outcome(r, r->failed_node, r->failed_config ? 'c' : 'f', r->failed_elsewhere);
        }
        check_agents(r);
        return r->failed_elsewhere[0] != 0;
    }
    for (int i = 0; r->watch && !r->watch_closed && i < n; i++) {
        if (pfds[i].fd != sr__store_fd(r->watch) || !pfds[i].revents) continue;
        /* the verdict arrived, or node 0's agent went away */
        void *v = NULL;
        size_t len = 0;
        char key[64];
        snprintf(key, sizeof key, "run/outcome/%d", r->agent_id);
        int rc = sr__store_get(r->ctl, key, &v, &len);
        if (rc == 0) {
            parse_outcome(r, (char *)v, len);
        } else if (!r->failed_elsewhere[0]) {
            r->failed_node = 0;
            snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere, "node 0's shardrun went away (%s)",
                     rc < 0 ? sr__store_error(r->ctl) : "its store closed");
        }
        free(v);
        r->watch_closed = 1;
    }
    return r->failed_elsewhere[0] != 0;
}

int sr__rdzv_outcome_known(const sr_rdzv *r) {
    if (!r->enabled || r->server || r->nagents < 2) return 1;
    return r->watch_closed;
}

void sr__rdzv_succeed(sr_rdzv *r) { publish_outcome(r, 0, 'o', "every rank succeeded"); }

void sr__rdzv_ack(sr_rdzv *r) {
    char key[64];
    if (!r->ctl || r->acked) return;
    snprintf(key, sizeof key, "run/ack/%d", r->agent_id);
    sr__store_set(r->ctl, key, "1", 1);
    r->acked = 1;
}

int sr__rdzv_timeout_ms(const sr_rdzv *r) {
    int t = r->server ? sr__store_server_timeout_ms(r->server) : -1;
    /* waiting for agents to read the verdict, or watching for one that goes away: look again soon */
    if (r->server && r->nagents > 1 && (t < 0 || t > 100)) t = 100;
    return t;
}

void sr__rdzv_report_failure(sr_rdzv *r, int node, const char *what, int config) {
    if (!r->enabled || r->failed_elsewhere[0] || r->reported_failure) return; /* the first one is known */
    char kind = config ? 'c' : 'f';
    if (r->server) {
        publish_outcome(r, node, kind, what);
    } else if (r->ctl) {
        char v[1200];
        int n = format_outcome(v, sizeof v, node, kind, what);
        sr__store_set(r->ctl, "run/failure", v, (size_t)n);
    }
    r->reported_failure = 1;
}

int sr__rdzv_report_done(sr_rdzv *r, const char *results, size_t len, int succeeded) {
    char key[64];
    int kept_local = 0;
    if (r->ctl && len) {
        /* node 0 prints every rank's results; a node's that do not fit one store value stay local */
        snprintf(key, sizeof key, "run/results/%d", r->agent_id);
        if (len > SR_STORE_MAX_VALUE || sr__store_set(r->ctl, key, results, len) != 0)
            kept_local = 1;
    }
    if (!succeeded) return kept_local; /* "done" means: every rank of this agent succeeded */
    snprintf(key, sizeof key, "run/done/%d", r->agent_id);
    if (r->server) sr__store_server_set(r->server, key, "1", 1);
    else if (r->ctl) sr__store_set(r->ctl, key, "1", 1);
    return kept_local;
}

const char *sr__rdzv_results(const sr_rdzv *r, int agent, size_t *len) {
    char key[64];
    snprintf(key, sizeof key, "run/results/%d", agent);
    return r->server ? sr__store_server_get(r->server, key, len) : NULL;
}

int sr__rdzv_all_done(const sr_rdzv *r) {
    if (!r->server) return 1;
    char key[64];
    for (int a = 0; a < r->nagents; a++) {
        snprintf(key, sizeof key, "run/done/%d", a);
        if (!sr__store_server_get(r->server, key, NULL)) return 0;
    }
    return 1;
}

int sr__rdzv_settled(const sr_rdzv *r) {
    if (!r->server || (!r->refused_at && !r->outcome_at)) return 1;
    /* refused agents read why at once; the others first stop their workers and report */
    double since = r->outcome_at ? r->outcome_at : r->refused_at;
    if (sr__now_s() - since > (r->outcome_at ? r->ack_timeout_s : 3.0)) return 1;
    char key[64];
    for (int a = 1; a < r->nagents; a++) {
        if (!r->checked[a] || r->watching[a] == 2) continue; /* never arrived, or gone */
        if (r->checked[a] == 1 && !r->outcome_at) continue;  /* accepted, and no verdict yet */
        snprintf(key, sizeof key, "run/ack/%d", a);
        if (!sr__store_server_get(r->server, key, NULL)) return 0;
    }
    return 1;
}

void sr__rdzv_free(sr_rdzv *r) {
    free(r->checked);
    free(r->watching);
    free(r->agent_node);
    sr__store_server_free(r->server);
    sr__store_close(r->watch);
    sr__store_close(r->ctl);
    memset(r, 0, sizeof *r);
}
