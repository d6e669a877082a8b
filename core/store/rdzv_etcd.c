/*
 * The etcd rendezvous backend (rdzv_backend = etcd, docs/elastic.md): agents meet in etcd instead
 * of at node 0, so that any node, node 0 too, may leave an elastic job.
 *
 * etcd holds who leads, not the run: the agent that wins an election hosts the same store and
 * makes the same decisions node 0's agent makes with the built-in backend (rdzv_host.c), and the
 * others join it as arriving agents (rdzv_agent.c, rdzv_elastic.c).  When the leader goes, its
 * lease expires, the others end their workers, elect another, and the job goes on from its newest
 * checkpoint in the next attempt.  Keys, under /shardrun/<job>/ (the job: [shardrun] run_id):
 *
 *   agents/<lease>  one per live agent (its lease, TTL_S): how many a new leader waits for
 *   leader          "ADDR PORT TOKEN": the leader's store; created only when absent (the election),
 *                   with the leader's lease, so that it goes with the leader
 *   job             "JOB_ID ATTEMPT RESTARTS JOB_LEASE": what a new leader carries on, written by
 *                   the leader at each attempt; its lease (JOB_TTL_S) is renewed by every agent, so
 *                   it lives as long as any agent of the job does, and a job that ended leaves
 *                   nothing behind
 *
 * Each agent renews its leases from a thread of its own (with its own client), every TTL_S / 5
 * seconds, so that a long wait elsewhere in the agent never lets them expire.  A leader whose lease
 * expired anyway (cut off from etcd) is no longer the leader: sr__rdzv_etcd_deposed() says so and
 * the supervisor ends this agent's part (its store closes, and the others elect another).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/fail.h"
#include "base/rand.h"
#include "etcd/etcd.h"
#include "store/rdzv_internal.h"
#include "store/rdzv_protocol.h"

/* An agent's lease: how long after its last renewal etcd deletes its keys (the leader's too). */
enum { TTL_S = 5, JOB_TTL_S = 60 };

struct sr__rdzv_etcd {
    sr__etcd *c; /* the agent thread's client */
    char endpoints[1024];
    char prefix[200]; /* "/shardrun/<job>/" */
    int64_t lease;
    _Atomic int64_t job_lease; /* 0 until known; the keeper renews it too */
    char addr[64];             /* this agent's address as the others reach it (when it leads) */
    pthread_t keeper;
    int keeper_started;
    atomic_int stop, lease_lost;
    char lost_why[800]; /* written before lease_lost is set */
    double counted_at;  /* when agents/ was counted last */
};

static char *key_of(const sr__rdzv_etcd *e, char *buf, size_t len, const char *name) {
    snprintf(buf, len, "%s%s", e->prefix, name);
    return buf;
}

/* The job's record ("JOB_ID ATTEMPT RESTARTS JOB_LEASE") as the last leader left it, read with
   client c: 1 (its fields; e->job_lease learnt), 0 none, -1 err. */
static int read_job(sr__etcd *c, sr__rdzv_etcd *e, char id[80], int *attempt, int *restarts, char *err, size_t errlen) {
    char key[300];
    sr__etcd_kvs kv = {0};
    if (sr__etcd_get(c, key_of(e, key, sizeof key, "job"), &kv, err, errlen) != 0) return -1;
    int64_t lease = 0;
    int found = kv.n == 1 && sscanf(kv.kv[0].value, "%79s %d %d %" SCNd64, id, attempt, restarts, &lease) == 4;
    sr__etcd_kvs_free(&kv);
    if (found) atomic_store(&e->job_lease, lease);
    return found;
}

/* Renews this agent's lease, and the job's, every TTL_S / 5 seconds, until stopped or the lease is
   gone (expired, or not renewed within its TTL: etcd deletes its keys). */
static void *keeper_main(void *arg) {
    sr__rdzv_etcd *e = arg;
    char err[500];
    sr__etcd *c = sr__etcd_open(e->endpoints, &(sr__etcd_opts){.attempt_timeout_ms = 900, .op_timeout_ms = 2500}, err,
                                sizeof err);
    double renewed = sr__now_s();
    while (c && !atomic_load(&e->stop)) {
        for (int i = 0; i < TTL_S * 2 && !atomic_load(&e->stop); i++) usleep(100 * 1000);
        if (atomic_load(&e->stop)) break;
        int rc = sr__etcd_lease_keepalive(c, e->lease, NULL, err, sizeof err);
        /* the job's record and lease: a failure there is no error (a new leader finds the record, or none) */
        char id[80], ignored[600];
        int attempt, restarts;
        if (!atomic_load(&e->job_lease)) /* written by the leader at the first world's start */
            read_job(c, e, id, &attempt, &restarts, ignored, sizeof ignored);
        int64_t job = atomic_load(&e->job_lease);
        if (job) sr__etcd_lease_keepalive(c, job, NULL, ignored, sizeof ignored);
        if (rc == 1) {
            renewed = sr__now_s();
            continue;
        }
        if (rc == 0 || sr__now_s() - renewed > TTL_S) {
            snprintf(e->lost_why, sizeof e->lost_why, "this node's lease in etcd %s (%s)",
                     rc == 0 ? "expired" : "could not be renewed within its TTL",
                     rc == 0 ? "not renewed in time" : err);
            atomic_store(&e->lease_lost, 1);
            break;
        }
    }
    if (!c) {
        snprintf(e->lost_why, sizeof e->lost_why, "this node cannot renew its lease in etcd: %s", err);
        atomic_store(&e->lease_lost, 1);
    }
    sr__etcd_close(c);
    return NULL;
}

/* The address of this host that reaches the first etcd member (the interface its route leaves
   by), which the other nodes reach too; what a leader advertises.  0, or -1 with err. */
static int own_address(const char *endpoints, char *out, size_t len, char *err, size_t errlen) {
    char host[256];
    const char *s = endpoints;
    if (!strncmp(s, "http://", 7)) s += 7;
    size_t n = strcspn(s, ",");
    snprintf(host, sizeof host, "%.*s", (int)(n < sizeof host ? n : sizeof host - 1), s);
    char *colon = strrchr(host, ':');
    const char *port = "2379";
    if (colon) *colon = 0, port = colon + 1;
    if (host[0] == '[') memmove(host, host + 1, strlen(host)), host[strcspn(host, "]")] = 0;
    struct addrinfo hints = {.ai_socktype = SOCK_DGRAM}, *ai = NULL;
    int g = getaddrinfo(host, port, &hints, &ai);
    if (g != 0) return sr__fail(err, errlen, "etcd member %s: %s", host, gai_strerror(g));
    int fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = -1;
    struct sockaddr_storage me;
    socklen_t mlen = sizeof me;
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 && getsockname(fd, (void *)&me, &mlen) == 0 &&
        getnameinfo((void *)&me, mlen, out, (socklen_t)len, NULL, 0, NI_NUMERICHOST) == 0)
        rc = 0;
    else sr__fail(err, errlen, "no route from this host to etcd member %s: %s", host, strerror(errno));
    if (fd >= 0) close(fd);
    freeaddrinfo(ai);
    return rc;
}

int sr__rdzv_etcd_open(sr__rdzv *r, const sr__rdzv_args *a, sr__diag *diag) {
    char err[1200], key[300], host[256] = "?";
    sr__rdzv_etcd *e = sr__calloc(1, sizeof *e);
    if (!e) {
        sr__diag_add(diag, "out of memory for the etcd rendezvous");
        return -1;
    }
    r->etcd = e;
    snprintf(e->endpoints, sizeof e->endpoints, "%s", a->etcd_endpoints);
    snprintf(e->prefix, sizeof e->prefix, "/shardrun/%s/", a->etcd_job);
    if (own_address(e->endpoints, e->addr, sizeof e->addr, err, sizeof err) != 0) {
        sr__diag_add(diag, "rdzv_endpoint = %s: %s", e->endpoints, err);
        return -1;
    }
    e->c = sr__etcd_open(e->endpoints, &(sr__etcd_opts){.attempt_timeout_ms = 2000, .op_timeout_ms = 8000}, err,
                         sizeof err);
    if (!e->c || sr__etcd_lease_grant(e->c, TTL_S, &e->lease, NULL, err, sizeof err) != 0) {
        sr__diag_add(diag, "rendezvous in etcd (rdzv_endpoint = %s): %s", e->endpoints, err);
        return SR__RDZV_UNREACHABLE;
    }
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "?");
    char me[40];
    snprintf(me, sizeof me, "agents/%016" PRIx64, e->lease);
    if (sr__etcd_put(e->c, key_of(e, key, sizeof key, me), host, strlen(host), e->lease, NULL, err, sizeof err) != 0) {
        sr__diag_add(diag, "rendezvous in etcd (rdzv_endpoint = %s): %s", e->endpoints, err);
        return SR__RDZV_UNREACHABLE;
    }
    if (pthread_create(&e->keeper, NULL, keeper_main, e) != 0) {
        sr__diag_add(diag, "cannot start the thread that renews this node's lease in etcd: %s", strerror(errno));
        return -1;
    }
    e->keeper_started = 1;
    return 0;
}

int sr__rdzv_etcd_publish_job(sr__rdzv *r) {
    sr__rdzv_etcd *e = r->etcd;
    char key[300], v[200], err[600];
    if (!e) return 0;
    int64_t lease = atomic_load(&e->job_lease);
    if (!lease) {
        if (sr__etcd_lease_grant(e->c, JOB_TTL_S, &lease, NULL, err, sizeof err) != 0) return -1;
        atomic_store(&e->job_lease, lease);
    }
    int n = snprintf(v, sizeof v, "%s %d %d %" PRId64, r->job_id, r->attempt, r->restarts_used, lease);
    return sr__etcd_put(e->c, key_of(e, key, sizeof key, "job"), v, (size_t)n, lease, NULL, err, sizeof err);
}

void sr__rdzv_etcd_count(sr__rdzv *r) {
    sr__rdzv_etcd *e = r->etcd;
    if (!e || sr__now_s() - e->counted_at < 0.2) return;
    e->counted_at = sr__now_s();
    char key[300], err[600];
    sr__etcd_kvs kv = {0};
    if (sr__etcd_range(e->c, key_of(e, key, sizeof key, "agents/"), &kv, err, sizeof err) == 0)
        r->expect_agents = (int)kv.n;
    sr__etcd_kvs_free(&kv);
}

int sr__rdzv_etcd_await_new_leader(sr__rdzv *r, int64_t rev, double until, sr__diag *diag) {
    sr__rdzv_etcd *e = r->etcd;
    char key[300], err[600];
    /* a watch on the key from just after the leader's write: its next event (the delete when the
       leader's lease expires, or another leader's write) ends the wait */
    sr__etcd_watch *w = sr__etcd_watch_open(e->c, key_of(e, key, sizeof key, "leader"), rev + 1, err, sizeof err);
    if (!w) {
        sr__diag_add(diag, "rendezvous in etcd: %s", err);
        return -1;
    }
    int changed = 0;
    while (!changed && sr__now_s() < until && !atomic_load(&e->lease_lost)) {
        sr__etcd_event ev;
        int rc = sr__etcd_watch_next(w, 250, &ev, err, sizeof err);
        if (rc < 0 && sr__etcd_watch_compacted(w)) { /* its history is gone: look at the key again */
            changed = 1;
            break;
        }
        if (rc < 0) {
            sr__etcd_watch_close(w);
            sr__diag_add(diag, "rendezvous in etcd: %s", err);
            return -1;
        }
        changed = rc > 0;
    }
    sr__etcd_watch_close(w);
    if (changed) return 0;
    sr__diag_add(diag, "%s",
                 atomic_load(&e->lease_lost) ? e->lost_why
                                             : "the job's leader in etcd did not answer, and its lease did not expire "
                                               "within rdzv_timeout");
    return -1;
}

/* Won: the job goes on from what the last leader left (a new job when there is nothing). */
static int take_lead(sr__rdzv *r, sr__diag *diag) {
    char err[600], id[80];
    int attempt = 0, restarts = 0, had = read_job(r->etcd->c, r->etcd, id, &attempt, &restarts, err, sizeof err);
    if (had < 0) {
        sr__diag_add(diag, "rendezvous in etcd: %s", err);
        return SR__RDZV_UNREACHABLE;
    }
    if (!had && !r->job_id[0]) sr__rdzv_random_token(r->job_id, 17); /* the others learn it when accepted */
    if (had) {
        snprintf(r->job_id, sizeof r->job_id, "%s", id);
        /* the attempt after the last one any leader started (what this agent counted may be one more:
           a restart the old leader never started) */
        r->attempt = attempt + 1;
        if (restarts > r->restarts_used) r->restarts_used = restarts;
        r->took_over = 1;
    }
    snprintf(r->host, sizeof r->host, "%s", r->etcd->addr);
    return 1;
}

int sr__rdzv_etcd_elect(sr__rdzv *r, int port, int64_t *rev, sr__diag *diag) {
    sr__rdzv_etcd *e = r->etcd;
    char key[300], err[600], v[400];
    while (1) {
        if (atomic_load(&e->lease_lost)) {
            sr__diag_add(diag, "%s", e->lost_why);
            return SR__RDZV_UNREACHABLE;
        }
        int n = snprintf(v, sizeof v, "%s %d %s", e->addr, port, r->token);
        sr__etcd_kvs cur = {0};
        int won = sr__etcd_cas(e->c, key_of(e, key, sizeof key, "leader"), 0, v, (size_t)n, e->lease, &cur, NULL, err,
                               sizeof err);
        if (won < 0) {
            sr__diag_add(diag, "rendezvous in etcd (rdzv_endpoint = %s): %s", e->endpoints, err);
            return SR__RDZV_UNREACHABLE;
        }
        if (won) return take_lead(r, diag);
        if (cur.n != 1) { /* gone between the compare and the read: again */
            sr__etcd_kvs_free(&cur);
            continue;
        }
        char host[256], token[128];
        int lport = 0;
        int ok = sscanf(cur.kv[0].value, "%255s %d %127s", host, &lport, token) == 3;
        *rev = cur.kv[0].mod_revision;
        if (!ok)
            sr__diag_add(diag,
                         "etcd key %sleader holds \"%.80s\", not a shardrun leader's \"ADDR PORT TOKEN\": another "
                         "program uses this job's keys; give this job another run_id",
                         e->prefix, cur.kv[0].value);
        sr__etcd_kvs_free(&cur);
        if (!ok) return -1;
        snprintf(r->host, sizeof r->host, "%s", host);
        snprintf(r->token, sizeof r->token, "%s", token);
        r->port = lport;
        return 0;
    }
}

int sr__rdzv_etcd_deposed(const sr__rdzv *r) { return r->etcd && r->hosting && atomic_load(&r->etcd->lease_lost); }

const char *sr__rdzv_etcd_lost_why(const sr__rdzv *r) { return r->etcd ? r->etcd->lost_why : ""; }

void sr__rdzv_etcd_close(sr__rdzv_etcd *e, int job_over) {
    if (!e) return;
    atomic_store(&e->stop, 1);
    if (e->keeper_started) pthread_join(e->keeper, NULL);
    if (e->c) {
        int64_t job = atomic_load(&e->job_lease);
        if (job_over && job) sr__etcd_lease_revoke(e->c, job, NULL, 0); /* the job's state: nothing to carry on */
        sr__etcd_lease_revoke(e->c, e->lease, NULL, 0);                 /* this agent's keys, the leader's too */
    }
    sr__etcd_close(e->c);
    free(e);
}
