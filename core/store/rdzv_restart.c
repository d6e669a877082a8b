/*
 * A restart, on both sides (store/rdzv.h has the lifecycle): after a restart verdict every agent
 * stops its workers and says so (sr__rdzv_stopped); node 0's agent waits for every agent to have
 * stopped or come back, then for restart_delay (sr__rdzv_restart_ready), and starts the next
 * attempt everywhere (sr__rdzv_next_attempt), or calls the restart off: an agent that does not
 * come back within rdzv_timeout, an agent interrupted meanwhile (sr__rdzv_abandon_restart).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "store/rdzv_internal.h"
#include "store/rdzv_protocol.h"

int sr__rdzv_stopped(sr__rdzv *r) {
    char key[64], err[512];
    if (r->hosting || !r->ctl) return 0;
    sr__store_set(r->ctl, sr__rdzv_key(key, sizeof key, "run/%d/stopped/%d", r->attempt, r->agent_id), "1", 1);
    if (sr__rdzv_rewatch(r, sr__rdzv_key(key, sizeof key, "run/%d/start/%d", r->attempt + 1, r->agent_id), err,
                         sizeof err) != 0) {
        r->phase = SR__RDZV_FAILED;
        snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere,
                 "node 0's shardrun went away while the job restarted (%s)%s", err, sr__rdzv_host_gone_note(r));
        r->host_gone = 1;
        return -1;
    }
    r->waiting_start = 1;
    r->start_ready = 0;
    return 0;
}

/* Hosting agent: every agent still waiting for the next attempt hears that there is none. */
static void fail_restart(sr__rdzv *r, const char *what) {
    char v[1100], key[64];
    int n = snprintf(v, sizeof v, "fail:%s", what);
    r->attempt++;
    for (int a = 1; a < r->nagents && r->server; a++)
        sr__store_server_set(r->server, sr__rdzv_key(key, sizeof key, "run/%d/start/%d", r->attempt, a), v,
                             (size_t)(n < (int)sizeof v ? n : (int)sizeof v - 1));
    sr__rdzv_set_failure(r, r->failed_node, 0, what);
    sr__buf_printf(&r->attempts, "restart %d called off: %s\n", r->attempt, what);
    r->restart_called_off = 1;
    r->phase = SR__RDZV_FAILED;
    r->outcome_at = sr__now_s();
}

void sr__rdzv_abandon_restart(sr__rdzv *r, const char *what) {
    char key[64];
    if (r->phase != SR__RDZV_RESTART) return;
    if (r->hosting && r->leaving) {
        /* etcd: the leader leaves once its ranks saved, and tells no one: the others see its store
           close and elect another, which starts the next world from that checkpoint */
        r->phase = SR__RDZV_FAILED;
        r->restart_called_off = 1;
        sr__rdzv_set_failure(r, 0, 0, what);
        return;
    }
    if (r->hosting || !r->ctl) {
        fail_restart(r, what);
        return;
    }
    sr__store_set(r->ctl, sr__rdzv_key(key, sizeof key, "run/%d/quit/%d", r->attempt, r->agent_id), what, strlen(what));
    r->attempt++; /* as if the host's answer came: what follows belongs to the next attempt's keys */
    r->restart_called_off = 1;
    r->phase = SR__RDZV_FAILED;
    sr__rdzv_set_failure(r, r->agent_id, 0, what);
}

/* Hosting agent: an agent interrupted while the job restarts calls the restart off.  1 when one did. */
static int quit_by_an_agent(sr__rdzv *r) {
    char key[64], why[600];
    for (int a = 1; a < r->nagents && r->server; a++) {
        size_t qlen = 0;
        const char *quit =
            sr__store_server_get(r->server, sr__rdzv_key(key, sizeof key, "run/%d/quit/%d", r->attempt, a), &qlen);
        if (quit && r->elastic && r->peers[a].state != SR__PEER_GONE) {
            r->peers[a].state = SR__PEER_GONE; /* it leaves; the others go on without it */
        } else if (quit && !r->elastic) {
            snprintf(why, sizeof why, "%.*s", (int)qlen, quit);
            r->failed_node = r->peers[a].node;
            r->peers[a].state = SR__PEER_GONE; /* it leaves: no verdict to wait for */
            fail_restart(r, why);
            return 1;
        }
    }
    return 0;
}

/* Hosting agent of an elastic job: whether the next world may start.  An agent that does not stop
   its workers within rdzv_timeout is left out; with fewer than MIN agents it waits up to
   rdzv_timeout (from when the restart began) for others to join, then calls the restart off. */
static int elastic_ready(sr__rdzv *r) {
    double now = sr__now_s();
    char key[64], why[800];
    for (int a = 1; a < r->nagents; a++) {
        sr__rdzv_peer *p = &r->peers[a];
        if (p->state != SR__PEER_ACCEPTED ||
            sr__store_server_get(r->server, sr__rdzv_key(key, sizeof key, "run/%d/stopped/%d", r->attempt, a), NULL))
            continue;
        if (now - r->restart_at < r->rejoin_timeout_s + (r->save_first ? r->preempt_grace_s : 0)) return 0;
        p->state = SR__PEER_GONE; /* it did not stop in time: the next world goes on without it */
    }
    int n = sr__rdzv_next_world_size(r);
    if (n < r->min_agents) {
        if (now - r->restart_at < r->rejoin_timeout_s) return 0;
        snprintf(why, sizeof why,
                 "%d node%s left of the at least %d of nnodes = %d:%d, and no other joined within rdzv_timeout "
                 "(%gs); the newest checkpoint in output_dir has the run's state: to continue later, start %d "
                 "nodes with the same job file and --set task.resume_from_checkpoint=latest",
                 n, n == 1 ? "" : "s", r->min_agents, r->min_agents, r->nagents, r->rejoin_timeout_s, r->min_agents);
        fail_restart(r, why);
        return -1;
    }
    return now - r->restart_at >= r->restart_delay_s ? 1 : 0;
}

int sr__rdzv_restart_ready(sr__rdzv *r) {
    if (r->phase == SR__RDZV_FAILED) return -1;
    if (r->phase != SR__RDZV_RESTART) return 0;
    if (!r->hosting) return r->start_ready || !r->enabled || r->nagents < 2 ? 1 : 0;
    if (quit_by_an_agent(r)) return -1;
    if (r->elastic && r->server) return elastic_ready(r);
    double now = sr__now_s();
    char key[64], why[600];
    for (int a = 1; a < r->nagents && r->server; a++) {
        const sr__rdzv_peer *p = &r->peers[a];
        int stopped =
            p->state != SR__PEER_GONE &&
            sr__store_server_get(r->server, sr__rdzv_key(key, sizeof key, "run/%d/stopped/%d", r->attempt, a), NULL);
        if (p->state == SR__PEER_BACK || stopped) continue;
        if (now - r->restart_at < r->rejoin_timeout_s) return 0;
        if (p->state == SR__PEER_GONE)
            snprintf(why, sizeof why,
                     "node %d's shardrun (agent %d) went away and did not come back within rdzv_timeout "
                     "(%gs): start it again with the same command, or raise rdzv_timeout",
                     p->node, a, r->rejoin_timeout_s);
        else
            snprintf(why, sizeof why,
                     "node %d's shardrun (agent %d) did not stop its workers for the restart within "
                     "rdzv_timeout (%gs)",
                     p->node, a, r->rejoin_timeout_s);
        r->failed_node = p->node;
        fail_restart(r, why);
        return -1;
    }
    return now - r->restart_at >= r->restart_delay_s ? 1 : 0;
}

void sr__rdzv_next_attempt(sr__rdzv *r) {
    char key[64], err[512];
    r->attempt++;
    r->phase = SR__RDZV_RUNNING;
    r->failed_elsewhere[0] = 0;
    r->failed_node = -1;
    r->failed_config = 0;
    r->reported_failure = 0;
    r->pending_at = 0;
    r->outcome_at = 0;
    r->acked = 0;
    if (r->server && r->elastic) {
        sr__rdzv_elastic_start(r, r->attempt);
    } else if (r->server) {
        for (int a = 1; a < r->nagents; a++) {
            if (r->peers[a].state == SR__PEER_BACK)
                r->peers[a].state = SR__PEER_ACCEPTED; /* it takes part from now on */
            sr__store_server_set(r->server, sr__rdzv_key(key, sizeof key, "run/%d/start/%d", r->attempt, a), "go", 2);
        }
    } else if (r->ctl) {
        r->start_ready = 0;
        if (r->elastic && sr__rdzv_read_world(r, r->attempt, err, sizeof err) != 0) {
            r->phase = SR__RDZV_FAILED;
            snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere, "%s", err);
        } else if (sr__rdzv_rewatch(r, sr__rdzv_key(key, sizeof key, "run/%d/outcome/%d", r->attempt, r->agent_id), err,
                                    sizeof err) != 0) {
            r->phase = SR__RDZV_FAILED;
            snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere, "node 0's shardrun went away (%s)%s", err,
                     sr__rdzv_host_gone_note(r));
            r->host_gone = 1;
        }
    }
}
