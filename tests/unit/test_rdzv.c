/* The agents' rendezvous (store/rdzv.h) between two agents of one process on loopback: node 0's
   agent hosts and decides in a thread, agent 1 joins from the main thread.  Pins the bytes agents
   exchange (the keys and values of the protocol, store/rdzv_protocol.h) and the host's decisions:
   a join accepted, a retryable failure restarted, the next attempt started, success acknowledged;
   an agent that goes away and comes back while the job restarts; a fingerprint refused. */
#define _GNU_SOURCE
#include <pthread.h>
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

static void *serve(void *arg) {
    (void)arg;
    serve_host(&host, &lock, &stop);
    return NULL;
}

/* Waits (5 s at most) until the host's store holds `key` = `want`. */
static void check_key(const char *key, const char *want, int line) {
    char got[1200] = "(missing)";
    for (double t0 = sr__now_s(); sr__now_s() - t0 < 5; usleep(5000)) {
        size_t len = 0;
        pthread_mutex_lock(&lock);
        const char *v = sr__store_server_get(host.server, key, &len);
        if (v) snprintf(got, sizeof got, "%.*s", (int)len, v);
        pthread_mutex_unlock(&lock);
        if (v && !strcmp(got, want)) break;
    }
    check_count++;
    if (strcmp(got, want)) {
        check_failures++;
        fprintf(stderr, "%s:%d: %s = \"%s\", want \"%s\"\n", __FILE__, line, key, got, want);
    }
}
#define CHECK_KEY(key, want) check_key(key, want, __LINE__)

static char port_value[16];

static sr__rdzv_args args(int agent_id, const char *fingerprint) {
    return (sr__rdzv_args){.nagents = 2,
                           .agent_id = agent_id,
                           .need_store = 1,
                           .master_addr = "127.0.0.1",
                           .master_port = 29500,
                           .port_value = port_value,
                           .port_where = "test",
                           .timeout_s = 5,
                           .launcher_job_id = "unit-rdzv",
                           .fingerprint = fingerprint,
                           .ack_timeout_s = 5,
                           .max_restarts = 1,
                           .restart_delay_s = 0};
}

/* Node 0's agent, serving from a thread until stop_host. */
static pthread_t start_host(void) {
    sr__diag diag = {0};
    atomic_store(&stop, 0);
    snprintf(port_value, sizeof port_value, "%d", sr__free_port());
    sr__rdzv_args a = args(0, "task=hello\n#node=0\n");
    CHECK(sr__rdzv_prepare(&host, &a, &diag) == 0);
    sr__diag_clear(&diag);
    pthread_t th;
    pthread_create(&th, NULL, serve, NULL);
    return th;
}

static void stop_host(pthread_t th) {
    atomic_store(&stop, 1);
    pthread_join(th, NULL);
    sr__rdzv_free(&host);
}

/* Agent 1 joins with `fingerprint`: sr__rdzv_prepare's result, what it said in diag (cleared). */
static int join_agent(sr__rdzv *agent, const char *fingerprint, char *said, size_t slen) {
    sr__diag diag = {0};
    sr__rdzv_args a = args(1, fingerprint);
    int rc = sr__rdzv_prepare(agent, &a, &diag);
    snprintf(said, slen, "%s", diag.n ? diag.msgs[0] : "");
    sr__diag_clear(&diag);
    return rc;
}

/* Join, restart, the next attempt, success. */
static void restart_then_succeed(void) {
    pthread_t th = start_host();
    sr__rdzv agent;
    char said[1000];
    CHECK(join_agent(&agent, "task=hello\n#node=1\n", said, sizeof said) == 0);
    char want[200];
    snprintf(want, sizeof want, "ok 0 %s", host.job_id);
    CHECK_KEY("run/fingerprint/1", "task=hello\n#node=1\n");
    CHECK_KEY("run/accepted/1", want);
    CHECK_STR(agent.job_id, host.job_id);
    CHECK(agent.attempt == 0);

    /* a rank of agent 1 fails once training began: the host restarts the job */
    sr__rdzv_report_failure(&agent, 1, "rank 3 failed", SR__FAIL_RETRYABLE);
    CHECK_KEY("run/0/failure", "1:x:rank 3 failed");
    CHECK_KEY("run/0/outcome/1", "1:r:rank 3 failed");
    CHECK(pump(&agent, decided) && agent.phase == SR__RDZV_RESTART);
    CHECK_STR(agent.failed_elsewhere, "rank 3 failed");
    CHECK(agent.failed_node == 1 && !agent.failed_config);
    pthread_mutex_lock(&lock);
    CHECK(host.decided_kind == SR__FAIL_RETRYABLE);
    CHECK_STR(host.attempts.s, "attempt 0: rank 3 failed\n");
    pthread_mutex_unlock(&lock);

    CHECK(sr__rdzv_stopped(&agent) == 0);
    CHECK_KEY("run/0/stopped/1", "1");
    CHECK_KEY("run/1/start/1", "go");
    CHECK(pump(&agent, restart_ready) && sr__rdzv_restart_ready(&agent) == 1);
    sr__rdzv_next_attempt(&agent);
    CHECK(agent.attempt == 1 && agent.phase == SR__RDZV_RUNNING);

    /* attempt 1 succeeds everywhere */
    CHECK(sr__rdzv_report_done(&agent, "{\"rank\":1}", 10, 1) == 0);
    CHECK_KEY("run/1/results/1", "{\"rank\":1}");
    CHECK_KEY("run/1/done/1", "1");
    pthread_mutex_lock(&lock);
    CHECK(host.attempt == 1);
    sr__rdzv_report_done(&host, "{\"rank\":0}", 10, 1);
    CHECK(sr__rdzv_all_done(&host));
    sr__rdzv_succeed(&host);
    CHECK(!sr__rdzv_settled(&host)); /* agent 1 has not read the verdict yet */
    pthread_mutex_unlock(&lock);
    CHECK_KEY("run/1/outcome/1", "0:o:every rank succeeded");
    CHECK(pump(&agent, decided) && agent.phase == SR__RDZV_SUCCEEDED && sr__rdzv_outcome_known(&agent));
    sr__rdzv_ack(&agent);
    CHECK_KEY("run/1/ack/1", "1");
    pthread_mutex_lock(&lock);
    CHECK(sr__rdzv_settled(&host));
    size_t len = 0;
    const char *res = sr__rdzv_results(&host, 1, &len);
    CHECK(res && len == 10 && !memcmp(res, "{\"rank\":1}", 10));
    pthread_mutex_unlock(&lock);

    sr__rdzv_free(&agent);
    stop_host(th);
}

/* Agent 1 goes away while the job runs, and comes back while it restarts. */
static void lost_and_back(void) {
    pthread_t th = start_host();
    sr__rdzv agent;
    char said[1000];
    CHECK(join_agent(&agent, "task=hello\n#node=1\n", said, sizeof said) == 0);
    usleep(100000); /* the host sees its "alive" wait */
    sr__rdzv_free(&agent);
    CHECK_KEY("run/0/outcome/1", "1:r:node 1's shardrun (agent 1) went away before the run ended");

    /* its second join is accepted into the next attempt, which starts with it */
    CHECK(join_agent(&agent, "task=hello\n#node=1\n", said, sizeof said) == 0);
    char want[200];
    snprintf(want, sizeof want, "ok 1 %s", host.job_id);
    CHECK_KEY("run/fingerprint/1/2", "task=hello\n#node=1\n");
    CHECK_KEY("run/accepted/1/2", want);
    CHECK_KEY("run/1/start/1", "go");
    CHECK(agent.attempt == 1);
    pthread_mutex_lock(&lock);
    CHECK(host.attempt == 1 && host.phase == SR__RDZV_RUNNING);
    pthread_mutex_unlock(&lock);

    /* a third join while the job runs is refused */
    sr__rdzv again;
    CHECK(join_agent(&again, "task=hello\n#node=1\n", said, sizeof said) != 0);
    CHECK(strstr(said, "is already part of this run; start each node's shardrun once") != NULL);
    sr__rdzv_free(&again);

    sr__rdzv_free(&agent);
    stop_host(th);
}

/* Agent 1 started another job: refused, and the run fails as a configuration error. */
static void refused(void) {
    pthread_t th = start_host();
    sr__rdzv agent;
    char said[1000];
    CHECK(join_agent(&agent, "task=other\n#node=1\n", said, sizeof said) != 0);
    CHECK(strstr(said, "task") != NULL);
    CHECK_KEY("run/0/ack/1", "1");
    pthread_mutex_lock(&lock);
    CHECK(host.phase == SR__RDZV_FAILED && host.failed_config && host.decided_kind == SR__FAIL_CONFIG);
    CHECK(host.refused_at > 0 && sr__rdzv_settled(&host));
    char want[1200];
    snprintf(want, sizeof want, "0:c:%s", host.failed_elsewhere);
    pthread_mutex_unlock(&lock);
    CHECK_KEY("run/0/outcome/1", want);

    sr__rdzv_free(&agent);
    stop_host(th);
}

int main(void) {
    unsetenv("SLURM_JOB_ID");
    unsetenv("SHARDRUN_RDZV_TOKEN");
    restart_then_succeed();
    lost_and_back();
    refused();
    return CHECK_DONE();
}
