/*
 * store_sim: N agents' rendezvous, world creation and hang-watchdog traffic against node 0's real
 * hosting code, with the agents running the agent's own code.
 *
 * A child process is node 0's agent: sr__rdzv_prepare as agent 0, then the supervisor's loop on
 * the rendezvous interface (store/rdzv.h: pollfds, step, report, view), without workers.  Agents
 * 1 .. N-1 are threads, split across several processes (each agent holds one connection to node 0,
 * whose channels carry all its traffic, and the eventfds of its two asynchronous waits, and its
 * rank another connection during world creation: one process could not hold 16,384 agents' under
 * a 20,000 descriptor limit).  Each agent calls what the agent calls: sr__rdzv_prepare (its join: the join
 * counter, the fingerprint, the answer, the "alive" and verdict waits), sr__rdzv_report and
 * sr__rdzv_step for its results, the verdict and its reading, a restart's stop and start; one rank
 * per agent creates the world through core/pg (sr__pg_rehearse_world: pg.c's connection, host
 * identity, meetings and host table, with a stand-in backend that makes the transport's own store
 * requests through the functions the real one calls, without opening its connections: Gloo's
 * address exchange (pg/gloo_exchange.h: every pair's address at creation up to 64 ranks, past that
 * each pair's when an operation first meets the peer, for the peers pg/gloo_peers.h picks for a
 * barrier and hello's all-reduce), NCCL's unique id (pg/nccl_id.h), each with addresses or ids of
 * the real size that say whose they are, checked by the rank that reads them); the watchdog's
 * exchange is sr__watchdog_exchange, the call its thread makes.  A change in any of those calls
 * changes what the simulator does.
 *
 *   store_sim --agents N [--world none|gloo|nccl] [--scenario run|refused|restart] [--timeout S]
 *             [--per-process K] [--watchdog-rounds R]
 *
 * Phases: join (every agent accepted), world (every rank through world creation), watchdog (R
 * rounds of every agent's exchange), verdict (every agent done, the verdict read and acknowledged,
 * node 0 gone).  Per phase: wall time, node 0's CPU time (user + system, /proc/<pid>/stat) and the
 * requests node 0's store answered (its write system calls, /proc/<pid>/io: one per reply).
 * Scenarios, for tests: "refused" (the last agent starts with another job: the run fails with a
 * configuration verdict that names it), "restart" (agent N-2 is lost after the join, agent N-1
 * joins only while the job restarts, a second copy of agent 1 is refused: the job restarts once
 * with every agent and succeeds).  "sim: ok" and exit 0 when every agent heard what it expected.
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
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/watchdog.h"
#include "base/diag.h"
#include "pg/backend.h"
#include "pg/gloo_exchange.h"
#include "pg/gloo_peers.h"
#include "pg/gloo_shim.h"
#include "pg/nccl_id.h"
#include "pg/world.h"
#include "store/rdzv.h"
#include "store/store.h"

enum { WORLD_NONE, WORLD_GLOO, WORLD_NCCL };
enum { SC_RUN, SC_REFUSED, SC_RESTART };
/* Descriptors per agent: at node 0, its one connection (store.h: sr__store_link), and while the
   world is created its rank's; in an agents' process, that connection, the eventfds of its two
   asynchronous waits (alive, verdict) and its rank's connection. */
enum { HOST_FDS_PER_AGENT = 1, PROC_FDS_PER_AGENT = 4, SPARE_FDS = 256 };

static int nagents, world = WORLD_NONE, scenario = SC_RUN, per_process = 2048, wd_rounds = 3;
static int port;
static double timeout_s = 60;
static const char *token = "store-sim-token";

/* What every process shares (an anonymous shared mapping made before the forks). */
typedef struct shared {
    pthread_barrier_t phase; /* every agent thread, and the main process that times the phases */
    atomic_int failures, joined;
} shared;
static shared *sh;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fail(int agent, const char *fmt, const char *what) {
    fprintf(stderr, "sim: agent %d: ", agent);
    fprintf(stderr, fmt, what);
    fputc('\n', stderr);
    atomic_fetch_add(&sh->failures, 1);
}

/* Node 0's CPU seconds so far (user + system). */
static double host_cpu_s(pid_t pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
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

/* The replies node 0's store sent so far: its write system calls (it writes one per reply). */
static long long host_writes(pid_t pid) {
    char path[64], line[128];
    long long w = -1;
    snprintf(path, sizeof path, "/proc/%d/io", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "syscw: %lld", &w) == 1) break;
    fclose(f);
    return w;
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

/* What run.c hands sr__rdzv_prepare, for agent `id` (reaching node 0 at one of 127.0.0.2-9, so that
   loopback's ephemeral ports do not run out). */
static sr__rdzv_args rdzv_args(int id, const char *fp, char *addr, size_t alen) {
    static char master_port[16];
    snprintf(addr, alen, "127.0.0.%d", id ? 2 + id % 8 : 1);
    snprintf(master_port, sizeof master_port, "%d", 0);
    return (sr__rdzv_args){.nagents = nagents,
                           .agent_id = id,
                           .need_store = 1,
                           .master_addr = addr,
                           .master_port = port - 1,
                           .port_value = master_port,
                           .port_where = "store_sim",
                           .timeout_s = timeout_s,
                           .launcher_job_id = "",
                           .fingerprint = fp,
                           .ack_timeout_s = timeout_s,
                           .max_restarts = 1,
                           .restart_delay_s = 0};
}

/* ---- node 0's agent (a child process): the supervisor's loop, without workers ---- */

static int run_host(void) {
    char fp[2048], addr[32];
    fingerprint(fp, sizeof fp, 0, "3e-4");
    sr__rdzv_args a = rdzv_args(0, fp, addr, sizeof addr);
    sr__rdzv r;
    sr__diag diag = {0};
    if (sr__rdzv_prepare(&r, &a, &diag) != 0) {
        sr__diag_flush(&diag);
        return 3;
    }
    sr__rdzv_report(&r, &(sr__rdzv_news){.kind = SR__RDZV_DONE, .succeeded = 1}); /* node 0's rank: done */
    static struct pollfd pfds[64];
    while (1) {
        int ms, n = sr__rdzv_pollfds(&r, pfds, 64, &ms);
        poll(pfds, (nfds_t)n, ms);
        sr__rdzv_step(&r, pfds, n);
        if (r.phase == SR__RDZV_RESTART) {
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
           r.phase == SR__RDZV_SUCCEEDED ? "succeeded"
           : r.phase == SR__RDZV_FAILED  ? "failed"
                                         : "other",
           r.failed_elsewhere, r.attempts.s ? r.attempts.s : "");
    fflush(stdout);
    int rc = r.phase == SR__RDZV_SUCCEEDED ? 0 : 1;
    sr__rdzv_free(&r);
    return rc;
}

/* ---- world creation's transport exchange: the backend's own store requests, without its
   connections ---- */

/* A stand-in for rank `from`'s address for rank `to` (Gloo's pair address, of its size), saying
   whose it is, so that each rank checks that it read its peer's address for itself. */
static void sim_address(char *out, size_t len, int from, int to) {
    memset(out, 0, len);
    snprintf(out, len, "sim address %d->%d", from, to);
}

typedef struct sim_peers {
    const int *peers;
    int rank;
    size_t len;
} sim_peers;

/* What the shim does as a peer's address arrives (connecting the pair), here: check it. */
static int sim_arrived(void *arg, int i, const void *addr, size_t len, char *err, size_t errlen) {
    const sim_peers *sp = arg;
    char want[512];
    sim_address(want, sizeof want < sp->len ? sizeof want : sp->len, sp->peers[i], sp->rank);
    if (len == sp->len && !memcmp(addr, want, len < sizeof want ? len : sizeof want)) return 0;
    snprintf(err, errlen, "rank %d read \"%.40s\" (%zu bytes) as rank %d's address for it", sp->rank,
             (const char *)addr, len, sp->peers[i]);
    return -1;
}

/* Every pair of a context at once (an eager group): the mesh exchange. */
static int sim_mesh(const sr__gloo_store *gs, int rank, int size, size_t alen, char *err, size_t errlen) {
    char *mine = calloc((size_t)size, alen), *theirs = calloc((size_t)size, alen);
    int rc = mine && theirs ? 0 : -1;
    if (rc) snprintf(err, errlen, "out of memory for %d addresses", size);
    for (int p = 0, k = 0; p < size && rc == 0; p++)
        if (p != rank) sim_address(mine + (size_t)k++ * alen, alen, rank, p);
    if (rc == 0) rc = sr__gloo_mesh_exchange(gs, rank, size, mine, alen, theirs, err, errlen);
    for (int p = 0, k = 0; p < size && rc == 0; p++)
        if (p != rank)
            rc = sim_arrived(&(sim_peers){&p, rank, alen}, 0, theirs + (size_t)k++ * alen, alen, err, errlen);
    free(mine), free(theirs);
    return rc;
}

/* The pairs to `peers` that a lazy group's operation connects (connected[]: those an earlier one
   did), as the shim's connect() does. */
static int sim_pairs(const sr__gloo_store *gs, int rank, const int *peers, int n, unsigned char *connected, size_t alen,
                     char *err, size_t errlen) {
    int *fresh = calloc((size_t)n + 1, sizeof *fresh), late;
    char *mine = calloc((size_t)n + 1, alen);
    int rc = fresh && mine ? 0 : -1, nfresh = rc ? 0 : sr__gloo_fresh_peers(rank, peers, n, connected, fresh);
    if (rc) snprintf(err, errlen, "out of memory for %d addresses", n);
    for (int i = 0; i < nfresh; i++) sim_address(mine + (size_t)i * alen, alen, rank, fresh[i]);
    if (rc == 0 && nfresh)
        rc = sr__gloo_pair_exchange(gs, rank, fresh, nfresh, mine, alen, sim_arrived, &(sim_peers){fresh, rank, alen},
                                    &late, err, errlen);
    for (int i = 0; i < nfresh && rc == 0; i++) connected[fresh[i]] = 1;
    free(fresh), free(mine);
    return rc;
}

/* Gloo (pg/gloo.c, gloo_shim.cc): an eager group exchanges every pair's address at creation, for
   its main context and the direct path's; a lazy one publishes and reads a pair's when an operation
   first meets the peer: here the first ones a task runs, a barrier and hello's all-reduce (the
   direct path when the group has it, else a ring). */
static void *gloo_stand_in(void *parent, const sr__pg_setup *s, char *err, size_t errlen) {
    (void)parent;
    int rank = s->rank, size = s->size, rc = 0;
    if (size == 1) return (void *)s;
    sr__gloo_plan plan = sr__gloo_plan_for(size);
    size_t alen = sr__gloo_address_len();
    sr__gloo_store main_ctx, direct_ctx;
    if (sr__gloo_store_init(&main_ctx, s->store, s->store_lock, s->prefix, SR__GLOO_MAIN_CONTEXT, s->timeout_s, err,
                            errlen) != 0 ||
        sr__gloo_store_init(&direct_ctx, s->store, s->store_lock, s->prefix, SR__GLOO_DIRECT_CONTEXT, s->timeout_s, err,
                            errlen) != 0)
        return NULL;
    if (plan.eager) {
        rc = sim_mesh(&main_ctx, rank, size, alen, err, errlen);
        if (rc == 0 && plan.direct) rc = sim_mesh(&direct_ctx, rank, size, alen, err, errlen);
        return rc ? NULL : (void *)s;
    }
    unsigned char *connected = calloc((size_t)size, 1), *direct_connected = calloc((size_t)size, 1);
    int *everyone = calloc((size_t)size, sizeof *everyone), barrier[SR__GLOO_MAX_BARRIER_PEERS], ring[2];
    if (!connected || !direct_connected || !everyone) rc = -1, snprintf(err, errlen, "out of memory");
    int nbarrier = sr__gloo_barrier_peers(rank, size, barrier);
    sr__gloo_ring_peers(rank, size, &ring[0], &ring[1]);
    for (int p = 0; p < size && everyone; p++) everyone[p] = p;
    if (rc == 0) rc = sim_pairs(&main_ctx, rank, barrier, nbarrier, connected, alen, err, errlen);
    if (rc == 0)
        rc = plan.direct ? sim_pairs(&direct_ctx, rank, everyone, size, direct_connected, alen, err, errlen)
                         : sim_pairs(&main_ctx, rank, ring, 2, connected, alen, err, errlen);
    free(connected), free(direct_connected), free(everyone);
    return rc ? NULL : (void *)s;
}

/* NCCL (cuda/pg_nccl.c, init_world): rank 0's unique id to every rank, through the call the nccl
   backend makes (the setup's store calls: pg/nccl_id.h). */
static void *nccl_stand_in(void *parent, const sr__pg_setup *s, char *err, size_t errlen) {
    (void)parent;
    char id[SR__NCCL_ID_BYTES], want[SR__NCCL_ID_BYTES] = {0};
    snprintf(want, sizeof want, "sim ncclUniqueId of rank 0");
    if (s->rank == 0) memcpy(id, want, sizeof id);
    if (s->store_ops->nccl_id(s, id, sizeof id, err, errlen) != 0) return NULL;
    if (memcmp(id, want, sizeof id)) return snprintf(err, errlen, "rank %d read another unique id", s->rank), NULL;
    return (void *)s;
}

static void stand_in_destroy(void *impl) { (void)impl; }

static const sr__pg_backend_ops gloo_ops = {.name = "gloo", .create = gloo_stand_in, .destroy = stand_in_destroy};
static const sr__pg_backend_ops nccl_ops = {.name = "nccl", .create = nccl_stand_in, .destroy = stand_in_destroy};

static void world_rank(int rank, int attempt) {
    char id[64], err[1024];
    snprintf(id, sizeof id, "simhost%d-boot-0123456789abcdef", rank); /* one host per agent */
    sr__pg_world_args a = {.store_host = "127.0.0.1",
                           .store_port = port,
                           .token = token,
                           .rank = rank,
                           .size = nagents,
                           .backend = world == WORLD_NCCL ? "nccl" : "gloo",
                           .hostname = "127.0.0.1",
                           .timeout_s = timeout_s,
                           .attempt = attempt,
                           .transport = "tcp"};
    if (sr__pg_rehearse_world(&a, world == WORLD_NCCL ? &nccl_ops : &gloo_ops, id, err, sizeof err) != 0)
        fail(rank, "world: %s", err);
}

/* The hang watchdog's exchange, as every agent's thread makes it: its record out, node 0's in. */
static void watchdog_rounds(int id, int attempt, sr__store_link *link) {
    char rec[256];
    sr__store *c = NULL;
    for (int k = 0; k < wd_rounds; k++) {
        /* a record as format_record writes it: a header and one line per rank */
        snprintf(rec, sizeof rec, "wd %d %d simhost%d\n%d %d R 120 %d 0 2 %d 0 0 -1 1 0 100 %d 2.5 1000 0.1 0 0 0 0\n",
                 k + 1, id, id, id, 1000 + id, 10 + k, k, k);
        char *node0 = NULL;
        c = sr__watchdog_exchange(c, link, attempt, id, rec, &node0);
        if (!c) fail(id, "%s", "watchdog exchange failed");
        free(node0);
        if (!c) break;
    }
    sr__store_close(c);
}

/* ---- the other agents (threads) ---- */

/* Follows the rendezvous as the supervisor does (poll, step) until `until` holds or the timeout. */
static int follow(sr__rdzv *r, int (*until)(const sr__rdzv *r)) {
    for (double t0 = now_s(); now_s() - t0 < timeout_s;) {
        if (until(r)) return 1;
        struct pollfd pfds[4];
        int ms, n = sr__rdzv_pollfds(r, pfds, 4, &ms);
        poll(pfds, (nfds_t)n, ms < 0 || ms > 1000 ? 1000 : ms);
        sr__rdzv_step(r, pfds, n);
    }
    return until(r);
}
static int verdict_known(const sr__rdzv *r) { return sr__rdzv_view_now(r).verdict_known; }
static int decided(const sr__rdzv *r) { return r->phase != SR__RDZV_RUNNING; }
static int next_known(const sr__rdzv *r) { return sr__rdzv_view_now(r).next_attempt != 0; }

/* sr__rdzv_prepare as the agent calls it; 0 accepted, -1 refused or failed (why in why[]). */
static int join(sr__rdzv *r, int id, const char *fp, char *why, size_t wlen) {
    char addr[32];
    sr__rdzv_args a = rdzv_args(id, fp, addr, sizeof addr);
    sr__diag diag = {0};
    int rc = sr__rdzv_prepare(r, &a, &diag);
    why[0] = 0;
    if (rc != 0 && diag.kept) snprintf(why, wlen, "%s", diag.msgs[0]);
    sr__diag_clear(&diag);
    if (rc != 0) sr__rdzv_free(r);
    return rc == 0 ? 0 : -1;
}

static void done_and_verdict(sr__rdzv *r, int id, sr__rdzv_phase want_phase) {
    sr__rdzv_report(r, &(sr__rdzv_news){.kind = SR__RDZV_DONE,
                                        .results = "{\"loss\":1.0}",
                                        .len = 12,
                                        .succeeded = want_phase == SR__RDZV_SUCCEEDED});
    if (!follow(r, verdict_known)) return fail(id, "%s", "no verdict");
    if (r->phase != want_phase) fail(id, "wrong verdict: %s", r->failed_elsewhere);
    sr__rdzv_report(r, &(sr__rdzv_news){.kind = SR__RDZV_READ});
}

static int lost_id(void) { return nagents - 2; }
static int late_id(void) { return nagents - 1; }
static void phase_wait(void) { pthread_barrier_wait(&sh->phase); }

static void *agent_main(void *arg) {
    int id = (int)(long)arg;
    char fp[2048], why[1200];
    int refused_by_job = scenario == SC_REFUSED && id == nagents - 1;
    int late = scenario == SC_RESTART && id == late_id();
    int lost = scenario == SC_RESTART && id == lost_id();
    fingerprint(fp, sizeof fp, id, refused_by_job ? "1e-3" : "3e-4");
    sr__rdzv r;
    memset(&r, 0, sizeof r);
    int joined = 0;

    if (id > 0) {
        /* join (the agent with another job comes once every other agent is in, so that they all
           hear the verdict it causes) */
        if (refused_by_job)
            while (atomic_load(&sh->joined) < nagents - 2) usleep(10000);
        if (!late) {
            joined = join(&r, id, fp, why, sizeof why) == 0;
            if (joined) atomic_fetch_add(&sh->joined, 1);
            else if (!refused_by_job) fail(id, "not accepted: %s", why);
        }
        if (refused_by_job && (joined || !strstr(why, "lr is \"3e-4\" on node 0") || !strstr(why, "\"1e-3\" on node")))
            fail(id, "expected a refusal naming lr, got: %s", joined ? "accepted" : why);
        else if (refused_by_job) printf("sim: agent %d refused: %s\n", id, why);
    }
    phase_wait(); /* join */
    if (world != WORLD_NONE && scenario == SC_RUN) world_rank(id, 0);
    phase_wait(); /* world */
    if (scenario == SC_RUN && id > 0 && joined) watchdog_rounds(id, 0, r.link);
    phase_wait();  /* watchdog */
    if (id == 0) { /* node 0's rank: node 0's agent is the host process */
        if (scenario == SC_RESTART) phase_wait();
        return NULL;
    }
    if (scenario != SC_RESTART) {
        if (joined) done_and_verdict(&r, id, scenario == SC_RUN ? SR__RDZV_SUCCEEDED : SR__RDZV_FAILED);
        if (joined && scenario == SC_REFUSED && !strstr(r.failed_elsewhere, "lr is \"3e-4\" on node 0"))
            fail(id, "the verdict does not name lr: %s", r.failed_elsewhere);
        sr__rdzv_free(&r);
        return NULL;
    }

    /* SC_RESTART: the lost agent goes away; the others hear the restart, stop and wait for the
       start; the lost one comes back, the late one joins for the first time, a second copy of
       agent 1 is refused; attempt 1 runs and succeeds */
    if (late || lost) {
        if (lost) {
            usleep(300000); /* killed once node 0 surely saw its "alive" wait: every connection closes */
            sr__rdzv_free(&r);
        }
        phase_wait(); /* the others heard the restart verdict */
        if (join(&r, id, fp, why, sizeof why) != 0 || r.attempt != 1) fail(id, "not accepted into attempt 1: %s", why);
        else printf("sim: %s agent %d accepted into attempt 1\n", late ? "late" : "lost", id);
    } else if (joined) {
        char want[128];
        snprintf(want, sizeof want, "node %d's shardrun (agent %d) went away", lost_id(), lost_id());
        if (!follow(&r, decided) || r.phase != SR__RDZV_RESTART || !strstr(r.failed_elsewhere, want))
            fail(id, "expected a restart verdict naming the lost agent, got: %s", r.failed_elsewhere);
        if (sr__rdzv_report(&r, &(sr__rdzv_news){.kind = SR__RDZV_STOPPED}) != 0) fail(id, "%s", "stop not reported");
        phase_wait();
        if (id == 1) { /* a second copy of agent 1, started by mistake */
            sr__rdzv dup;
            if (join(&dup, 1, fp, why, sizeof why) == 0 ||
                !strstr(why, "node 1's shardrun (agent 1) is already part of this run"))
                fail(1, "expected the second copy refused, got: %s", why);
            else printf("sim: second copy of agent 1 refused: %s\n", why);
        }
        if (!follow(&r, next_known) || sr__rdzv_view_now(&r).next_attempt < 0)
            fail(id, "no start of attempt 1: %s", r.failed_elsewhere);
        sr__rdzv_report(&r, &(sr__rdzv_news){.kind = SR__RDZV_NEXT});
    } else {
        phase_wait();
    }
    if (r.enabled) done_and_verdict(&r, id, SR__RDZV_SUCCEEDED);
    sr__rdzv_free(&r);
    return NULL;
}

/* One process of agents: threads for agents [first, last). */
static int run_agents(int first, int last) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 << 10);
    int n = last - first;
    pthread_t *th = calloc((size_t)n, sizeof *th);
    if (!th) return 1;
    for (int i = 0; i < n; i++)
        if (pthread_create(&th[i], &attr, agent_main, (void *)(long)(first + i)) != 0) {
            fprintf(stderr, "store_sim: cannot start thread %d\n", first + i);
            _exit(1); /* the barrier would never fill */
        }
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    free(th);
    fflush(stdout);
    return 0;
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

static rlim_t raise_fd_limit(void) {
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
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
        } else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) timeout_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--per-process") && i + 1 < argc) per_process = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--watchdog-rounds") && i + 1 < argc) wd_rounds = atoi(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: %s --agents N [--world none|gloo|nccl] [--scenario run|refused|restart] [--timeout S] "
                    "[--per-process K] [--watchdog-rounds R]\n",
                    argv[0]);
            return 2;
        }
    }
    if (nagents < 4 || per_process < 1) {
        fprintf(stderr, "store_sim: --agents must be at least 4 (got %d), --per-process at least 1\n", nagents);
        return 2;
    }
    /* node 0's store holds every agent's connections in one process; the agents' processes each
       hold theirs: both must fit under the descriptor limit before anything starts */
    rlim_t lim = raise_fd_limit();
    int host_per_agent = world == WORLD_NONE ? HOST_FDS_PER_AGENT : HOST_FDS_PER_AGENT + 1;
    long long host_need = (long long)nagents * host_per_agent + SPARE_FDS;
    long long proc_need = (long long)(per_process < nagents ? per_process : nagents) * PROC_FDS_PER_AGENT + SPARE_FDS;
    if ((rlim_t)host_need > lim || (rlim_t)proc_need > lim) {
        fprintf(stderr,
                "store_sim: %d agents need %lld descriptors in node 0's process (per agent: its connection%s) and "
                "%lld in each agents' process (--per-process %d: %d per agent); the limit is %lu (ulimit -Hn; "
                "raising it takes CAP_SYS_RESOURCE): at most %lld agents here%s\n",
                nagents, host_need, world == WORLD_NONE ? "" : ", and its rank's while the world is created", proc_need,
                per_process, PROC_FDS_PER_AGENT, (unsigned long)lim, ((long long)lim - SPARE_FDS) / host_per_agent,
                world == WORLD_NONE ? "" : " with --world");
        return 2;
    }
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) return perror("store_sim: mmap"), 1;
    pthread_barrierattr_t ba;
    pthread_barrierattr_init(&ba);
    pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&sh->phase, &ba, (unsigned)nagents + 1); /* agents 0..N-1, and this process */
    port = pick_port();
    signal(SIGPIPE, SIG_IGN);
    setenv("SHARDRUN_RDZV_TOKEN", token, 1);
    fflush(stdout);
    pid_t host = fork();
    if (host == 0) _exit(run_host());
    int nproc = (nagents + per_process - 1) / per_process;
    printf("sim: %d agents in %d process%s, world %s, scenario %s, fd limit %lu\n", nagents, nproc,
           nproc == 1 ? "" : "es",
           world == WORLD_GLOO   ? "gloo"
           : world == WORLD_NCCL ? "nccl"
                                 : "none",
           scenario == SC_REFUSED   ? "refused"
           : scenario == SC_RESTART ? "restart"
                                    : "run",
           (unsigned long)lim);
    fflush(stdout);
    pid_t *procs = calloc((size_t)nproc, sizeof *procs);
    for (int p = 0; p < nproc; p++) {
        int first = p * per_process, last = first + per_process < nagents ? first + per_process : nagents;
        if ((procs[p] = fork()) == 0) _exit(run_agents(first, last));
    }
    const char *names[] = {"join", "world", "watchdog", scenario == SC_RESTART ? "restart" : "verdict",
                           "attempt 1 + verdict"};
    int nphases = scenario == SC_RESTART ? 4 : 3;
    double t0 = now_s(), tp = t0, cp = host_cpu_s(host);
    long long wp = host_writes(host), w0 = wp;
    printf("%-20s %9s %14s %16s\n", "phase", "wall s", "node 0 cpu s", "node 0 requests");
    for (int p = 0; p <= nphases; p++) {
        if (p < nphases) {
            pthread_barrier_wait(&sh->phase);
        } else { /* every agent gone, then node 0 (left unreaped, so that its counters can be read) */
            for (int k = 0; k < nproc; k++) waitpid(procs[k], NULL, 0);
            siginfo_t info;
            waitid(P_PID, (id_t)host, &info, WEXITED | WNOWAIT);
        }
        double t = now_s(), c = host_cpu_s(host);
        long long w = host_writes(host);
        printf("%-20s %9.3f %14.3f %16lld\n", names[p], t - tp, c - cp, w - wp);
        fflush(stdout);
        tp = t, cp = c, wp = w;
    }
    int status = 0;
    double cpu_total = cp;
    long long writes_total = wp - w0;
    waitpid(host, &status, 0);
    printf("total: %d agents, wall %.3f s, node 0 cpu %.3f s, node 0 requests %lld, node 0 exit %d\n", nagents,
           now_s() - t0, cpu_total, writes_total, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    int want_exit = scenario == SC_REFUSED ? 1 : 0;
    int ok = !atomic_load(&sh->failures) && WIFEXITED(status) && WEXITSTATUS(status) == want_exit;
    printf("sim: %s (%d agent failures)\n", ok ? "ok" : "FAILED", atomic_load(&sh->failures));
    free(procs);
    return ok ? 0 : 1;
}
