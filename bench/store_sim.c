/*
 * store_sim: N agents' rendezvous traffic against a real rendezvous host, from one process.
 *
 * A child process is node 0's agent: the real hosting code (sr__rdzv_prepare as agent 0, the
 * supervisor's poll / handle / decide loop, without workers), whose store server all traffic goes
 * to.  This process plays agents 1 .. N-1, one thread each, through the real client
 * (sr__store_*), the calls store/rdzv_agent.c and rdzv_restart.c make, in their order, and one
 * rank per agent with the world-creation calls of core/pg (pg.c's meetings and host exchange,
 * gloo_shim.cc's full-mesh address exchange, or pg_nccl.c's unique-id broadcast).  It prints per
 * phase the wall time and the host's CPU time (user + system, from /proc/<pid>/stat), and the
 * host's total CPU time (getrusage of the child).
 *
 *   store_sim --agents N [--world none|gloo|nccl] [--scenario run|refused|restart] [--old-client]
 *
 * Phases: join (every agent accepted, its "alive" and verdict waits in place), world (every rank
 * through world creation), verdict (every agent done, the host's verdict read and acknowledged,
 * the host gone).  Scenarios, for tests: "refused" (the last agent starts with another job: the
 * run fails with a configuration verdict that names it), "restart" (agent N-2 is lost after the
 * join, agent N-1 joins only while the job restarts (late), a second copy of agent 1 is refused:
 * the job restarts once with every agent and succeeds).  Each agent checks what it is told;
 * "sim: ok" and exit 0 when every agent heard the one verdict it expected.
 *
 * --old-client plays the traffic of the client before FETCH (a wait then a get per key) for a
 * server that lacks it.  Each agent holds 4 connections (control, alive, watch, its rank's): the
 * file-descriptor limit is raised to what N needs (root may raise the hard limit) and agents
 * reach the host on 127.0.0.2-127.0.0.9 so that loopback's ephemeral ports do not run out.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/diag.h"
#include "store/rdzv.h"
#include "store/store.h"

enum { WORLD_NONE, WORLD_GLOO, WORLD_NCCL };
enum { SC_RUN, SC_REFUSED, SC_RESTART };

static int nagents, world = WORLD_NONE, scenario = SC_RUN, old_client;
static int port;
static double timeout_s = 60;
static const char *token = "store-sim-token";
static pid_t host_pid;
static atomic_int failures, joined;
static char host_fp[2048];

/* A barrier between phases (every agent thread, and the main thread that times them). */
static pthread_barrier_t phase_barrier;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fail(int agent, const char *fmt, const char *what) {
    fprintf(stderr, "sim: agent %d: ", agent);
    fprintf(stderr, fmt, what);
    fputc('\n', stderr);
    atomic_fetch_add(&failures, 1);
}

/* The host's CPU seconds so far. */
static double host_cpu_s(void) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)host_pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    /* after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static void fingerprint(char *out, size_t len, int agent, const char *lr) {
    /* what run/fingerprint.c publishes: sorted name=value lines, and #lines describing the agent */
    snprintf(out, len,
             "#host=simhost%d\n#node=%d\nbackend=gloo\nbatch_size=32\nbinary=0123456789abcdef\ncheckpoint_dir=/ckpt\n"
             "dataset=/data/train.bin\nepochs=3\ngrad_accum=4\njob=0123456789abcdef0123456789abcdef\nlr=%s\n"
             "master_port=29500\nmax_restarts=1\nmixed_precision=bf16\nmodel=gpt2\nnnodes=%d\nnproc_per_node=1\n"
             "seed=1234\nshardrun=1.0\ntask=examples/gpt2.so\ntransport=tcp\nweight_decay=0.1\n",
             agent, agent, lr, nagents);
}

/* ---- node 0's agent (the child) ---- */

static int run_host(void) {
    char master[16];
    snprintf(master, sizeof master, "%d", port);
    fingerprint(host_fp, sizeof host_fp, 0, "3e-4");
    sr__rdzv_args a = {.nagents = nagents,
                       .agent_id = 0,
                       .need_store = 1,
                       .master_addr = "127.0.0.1",
                       .master_port = port - 1,
                       .port_value = "0",
                       .port_where = "store_sim",
                       .timeout_s = timeout_s,
                       .fingerprint = host_fp,
                       .ack_timeout_s = timeout_s,
                       .max_restarts = 1,
                       .restart_delay_s = 0};
    sr__rdzv r;
    sr__diag diag = {0};
    if (sr__rdzv_prepare(&r, &a, &diag) != 0) {
        sr__diag_flush(&diag);
        return 3;
    }
    sr__rdzv_report(&r, &(sr__rdzv_news){.kind = SR__RDZV_DONE, .succeeded = 1}); /* node 0's own rank */
    static struct pollfd pfds[1 << 18];
    while (1) {
        int ms, n = sr__rdzv_pollfds(&r, pfds, 1 << 18, &ms);
        poll(pfds, (nfds_t)n, ms);
        sr__rdzv_step(&r, pfds, n);
        if (r.phase == SR_RDZV_RESTART) {
            sr__rdzv_report(&r, &(sr__rdzv_news){.kind = SR__RDZV_STOPPED});
            if (sr__rdzv_view_now(&r).next_attempt > 0) {
                sr__rdzv_report(&r, &(sr__rdzv_news){.kind = SR__RDZV_NEXT});
                sr__rdzv_report(&r, &(sr__rdzv_news){.kind = SR__RDZV_DONE, .succeeded = 1});
            }
        }
        sr__rdzv_view v = sr__rdzv_view_now(&r);
        if (v.verdict_known && v.settled) break;
    }
    printf("host: attempt %d, phase %s: %s\n%s", r.attempt,
           r.phase == SR_RDZV_SUCCEEDED ? "succeeded"
           : r.phase == SR_RDZV_FAILED  ? "failed"
                                        : "other",
           r.failed_elsewhere, r.attempts.s ? r.attempts.s : "");
    fflush(stdout);
    int rc = r.phase == SR_RDZV_SUCCEEDED ? 0 : 1;
    sr__rdzv_free(&r);
    return rc;
}

/* ---- the other agents (threads) ---- */

typedef struct agent {
    int id;
    sr__store *ctl, *alive, *watch, *rank;
    int attempt;
} agent;

static sr__store *dial(int id) {
    char host[32], err[512];
    snprintf(host, sizeof host, "127.0.0.%d", 2 + id % 8);
    sr__store *c = sr__store_connect(host, port, token, timeout_s, err, sizeof err);
    if (!c) fail(id, "connect: %s", err);
    return c;
}

/* A wait then the value (the old client's two round trips, or one FETCH).  NULL on failure. */
static char *wait_get(agent *g, sr__store *c, const char *key, size_t *len) {
    void *v = NULL;
    char missing[256];
    if (old_client) {
        if (sr__store_wait(c, &key, 1, timeout_s, missing, sizeof missing) != 0 || sr__store_get(c, key, &v, len) != 0)
            v = NULL;
    } else if (sr__store_fetch(c, &key, 1, timeout_s, &v, len, missing, sizeof missing) != 0) {
        v = NULL;
    }
    if (!v) fail(g->id, "no value for %s", key);
    return v;
}

/* rdzv_agent.c's sr__rdzv_join: 1 accepted (r->attempt), 0 refused (why in out), -1 failure. */
static int join(agent *g, const char *fp, char *out, size_t olen) {
    char key[64], akey[64];
    if (!(g->ctl = dial(g->id))) return -1;
    snprintf(key, sizeof key, "run/joins/%d", g->id);
    long long j = sr__store_add(g->ctl, key, 1);
    if (j == 1)
        snprintf(key, sizeof key, "run/fingerprint/%d", g->id), snprintf(akey, sizeof akey, "run/accepted/%d", g->id);
    else
        snprintf(key, sizeof key, "run/fingerprint/%d/%d", g->id, (int)j),
            snprintf(akey, sizeof akey, "run/accepted/%d/%d", g->id, (int)j);
    if (j <= 0 || sr__store_set(g->ctl, key, fp, strlen(fp)) != 0)
        return fail(g->id, "join: %s", sr__store_error(g->ctl)), -1;
    size_t len;
    char *answer = wait_get(g, g->ctl, akey, &len);
    if (!answer) return -1;
    int attempt = -1, at = 0;
    char id[80];
    if (sscanf(answer, "ok %d %79s%n", &attempt, id, &at) != 2 || answer[at]) {
        snprintf(out, olen, "%s", answer);
        free(answer);
        if (j == 1) snprintf(key, sizeof key, "run/%d/ack/%d", g->attempt, g->id), sr__store_set(g->ctl, key, "1", 1);
        return 0;
    }
    free(answer);
    g->attempt = attempt;
    if (!(g->alive = dial(g->id))) return -1;
    snprintf(key, sizeof key, "run/alive/%d/%d", g->id, (int)j);
    if (sr__store_wait_send(g->alive, key) != 0) return -1;
    if (attempt > 0) { /* await_restart */
        snprintf(key, sizeof key, "run/%d/start/%d", attempt, g->id);
        char *go = wait_get(g, g->ctl, key, &len);
        int ok = go && !strcmp(go, "go");
        free(go);
        if (!ok) return fail(g->id, "%s", "no start after coming back"), -1;
    }
    if (!(g->watch = dial(g->id))) return -1;
    snprintf(key, sizeof key, "run/%d/outcome/%d", attempt, g->id);
    return sr__store_wait_send(g->watch, key) == 0 ? 1 : -1;
}

/* The verdict the watch waited for (rdzv_agent.c's sr__rdzv_read_watch): its letter, and message. */
static char read_verdict(agent *g, char *msg, size_t mlen) {
    msg[0] = 0;
    if (!g->watch || !g->ctl) return 0; /* its failure was counted */
    struct pollfd p = {.fd = sr__store_fd(g->watch), .events = POLLIN};
    if (poll(&p, 1, (int)(timeout_s * 1000)) != 1) return fail(g->id, "%s", "no verdict"), 0;
    char key[64];
    void *v = NULL;
    size_t len;
    snprintf(key, sizeof key, "run/%d/outcome/%d", g->attempt, g->id);
    if (sr__store_get(g->ctl, key, &v, &len) != 0) return fail(g->id, "%s", "verdict unreadable"), 0;
    char *c1 = strchr(v, ':');
    char kind = c1 && c1[1] ? c1[1] : 0;
    snprintf(msg, mlen, "%s", c1 && c1[1] && c1[2] ? c1 + 3 : "");
    free(v);
    return kind;
}

static void ack(agent *g) {
    char key[64];
    if (!g->ctl) return;
    snprintf(key, sizeof key, "run/%d/ack/%d", g->attempt, g->id);
    sr__store_set(g->ctl, key, "1", 1);
}

/* ---- world creation, as rank r (core/pg) ---- */

static char **key_list(const char *prefix, int n) {
    char **k = malloc((size_t)n * sizeof *k);
    for (int r = 0; r < n; r++)
        if (asprintf(&k[r], "%s%d", prefix, r) < 0) k[r] = NULL;
    return k;
}

static void free_keys(char **k, int n) {
    for (int r = 0; r < n; r++) free(k[r]);
    free(k);
}

/* pg.c's announce_and_wait: before, a wait on every rank's key; now a counter, and a wait on the
   key the last rank sets */
static void meet(sr__store *c, int rank, const char *stage) {
    char prefix[64], key[80], missing[256];
    snprintf(prefix, sizeof prefix, "pg/world/%s/", stage);
    snprintf(key, sizeof key, "%s%d", prefix, rank);
    if (sr__store_set(c, key, "1", 1) != 0) fail(rank, "meeting %s failed", stage);
    if (old_client) {
        char **keys = key_list(prefix, nagents);
        if (sr__store_wait(c, (const char *const *)keys, nagents, timeout_s, missing, sizeof missing) != 0)
            fail(rank, "meeting %s failed", stage);
        free_keys(keys, nagents);
        return;
    }
    char count[80], all[80];
    snprintf(count, sizeof count, "%scount", prefix);
    snprintf(all, sizeof all, "%sall", prefix);
    const char *k = all;
    if (sr__store_add(c, count, 1) == nagents) sr__store_set(c, all, "1", 1);
    if (sr__store_wait(c, &k, 1, timeout_s, missing, sizeof missing) != 0) fail(rank, "meeting %s failed", stage);
}

static void world_rank(agent *g) {
    int rank = g->id, n = nagents;
    sr__store *c = g->rank = dial(rank);
    if (!c) return;
    char key[80], id[64];
    snprintf(key, sizeof key, "pg/host/%d", rank);
    snprintf(id, sizeof id, "simhost%d-boot-0123456789abcdef", rank);
    sr__store_set(c, key, id, strlen(id));
    meet(c, rank, "arrived");
    /* pg.c's world_hosts */
    char **keys = key_list("pg/host/", n);
    if (old_client) {
        for (int r = 0; r < n; r++) {
            void *v = NULL;
            size_t len;
            if (sr__store_get(c, keys[r], &v, &len) != 0) fail(rank, "%s", "host id missing");
            free(v);
        }
    } else {
        void **v = calloc((size_t)n, sizeof *v);
        size_t *lens = calloc((size_t)n, sizeof *lens);
        char missing[256];
        if (sr__store_fetch(c, (const char *const *)keys, n, 0, v, lens, missing, sizeof missing) != 0)
            fail(rank, "%s", "host ids missing");
        for (int r = 0; r < n; r++) free(v[r]);
        free(v), free(lens);
    }
    free_keys(keys, n);
    if (world == WORLD_GLOO) {
        /* gloo_shim.cc: each rank lists its N-1 pairs' addresses (a tcp::Address: a sockaddr_storage
           and a sequence number) under its rank, then reads its own address out of each peer's list */
        enum { ADDR = 136 };
        size_t len = (size_t)(n - 1) * ADDR;
        char *mine = calloc(1, len);
        snprintf(key, sizeof key, "pg/world/gloo/%d", rank);
        sr__store_set(c, key, mine, len);
        free(mine);
        if (old_client) { /* each peer's whole list, a wait and a get per peer */
            for (int i = 0; i < n; i++) {
                if (i == rank) continue;
                snprintf(key, sizeof key, "pg/world/gloo/%d", i);
                void *v = NULL;
                size_t vlen = 0;
                char missing[256];
                const char *k = key;
                if (sr__store_wait(c, &k, 1, timeout_s, missing, sizeof missing) != 0 ||
                    sr__store_get(c, key, &v, &vlen) != 0)
                    fail(rank, "%s", "gloo address missing");
                free(v);
            }
        } else { /* this rank's piece of the lower ranks' lists, then of the higher ranks': two fetches */
            char **keys_g = key_list("pg/world/gloo/", n);
            void **v = calloc((size_t)n, sizeof *v);
            size_t *lens = calloc((size_t)n, sizeof *lens);
            char missing[256];
            if ((rank > 0 && sr__store_fetch_pieces(c, (const char *const *)keys_g, rank, rank - 1, n - 1, timeout_s, v,
                                                    lens, missing, sizeof missing) != 0) ||
                (rank < n - 1 &&
                 sr__store_fetch_pieces(c, (const char *const *)keys_g + rank + 1, n - rank - 1, rank, n - 1, timeout_s,
                                        v + rank + 1, lens + rank + 1, missing, sizeof missing) != 0))
                fail(rank, "%s", "gloo addresses missing");
            for (int i = 0; i < n; i++) {
                if (i != rank && lens[i] != ADDR) fail(rank, "%s", "gloo address of the wrong size");
                free(v[i]);
            }
            free(v), free(lens);
            free_keys(keys_g, n);
        }
    } else if (world == WORLD_NCCL) {
        /* pg_nccl.c: rank 0 publishes the unique id, every other rank waits for it and reads it */
        if (rank == 0) {
            char uid[128] = {0};
            sr__store_set(c, "pg/world/nccl/unique_id", uid, sizeof uid);
        } else {
            size_t len;
            const char *k = "pg/world/nccl/unique_id";
            char missing[256];
            void *v = NULL;
            if (sr__store_wait(c, &k, 1, timeout_s, missing, sizeof missing) != 0 || sr__store_get(c, k, &v, &len) != 0)
                fail(rank, "%s", "no nccl id");
            free(v);
        }
    }
    meet(c, rank, "ready");
}

/* ---- an agent's life per scenario ---- */

static int lost_id(void) { return nagents - 2; }
static int late_id(void) { return nagents - 1; }

static void *agent_main(void *arg) {
    agent *g = arg;
    char fp[2048], why[1200], msg[1200];
    int refused_by_job = scenario == SC_REFUSED && g->id == nagents - 1;
    int late = scenario == SC_RESTART && g->id == late_id();
    int lost = scenario == SC_RESTART && g->id == lost_id();
    fingerprint(fp, sizeof fp, g->id, refused_by_job ? "1e-3" : "3e-4");

    if (g->id == 0) { /* node 0's rank: world creation only (node 0's agent is the host process) */
        pthread_barrier_wait(&phase_barrier);
        if (world != WORLD_NONE && scenario == SC_RUN) world_rank(g);
        for (int p = 1; p < (scenario == SC_RESTART ? 3 : 2); p++) pthread_barrier_wait(&phase_barrier);
        sr__store_close(g->rank);
        g->rank = NULL;
        return NULL;
    }
    /* phase 1: join (the agent with another job comes once every other agent is in, so that they
       all hear the verdict it causes) */
    if (refused_by_job)
        while (atomic_load(&joined) < nagents - 2) usleep(10000);
    int rc = late ? 1 : join(g, fp, why, sizeof why);
    if (rc == 1) atomic_fetch_add(&joined, 1);
    if (rc == 0 && !refused_by_job) fail(g->id, "refused: %s", why);
    if (refused_by_job && (rc != 0 || !strstr(why, "lr is \"3e-4\" on node 0") || !strstr(why, "\"1e-3\" on node")))
        fail(g->id, "expected a refusal naming lr, got: %s", rc == 0 ? why : "accepted");
    else if (refused_by_job) printf("sim: agent %d refused: %s\n", g->id, why);
    pthread_barrier_wait(&phase_barrier);
    /* phase 2: world creation (every rank of the run; rank 0 is node 0's worker, played here too) */
    if (world != WORLD_NONE && scenario == SC_RUN) world_rank(g);
    pthread_barrier_wait(&phase_barrier);
    if (rc < 0) { /* its failure was counted; the phases go on without it */
        if (scenario == SC_RESTART) pthread_barrier_wait(&phase_barrier);
        return NULL;
    }

    /* phase 3: to the verdict */
    if (scenario == SC_RUN || scenario == SC_REFUSED) {
        if (refused_by_job) return NULL;
        char key[64];
        if (scenario == SC_RUN) {
            snprintf(key, sizeof key, "run/%d/results/%d", g->attempt, g->id);
            sr__store_set(g->ctl, key, "{\"loss\":1.0}", 12);
            snprintf(key, sizeof key, "run/%d/done/%d", g->attempt, g->id);
            sr__store_set(g->ctl, key, "1", 1);
        }
        char kind = read_verdict(g, msg, sizeof msg);
        char want = scenario == SC_RUN ? 'o' : 'c';
        if (kind != want || (scenario == SC_REFUSED && !strstr(msg, "lr is \"3e-4\" on node 0")))
            fail(g->id, "wrong verdict: %s", msg);
        ack(g);
        return NULL;
    }

    /* SC_RESTART: the lost agent goes away; the others hear the restart, stop and wait for the
       start; the lost one comes back, the late one joins for the first time, a second copy of
       agent 1 is refused; attempt 1 runs and succeeds */
    if (late || lost) {
        if (lost) {
            /* killed (once node 0 surely saw its "alive" wait): every connection closes at once */
            usleep(300000);
            sr__store_close(g->alive), sr__store_close(g->watch), sr__store_close(g->ctl);
            g->alive = g->watch = g->ctl = NULL;
        }
        pthread_barrier_wait(&phase_barrier); /* the others heard the restart verdict */
        rc = join(g, fp, why, sizeof why);
        if (rc != 1 || g->attempt != 1) fail(g->id, "not accepted into attempt 1: %s", rc == 0 ? why : "error");
        else printf("sim: %s agent %d accepted into attempt 1\n", late ? "late" : "lost", g->id);
    } else {
        char kind = read_verdict(g, msg, sizeof msg);
        char want[128];
        snprintf(want, sizeof want, "node %d's shardrun (agent %d) went away", lost_id(), lost_id());
        if (kind != 'r' || !strstr(msg, want))
            fail(g->id, "expected a restart verdict naming the lost agent, got: %s", msg);
        char key[64];
        snprintf(key, sizeof key, "run/%d/stopped/%d", g->attempt, g->id);
        if (g->ctl) sr__store_set(g->ctl, key, "1", 1);
        sr__store_close(g->watch);
        g->watch = g->ctl ? dial(g->id) : NULL;
        snprintf(key, sizeof key, "run/%d/start/%d", g->attempt + 1, g->id);
        if (g->watch) sr__store_wait_send(g->watch, key);
        pthread_barrier_wait(&phase_barrier);
        if (!g->watch) return NULL; /* its failure was counted */
        if (g->id == 1) {           /* a second copy of agent 1, started by mistake */
            agent dup = {.id = 1};
            if (join(&dup, fp, why, sizeof why) != 0 ||
                !strstr(why, "node 1's shardrun (agent 1) is already part of this run"))
                fail(1, "expected the second copy refused, got: %s", why);
            else printf("sim: second copy of agent 1 refused: %s\n", why);
            sr__store_close(dup.ctl);
        }
        struct pollfd p = {.fd = sr__store_fd(g->watch), .events = POLLIN};
        void *v = NULL;
        size_t len;
        if (poll(&p, 1, (int)(timeout_s * 1000)) != 1 || sr__store_get(g->ctl, key, &v, &len) != 0 || strcmp(v, "go"))
            fail(g->id, "no start of attempt 1: %s", v ? (char *)v : "nothing");
        free(v);
        g->attempt++;
        sr__store_close(g->watch);
        g->watch = dial(g->id);
        snprintf(key, sizeof key, "run/%d/outcome/%d", g->attempt, g->id);
        if (g->watch) sr__store_wait_send(g->watch, key);
    }
    if (!g->ctl || !g->watch) return NULL; /* its failure was counted */
    char key[64];
    snprintf(key, sizeof key, "run/%d/done/%d", g->attempt, g->id);
    sr__store_set(g->ctl, key, "1", 1);
    char kind = read_verdict(g, msg, sizeof msg);
    if (kind != 'o') fail(g->id, "expected success in attempt 1, got: %s", msg);
    ack(g);
    return NULL;
}

static int pick_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t l = sizeof a;
    bind(fd, (struct sockaddr *)&a, sizeof a);
    getsockname(fd, (struct sockaddr *)&a, &l);
    close(fd);
    return ntohs(a.sin_port);
}

/* Each agent: 4 connections here, 4 in the host, and a few spare. */
static rlim_t raise_fd_limit(void) {
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rlim_t need = (rlim_t)nagents * 4 + 256;
    if (rl.rlim_max < need) {
        struct rlimit up = {need, need};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0) rl = up; /* root */
    }
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
    return rl.rlim_cur;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--agents") && i + 1 < argc) nagents = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--world") && i + 1 < argc) {
            const char *w = argv[++i];
            world = !strcmp(w, "gloo") ? WORLD_GLOO : !strcmp(w, "nccl") ? WORLD_NCCL : WORLD_NONE;
        } else if (!strcmp(argv[i], "--scenario") && i + 1 < argc) {
            const char *s = argv[++i];
            scenario = !strcmp(s, "refused") ? SC_REFUSED : !strcmp(s, "restart") ? SC_RESTART : SC_RUN;
        } else if (!strcmp(argv[i], "--old-client")) old_client = 1;
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) timeout_s = atof(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: %s --agents N [--world none|gloo|nccl] [--scenario run|refused|restart] "
                    "[--old-client] [--timeout S]\n",
                    argv[0]);
            return 2;
        }
    }
    if (nagents < 4) {
        fprintf(stderr, "store_sim: --agents must be at least 4 (got %d)\n", nagents);
        return 2;
    }
    rlim_t lim = raise_fd_limit();
    if (lim < (rlim_t)nagents * 4 + 256) {
        fprintf(stderr,
                "store_sim: %d agents need %d descriptors per process; the limit is %lu (ulimit -n): "
                "run as root or lower --agents\n",
                nagents, nagents * 4 + 256, (unsigned long)lim);
        return 2;
    }
    port = pick_port();
    signal(SIGPIPE, SIG_IGN);
    setenv("SHARDRUN_RDZV_TOKEN", token, 1);
    fflush(stdout);
    host_pid = fork();
    if (host_pid == 0) _exit(run_host());
    printf("sim: %d agents, world %s, scenario %s, %s client, fd limit %lu\n", nagents,
           world == WORLD_GLOO   ? "gloo"
           : world == WORLD_NCCL ? "nccl"
                                 : "none",
           scenario == SC_REFUSED   ? "refused"
           : scenario == SC_RESTART ? "restart"
                                    : "run",
           old_client ? "old" : "fetch", (unsigned long)lim);
    int nphases = scenario == SC_RESTART ? 3 : 2;
    pthread_barrier_init(&phase_barrier, NULL, (unsigned)nagents + 1); /* ranks 0..N-1, and this thread */
    agent *g = calloc((size_t)nagents, sizeof *g);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 << 10);
    pthread_t *th = calloc((size_t)nagents, sizeof *th);
    double t0 = now_s(), c0 = host_cpu_s(), tp = t0, cp = c0;
    for (int a = 0; a < nagents; a++) {
        g[a].id = a;
        if (pthread_create(&th[a], &attr, agent_main, &g[a]) != 0) {
            fprintf(stderr, "store_sim: cannot start thread %d\n", a);
            return 1;
        }
    }
    static const char *names[3][4] = {{"join", "world", "verdict"},
                                      {"join", "world", "verdict"},
                                      {"join", "(world: none)", "restart verdict", "attempt 1 + verdict"}};
    for (int p = 0; p < nphases; p++) {
        pthread_barrier_wait(&phase_barrier);
        double t = now_s(), c = host_cpu_s();
        printf("phase %-20s wall %8.3f s  host cpu %8.3f s\n", names[scenario][p], t - tp, c - cp);
        tp = t, cp = c;
    }
    for (int a = 0; a < nagents; a++) pthread_join(th[a], NULL);
    int status = 0;
    struct rusage ru;
    wait4(host_pid, &status, 0, &ru);
    double t = now_s();
    double cpu =
        (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    printf("phase %-20s wall %8.3f s  host cpu %8.3f s\n", names[scenario][nphases], t - tp, cpu - (cp - c0));
    printf("total: %d agents, wall %.3f s, host cpu %.3f s (user %.3f, sys %.3f), host exit %d\n", nagents, t - t0, cpu,
           (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
           WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    int want_exit = scenario == SC_REFUSED ? 1 : 0;
    int ok = !atomic_load(&failures) && WIFEXITED(status) && WEXITSTATUS(status) == want_exit;
    printf("sim: %s (%d agent failures)\n", ok ? "ok" : "FAILED", atomic_load(&failures));
    for (int a = 0; a < nagents; a++) /* what each agent still held when its thread ended */
        sr__store_close(g[a].ctl), sr__store_close(g[a].alive), sr__store_close(g[a].watch), sr__store_close(g[a].rank);
    free(g);
    free(th);
    return ok ? 0 : 1;
}
