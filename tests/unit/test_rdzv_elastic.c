/* An elastic job's rendezvous (nnodes = MIN:MAX, store/rdzv_elastic.c) on loopback: node 0's agent
   hosts and decides in a thread, the other agents arrive from this one (each join from a thread of
   its own, watched with a deadline).  Pins the edges of membership: an agent taken in once the job's
   end was decided learns it (exit 0 when it succeeded, 1 when it failed) and node 0 serves until it
   did; a ticket whose agent never asked for a slot holds up no arrival after it; a newcomer started
   with another job is refused alone, the job goes on; a member left out of the next world (it did
   not stop in time) hears that it has no start. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/clock.h"
#include "check.h"
#include "rdzv_pump.h"
#include "run/layout.h"
#include "store/rdzv.h"
#include "store/rdzv_internal.h"

static sr__rdzv host;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stop;
static int serving; /* the host's thread runs (stop_host stops it once) */
static char port_value[16];
static atomic_int other_fingerprint; /* the next join presents another job's fingerprint */

static void *serve(void *arg) {
    (void)arg;
    serve_host(&host, &lock, &stop);
    return NULL;
}

/* nnodes = 1:max; agent_id 0 hosts, -1 arrives.  rdzv_timeout (also how long a member may take to
   stop for a new world) is 1 s; rdzv_last_call 0: the first world is node 0 alone. */
static sr__rdzv_args args(int agent_id, int max) {
    return (sr__rdzv_args){.nagents = max,
                           .agent_id = agent_id,
                           .elastic = 1,
                           .min_agents = 1,
                           .need_store = 1,
                           .master_addr = "127.0.0.1",
                           .master_port = 29500,
                           .port_value = port_value,
                           .port_where = "test",
                           .timeout_s = 1,
                           .launcher_job_id = "unit-rdzv-elastic",
                           .fingerprint = atomic_load(&other_fingerprint) ? "task=other\nnnodes=1:3\n#node=0\n"
                                                                          : "task=hello\nnnodes=1:3\n#node=0\n",
                           .ack_timeout_s = 5,
                           .max_restarts = 1};
}

static pthread_t start_host(int max) {
    sr__diag diag = {0};
    atomic_store(&stop, 0);
    snprintf(port_value, sizeof port_value, "%d", sr__free_port());
    sr__rdzv_args a = args(0, max);
    CHECK(sr__rdzv_prepare(&host, &a, &diag) == 0 && host.formed);
    sr__diag_clear(&diag);
    pthread_t th;
    pthread_create(&th, NULL, serve, NULL);
    serving = 1;
    return th;
}

static void stop_host(pthread_t th) {
    if (!serving) return;
    serving = 0;
    atomic_store(&stop, 1);
    pthread_join(th, NULL);
    sr__rdzv_free(&host);
}

/* An arriving agent's sr__rdzv_prepare, run in a thread of its own. */
typedef struct joiner {
    sr__rdzv r;
    int max, rc;
    char said[1000]; /* diag's first message */
    atomic_int finished;
    pthread_t th;
} joiner;

static void *join_main(void *arg) {
    joiner *j = arg;
    sr__diag diag = {0};
    sr__rdzv_args a = args(-1, j->max);
    j->rc = sr__rdzv_prepare(&j->r, &a, &diag);
    snprintf(j->said, sizeof j->said, "%s", diag.n ? diag.msgs[0] : "");
    sr__diag_clear(&diag);
    atomic_store(&j->finished, 1);
    return NULL;
}

static void join_start(joiner *j, int max) {
    memset(j, 0, sizeof *j);
    j->max = max;
    pthread_create(&j->th, NULL, join_main, j);
}

/* 1 when the join returned within `seconds`; either way, with `host_th` given, a join still waiting
   is ended by stopping node 0 (its store closes), so that the thread can be joined. */
static int join_within(joiner *j, double seconds, pthread_t *host_th) {
    for (double t0 = sr__now_s(); !atomic_load(&j->finished) && sr__now_s() - t0 < seconds;) usleep(5000);
    int finished = atomic_load(&j->finished);
    if (!finished && host_th) stop_host(*host_th);
    if (finished || host_th) pthread_join(j->th, NULL);
    return finished;
}

/* Waits (5 s at most) for `cond` about the host, read under its lock. */
static int host_until(int (*cond)(void)) {
    for (double t0 = sr__now_s(); sr__now_s() - t0 < 5; usleep(5000)) {
        pthread_mutex_lock(&lock);
        int ok = cond();
        pthread_mutex_unlock(&lock);
        if (ok) return 1;
    }
    return 0;
}
static int host_settled(void) { return sr__rdzv_settled(&host); }
static int host_in_attempt_2(void) { return host.attempt == 2 && host.phase == SR__RDZV_RUNNING; }

/* The job succeeded (or failed) before an agent arrived: it is taken in, told at once that the job
   ended (SR__RDZV_ENDED: exit 0; a failure: SR__RDZV_UNREACHABLE, exit 1), and node 0 serves until
   it left. */
static void taken_in_after_the_end(int succeeded) {
    pthread_t th = start_host(2);
    pthread_mutex_lock(&lock);
    if (succeeded) {
        sr__rdzv_report_done(&host, "{\"rank\":0}", 10, 1);
        CHECK(sr__rdzv_all_done(&host)); /* slot 1 is not in the world */
        sr__rdzv_succeed(&host);
    } else {
        sr__rdzv_decide(&host, 0, SR__FAIL_FINAL, "rank 0 failed");
    }
    CHECK(host.outcome_at > 0 && sr__rdzv_settled(&host));
    pthread_mutex_unlock(&lock);

    joiner j;
    join_start(&j, 2);
    if (!join_within(&j, 5, &th)) {
        CHECK(!"an agent taken in after the job's end learns it at once (it waited for a start)");
        sr__rdzv_free(&j.r);
        return; /* node 0 was stopped to end its wait */
    }
    if (succeeded) {
        CHECK(j.rc == SR__RDZV_ENDED);
        CHECK_STR(j.r.failed_elsewhere, "the job ended before this node was taken in (every rank succeeded)");
    } else {
        CHECK(j.rc == SR__RDZV_UNREACHABLE);
        CHECK_STR(j.said, "the job ended before this node was taken in (rank 0 failed)");
    }
    pthread_mutex_lock(&lock);
    CHECK(!sr__rdzv_settled(&host)); /* node 0 serves until the late agent read the end and left */
    pthread_mutex_unlock(&lock);
    sr__rdzv_free(&j.r);
    CHECK(host_until(host_settled));
    stop_host(th);
}

/* An agent took ticket 1 and never asked for a slot (it died in between): the next arrival, ticket
   2, still gets one and joins the next world. */
static void ticket_never_used(void) {
    pthread_t th = start_host(2);
    char err[512];
    sr__store *dead = sr__store_connect("127.0.0.1", host.port, host.token, 5, err, sizeof err);
    CHECK(dead && sr__store_add(dead, "run/tickets", 1) == 1);
    sr__store_close(dead);

    joiner j;
    join_start(&j, 2);
    CHECK(join_within(&j, 5, &th));
    CHECK(j.rc == 0);
    if (j.rc != 0) fprintf(stderr, "  the join said: %s\n", j.said);
    CHECK(j.r.agent_id == 1 && j.r.attempt == 1 && j.r.world_nodes == 2 && j.r.world_rank == 1);
    sr__rdzv_free(&j.r);
    stop_host(th);
}

/* A newcomer started with another job, once the job runs: refused alone (its join fails: exit 2);
   the job goes on, and the next arrival gets the slot. */
static void newcomer_of_another_job(void) {
    pthread_t th = start_host(2);
    joiner other, j;
    atomic_store(&other_fingerprint, 1);
    join_start(&other, 2);
    CHECK(join_within(&other, 5, &th) && other.rc == -1 && strstr(other.said, "task") != NULL);
    atomic_store(&other_fingerprint, 0);
    pthread_mutex_lock(&lock);
    CHECK(host.phase == SR__RDZV_RUNNING && !host.refused_at);
    pthread_mutex_unlock(&lock);
    sr__rdzv_free(&other.r);

    join_start(&j, 2);
    CHECK(join_within(&j, 5, &th) && j.rc == 0 && j.r.agent_id == 1 && j.r.attempt == 1 && j.r.world_nodes == 2);
    sr__rdzv_free(&j.r);
    stop_host(th);
}

/* A new world forms (slot 2 joins) while slot 1's agent does not stop its workers: after
   rdzv_timeout node 0 starts the next world without it, and slot 1, stopping late, reads that it has
   no start (it would otherwise wait for one as long as node 0 lives). */
static void left_out_of_the_next_world(void) {
    pthread_t th = start_host(3);
    joiner one, two;
    join_start(&one, 3);
    CHECK(join_within(&one, 5, &th) && one.rc == 0 && one.r.agent_id == 1 && one.r.attempt == 1);
    if (one.rc != 0) {
        sr__rdzv_free(&one.r);
        stop_host(th);
        return;
    }
    join_start(&two, 3);
    CHECK(pump(&one.r, decided) && one.r.phase == SR__RDZV_RESTART && one.r.save_first);
    /* slot 1 stops only once node 0 gave up on it */
    CHECK(join_within(&two, 5, &th) && two.rc == 0 && two.r.agent_id == 2);
    CHECK(host_until(host_in_attempt_2));
    pthread_mutex_lock(&lock);
    CHECK(!sr__rdzv_takes_part(&host, 1) && sr__rdzv_takes_part(&host, 2));
    pthread_mutex_unlock(&lock);
    CHECK(two.r.attempt == 2 && two.r.world_nodes == 2 && two.r.world_rank == 1);

    CHECK(sr__rdzv_stopped(&one.r) == 0);
    CHECK(pump(&one.r, restart_ready) && sr__rdzv_restart_ready(&one.r) == -1);
    CHECK(one.r.phase == SR__RDZV_FAILED && !one.r.host_gone);
    CHECK(strstr(one.r.failed_elsewhere, "node 0's shardrun started attempt 2 without this node (slot 1)") != NULL);
    sr__rdzv_free(&one.r);
    sr__rdzv_free(&two.r);
    stop_host(th);
}

int main(void) {
    unsetenv("SLURM_JOB_ID");
    unsetenv("SHARDRUN_RDZV_TOKEN");
    taken_in_after_the_end(1);
    taken_in_after_the_end(0);
    ticket_never_used();
    newcomer_of_another_job();
    left_out_of_the_next_world();
    return CHECK_DONE();
}
