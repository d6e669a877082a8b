/*
 * An elastic job's membership (nnodes = MIN:MAX, docs/elastic.md), on both sides: agents are
 * slots 0 .. MAX-1.  Node 0's agent is slot 0; another agent arrives with a ticket and is given
 * the lowest free slot (one that never had an agent, or whose agent went away), then joins on it
 * as a fixed-size job's agent joins on its node's index.  Each attempt's world is the slots taking
 * part, in slot order (run/A/members), published before any agent starts that attempt; an agent's
 * node rank is its place in that list.  The first world forms once MIN agents are there and
 * rdzv_last_call passed (at once with MAX).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "store/rdzv_internal.h"
#include "store/rdzv_protocol.h"

int sr__rdzv_takes_part(const sr__rdzv *r, int agent) {
    if (!r->elastic || agent == 0) return 1;
    if (!r->hosting || !r->in_world || agent < 0 || agent >= r->nagents) return 0;
    return r->in_world[agent];
}

int sr__rdzv_node_of(const sr__rdzv *r, int agent) {
    int node = 0;
    for (int a = 0; a < agent && a < r->nagents; a++) node += sr__rdzv_takes_part(r, a);
    return node;
}

/* A slot no live agent holds or was given, or -1 (the job has its MAX agents). */
static int free_slot(const sr__rdzv *r) {
    for (int a = 1; a < r->nagents; a++) {
        const sr__rdzv_peer *p = &r->peers[a];
        /* a silent agent's slot (gone, its connection still open) is not given to another: both would
           read the slot's start */
        if (!p->assigned && (p->state == SR__PEER_UNSEEN || (p->state == SR__PEER_GONE && !p->watching))) return a;
    }
    return -1;
}

void sr__rdzv_elastic_arrivals(sr__rdzv *r) {
    char key[64], v[300];
    const char *n = sr__store_server_get(r->server, "run/tickets", NULL);
    int tickets = n ? atoi(n) : 0;
    /* tickets_seen: every ticket up to it was answered.  A ticket whose agent has not asked yet is
       looked at again next turn, and holds up none after it: its agent may have died between taking
       the ticket and asking */
    for (int t = r->tickets_seen + 1, answered_all = 1; t <= tickets; t++) {
        if (sr__store_server_get(r->server, sr__rdzv_key(key, sizeof key, "run/slot/%d", t, 0), NULL)) {
            if (answered_all) r->tickets_seen = t;
            continue;
        }
        if (!sr__store_server_get(r->server, sr__rdzv_key(key, sizeof key, "run/arrival/%d", t, 0), NULL)) {
            answered_all = 0;
            continue;
        }
        if (answered_all) r->tickets_seen = t;
        int a = free_slot(r);
        if (a < 0) {
            snprintf(v, sizeof v,
                     "full:the job already has its %d nodes (nnodes = %d:%d); start this node again when one of them "
                     "has left",
                     r->nagents, r->min_agents, r->nagents);
        } else {
            r->peers[a].assigned = 1;
            snprintf(v, sizeof v, "%d", a);
        }
        sr__store_server_set(r->server, sr__rdzv_key(key, sizeof key, "run/slot/%d", t, 0), v, strlen(v));
    }
}

int sr__rdzv_next_world_size(const sr__rdzv *r) {
    int n = 1;
    for (int a = 1; a < r->nagents; a++)
        n += r->peers[a].state == SR__PEER_ACCEPTED || r->peers[a].state == SR__PEER_BACK;
    return n;
}

void sr__rdzv_publish_world(sr__rdzv *r, int attempt) {
    char key[64];
    sr__buf list = {0};
    sr__buf_add(&list, "0", 1);
    int n = 1;
    for (int a = 1; a < r->nagents; a++) {
        if (r->peers[a].state == SR__PEER_BACK) r->peers[a].state = SR__PEER_ACCEPTED;
        r->in_world[a] = r->peers[a].state == SR__PEER_ACCEPTED;
        if (!r->in_world[a]) continue;
        sr__buf_printf(&list, ",%d", a);
        n++;
    }
    r->world_nodes = n;
    r->world_rank = 0;
    /* out of memory: the agents find no list and fail their start, naming the store */
    if (!list.oom)
        sr__store_server_set(r->server, sr__rdzv_key(key, sizeof key, "run/%d/members", attempt, 0), list.s, list.n);
    sr__buf_free(&list);
}

int sr__rdzv_read_world(sr__rdzv *r, int attempt, char *err, size_t errlen) {
    char key[64];
    void *v = NULL;
    size_t len = 0;
    if (sr__store_get(r->ctl, sr__rdzv_key(key, sizeof key, "run/%d/members", attempt, 0), &v, &len) != 0) {
        snprintf(err, errlen, "cannot read attempt %d's members from node 0's store: %s", attempt,
                 sr__store_error(r->ctl));
        return -1;
    }
    int n = 0, rank = -1;
    for (char *p = v; p && *p;) {
        char *end;
        long a = strtol(p, &end, 10);
        if (end == p) break;
        if (a == r->agent_id) rank = n;
        n++;
        p = *end == ',' ? end + 1 : end;
    }
    free(v);
    if (rank < 0) {
        snprintf(err, errlen, "node 0 started attempt %d without this node (slot %d)", attempt, r->agent_id);
        return -1;
    }
    r->world_nodes = n;
    r->world_rank = rank;
    return 0;
}

int sr__rdzv_take_slot(sr__rdzv *r, double timeout_s, sr__diag *diag) {
    char key[64], missing[64];
    long long t = sr__store_add(r->ctl, "run/tickets", 1);
    if (t <= 0 || t > 1000000000 ||
        sr__store_set(r->ctl, sr__rdzv_key(key, sizeof key, "run/arrival/%d", (int)t, 0), "1", 1) != 0) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, r->port, sr__store_error(r->ctl));
        return SR__RDZV_UNREACHABLE;
    }
    const char *skey[1] = {sr__rdzv_key(key, sizeof key, "run/slot/%d", (int)t, 0)};
    void *v = NULL;
    size_t len = 0;
    int wrc = sr__store_wait(r->ctl, skey, 1, timeout_s, missing, sizeof missing);
    if (wrc != 0 || sr__store_get(r->ctl, skey[0], &v, &len) != 0) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, r->port,
                     wrc > 0 ? "node 0's shardrun gave this node no place within rdzv_timeout"
                             : sr__store_error(r->ctl));
        free(v);
        return SR__RDZV_UNREACHABLE;
    }
    int rc = 0;
    if (!strncmp(v, "full:", 5)) {
        sr__diag_add(diag, "%s", (char *)v + 5);
        r->full = 1;
        rc = SR__RDZV_UNREACHABLE; /* not a configuration error: the same command works later */
    } else {
        r->agent_id = atoi(v);
        if (r->agent_id < 1 || r->agent_id >= r->nagents) {
            sr__diag_add(diag, "node 0's shardrun gave this node slot \"%s\", not one of 1..%d", (char *)v,
                         r->nagents - 1);
            rc = -1;
        }
    }
    free(v);
    return rc;
}

int sr__rdzv_elastic_formable(sr__rdzv *r, double started, double *min_at, sr__diag *diag) {
    int n = sr__rdzv_next_world_size(r);
    double now = sr__now_s();
    if (n < r->min_agents) *min_at = 0; /* (again: one went away) */
    else if (!*min_at) *min_at = now;
    if (n >= r->nagents || (*min_at && now - *min_at >= r->last_call_s)) return 1;
    /* a new leader (etcd) re-forms a running job: every live agent is there, no last call */
    if (r->took_over && *min_at && n >= r->expect_agents) return 1;
    /* rdzv_timeout bounds the wait for MIN agents; the last call runs its course once they are there */
    if (*min_at || now - started < r->timeout_s) return 0;
    sr__diag_add(diag,
                 "%d of the at least %d nodes of nnodes = %d:%d joined within rdzv_timeout (%gs): start the "
                 "others' shardrun with the same job file and %s, raise rdzv_timeout, or lower the minimum",
                 n, r->min_agents, r->min_agents, r->nagents, r->timeout_s,
                 r->etcd ? "rdzv_endpoint (they meet in etcd)" : "master_addr (node 0's address)");
    return -1;
}

void sr__rdzv_elastic_start(sr__rdzv *r, int attempt) {
    char key[64];
    sr__rdzv_publish_world(r, attempt); /* before any "go": each agent reads its place */
    r->attempt = attempt;
    sr__rdzv_etcd_publish_job(r); /* with etcd: what the next leader carries on (it may be lost: no error) */
    for (int a = 1; a < r->nagents; a++) {
        char v[300] = "go";
        /* left out while its connection is still open (it did not stop in time, or went silent): it
           may wait for this start, and hears it has none */
        if (r->peers[a].state == SR__PEER_GONE && r->peers[a].watching)
            snprintf(v, sizeof v,
                     "fail:node 0's shardrun started attempt %d without this node (slot %d): it did not stop "
                     "its workers within rdzv_timeout, or did not answer within hang_timeout",
                     attempt, a);
        else if (r->peers[a].state != SR__PEER_ACCEPTED) continue;
        sr__store_server_set(r->server, sr__rdzv_key(key, sizeof key, "run/%d/start/%d", attempt, a), v, strlen(v));
    }
    r->formed = 1;
}
