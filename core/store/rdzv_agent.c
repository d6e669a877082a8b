/*
 * Every agent but node 0's (store/rdzv.h has the lifecycle): it joins the run through node 0's
 * agent, which compares fingerprints and says which attempt it joins; keeps a channel waiting
 * for as long as it lives, so that node 0 sees it go; watches for the verdict on each attempt, and
 * acknowledges a final one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/rdzv_internal.h"
#include "store/rdzv_protocol.h"

/* How long a request on the control channel may wait for node 0's answer once joined. */
enum { CTL_TIMEOUT_S = 5 };

int sr__rdzv_rewatch(sr__rdzv *r, const char *key, char *err, size_t errlen) {
    sr__store_close(r->watch);
    r->watch = sr__store_link_open(r->link, err, errlen);
    r->watch_closed = 0;
    if (!r->watch) return -1;
    if (sr__store_wait_send(r->watch, key) != 0) {
        snprintf(err, errlen, "%s", sr__store_error(r->watch));
        return -1;
    }
    return 0;
}

/* It came back after its node was lost, accepted into `attempt`: waits until node 0 starts that
   attempt with it.  0, SR__RDZV_ENDED (elastic: the job succeeded first), SR__RDZV_UNREACHABLE or
   -1 (diag says why). */
static int await_restart(sr__rdzv *r, int attempt, double timeout_s, sr__diag *diag) {
    char key[64], missing[64], err[512];
    void *go = NULL;
    size_t glen = 0;
    const char *skey[1] = {sr__rdzv_key(key, sizeof key, "run/%d/start/%d", attempt, r->agent_id)};
    int wrc =
        sr__store_wait(r->ctl, skey, 1, timeout_s < 0 ? -1 : timeout_s + r->restart_delay_s, missing, sizeof missing);
    if (wrc == 0 && sr__store_get(r->ctl, skey[0], &go, &glen) == 0 && !strncmp((char *)go, "done:", 5)) {
        snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere, "%s", (char *)go + 5);
        free(go);
        return SR__RDZV_ENDED; /* elastic: the job succeeded before this node was taken in */
    }
    if (r->elastic && wrc == 0 && go && !strncmp((char *)go, "fail:", 5)) {
        sr__diag_add(diag, "%s", (char *)go + 5);
        free(go);
        return -1; /* elastic: the job failed, or its restart was called off */
    }
    if (wrc != 0 || !go || strcmp((char *)go, "go")) {
        sr__diag_add(diag, "node 0's shardrun did not restart the job with this node: %s",
                     wrc > 0                                  ? "no start within rdzv_timeout"
                     : go && !strncmp((char *)go, "fail:", 5) ? (char *)go + 5
                                                              : sr__store_error(r->ctl));
        free(go);
        return -1;
    }
    free(go);
    if (r->elastic && sr__rdzv_read_world(r, attempt, err, sizeof err) != 0) {
        sr__diag_add(diag, "%s", err);
        return SR__RDZV_UNREACHABLE;
    }
    return 0;
}

int sr__rdzv_join(sr__rdzv *r, const sr__rdzv_args *a, sr__diag *diag) {
    char err[512], key[64], akey[64], missing[64];
    int p = r->port;
    /* one connection for all this agent's traffic with node 0 (store.h: sr__store_link) */
    /* with etcd the leader listens before others learn where it is: one that does not answer soon is
       gone (rdzv_etcd.c waits for another) */
    r->link = sr__store_link_connect(r->host, p, r->token, r->etcd ? 1.0 : a->timeout_s, err, sizeof err);
    /* nothing answered at that address, or node 0 went away while it did: not the job file's fault */
    int gave_up = !r->link && (errno == ETIMEDOUT || errno == ECONNRESET);
    if (r->link && !(r->ctl = sr__store_link_open(r->link, err, sizeof err))) gave_up = 1;
    if (!r->ctl) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, p, err);
        /* etcd: a store that refuses this token is a newer leader's on the old one's address */
        return gave_up || r->etcd ? SR__RDZV_UNREACHABLE : -1;
    }
    /* elastic: a free slot first (rdzv_elastic.c) */
    if (r->elastic) {
        int rc = sr__rdzv_take_slot(r, a->timeout_s, diag);
        if (rc != 0) return rc;
    }
    long long j = sr__store_add(r->ctl, sr__rdzv_key(key, sizeof key, "run/joins/%d", r->agent_id, 0), 1);
    const char *fp = a->fingerprint ? a->fingerprint : "";
    const char *vkey[1] = {akey};
    if (j <= 0 || j > 1000000) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, p, sr__store_error(r->ctl));
        return SR__RDZV_UNREACHABLE; /* node 0's store failed or went away: a failed run */
    }
    if (j == 1)
        sr__rdzv_key(key, sizeof key, "run/fingerprint/%d", r->agent_id, 0),
            sr__rdzv_key(akey, sizeof akey, "run/accepted/%d", r->agent_id, 0);
    else
        sr__rdzv_key(key, sizeof key, "run/fingerprint/%d/%d", r->agent_id, (int)j),
            sr__rdzv_key(akey, sizeof akey, "run/accepted/%d/%d", r->agent_id, (int)j);
    /* node 0's agent compares what defines the run before this agent starts anything */
    if (sr__store_set(r->ctl, key, fp, strlen(fp)) != 0) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, p, sr__store_error(r->ctl));
        return SR__RDZV_UNREACHABLE; /* node 0's store failed or went away: a failed run */
    }
    int wrc = sr__store_wait(r->ctl, vkey, 1, a->timeout_s, missing, sizeof missing);
    void *answer = NULL;
    size_t vlen = 0;
    if (wrc != 0 || sr__store_get(r->ctl, akey, &answer, &vlen) != 0) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, p,
                     wrc > 0 ? "node 0's shardrun did not answer within rdzv_timeout" : sr__store_error(r->ctl));
        free(answer);
        return SR__RDZV_UNREACHABLE; /* no answer in time, or node 0's store failed or went away */
    }
    int attempt = -1, at = 0;
    char id[80] = "";
    if (sscanf((char *)answer, "ok %d %79s%n", &attempt, id, &at) != 2 || ((char *)answer)[at] || attempt < 0) {
        sr__diag_add(diag, "%s", (char *)answer);
        free(answer);
        /* node 0 may now go (a refused later join leaves the acknowledgement to the agent running) */
        if (j == 1)
            sr__store_set(r->ctl, sr__rdzv_key(key, sizeof key, "run/%d/ack/%d", r->attempt, r->agent_id), "1", 1);
        return -1;
    }
    free(answer);
    /* a channel that waits as long as this agent lives: node 0 sees it go (with its connection) */
    r->alive = sr__store_link_open(r->link, err, sizeof err);
    if (!r->alive ||
        sr__store_wait_send(r->alive, sr__rdzv_key(key, sizeof key, "run/alive/%d/%d", r->agent_id, (int)j)) != 0) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, p,
                     r->alive ? sr__store_error(r->alive) : err);
        return SR__RDZV_UNREACHABLE;
    }
    r->attempt = attempt;
    snprintf(r->job_id, sizeof r->job_id, "%s", id);
    /* it came back after its node was lost: the job restarts with it.  Elastic: it waits for the
       world it takes part in (the first, or the next once every rank saved; each may take a
       checkpoint's time; with elastic_join = next_save, until the job's next periodic checkpoint, however
       long: node 0 going away ends the wait) */
    if (attempt > 0 || r->elastic) {
        double wait_s = r->elastic ? a->timeout_s + a->last_call_s + a->preempt_grace_s + 60 : a->timeout_s;
        if (r->elastic && a->join_at_save) wait_s = -1;
        int rc = await_restart(r, attempt, wait_s, diag);
        if (rc == SR__RDZV_ENDED) return rc;
        /* elastic: nothing here is the job file's fault (the job ended, node 0 went away): a failed run */
        if (rc != 0) return r->elastic ? SR__RDZV_UNREACHABLE : -1;
    }
    if (sr__rdzv_rewatch(r, sr__rdzv_key(key, sizeof key, "run/%d/outcome/%d", attempt, r->agent_id), err,
                         sizeof err) != 0) {
        sr__diag_add(diag, "rendezvous store of node 0 at %s:%d: %s", r->host, p, err);
        /* the one connection to node 0 ended (its store refused a request, or it went away) */
        return SR__RDZV_UNREACHABLE;
    }
    /* From now on the control channel carries only short requests (a failure, results, an
       acknowledgement), made from the supervisor's loop: one that node 0 does not answer within
       CTL_TIMEOUT_S (stopped, or cut off by a dead link) fails instead of blocking the loop, and
       with it this node's way to end on its own (the hang watchdog). */
    sr__store_set_io_timeout(r->ctl, CTL_TIMEOUT_S);
    return 0;
}

/* The next attempt's start arrived ("go"), or there is none ("fail:why", or the host is gone). */
static void read_start(sr__rdzv *r) {
    void *v = NULL;
    size_t len = 0;
    char key[64];
    int rc =
        sr__store_get(r->ctl, sr__rdzv_key(key, sizeof key, "run/%d/start/%d", r->attempt + 1, r->agent_id), &v, &len);
    r->waiting_start = 0;
    if (rc == 0 && !strcmp((char *)v, "go")) {
        r->start_ready = 1;
    } else {
        r->attempt++; /* the host's verdict, and its acknowledgement, belong to the next attempt */
        r->phase = SR__RDZV_FAILED;
        char what[1400];
        int told = rc == 0 && !strncmp((char *)v, "fail:", 5); /* the restart was called off */
        if (told) snprintf(what, sizeof what, "%s", (char *)v + 5);
        else
            snprintf(what, sizeof what, "node 0's shardrun went away while the job restarted%s",
                     sr__rdzv_host_gone_note(r));
        r->host_gone = !told;
        sr__rdzv_set_failure(r, 0, 0, what);
    }
    free(v);
}

void sr__rdzv_read_watch(sr__rdzv *r) {
    void *v = NULL;
    size_t len = 0;
    char key[64];
    r->watch_closed = 1;
    if (r->waiting_start) {
        read_start(r);
        return;
    }
    int rc =
        sr__store_get(r->ctl, sr__rdzv_key(key, sizeof key, "run/%d/outcome/%d", r->attempt, r->agent_id), &v, &len);
    if (rc == 0) {
        int node;
        char kind, msg[1024];
        sr__rdzv_message_parse((char *)v, len, &node, &kind, msg, sizeof msg);
        sr__rdzv_verdict verdict = (sr__rdzv_verdict)kind;
        if (verdict != SR__VERDICT_SUCCEEDED) sr__rdzv_set_failure(r, node, verdict == SR__VERDICT_CONFIG, msg);
        r->phase = sr__rdzv_verdict_phase(verdict);
        r->save_first = verdict == SR__VERDICT_RESHAPE;
        r->restart_kind = (char)(verdict == SR__VERDICT_RESTART ? SR__FAIL_RETRYABLE : SR__FAIL_LEFT);
    } else if (r->phase == SR__RDZV_RUNNING) {
        sr__rdzv_set_failure(r, 0, 0, "");
        snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere, "node 0's shardrun went away (%s)%s",
                 rc < 0 ? sr__store_error(r->ctl) : "its store closed", sr__rdzv_host_gone_note(r));
        r->host_gone = 1;
        r->phase = SR__RDZV_FAILED;
    }
    free(v);
}

void sr__rdzv_ack(sr__rdzv *r) {
    char key[64];
    if (!r->ctl || r->acked || r->host_lost) return;
    sr__store_set(r->ctl, sr__rdzv_key(key, sizeof key, "run/%d/ack/%d", r->attempt, r->agent_id), "1", 1);
    r->acked = 1;
}
