#define _GNU_SOURCE
#include "store/rdzv.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/rand.h"
#include "store/wire.h"

#define FAILED_KEY "run/failed"

/* The failure value: "<node>:<kind>:<message>", kind 'f' (a rank failed) or 'c' (a mismatch) */
static void publish_failure(sr_rdzv *r, int node, char kind, const char *what) {
    char v[1200];
    int n = snprintf(v, sizeof v, "%d:%c:%s", node, kind, what);
    if (n < 0) return;
    if ((size_t)n >= sizeof v) n = (int)sizeof v - 1;
    if (r->server) sr__store_server_set(r->server, FAILED_KEY, v, (size_t)n);
    else if (r->ctl) sr__store_set(r->ctl, FAILED_KEY, v, (size_t)n);
}

static void read_failure(sr_rdzv *r, const char *v, size_t len) {
    char *end = NULL;
    long node = strtol(v, &end, 10);
    if (end && end + 3 <= v + len && end[0] == ':' && end[2] == ':') {
        r->failed_node = (int)node;
        r->failed_config = end[1] == 'c';
        snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere, "%.*s", (int)(v + len - (end + 3)), end + 3);
    } else {
        r->failed_node = -1;
        snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere, "%.*s", (int)len, v);
    }
}

/* The value of line `name` ("name=value") in a fingerprint, or NULL; *len its length. */
static const char *fp_value(const char *fp, const char *name, size_t nlen, size_t *len) {
    for (const char *p = fp; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t l = eol ? (size_t)(eol - p) : strlen(p);
        if (l > nlen && !strncmp(p, name, nlen) && p[nlen] == '=') {
            *len = l - nlen - 1;
            return p + nlen + 1;
        }
        p = eol ? eol + 1 : NULL;
    }
    return NULL;
}

/* Names the first line on which two fingerprints differ (in either one's order), or returns 0. */
static int fp_differ(const char *mine, const char *theirs, char *why, size_t wlen) {
    const char *sides[2] = {mine, theirs};
    for (int s = 0; s < 2; s++)
        for (const char *p = sides[s]; p && *p;) {
            const char *eol = strchr(p, '\n'), *eq = strchr(p, '=');
            size_t l = eol ? (size_t)(eol - p) : strlen(p);
            if (*p != '#' && eq && eq < p + l) {
                size_t nlen = (size_t)(eq - p), la = 0, lb = 0;
                const char *a = fp_value(mine, p, nlen, &la), *b = fp_value(theirs, p, nlen, &lb);
                if (!a || !b || la != lb || memcmp(a, b, la)) {
                    size_t hl = 0, nl = 0, mhl = 0;
                    const char *host = fp_value(theirs, "#host", 5, &hl), *node = fp_value(theirs, "#node", 5, &nl);
                    const char *myhost = fp_value(mine, "#host", 5, &mhl);
                    snprintf(why, wlen,
                             "the agents were started with different jobs: %.*s is \"%.*s\" on node 0 (host %.*s) "
                             "but \"%.*s\" on node %.*s (host %.*s); start every node with the same job file, flags "
                             "and environment", (int)nlen, p, a ? (int)la : 7, a ? a : "(unset)", (int)mhl,
                             myhost ? myhost : "?", b ? (int)lb : 7, b ? b : "(unset)", node ? (int)nl : 1,
                             node ? node : "?", host ? (int)hl : 1, host ? host : "?");
                    return 1;
                }
            }
            p = eol ? eol + 1 : NULL;
        }
    return 0;
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
    snprintf(key, sizeof key, "run/fingerprint/%d", r->agent_id);
    const char *fp = a->fingerprint ? a->fingerprint : "";
    const char *vkey[1] = {key};
    snprintf(key, sizeof key, "run/fingerprint/%d", r->agent_id);
    if (sr__store_set(r->ctl, key, fp, strlen(fp)) != 0) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, p, sr__store_error(r->ctl));
        return -1;
    }
    snprintf(key, sizeof key, "run/verdict/%d", r->agent_id);
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
        snprintf(key, sizeof key, "run/verdict_read/%d", r->agent_id); /* node 0 may now go */
        sr__store_set(r->ctl, key, "1", 1);
        return -1;
    }
    free(verdict);
    if (sr__store_wait_send(r->watch, FAILED_KEY) != 0) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, p, sr__store_error(r->watch));
        return -1;
    }
    return 0;
}

/* Hosting agent: compares every fingerprint that arrived with this agent's; the first mismatch
   fails the run (published as a configuration failure) and is answered to the agent that sent it. */
static void check_fingerprints(sr_rdzv *r) {
    char key[64], why[1000];
    for (int a = 1; a < r->nagents && r->checked; a++) {
        if (r->checked[a]) continue;
        size_t len = 0;
        snprintf(key, sizeof key, "run/fingerprint/%d", a);
        const char *theirs = sr__store_server_get(r->server, key, &len);
        if (!theirs) continue;
        char *copy = strndup(theirs, len);
        r->checked[a] = 1;
        int differ = copy && fp_differ(r->fingerprint ? r->fingerprint : "", copy, why, sizeof why);
        free(copy);
        snprintf(key, sizeof key, "run/verdict/%d", a);
        sr__store_server_set(r->server, key, differ ? why : "ok", differ ? strlen(why) : 2);
        if (differ) r->checked[a] = 2, r->refused_at = sr__now_s();
        if (differ && !r->failed_elsewhere[0]) {
            publish_failure(r, 0, 'c', why);
            snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere, "%s", why);
            r->failed_config = 1;
            r->failed_node = -2; /* found here: no "elsewhere" */
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
        const char *v = sr__store_server_get(r->server, FAILED_KEY, &len);
        if (v && !r->failed_elsewhere[0] && !r->reported_failure) read_failure(r, v, len);
        return r->failed_elsewhere[0] != 0;
    }
    for (int i = 0; r->watch && !r->watch_closed && i < n; i++) {
        if (pfds[i].fd != sr__store_fd(r->watch) || !pfds[i].revents) continue;
        /* the pending wait answered (the run failed) or node 0's agent went away */
        void *v = NULL;
        size_t len = 0;
        int rc = sr__store_get(r->ctl, FAILED_KEY, &v, &len);
        if (rc == 0) read_failure(r, (char *)v, len);
        else r->failed_node = 0, snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere, "node 0's shardrun went away (%s)",
                      rc < 0 ? sr__store_error(r->ctl) : "its store closed");
        free(v);
        r->watch_closed = 1;
    }
    return r->failed_elsewhere[0] != 0;
}

int sr__rdzv_settled(const sr_rdzv *r);

int sr__rdzv_timeout_ms(const sr_rdzv *r) {
    int t = r->server ? sr__store_server_timeout_ms(r->server) : -1;
    /* waiting for a refused agent to read why: look again soon */
    if (r->refused_at && !sr__rdzv_settled(r) && (t < 0 || t > 50)) t = 50;
    return t;
}

void sr__rdzv_report_failure(sr_rdzv *r, int node, const char *what) {
    if (!r->enabled || r->failed_elsewhere[0]) return; /* the first failure is already known */
    r->reported_failure = 1;
    publish_failure(r, node, 'f', what);
}

int sr__rdzv_report_done(sr_rdzv *r, const char *results, size_t len) {
    char key[64];
    int kept_local = 0;
    if (r->ctl && len) {
        /* node 0 prints every rank's results; a node's that do not fit one store value stay local */
        snprintf(key, sizeof key, "run/results/%d", r->agent_id);
        if (len > SR_STORE_MAX_VALUE || sr__store_set(r->ctl, key, results, len) != 0)
            kept_local = 1;
    }
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
    if (!r->server || !r->refused_at) return 1;
    if (sr__now_s() - r->refused_at > 3.0) return 1; /* an agent that does not read it is gone */
    char key[64];
    for (int a = 1; a < r->nagents; a++) {
        snprintf(key, sizeof key, "run/verdict_read/%d", a);
        if (r->checked[a] == 2 && !sr__store_server_get(r->server, key, NULL)) return 0;
    }
    return 1;
}

void sr__rdzv_free(sr_rdzv *r) {
    free(r->checked);
    sr__store_server_free(r->server);
    sr__store_close(r->watch);
    sr__store_close(r->ctl);
    memset(r, 0, sizeof *r);
}
