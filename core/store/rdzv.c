#define _GNU_SOURCE
#include "store/rdzv.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/rand.h"
#include "store/wire.h"

#define FAILED_KEY "run/failed"

static void random_token(char out[33]) {
    unsigned char b[16];
    sr__random_bytes(b, sizeof b);
    for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
}

int sr__rdzv_prepare(sr_rdzv *r, const sr_rdzv_args *a, sr_diag *diag) {
    memset(r, 0, sizeof *r);
    r->nagents = a->nagents;
    r->agent_id = a->agent_id;
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
        return 0;
    }
    r->port = p;
    r->ctl = sr__store_connect(r->host, p, r->token, a->timeout_s, err, sizeof err);
    r->watch = r->ctl ? sr__store_connect(r->host, p, r->token, a->timeout_s, err, sizeof err) : NULL;
    if (!r->watch || sr__store_wait_send(r->watch, FAILED_KEY) != 0) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, p, err);
        return -1;
    }
    return 0;
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
        size_t len;
        const char *v = sr__store_server_get(r->server, FAILED_KEY, &len);
        if (v && !r->failed_elsewhere[0] && !r->reported_failure) snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere, "%.*s", (int)len, v);
        return r->failed_elsewhere[0] != 0;
    }
    for (int i = 0; r->watch && !r->watch_closed && i < n; i++) {
        if (pfds[i].fd != sr__store_fd(r->watch) || !pfds[i].revents) continue;
        /* the pending wait answered (the run failed) or node 0's agent went away */
        void *v = NULL;
        size_t len = 0;
        int rc = sr__store_get(r->ctl, FAILED_KEY, &v, &len);
        if (rc == 0) snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere, "%s", (char *)v);
        else snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere, "node 0's shardrun went away (%s)",
                      rc < 0 ? sr__store_error(r->ctl) : "its store closed");
        free(v);
        r->watch_closed = 1;
    }
    return r->failed_elsewhere[0] != 0;
}

int sr__rdzv_timeout_ms(const sr_rdzv *r) { return r->server ? sr__store_server_timeout_ms(r->server) : -1; }

void sr__rdzv_report_failure(sr_rdzv *r, const char *what) {
    if (!r->enabled || r->failed_elsewhere[0]) return; /* the first failure is already known */
    r->reported_failure = 1;
    if (r->server) sr__store_server_set(r->server, FAILED_KEY, what, strlen(what));
    else if (r->ctl) sr__store_set(r->ctl, FAILED_KEY, what, strlen(what));
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

void sr__rdzv_free(sr_rdzv *r) {
    sr__store_server_free(r->server);
    sr__store_close(r->watch);
    sr__store_close(r->ctl);
    memset(r, 0, sizeof *r);
}
