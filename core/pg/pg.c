/* The process-group frontend: argument checks, zero-length and single-rank shortcuts, one
   communication thread per group running operations in submission order (a synchronous call on
   an idle group, or a caller waiting for an operation that has not started, runs it in its own
   thread instead), timeouts turned into messages that name the operation and the ranks that did
   not arrive, and sub-groups. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "pg/backend.h"
#include "pg/fault.h"
#include "pg/hier.h"
#include "pg/host_table.h"
#include "pg/nccl_id.h"
#include "pg/shm.h"
#include "pg/world.h"
#include "base/watch.h"
#include "device/cuda_lib.h"

typedef enum { OP_ALL_GATHER, OP_REDUCE_SCATTER, OP_ALL_REDUCE, OP_BROADCAST, OP_BARRIER } op_kind;
static const char *const op_names[] = {"all_gather", "reduce_scatter", "all_reduce", "broadcast", "barrier"};

struct sr_work {
    op_kind kind;
    const void *send;
    void *recv;
    size_t count;
    sr_dtype dt;
    sr_redop op;
    int root;
    unsigned long seq;
    int done, rc;
    sr_pg *pg;
    struct sr_work *next;
};

/* [torch] transport: tcp, shm (an error when shm fails), auto (shm or hier where ranks share a
   host, Gloo if shared memory cannot be set up there) */
enum { SHM_OFF, SHM_ON, SHM_AUTO };
/* what auto means (docs/tasks.md, process groups) */
#define SHM_BY_DEFAULT SHM_AUTO

/* What every group of a process shares: the store connection and where Gloo listens. */
typedef struct pg_shared {
    sr__store *store;
    pthread_mutex_t store_lock;
    char *hostname;
    char *iface;
    int local_rank;
    double timeout_s;
    const sr__pg_backend_ops *ops; /* the configured backend: gloo or nccl */
    int shm;                       /* gloo: whether groups whose ranks share a host use the shm transport */
    unsigned long long run_hash;
    int attempt;
    char root[32]; /* every store key of this process's groups starts with it: "pg/" in a job's first
                      attempt, "pg@N/" after restart N, so no rank meets one of an earlier attempt */
} pg_shared;

struct sr_pg {
    char name[200];
    int rank, size;
    pg_shared *shared;
    const sr__pg_backend_ops *ops; /* this group's: shared->ops, shm or hier */
    int *hosts;                    /* per rank of the group: an index naming its host (world rank of its first rank) */
    void *impl;
    unsigned long seq, children;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;      /* the communication thread waits here for work */
    pthread_cond_t done_cond; /* callers wait here for their operation */
    sr_work *head, *tail;
    int busy; /* an operation runs (the head, or an inline one), in whichever thread */
    int failed;
    char error[1024];
};

static sr_pg *world_pg;

sr_pg *sr__pg_world(void) { return world_pg; }

int sr_pg_rank(const sr_pg *pg) { return pg->rank; }
int sr_pg_size(const sr_pg *pg) { return pg->size; }
const char *sr_pg_backend(const sr_pg *pg) { return pg->shared->ops->name; }
const char *sr_pg_transport(const sr_pg *pg) { return pg->ops == &sr__gloo_backend ? "tcp" : pg->ops->name; }
const char *sr_pg_name(const sr_pg *pg) { return pg->name; }
const char *sr_pg_error(const sr_pg *pg) { return pg->error; }

static void fail(sr_pg *pg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(sr_pg *pg, const char *fmt, ...) {
    if (pg->failed) return; /* keep the first error */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pg->error, sizeof pg->error, fmt, ap);
    va_end(ap);
    pg->failed = 1;
}

/* Sets <prefix><rank> and waits up to timeout_s for <prefix><r> of every rank r of the group.
   Returns 0 when all are there, 1 on a timeout (the ranks that are not, as "2, 3", in ranks), -1
   on a store error.  The store's work stays linear in the group's size: each rank also counts
   itself in <prefix>count, the last one to come sets <prefix>all, and the ranks wait on that one
   key (a wait on every rank's key, from every rank, would file size^2 waits); only after a timeout
   are the ranks' own keys checked, to name the missing ones.  make_hosts: the world's "arrived"
   meeting, whose last rank also sets the host table (pg/host_table.h) before <prefix>all. */
static int announce_and_wait(pg_shared *sh, const char *prefix, int rank, int size, double timeout_s, int make_hosts,
                             char *ranks, size_t len) {
    char key[300], count[300], all[300];
    snprintf(key, sizeof key, "%s%d", prefix, rank);
    snprintf(count, sizeof count, "%scount", prefix);
    snprintf(all, sizeof all, "%sall", prefix);
    char missing[4096] = "";
    const char *all_key = all;
    pthread_mutex_lock(&sh->store_lock);
    int rc = sr__store_set(sh->store, key, "1", 1);
    long long n = rc == 0 ? sr__store_add(sh->store, count, 1) : -1;
    if (n < 0) rc = -1;
    if (rc == 0 && n == size && make_hosts) rc = sr__host_table_publish(sh->store, sh->root, rank, size);
    if (rc == 0 && n == size) rc = sr__store_set(sh->store, all, "1", 1);
    if (rc == 0) rc = sr__store_wait(sh->store, &all_key, 1, timeout_s, missing, sizeof missing);
    if (rc == 1) { /* which ranks never came: their keys, checked once, without waiting */
        const char **keys = sr__calloc((size_t)size, sizeof *keys);
        char **owned = sr__calloc((size_t)size, sizeof *owned);
        int ok = keys && owned;
        for (int r = 0; r < size && ok; r++) ok = (keys[r] = owned[r] = sr__fmt("%s%d", prefix, r)) != NULL;
        rc = ok ? sr__store_wait(sh->store, keys, size, 0, missing, sizeof missing) : -1;
        if (rc == 0) rc = 1, missing[0] = 0; /* they all came just now: still a timeout */
        for (int r = 0; r < size && owned; r++) free(owned[r]);
        free(owned);
        free(keys);
    }
    pthread_mutex_unlock(&sh->store_lock);
    /* "pg/world/arrived/2,pg/world/arrived/3" -> "2, 3" */
    size_t used = 0, pl = strlen(prefix);
    ranks[0] = 0;
    for (char *tok = strtok(missing, ","); rc == 1 && tok && used < len; tok = strtok(NULL, ","))
        used += (size_t)snprintf(ranks + used, len - used, "%s%s", used ? ", " : "", strlen(tok) > pl ? tok + pl : tok);
    return rc;
}

/* After a timeout: every rank that timed out in operation `seq` says so in the store; the ranks
   that do not say so within a second did not arrive. */
static void name_missing(sr_pg *pg, const sr_work *w, int stuck, char *out, size_t len) {
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s%s/op%lu/waiting/", pg->shared->root, pg->name, w->seq);
    int rc = announce_and_wait(pg->shared, prefix, pg->rank, pg->size, 1.0, 0, out, len);
    /* everyone is waiting (or the store is gone): name the peer this rank waited for */
    if ((rc != 1 || !out[0]) && stuck >= 0) snprintf(out, len, "%d", stuck);
    else if (rc != 1 || !out[0]) snprintf(out, len, "(unknown)");
}

static int run_op(sr_pg *pg, sr_work *w) {
    const sr__pg_backend_ops *ops = pg->ops;
    char err[768] = "";
    int stuck = -1, rc;
    sr__watch_collective_begin((int)w->kind); /* op_kind's order is sr__watch_coll_names' */
    if (sr__pg_fault() == SR__PG_FAULT_STOP_IN_COLLECTIVE && pg->rank == 1 && w->seq == 40) raise(SIGSTOP);
    switch (w->kind) {
    case OP_ALL_GATHER:
        rc = ops->all_gather(pg->impl, w->send, w->recv, w->count, w->dt, &stuck, err, sizeof err);
        break;
    case OP_REDUCE_SCATTER:
        rc = ops->reduce_scatter(pg->impl, w->send, w->recv, w->count, w->dt, w->op, &stuck, err, sizeof err);
        break;
    case OP_ALL_REDUCE: rc = ops->all_reduce(pg->impl, w->recv, w->count, w->dt, w->op, &stuck, err, sizeof err); break;
    case OP_BROADCAST: rc = ops->broadcast(pg->impl, w->recv, w->count, w->dt, w->root, &stuck, err, sizeof err); break;
    default: rc = ops->barrier(pg->impl, &stuck, err, sizeof err); break;
    }
    if (rc == 0) {
        sr__watch_collective_end();
        return 0;
    }
    char what[300];
    snprintf(what, sizeof what, "%s #%lu (%zu x %s) on group %s (rank %d of %d)", op_names[w->kind], w->seq, w->count,
             sr_dtype_name(w->dt), pg->name, pg->rank, pg->size);
    if (rc == SR__PG_TIMEOUT) {
        char missing[512];
        name_missing(pg, w, stuck, missing, sizeof missing);
        fail(pg, "%s: rank%s %s did not arrive within %gs (%s)", what, strchr(missing, ',') ? "s" : "", missing,
             pg->shared->timeout_s, err);
    } else {
        fail(pg, "%s failed: %s", what, err);
    }
    sr__watch_collective_end(); /* only now: naming the missing ranks goes through the store, which can hang too */
    return -1;
}

/* Runs the queue's head in the calling thread, which holds pg->lock (released meanwhile). */
static void run_head(sr_pg *pg) {
    sr_work *w = pg->head;
    pg->busy = 1;
    pthread_mutex_unlock(&pg->lock);
    int rc = pg->failed ? -1 : run_op(pg, w);
    pthread_mutex_lock(&pg->lock);
    pg->head = w->next;
    if (!pg->head) pg->tail = NULL;
    w->rc = rc;
    w->done = 1;
    pg->busy = 0;
    if (pg->head) pthread_cond_signal(&pg->cond); /* the rest is the communication thread's */
    pthread_cond_broadcast(&pg->done_cond);
}

static void *comm_thread(void *arg) {
    sr_pg *pg = arg;
    pthread_mutex_lock(&pg->lock);
    while (1) {
        while (!pg->head || pg->busy) pthread_cond_wait(&pg->cond, &pg->lock);
        run_head(pg);
    }
    return NULL;
}

/* A waiter whose operation (or one queued before it) has not started yet runs it itself, rather
   than waking the communication thread and sleeping until it is done: when ranks outnumber
   cores, each of those wake-ups can cost a scheduler slice, and small operations are mostly
   wake-ups.  Operations still run one at a time, in submission order. */
int sr_work_wait(sr_work *w) {
    if (!w) return -1;
    sr_pg *pg = w->pg;
    pthread_mutex_lock(&pg->lock);
    while (!w->done) {
        if (pg->head && !pg->busy) run_head(pg);
        else pthread_cond_wait(&pg->done_cond, &pg->lock);
    }
    pthread_mutex_unlock(&pg->lock);
    int rc = w->rc;
    free(w);
    return rc;
}

static int submit(sr_pg *pg, sr_work *tmpl, sr_work **out) {
    if (out) *out = NULL;
    if (pg->failed) return -1;
    sr_work *w = sr__malloc(sizeof *w);
    if (!w) {
        fail(pg, "out of memory for a collective's record (%zu bytes)", sizeof *w);
        return -1;
    }
    *w = *tmpl;
    w->pg = pg;
    w->seq = ++pg->seq;
    w->next = NULL;
    /* nothing to move: done at once (Gloo cannot take zero-length buffers) */
    w->done = w->count == 0 && w->kind != OP_BARRIER;
    w->rc = 0;
    if (!w->done && !out) {
        /* synchronous and nothing queued: run here, sparing two thread hand-offs, which cost
           milliseconds when ranks outnumber cores */
        pthread_mutex_lock(&pg->lock);
        int idle = !pg->head && !pg->busy;
        if (idle) pg->busy = 1;
        pthread_mutex_unlock(&pg->lock);
        if (idle) {
            w->rc = pg->failed ? -1 : run_op(pg, w);
            w->done = 1;
            pthread_mutex_lock(&pg->lock);
            pg->busy = 0;
            if (pg->head) pthread_cond_signal(&pg->cond); /* queued meanwhile */
            pthread_cond_broadcast(&pg->done_cond);
            pthread_mutex_unlock(&pg->lock);
        }
    }
    if (!w->done) {
        pthread_mutex_lock(&pg->lock);
        if (pg->tail) pg->tail->next = w;
        else pg->head = w;
        pg->tail = w;
        if (!pg->busy) pthread_cond_signal(&pg->cond);
        pthread_mutex_unlock(&pg->lock);
    }
    if (out) {
        *out = w;
        return 0;
    }
    return sr_work_wait(w);
}

static int check_args(sr_pg *pg, const char *what, sr_dtype dt, sr_redop op, int reducing) {
    if (!pg) return -1;
    if ((unsigned)dt > SR_INT64) {
        fail(pg, "%s: unknown dtype %d", what, (int)dt);
        return -1;
    }
    if (reducing && ((unsigned)op > SR_MAX || (op == SR_AVG && (dt == SR_INT32 || dt == SR_INT64)))) {
        fail(pg, "%s: %s", what, (unsigned)op > SR_MAX ? "unknown reduction" : "avg needs a floating-point dtype");
        return -1;
    }
    return 0;
}

int sr_pg_all_gather(sr_pg *pg, const void *send, void *recv, size_t count, sr_dtype dt, sr_work **work) {
    if (check_args(pg, "all_gather", dt, SR_SUM, 0)) return -1;
    sr_work w = {.kind = OP_ALL_GATHER, .send = send, .recv = recv, .count = count, .dt = dt};
    return submit(pg, &w, work);
}

int sr_pg_reduce_scatter(sr_pg *pg, const void *send, void *recv, size_t count, sr_dtype dt, sr_redop op,
                         sr_work **work) {
    if (check_args(pg, "reduce_scatter", dt, op, 1)) return -1;
    sr_work w = {.kind = OP_REDUCE_SCATTER, .send = send, .recv = recv, .count = count, .dt = dt, .op = op};
    return submit(pg, &w, work);
}

int sr_pg_all_reduce(sr_pg *pg, void *buf, size_t count, sr_dtype dt, sr_redop op, sr_work **work) {
    if (check_args(pg, "all_reduce", dt, op, 1)) return -1;
    sr_work w = {.kind = OP_ALL_REDUCE, .recv = buf, .count = count, .dt = dt, .op = op};
    return submit(pg, &w, work);
}

int sr_pg_broadcast(sr_pg *pg, void *buf, size_t count, sr_dtype dt, int root, sr_work **work) {
    if (check_args(pg, "broadcast", dt, SR_SUM, 0)) return -1;
    if (root < 0 || root >= pg->size) {
        fail(pg, "broadcast: root %d is not a rank of group %s (0..%d)", root, pg->name, pg->size - 1);
        return -1;
    }
    sr_work w = {.kind = OP_BROADCAST, .recv = buf, .count = count, .dt = dt, .root = root};
    return submit(pg, &w, work);
}

int sr_pg_barrier(sr_pg *pg, sr_work **work) {
    if (!pg) return -1;
    sr_work w = {.kind = OP_BARRIER, .dt = SR_FLOAT32};
    return submit(pg, &w, work);
}

/* Every member announces itself at `stage`; a timeout names the ranks that never came.
   make_hosts: the world's "arrived" meeting, which also makes the host table. */
static int meet(pg_shared *sh, const char *name, const char *stage, const char *display, int rank, int size,
                int make_hosts, char *err, size_t errlen) {
    char prefix[300], ranks[2048];
    snprintf(prefix, sizeof prefix, "%s%s/", name, stage);
    int rc = announce_and_wait(sh, prefix, rank, size, sh->timeout_s, make_hosts, ranks, sizeof ranks);
    if (rc == 1)
        snprintf(err, errlen,
                 "process group %s: rank%s %s did not arrive within %gs (this is rank %d of %d); "
                 "check that every node's shardrun was started with the same --nnodes, --master-addr and "
                 "rendezvous port, or raise [torch] timeout",
                 display, strchr(ranks, ',') ? "s" : "", ranks, sh->timeout_s, rank, size);
    else if (rc != 0) snprintf(err, errlen, "process group %s: store error: %s", display, sr__store_error(sh->store));
    return rc == 0 ? 0 : -1;
}

/* Every rank, after the world's "arrived" meeting: the host table, in one request (rank r's
   index is the lowest world rank with r's host identity).  NULL with err. */
static int *world_hosts(pg_shared *sh, const char *display, int size, char *err, size_t errlen) {
    int *hosts = sr__malloc((size_t)size * sizeof *hosts);
    if (!hosts) {
        snprintf(err, errlen, "process group %s: out of memory for the hosts of %d ranks", display, size);
        return NULL;
    }
    char why[900];
    pthread_mutex_lock(&sh->store_lock);
    int rc = sr__host_table_read(sh->store, sh->root, size, hosts, why, sizeof why);
    pthread_mutex_unlock(&sh->store_lock);
    if (rc == 0) return hosts;
    snprintf(err, errlen, "process group %s: %s", display, why);
    free(hosts);
    return NULL;
}

/* name: the group's store prefix ("pg/world/"); display: how messages call it ("world");
   hosts: the host index of each member (NULL for the world: read from the store; the group owns
   it).  With the shm transport on, a group on one host takes shm, one that spans hosts with
   several members on one of them takes hier, any other Gloo. */
/* What a group is made of once its members met through the store: its backend, the backend's
   state and the host of each member. */
typedef struct group_parts {
    const sr__pg_backend_ops *ops;
    void *impl;
    int *hosts;
} group_parts;

/* The store's part of a group's creation: the members meet ("arrived"), the world reads its hosts,
   the backend is chosen and created (its own exchange through the store), the members meet again
   ("ready").  0 with *out filled, or -1 with err (hosts freed). */
static int meet_and_connect(pg_shared *sh, sr_pg *parent, const char *name, const char *display, int rank, int size,
                            int color, int key, int *hosts, group_parts *out, char *err, size_t errlen) {
    int world = !hosts;
    if (meet(sh, name, "arrived", display, rank, size, world, err, errlen) != 0) {
        free(hosts);
        return -1;
    }
    if (world && !(hosts = world_hosts(sh, display, size, err, errlen))) return -1;
    /* one host: shm; several, with two ranks or more on one of them: shm inside each, Gloo between */
    int one_host = 1, shared = 0;
    for (int r = 1; r < size; r++) one_host &= hosts[r] == hosts[0];
    if (world) /* the world's table names a host by its lowest rank: a rank named otherwise shares one */
        for (int r = 0; r < size && !shared; r++) shared = hosts[r] != r;
    else
        for (int r = 0; r < size && !shared; r++)
            for (int q = 0; q < r && !shared; q++) shared = hosts[q] == hosts[r];
    const sr__pg_backend_ops *ops = !sh->shm   ? sh->ops
                                    : one_host ? &sr__shm_backend
                                    : shared   ? &sr__hier_backend
                                               : sh->ops;
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s%s/", name, ops->name);
    static const sr__pg_store_ops store_ops = {sr__store_set,   sr__store_get,   sr__store_wait, sr__store_add,
                                               sr__store_fetch, sr__store_error, sr__pg_nccl_id};
    sr__pg_setup setup = {
        sh->store,    &store_ops, &sh->store_lock, prefix,        rank,         size,        color, key,
        sh->hostname, sh->iface,  sh->local_rank,  sh->timeout_s, sh->run_hash, sh->attempt, hosts};
    char berr[768] = "";
    /* a backend derives a child from its own kind of parent only */
    void *impl = ops->create(parent && parent->ops == ops ? parent->impl : NULL, &setup, berr, sizeof berr);
    if (!impl && ops != sh->ops && sh->shm == SHM_AUTO && strncmp(berr, SR__SHM_LATE, strlen(SR__SHM_LATE)) &&
        strncmp(berr, SR__SHM_OOM, strlen(SR__SHM_OOM))) {
        /* shm failed on every rank alike (its creation shares each step's outcome): Gloo instead */
        ops = sh->ops;
        snprintf(prefix, sizeof prefix, "%s%s/", name, ops->name);
        berr[0] = 0;
        impl = ops->create(parent && parent->ops == ops ? parent->impl : NULL, &setup, berr, sizeof berr);
    }
    if (!impl) {
        snprintf(err, errlen, "process group %s: %s backend: %s", display, ops->name, berr);
        free(hosts);
        return -1;
    }
    /* like torch's store-based barrier after init: nobody uses (or leaves) the group before every
       member finished connecting, or a fast rank's exit breaks a slow rank's setup */
    if (meet(sh, name, "ready", display, rank, size, 0, err, errlen) != 0) {
        ops->destroy(impl);
        free(hosts);
        return -1;
    }
    *out = (group_parts){ops, impl, hosts};
    return 0;
}

static sr_pg *create_group(pg_shared *sh, sr_pg *parent, const char *name, const char *display, int rank, int size,
                           int color, int key, int *hosts, char *err, size_t errlen) {
    group_parts g;
    if (meet_and_connect(sh, parent, name, display, rank, size, color, key, hosts, &g, err, errlen) != 0) return NULL;
    const sr__pg_backend_ops *ops = g.ops;
    void *impl = g.impl;
    hosts = g.hosts;
    sr_pg *pg = sr__calloc(1, sizeof *pg);
    if (!pg) {
        snprintf(err, errlen, "process group %s: out of memory", display);
        ops->destroy(impl);
        free(hosts);
        return NULL;
    }
    snprintf(pg->name, sizeof pg->name, "%s", display);
    pg->rank = rank;
    pg->size = size;
    pg->shared = sh;
    pg->ops = ops;
    pg->hosts = hosts;
    pg->impl = impl;
    pthread_mutex_init(&pg->lock, NULL);
    pthread_cond_init(&pg->cond, NULL);
    pthread_cond_init(&pg->done_cond, NULL);
    pthread_create(&pg->thread, NULL, comm_thread, pg);
    pthread_detach(pg->thread);
    return pg;
}

static const sr__pg_backend_ops *load_nccl(char *err, size_t errlen) {
    char why[4500];
    const sr__pg_backend_ops *ops = sr__cuda_nccl_backend(why, sizeof why);
    if (!ops) snprintf(err, errlen, "the nccl backend needs %s; or use backend = gloo", why);
    return ops;
}

/* What every group of this process will share, connected to the store, with this rank's host
   identity published (id: NULL for this machine's); NULL with err. */
static pg_shared *open_world(const sr__pg_world_args *a, const sr__pg_backend_ops *ops, const char *id_override,
                             char *err, size_t errlen) {
    char serr[512];
    sr__store *store = sr__store_connect(a->store_host, a->store_port, a->token, a->timeout_s, serr, sizeof serr);
    if (!store) {
        snprintf(err, errlen, "process group world: %s", serr);
        return NULL;
    }
    sr__pg_fault_set(a->fault);
    pg_shared *sh = sr__calloc(1, sizeof *sh);
    const char *iface = a->iface;
    char *hostname = sh ? sr__strdup(a->hostname) : NULL, *ifcopy = hostname && iface ? sr__strdup(iface) : NULL;
    if (!hostname || (iface && !ifcopy)) {
        snprintf(err, errlen, "process group world: out of memory");
        free(hostname), free(ifcopy), free(sh);
        sr__store_close(store);
        return NULL;
    }
    sh->store = store;
    pthread_mutex_init(&sh->store_lock, NULL);
    sh->hostname = hostname;
    sh->iface = ifcopy;
    sh->local_rank = a->local_rank;
    sh->timeout_s = a->timeout_s;
    sh->ops = ops;
    sh->attempt = a->attempt;
    sh->run_hash = sr__shm_run_hash(a->token);
    const char *tr = a->transport ? a->transport : "auto";
    sh->shm = ops != &sr__gloo_backend || !strcmp(tr, "tcp") ? SHM_OFF : !strcmp(tr, "shm") ? SHM_ON : SHM_BY_DEFAULT;
    if (a->attempt > 0) snprintf(sh->root, sizeof sh->root, "pg@%d/", a->attempt);
    else snprintf(sh->root, sizeof sh->root, "pg/");
    char key[64], id[1024];
    if (id_override) snprintf(id, sizeof id, "%s", id_override);
    else sr__shm_host_id(id, sizeof id, a->host_id);
    snprintf(key, sizeof key, "%shost/%d", sh->root, a->rank);
    pthread_mutex_lock(&sh->store_lock);
    int rc = sr__store_set(sh->store, key, id, strlen(id));
    pthread_mutex_unlock(&sh->store_lock);
    if (rc != 0) {
        snprintf(err, errlen, "process group world: store error: %s", sr__store_error(store));
        return NULL;
    }
    return sh;
}

sr_pg *sr__pg_create_world(const sr__pg_world_args *a, char *err, size_t errlen) {
    const sr__pg_backend_ops *ops = !strcmp(a->backend, "nccl") ? load_nccl(err, errlen) : &sr__gloo_backend;
    if (!ops) return NULL;
    pg_shared *sh = open_world(a, ops, NULL, err, errlen);
    if (!sh) return NULL;
    char name[64];
    snprintf(name, sizeof name, "%sworld/", sh->root);
    world_pg = create_group(sh, NULL, name, "world", a->rank, a->size, 0, a->rank, NULL, err, errlen);
    return world_pg;
}

int sr__pg_rehearse_world(const sr__pg_world_args *a, const sr__pg_backend_ops *stand_in, const char *host_id,
                          char *err, size_t errlen) {
    pg_shared *sh = open_world(a, stand_in, host_id, err, errlen);
    if (!sh) return -1;
    char name[64];
    snprintf(name, sizeof name, "%sworld/", sh->root);
    group_parts g;
    int rc = meet_and_connect(sh, NULL, name, "world", a->rank, a->size, 0, a->rank, NULL, &g, err, errlen);
    if (rc == 0) g.ops->destroy(g.impl), free(g.hosts);
    sr__store_close(sh->store);
    pthread_mutex_destroy(&sh->store_lock);
    free(sh->hostname), free(sh->iface), free(sh);
    return rc;
}

int sr_pg_split(sr_pg *pg, int color, int key, sr_pg **out) {
    *out = NULL;
    if (!pg || pg->failed) return -1;
    int32_t mine[3] = {color, key, pg->rank};
    int32_t *all = sr__malloc(sizeof mine * (size_t)pg->size);
    if (!all) { /* this rank cannot take part: the group is unusable (the others' gather times out) */
        fail(pg, "split of group %s: out of memory for the colors of %d ranks", pg->name, pg->size);
        return -1;
    }
    if (sr_pg_all_gather(pg, mine, all, 3, SR_INT32, NULL) != 0) {
        free(all);
        return -1;
    }
    unsigned long child = ++pg->children;
    if (color < 0) {
        free(all);
        return 0;
    }
    /* members of my color, ordered by (key, rank), and the host of each */
    int n = 0, me = 0, *hosts = sr__calloc((size_t)pg->size, sizeof *hosts);
    if (!hosts) {
        free(all);
        fail(pg, "split of group %s: out of memory for the hosts of %d ranks", pg->name, pg->size);
        return -1;
    }
    for (int r = 0; r < pg->size; r++) {
        if (all[3 * r] != color) continue;
        int pos = 0; /* r's place among the members */
        for (int q = 0; q < pg->size; q++)
            pos +=
                all[3 * q] == color && (all[3 * q + 1] < all[3 * r + 1] || (all[3 * q + 1] == all[3 * r + 1] && q < r));
        hosts[pos] = pg->hosts[r];
        n++;
        if (all[3 * r + 1] < key || (all[3 * r + 1] == key && r < pg->rank)) me++;
    }
    free(all);
    char name[256], display[200], err[1024];
    if (strlen(pg->name) > 150) {
        free(hosts);
        fail(pg, "split of group %s: groups nest too deep", pg->name);
        return -1;
    }
    snprintf(display, sizeof display, "%.150s.%lu/%d", pg->name, child, color);
    snprintf(name, sizeof name, "%s%s/", pg->shared->root, display);
    sr_pg *sub = create_group(pg->shared, pg, name, display, me, n, color, key, hosts, err, sizeof err);
    if (!sub) {
        fail(pg, "split of group %s: %s", pg->name, err);
        return -1;
    }
    *out = sub;
    return 0;
}
