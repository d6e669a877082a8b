/*
 * Node 0's agent, the one that hosts the store and decides (store/rdzv.h has the lifecycle): it
 * admits the other agents (their fingerprints against its own), notices an agent that goes away,
 * decides what the first failure of an attempt means for the job, tells every agent that verdict,
 * and waits for them to read it before it stops serving.  A lone agent decides here too.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "store/fingerprint.h"
#include "store/rdzv_internal.h"
#include "store/rdzv_protocol.h"

/* The store's hook (store.h: sr__store_server_on_key): a fingerprint set, or an "alive" wait filed
   or ended, puts that agent on the list the next sr__rdzv_host_handle looks at, so each turn costs
   what changed, not a look at every agent's keys (thousands of agents, many turns a second). */
static void key_changed(void *ctx, const char *key, size_t klen) {
    sr__rdzv *r = ctx;
    static const char fp[] = "run/fingerprint/", alive[] = "run/alive/";
    const char *rest = NULL;
    if (klen > sizeof fp - 1 && !memcmp(key, fp, sizeof fp - 1)) rest = key + sizeof fp - 1;
    else if (klen > sizeof alive - 1 && !memcmp(key, alive, sizeof alive - 1)) rest = key + sizeof alive - 1;
    if (!rest) return;
    int a = 0;
    for (; rest < key + klen && *rest >= '0' && *rest <= '9' && a < 100000000; rest++) a = a * 10 + (*rest - '0');
    if (a < 1 || a >= r->nagents || r->peers[a].changed) return;
    r->peers[a].changed = 1;
    r->changed[r->nchanged++] = a;
}

int sr__rdzv_host_start(sr__rdzv *r, const sr__rdzv_args *a, int port, sr__diag *diag) {
    char err[512];
    int single = r->nagents == 1;
    r->server = sr__store_server_start(single ? "127.0.0.1" : NULL, port, r->token, err, sizeof err);
    if (!r->server) {
        sr__diag_add(diag,
                     "rendezvous store ([shardrun] rdzv_port = %s, %s%s): %s; choose another port (rdzv_port, "
                     "the same on every node) or stop what uses it",
                     a->port_value, a->port_where, single || atoi(a->port_value) ? "" : ", so master_port + 1", err);
        return -1;
    }
    r->port = sr__store_server_port(r->server);
    r->peers = sr__calloc((size_t)r->nagents, sizeof *r->peers);
    r->changed = sr__calloc((size_t)r->nagents, sizeof *r->changed);
    if (r->elastic) r->in_world = sr__calloc((size_t)r->nagents, sizeof *r->in_world);
    if (!r->peers || !r->changed || (r->elastic && !r->in_world)) {
        sr__diag_add(diag, "out of memory for the rendezvous of %d agents", r->nagents);
        return -1;
    }
    sr__store_server_on_key(r->server, key_changed, r);
    return 0;
}

/* Elastic, once the final verdict is out: agent a, waiting to join (it waits for the start of the
   attempt after this one), hears that the job ended without it. */
static void tell_ended(sr__rdzv *r, int a) {
    char v[1200], key[64];
    int ok = r->phase == SR__RDZV_SUCCEEDED;
    int n = snprintf(v, sizeof v, "%s:the job ended before this node was taken in (%s)", ok ? "done" : "fail",
                     ok ? "every rank succeeded" : r->failed_elsewhere);
    sr__store_server_set(r->server, sr__rdzv_key(key, sizeof key, "run/%d/start/%d", r->attempt + 1, a), v,
                         (size_t)(n < (int)sizeof v ? n : (int)sizeof v - 1));
}

/* Tells every other agent what follows this attempt (once a final verdict was sent, nothing more). */
static void publish_verdict(sr__rdzv *r, int node, sr__rdzv_verdict verdict, const char *what) {
    if (!r->server || r->outcome_at) return;
    char v[1200], key[64];
    int n = sr__rdzv_message_format(v, sizeof v, node, (char)verdict, what);
    for (int a = 1; a < r->nagents; a++)
        sr__store_server_set(r->server, sr__rdzv_key(key, sizeof key, "run/%d/outcome/%d", r->attempt, a), v,
                             (size_t)n);
    if (sr__rdzv_verdict_phase(verdict) == SR__RDZV_RESTART) return;
    r->outcome_at = sr__now_s(); /* a final verdict: agents acknowledge it */
    /* elastic: the agents waiting to join hear that the job ended without them */
    for (int a = 1; r->elastic && a < r->nagents; a++)
        if (r->peers[a].state == SR__PEER_BACK) tell_ended(r, a);
}

/* What the first failure of an attempt means for the job: the verdict's letter. */
static sr__rdzv_verdict verdict_of(sr__rdzv *r, sr__rdzv_failure kind) {
    switch (kind) {
    case SR__FAIL_RETRYABLE:
        if (r->restarts_used >= r->max_restarts) return SR__VERDICT_FAILED;
        r->restarts_used++;
        return SR__VERDICT_RESTART;
    case SR__FAIL_PREEMPT: return SR__VERDICT_PREEMPTED;
    case SR__FAIL_CONFIG: return SR__VERDICT_CONFIG;
    case SR__FAIL_LEFT: return r->elastic ? SR__VERDICT_REFORM : SR__VERDICT_FAILED;
    case SR__FAIL_LEAVE:
    case SR__FAIL_JOIN: return r->elastic ? SR__VERDICT_RESHAPE : SR__VERDICT_FAILED;
    case SR__FAIL_JOIN_SAVED: return r->elastic ? SR__VERDICT_REFORM : SR__VERDICT_FAILED;
    case SR__FAIL_FINAL:
    case SR__FAIL_STOPPED: break;
    }
    return SR__VERDICT_FAILED;
}

/* How long an elastic job's host holds a rank's failure back, waiting for the agent whose loss may
   have caused it (its connection's end arrives about when its peers' collectives fail). */
static const double LEFT_GRACE_S = 2.0;

void sr__rdzv_decide(sr__rdzv *r, int node, sr__rdzv_failure kind, const char *what) {
    if (r->phase != SR__RDZV_RUNNING) return;
    if (r->elastic && r->formed && kind == SR__FAIL_RETRYABLE && r->pending_at >= 0) {
        if (!r->pending_at) {
            r->pending_at = sr__now_s();
            r->pending_node = node;
            snprintf(r->pending_what, sizeof r->pending_what, "%s", what);
        }
        return; /* sr__rdzv_host_handle decides it once LEFT_GRACE_S passed */
    }
    r->pending_at = 0;
    sr__rdzv_set_failure(r, node, kind == SR__FAIL_CONFIG, what);
    r->decided_kind = kind;
    if (kind != SR__FAIL_PREEMPT) sr__buf_printf(&r->attempts, "attempt %d: %s\n", r->attempt, what);
    sr__rdzv_verdict verdict = verdict_of(r, kind);
    r->phase = sr__rdzv_verdict_phase(verdict);
    r->save_first = verdict == SR__VERDICT_RESHAPE;
    r->restart_kind = (char)kind;
    if (r->phase == SR__RDZV_RESTART) r->restart_at = sr__now_s();
    publish_verdict(r, node, verdict, what);
}

void sr__rdzv_succeed(sr__rdzv *r) {
    if (r->phase != SR__RDZV_RUNNING) return;
    r->phase = SR__RDZV_SUCCEEDED;
    publish_verdict(r, 0, SR__VERDICT_SUCCEEDED, "every rank succeeded");
}

/* What it answers a join (the join_no-th of agent a): "ok A <job id>" (the attempt it joins), or
   why not (-1). */
static int admit(sr__rdzv *r, int a, int join_no, const char *theirs, char *why, size_t wlen) {
    if (sr__fingerprint_differ(r->fingerprint ? r->fingerprint : "", theirs, why, wlen)) return -1;
    if (r->elastic) { /* its slot was free (rdzv_elastic.c): it takes part from the next world on */
        snprintf(why, wlen, "ok %d %s", r->formed ? r->attempt + 1 : r->attempt, r->job_id);
        return 0;
    }
    if (join_no > 1 && !(r->peers[a].state == SR__PEER_GONE && r->phase == SR__RDZV_RESTART)) {
        snprintf(why, wlen,
                 "node %d's shardrun (agent %d) is already part of this run%s; start each node's shardrun "
                 "once (a node whose shardrun was lost may come back while the job restarts)",
                 r->peers[a].node, a, r->phase == SR__RDZV_RUNNING ? "" : ", which is ending");
        return -1;
    }
    snprintf(why, wlen, "ok %d %s", r->phase == SR__RDZV_RESTART ? r->attempt + 1 : r->attempt, r->job_id);
    return 0;
}

/* Compares the fingerprints agent a sent with this agent's.  A mismatch on an agent's first join
   fails the run (a configuration failure); every answer goes to the agent that sent it. */
static void check_fingerprint(sr__rdzv *r, int a) {
    char key[64], why[1000];
    while (1) { /* its joins in turn (the next one may have come already) */
        sr__rdzv_peer *p = &r->peers[a];
        int j = p->answered + 1;
        size_t len = 0;
        const char *theirs = sr__store_server_get(r->server,
                                                  j == 1 ? sr__rdzv_key(key, sizeof key, "run/fingerprint/%d", a, 0)
                                                         : sr__rdzv_key(key, sizeof key, "run/fingerprint/%d/%d", a, j),
                                                  &len);
        if (!theirs) return;
        /* the store keeps values NUL-terminated, and nothing sets this key while it is read here */
        const char *node = strstr(theirs, "#node=");
        p->node = r->elastic ? a : node ? atoi(node + 6) : -1; /* elastic: named by its slot */
        p->assigned = 0;
        int refused = admit(r, a, j, theirs, why, sizeof why) != 0;
        p->answered = j;
        if (j == 1)
            sr__store_server_set(r->server, sr__rdzv_key(key, sizeof key, "run/accepted/%d", a, 0), why, strlen(why));
        else
            sr__store_server_set(r->server, sr__rdzv_key(key, sizeof key, "run/accepted/%d/%d", a, j), why,
                                 strlen(why));
        if (!refused) {
            p->join = j;
            p->watching = 0; /* its new "alive" wait is watched from now on */
            p->last_heard = sr__now_s();
            /* accepted while the job restarts (back after its node was lost, or late): it joins the
               next attempt */
            p->state = r->phase == SR__RDZV_RESTART || r->elastic ? SR__PEER_BACK : SR__PEER_ACCEPTED;
            /* elastic, accepted once the job's end was decided: no world will take it in */
            if (r->elastic && r->outcome_at) tell_ended(r, a);
        } else if (r->elastic && r->formed) {
            /* a newcomer started with another job is refused alone (it exits 2): the running job goes
               on, and the slot is free again (as after a refused later join on a slot used before) */
            p->state = SR__PEER_GONE;
            p->watching = 0;
        } else if (j == 1) {
            p->state = SR__PEER_REFUSED;
            if (!r->refused_at) r->refused_at = sr__now_s();
            sr__rdzv_decide(r, 0, SR__FAIL_CONFIG, why);
        }
    }
}

/* An accepted agent whose "alive" wait ended (its connection closed) went away (killed, or its machine lost): its
   ranks failed, and waiting for them inside a collective would only end at the process group's
   timeout.  While the job restarts, one that goes away must come back before the next attempt
   starts; once the run ended, the host no longer waits for it to read the verdict. */
static void check_agent(sr__rdzv *r, int a) {
    char key[64], why[300];
    {
        sr__rdzv_peer *p = &r->peers[a];
        if (p->state == SR__PEER_GONE && p->watching &&
            !sr__store_server_waiting(r->server, sr__rdzv_key(key, sizeof key, "run/alive/%d/%d", a, p->join)))
            p->watching = 0; /* gone silent, and now its connection ended too: its slot is free */
        if (p->state != SR__PEER_ACCEPTED && p->state != SR__PEER_BACK) return;
        if (sr__store_server_waiting(r->server, sr__rdzv_key(key, sizeof key, "run/alive/%d/%d", a, p->join))) {
            p->watching = 1;
        } else if (p->watching) {
            int was_part = p->state == SR__PEER_ACCEPTED;
            p->watching = 0;
            p->state = SR__PEER_GONE;
            if (r->elastic) { /* the others go on without it (a new world), if they are enough */
                if (!was_part || !r->formed) return;
                snprintf(why, sizeof why, "node %d's shardrun (slot %d) left the job", sr__rdzv_node_of(r, a), a);
                if (r->phase == SR__RDZV_RUNNING) sr__rdzv_decide(r, sr__rdzv_node_of(r, a), SR__FAIL_LEFT, why);
                return;
            }
            snprintf(why, sizeof why, "node %d's shardrun (agent %d) went away%s", p->node, a,
                     r->phase == SR__RDZV_RUNNING   ? " before the run ended"
                     : r->phase == SR__RDZV_RESTART ? " while the job restarted"
                                                    : "");
            if (r->phase == SR__RDZV_RUNNING) sr__rdzv_decide(r, p->node, SR__FAIL_RETRYABLE, why);
        }
    }
}

/* Agents wait to join the running world: it grows (the first one found decides; the next world takes
   every agent waiting).  elastic_join = now: at once, every rank saving first.  next_save: once this
   agent's workers report a checkpoint written after the agents were first seen waiting; the ranks
   stop at once and the next world resumes from it (the steps trained since are done again), so
   the join costs no checkpoint of its own. */
static void take_in_joiners(sr__rdzv *r) {
    int a = 1;
    while (a < r->nagents && r->peers[a].state != SR__PEER_BACK) a++;
    if (a == r->nagents) {
        r->join_from = -1; /* none waits (any more) */
        return;
    }
    char why[200];
    if (!r->join_at_save) {
        snprintf(why, sizeof why, "a new node's shardrun (slot %d) joins the job", a);
        sr__rdzv_decide(r, 0, SR__FAIL_JOIN, why);
        return;
    }
    if (r->join_from < 0) r->join_from = r->saves; /* first seen waiting: the checkpoint to come takes it in */
    if (r->saves <= r->join_from) return;
    snprintf(why, sizeof why,
             "a new node's shardrun (slot %d) joins the job at checkpoint-%lld (elastic_join = next_save)", a,
             r->saved_step);
    r->join_from = -1;
    sr__rdzv_decide(r, 0, SR__FAIL_JOIN_SAVED, why);
}

void sr__rdzv_saved(sr__rdzv *r, long long step) {
    if (!r->hosting || !r->elastic) return;
    r->saved_step = step;
    r->saves++;
}

void sr__rdzv_host_handle(sr__rdzv *r) {
    /* the agents whose keys changed since the last turn (a stack: answering one may put it back,
       and each agent is on it once at most) */
    while (r->nchanged > 0) {
        int a = r->changed[--r->nchanged];
        r->peers[a].changed = 0;
        check_agent(r, a);
        check_fingerprint(r, a);
    }
    char key[64];
    size_t len;
    if (r->elastic) {
        if (r->pending_at > 0 && r->phase == SR__RDZV_RUNNING && sr__now_s() - r->pending_at >= LEFT_GRACE_S) {
            r->pending_at = -1; /* decided now, as it is */
            sr__rdzv_decide(r, r->pending_node, SR__FAIL_RETRYABLE, r->pending_what);
        }
        sr__rdzv_elastic_arrivals(r);
        if (r->formed && r->phase == SR__RDZV_RUNNING) take_in_joiners(r);
    }
    const char *v =
        sr__store_server_get(r->server, sr__rdzv_key(key, sizeof key, "run/%d/failure", r->attempt, 0), &len);
    if (v && r->phase == SR__RDZV_RUNNING && !r->reported_failure) {
        int node;
        char kind, msg[1024];
        sr__rdzv_message_parse(v, len, &node, &kind, msg, sizeof msg);
        sr__rdzv_decide(r, node, (sr__rdzv_failure)kind, msg);
    }
}

const char *sr__rdzv_results(const sr__rdzv *r, int agent, size_t *len) {
    char key[64];
    return r->server ? sr__store_server_get(r->server,
                                            sr__rdzv_key(key, sizeof key, "run/%d/results/%d", r->attempt, agent), len)
                     : NULL;
}

int sr__rdzv_all_done(sr__rdzv *r) {
    if (!r->server) return 1;
    char key[64];
    /* an agent's "done" stays set for the attempt: look on from the first one not seen yet */
    if (r->done_attempt != r->attempt) r->done_attempt = r->attempt, r->done_from = 0;
    for (; r->done_from < r->nagents; r->done_from++)
        if (sr__rdzv_takes_part(r, r->done_from) &&
            !sr__store_server_get(r->server, sr__rdzv_key(key, sizeof key, "run/%d/done/%d", r->attempt, r->done_from),
                                  NULL))
            return 0;
    return 1;
}

int sr__rdzv_settled(const sr__rdzv *r) {
    if (sr__rdzv_etcd_deposed(r)) return 1; /* another leads: nobody waits for this one's verdict */
    if (!r->server || (!r->refused_at && !r->outcome_at)) return 1;
    /* refused agents read why at once; the others first stop their workers and report */
    double since = r->outcome_at ? r->outcome_at : r->refused_at;
    if (sr__now_s() - since > (r->outcome_at ? r->ack_timeout_s : 3.0)) return 1;
    char key[64];
    for (int a = 1; a < r->nagents; a++) {
        sr__rdzv_peer_state s = r->peers[a].state;
        if (s == SR__PEER_UNSEEN || s == SR__PEER_GONE || r->peers[a].silent)
            continue;                                          /* never arrived, gone, silent */
        if (s != SR__PEER_REFUSED && !r->outcome_at) continue; /* accepted, and no verdict yet */
        /* elastic, waiting to join: it reads the end from its start and leaves (GONE once its
           connection ended); it writes no acknowledgement */
        if (r->elastic && s == SR__PEER_BACK) return 0;
        if (!sr__store_server_get(r->server, sr__rdzv_key(key, sizeof key, "run/%d/ack/%d", r->attempt, a), NULL))
            return 0;
    }
    return 1;
}
