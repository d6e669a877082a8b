#define _GNU_SOURCE
#include "agent/watchdog.h"
#include "base/alloc.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/metrics.h"
#include "agent/run_status.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "store/store.h"

/* the exchange thread's store calls end within this (a reply that does not come: reconnect) */
#define SR__WD_IO_TIMEOUT_S 5.0

/* Where one rank is, as this agent knows it (its own workers, or another agent's record). */
typedef struct wd_rank {
    int rank, node, agent, pid;
    char state; /* T stopped, D in the kernel, R running, S sleeping, Z gone, ? unknown */
    char wchan[48];
    double age; /* seconds since it last made progress */
    unsigned long long seq;
    int in, kind, micro, phase, unit, ever;
    int said; /* a main task's rank that called sr_progress() */
    long long step;
    int stale; /* its agent went silent: this is what it said last */
    int local; /* one of this agent's workers (its /proc is here) */
    /* what the trainer said (base/watch.h), passed on to the status file and the metrics */
    long long total, done;
    double loss, tok_s, step_s, ckpt_s;
    unsigned long long mem, ckpt_n, ckpt_bytes;
} wd_rank;

/* Another agent's newest record. */
typedef struct wd_peer {
    char *rec;
    unsigned long long counter;
    double heard_at; /* this agent's clock when the record last changed (or the attempt began) */
} wd_peer;

struct sr__watchdog {
    double T;
    int model_task, node, nagents, agent_id, hosting;
    sr__rdzv *rdzv;
    char host[128];
    /* this agent's workers */
    sr__watch_slot *slots;
    int nslots, n, attempt;
    pid_t *pid;
    int *rank;
    unsigned long long *beat;
    double *changed;
    double next_check;
    /* the exchange through node 0's store */
    pthread_mutex_t mu;
    pthread_mutex_t gate; /* held by the exchange thread while it works (it may allocate), not while
                             it sleeps: the agent takes it around fork() (sr__watchdog_fork_begin) */
    char *mine;           /* this agent's record */
    unsigned long long counter;
    wd_peer *peers; /* by agent index */
    double began;
    int thread_started;
    struct sr__watchdog *next_kept; /* the watchdogs a thread outlived (etcd failovers), a list from kept */
    atomic_int quit;                /* the exchange thread ends (its rendezvous is gone: an etcd job's new leader) */
    unsigned long long hangs;       /* hangs found in this launch (the metrics' counter) */
    sem_t thread_entered;           /* posted by the exchange thread once it runs its own code (see sr__watchdog_new) */
    char store_host[256];           /* node 0's address, for messages */
    sr__store_link *link;           /* the agent's connection to node 0's store: the exchange is a channel of it */
};

/* ---- /proc: what a process is doing ------------------------------------------------------------- */

static char stat_state(const char *path) {
    char buf[1024];
    FILE *f = fopen(path, "r");
    if (!f) return 'Z';
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    return p && p[1] == ' ' && p[2] ? p[2] : '?';
}

static void read_wchan(const char *path, char *out, size_t len) {
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    size_t n = fread(out, 1, len - 1, f);
    fclose(f);
    out[n] = 0;
    if (!strcmp(out, "0")) out[0] = 0;
}

/* The process's state: stopped when its main thread is, else in the kernel when any thread waits
   uninterruptibly there (a disk, NFS, a driver), running when any thread runs, else sleeping. */
static char proc_state(pid_t pid, char *wchan, size_t wlen) {
    char path[96];
    wchan[0] = 0;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    char s = stat_state(path);
    if (s == 'T' || s == 't') return 'T';
    if (s == 'Z' || s == 'X') return 'Z';
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) return s;
    int running = s == 'R', kernel = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char tpath[160];
        snprintf(tpath, sizeof tpath, "/proc/%d/task/%.20s/stat", (int)pid, e->d_name);
        char ts = stat_state(tpath);
        if (ts == 'R') running = 1;
        if (ts == 'D' && !kernel) {
            kernel = 1;
            snprintf(tpath, sizeof tpath, "/proc/%d/task/%.20s/wchan", (int)pid, e->d_name);
            read_wchan(tpath, wchan, wlen);
        }
    }
    closedir(d);
    return kernel ? 'D' : running ? 'R' : 'S';
}

static const char *state_text(const wd_rank *r, char *buf, size_t len) {
    switch (r->state) {
    case 'T': return "stopped (SIGSTOP, a debugger, or a terminal's Ctrl-Z)";
    case 'D':
        snprintf(buf, len, "in the kernel (an uninterruptible wait%s%s: a disk, NFS, a driver)",
                 r->wchan[0] ? " in " : "", r->wchan);
        return buf;
    case 'R': return "running";
    case 'S': return "sleeping";
    case 'Z': return "gone";
    default: return "state unknown";
    }
}

/* A memory limit on the process (ulimit -v), in bytes; 0: none. */
static unsigned long long as_limit(int pid) {
    char path[64], line[256];
    unsigned long long soft = 0;
    snprintf(path, sizeof path, "/proc/%d/limits", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "Max address space", 17) && sscanf(line + 17, "%llu", &soft) != 1) soft = 0;
    fclose(f);
    return soft;
}

/* What a running rank that does not progress is likely doing: under a memory limit, an allocation
   that fails inside the BLAS (OpenBLAS retries it without end, silently). */
static const char *busy(const wd_rank *r) {
    static char buf[400];
    if (r->state != 'R') return "";
    unsigned long long lim = r->local ? as_limit(r->pid) : 0;
    if (lim)
        snprintf(buf, sizeof buf,
                 " (busy without progress under a memory limit of %llu MiB (ulimit -v): most likely an "
                 "allocation that failed inside the BLAS, which OpenBLAS retries without end; raise the limit, or give "
                 "each rank fewer threads (OMP_NUM_THREADS))",
                 lim >> 20);
    else snprintf(buf, sizeof buf, " (busy in its own code: a loop that never ends, or work slower than hang_timeout)");
    return buf;
}

/* How often the ranks are looked at: hang_timeout / 4, at most a second (every second without a
   hang verdict, hang_timeout = 0, for the status file and the metrics). */
static double check_period(const sr__watchdog *wd) { return wd->T > 0 && wd->T / 4 < 1.0 ? wd->T / 4 : 1.0; }

/* ---- the records agents exchange ---------------------------------------------------------------- */

/* "wd COUNTER NODE HOST" then one line per rank: "RANK PID STATE AGE_MS SEQ IN KIND STEP MICRO PHASE
   UNIT EVER SAID TOTAL DONE LOSS TOK_S STEP_S MEM CKPT_N CKPT_S CKPT_BYTES". */
static void format_record(sr__watchdog *wd, const wd_rank *rs, int n, sr__buf *b) {
    sr__buf_printf(b, "wd %llu %d %s\n", wd->counter, wd->node, wd->host);
    for (int i = 0; i < n; i++) {
        const wd_rank *r = &rs[i];
        sr__buf_printf(b, "%d %d %c %lld %llu %d %d %lld %d %d %d %d %d %lld %lld %.9g %.6g %.6g %llu %llu %.6g %llu\n",
                       r->rank, r->pid, r->state, (long long)(r->age * 1000), r->seq, r->in, r->kind, r->step, r->micro,
                       r->phase, r->unit, r->ever, r->said, r->total, r->done, r->loss, r->tok_s, r->step_s, r->mem,
                       r->ckpt_n, r->ckpt_s, r->ckpt_bytes);
    }
}

/* Parses agent a's record into rs (at most max); returns the ranks read, -1 when it is no record.
   *counter, *node and host[] from its first line. */
static int parse_record(const char *rec, int a, wd_rank *rs, int max, unsigned long long *counter, int *node,
                        char *host, size_t hlen) {
    char h[128];
    int at = 0;
    if (!rec || sscanf(rec, "wd %llu %d %127s%n", counter, node, h, &at) != 3) return -1;
    snprintf(host, hlen, "%s", h);
    const char *p = strchr(rec + at, '\n');
    int n = 0;
    while (p && p[1] && n < max) {
        wd_rank *r = &rs[n];
        long long age_ms;
        memset(r, 0, sizeof *r);
        if (sscanf(p + 1, "%d %d %c %lld %llu %d %d %lld %d %d %d %d %d %lld %lld %lf %lf %lf %llu %llu %lf %llu",
                   &r->rank, &r->pid, &r->state, &age_ms, &r->seq, &r->in, &r->kind, &r->step, &r->micro, &r->phase,
                   &r->unit, &r->ever, &r->said, &r->total, &r->done, &r->loss, &r->tok_s, &r->step_s, &r->mem,
                   &r->ckpt_n, &r->ckpt_s, &r->ckpt_bytes) != 22)
            break;
        r->age = (double)age_ms / 1000.0;
        r->node = *node;
        r->agent = a;
        n++;
        p = strchr(p + 1, '\n');
    }
    return n;
}

static void wd_key(char *buf, size_t len, int attempt, int agent) { snprintf(buf, len, "wd/%d/%d", attempt, agent); }

/* Takes agent a's record when it is newer than the one kept (wd->mu held). */
static void take_record(sr__watchdog *wd, int a, char *rec) {
    unsigned long long c;
    int node;
    char host[128];
    wd_rank one;
    if (parse_record(rec, a, &one, 0, &c, &node, host, sizeof host) < 0 ||
        (wd->peers[a].rec && c == wd->peers[a].counter)) {
        free(rec);
        return;
    }
    free(wd->peers[a].rec);
    wd->peers[a].rec = rec;
    wd->peers[a].counter = c;
    wd->peers[a].heard_at = sr__now_s();
}

sr__store *sr__watchdog_exchange(sr__store *c, sr__store_link *link, int attempt, int agent, const char *mine,
                                 char **node0) {
    char err[256], key[64];
    *node0 = NULL;
    if (!c) {
        c = sr__store_link_open(link, err, sizeof err);
        if (!c || sr__store_set_io_timeout(c, SR__WD_IO_TIMEOUT_S) != 0) {
            if (c) sr__store_close(c);
            return NULL;
        }
    }
    int bad = 0;
    if (mine) {
        wd_key(key, sizeof key, attempt, agent);
        bad = sr__store_set(c, key, mine, strlen(mine)) != 0;
    }
    if (!bad) {
        void *v = NULL;
        size_t len = 0;
        wd_key(key, sizeof key, attempt, 0);
        int rc = sr__store_get(c, key, &v, &len);
        if (rc < 0) bad = 1;
        if (rc == 0) *node0 = v;
        else free(v);
    }
    if (bad) sr__store_close(c), c = NULL;
    return c;
}

/* One exchange of this agent's newest record (sr__watchdog_exchange); returns the connection to
   keep. */
static sr__store *exchange_once(sr__watchdog *wd, sr__store *c) {
    pthread_mutex_lock(&wd->mu);
    char *mine = wd->mine ? sr__strdup(wd->mine) : NULL;
    int attempt = wd->attempt;
    pthread_mutex_unlock(&wd->mu);
    char *node0 = NULL;
    c = sr__watchdog_exchange(c, wd->link, attempt, wd->agent_id, mine, &node0);
    free(mine);
    pthread_mutex_lock(&wd->mu);
    if (node0 && attempt == wd->attempt) take_record(wd, 0, node0);
    else free(node0);
    pthread_mutex_unlock(&wd->mu);
    return c;
}

/* The agents that do not host the store: send this agent's record and fetch node 0's, about
   once a second, from this thread, whose store calls may block for good (node 0 stopped, a link
   down) without holding up the agent. */
static void *exchange(void *arg) {
    sr__watchdog *wd = arg;
    sem_post(&wd->thread_entered);
    sr__store *c = NULL;
    double period = check_period(wd);
    if (period < 0.1) period = 0.1;
    struct timespec pause = {(time_t)period, (long)((period - (double)(time_t)period) * 1e9)};
    while (1) {
        nanosleep(&pause, NULL);
        if (atomic_load(&wd->quit)) break;
        pthread_mutex_lock(&wd->gate);
        c = exchange_once(wd, c);
        pthread_mutex_unlock(&wd->gate);
    }
    /* what it used of a rendezvous that ended; the watchdog itself stays (kept, below) */
    sr__store_close(c);
    sr__store_link_release(wd->link);
    wd->link = NULL;
    return NULL;
}

/* A forked child inherits every lock as it was at the fork, and has none of the threads that
   would release them: a child forked while the exchange thread was inside malloc() finds the
   allocator locked for good when the allocator has no fork handlers of its own (ASan's has none:
   such workers hung at their first thread).  So the agent forks only while that thread sleeps.
   Its store calls end within SR__WD_IO_TIMEOUT_S (a dead link, node 0 stopped), so this waits that
   long at most; should it still be busy after twice that, the fork goes ahead. */
int sr__watchdog_fork_begin(sr__watchdog *wd) {
    if (!wd || !wd->thread_started) return 0;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 2 * (time_t)SR__WD_IO_TIMEOUT_S + 2;
    return pthread_mutex_timedlock(&wd->gate, &until) == 0;
}

void sr__watchdog_fork_end(sr__watchdog *wd, int held) {
    if (held) pthread_mutex_unlock(&wd->gate);
}

/* ---- set-up ------------------------------------------------------------------------------------- */

sr__watchdog *sr__watchdog_new(sr__run *run) {
    int n = run->layout.spawn_count;
    sr__watchdog *wd = sr__calloc(1, sizeof *wd);
    if (wd) {
        wd->pid = sr__calloc((size_t)n + 1, sizeof *wd->pid);
        wd->rank = sr__calloc((size_t)n + 1, sizeof *wd->rank);
        wd->beat = sr__calloc((size_t)n + 1, sizeof *wd->beat);
        wd->changed = sr__calloc((size_t)n + 1, sizeof *wd->changed);
        wd->peers = sr__calloc((size_t)run->rdzv.nagents + 1, sizeof *wd->peers);
        wd->slots = sr__watch_map(n);
    }
    if (!wd || !wd->pid || !wd->rank || !wd->beat || !wd->changed || !wd->peers || !wd->slots) {
        sr__log(SR_LOG_WARN,
                "no hang watchdog for this run (out of memory for %d workers' records): a rank that "
                "hangs is not named (hang_timeout)",
                n);
        sr__watchdog_free(wd);
        return NULL;
    }
    wd->nslots = n;
    wd->T = run->settings.hang_timeout;
    wd->model_task = run->model_task;
    wd->node = run->layout.node_rank;
    wd->rdzv = &run->rdzv;
    wd->nagents = run->rdzv.enabled ? run->rdzv.nagents : 1;
    wd->agent_id = run->rdzv.agent_id;
    wd->hosting = run->rdzv.hosting;
    if (gethostname(wd->host, sizeof wd->host - 1) != 0 || !wd->host[0]) snprintf(wd->host, sizeof wd->host, "?");
    for (char *p = wd->host; *p; p++)
        if (*p == ' ' || *p == '\n') *p = '_';
    pthread_mutex_init(&wd->mu, NULL);
    pthread_mutex_init(&wd->gate, NULL);
    wd->began = sr__now_s();
    if (wd->nagents > 1 && !wd->hosting) {
        snprintf(wd->store_host, sizeof wd->store_host, "%s", run->rdzv.host);
        wd->link = sr__store_link_ref(run->rdzv.link); /* its thread outlives the rendezvous */
        pthread_t t;
        sem_init(&wd->thread_entered, 0, 0);
        if (pthread_create(&t, NULL, exchange, wd) == 0) {
            pthread_detach(t);
            wd->thread_started = 1;
            /* A new thread allocates before it runs exchange() (the sanitizers' thread set-up
               does), outside the gate: a worker forked then inherits the allocator locked.  So
               the agent forks nothing until the thread is in its own code. */
            while (sem_wait(&wd->thread_entered) != 0 && errno == EINTR) {}
        } else {
            sr__log(SR_LOG_WARN, "the hang watchdog cannot compare this node with the others (no thread): it "
                                 "watches this node's ranks only");
            wd->nagents = 1;
        }
    }
    return wd;
}

void sr__watchdog_begin(sr__watchdog *wd, int n, int attempt) {
    if (!wd) return;
    double now = sr__now_s();
    pthread_mutex_lock(&wd->mu);
    wd->n = n < wd->nslots ? n : wd->nslots;
    wd->attempt = attempt;
    for (int i = 0; i < wd->nslots; i++) {
        sr__watch_slot *s = &wd->slots[i];
        atomic_store(&s->beat, 0), atomic_store(&s->step, -1), atomic_store(&s->micro, 0);
        atomic_store(&s->phase, 0), atomic_store(&s->unit, -1), atomic_store(&s->coll_seq, 0);
        atomic_store(&s->coll_kind, 0), atomic_store(&s->in_coll, 0), atomic_store(&s->said, 0);
        atomic_store(&s->steps_total, 0), atomic_store(&s->steps_done, 0), atomic_store(&s->loss, 0);
        atomic_store(&s->tok_s, 0), atomic_store(&s->step_s, 0), atomic_store(&s->mem_bytes, 0);
        atomic_store(&s->ckpt_count, 0), atomic_store(&s->ckpt_s, 0), atomic_store(&s->ckpt_bytes, 0);
        wd->pid[i] = 0, wd->beat[i] = 0, wd->changed[i] = now;
    }
    for (int a = 0; a < wd->nagents; a++) {
        free(wd->peers[a].rec);
        wd->peers[a] = (wd_peer){.heard_at = now};
    }
    free(wd->mine);
    wd->mine = NULL;
    pthread_mutex_unlock(&wd->mu);
    wd->next_check = now + 1.0;
}

sr__watch_slot *sr__watchdog_slot(sr__watchdog *wd, int i) { return wd && i < wd->nslots ? &wd->slots[i] : NULL; }

void sr__watchdog_started(sr__watchdog *wd, int i, int rank, pid_t pid) {
    if (!wd || i >= wd->nslots) return;
    wd->pid[i] = pid;
    wd->rank[i] = rank;
    wd->changed[i] = sr__now_s();
}

int sr__watchdog_timeout_ms(const sr__watchdog *wd) {
    if (!wd) return -1;
    int ms = (int)((wd->next_check - sr__now_s()) * 1000) + 1;
    return ms < 0 ? 0 : ms;
}

/* A watchdog whose thread may still use it (blocked in a store call): left to the process's exit,
   and held here so that a leak checker sees it reachable. */
static sr__watchdog *kept;

void sr__watchdog_free(sr__watchdog *wd) {
    if (!wd) return;
    if (wd->thread_started) {
        atomic_store(&wd->quit, 1);
        wd->next_kept = kept;
        kept = wd;
        return;
    }
    sr__watch_unmap(wd->slots, wd->nslots);
    for (int a = 0; wd->peers && a < wd->nagents; a++) free(wd->peers[a].rec);
    free(wd->peers), free(wd->pid), free(wd->rank), free(wd->beat), free(wd->changed), free(wd->mine);
    sr__store_link_release(wd->link); /* taken for an exchange thread that did not start */
    free(wd);
}

/* ---- the decision ------------------------------------------------------------------------------- */

static void where(const wd_rank *r, const char *host, double T, char *out, size_t len) {
    char st[160], pos[160] = "", coll[160];
    if (r->step >= 0) {
        int k = snprintf(pos, sizeof pos, "step %lld (micro-step %d), %s", r->step + 1, r->micro,
                         sr__watch_phase_name(r->phase));
        if (r->unit >= 0) snprintf(pos + k, sizeof pos - (size_t)k, ", unit %d", r->unit);
    }
    const char *kind = r->kind >= 0 && r->kind < 5 ? sr__watch_coll_names[r->kind] : "?";
    if (!r->seq) snprintf(coll, sizeof coll, "no collective yet");
    else if (r->in) snprintf(coll, sizeof coll, "waits in %s #%llu", kind, r->seq);
    else snprintf(coll, sizeof coll, "after %s #%llu", kind, r->seq);
    snprintf(out, len, "rank %d (node %d, host %s, pid %d): %s%s; %s%s%s; %s %.1fs", r->rank, r->node, host, r->pid,
             r->stale ? "as its node last said: " : "", state_text(r, st, sizeof st), pos, pos[0] ? "; " : "", coll,
             r->age >= T ? "no progress for" : "last progress", r->age);
}

/* This agent's workers, as they are now. */
static int local_ranks(sr__watchdog *wd, const int *reaped, wd_rank *rs, double now) {
    int n = 0;
    for (int i = 0; i < wd->n; i++) {
        if (!wd->pid[i] || reaped[i]) continue;
        sr__watch_slot *s = &wd->slots[i];
        unsigned long long beat = atomic_load(&s->beat);
        if (beat != wd->beat[i]) wd->beat[i] = beat, wd->changed[i] = now;
        wd_rank *r = &rs[n++];
        memset(r, 0, sizeof *r);
        r->rank = wd->rank[i], r->node = wd->node, r->agent = wd->agent_id, r->pid = (int)wd->pid[i], r->local = 1;
        r->age = now - wd->changed[i];
        /* /proc is read only for a rank quiet for a second: one that just moved is running */
        r->state = r->age >= 1.0 ? proc_state(wd->pid[i], r->wchan, sizeof r->wchan) : 'R';
        r->seq = atomic_load(&s->coll_seq), r->in = atomic_load(&s->in_coll), r->kind = atomic_load(&s->coll_kind);
        r->step = atomic_load(&s->step), r->micro = atomic_load(&s->micro), r->phase = atomic_load(&s->phase);
        r->unit = atomic_load(&s->unit), r->ever = beat != 0, r->said = atomic_load(&s->said);
        r->total = atomic_load(&s->steps_total), r->done = atomic_load(&s->steps_done);
        r->loss = sr__watch_double(atomic_load(&s->loss)), r->tok_s = sr__watch_double(atomic_load(&s->tok_s));
        r->step_s = sr__watch_double(atomic_load(&s->step_s)), r->mem = atomic_load(&s->mem_bytes);
        r->ckpt_n = atomic_load(&s->ckpt_count), r->ckpt_s = sr__watch_double(atomic_load(&s->ckpt_s));
        r->ckpt_bytes = atomic_load(&s->ckpt_bytes);
    }
    return n;
}

static const char *host_of(sr__watchdog *wd, int agent, char *buf, size_t len) {
    if (agent == wd->agent_id) return wd->host;
    unsigned long long c;
    int node;
    /* never heard from: node 0's agent is at least known by the address this one reached it at */
    const char *reached = agent == 0 && !wd->hosting && wd->store_host[0] ? wd->store_host : "?";
    size_t n = strnlen(reached, len - 1);
    memcpy(buf, reached, n), buf[n] = 0;
    parse_record(wd->peers[agent].rec, agent, NULL, 0, &c, &node, buf, len);
    return buf;
}

/* ---- what the ranks say, passed on ----------------------------------------------------------------- */

/* Every rank to the status file (written by the agent holding rank 0 only, run_status.c), this
   agent's own to its metrics endpoint (metrics.c). */
static void publish(sr__watchdog *wd, const wd_rank *rs, int n, int nlocal) {
    enum { MAX = 4096 };
    static sr__rank_status out[MAX];
    char host[128];
    for (int i = 0; i < n && i < MAX; i++) {
        const wd_rank *r = &rs[i];
        sr__rank_status *o = &out[i];
        *o = (sr__rank_status){.rank = r->rank,
                               .node = r->node,
                               .pid = r->pid,
                               .state = r->state,
                               .steps_done = r->done,
                               .steps_total = r->total,
                               .phase = r->phase,
                               .age = r->age,
                               .loss = r->loss,
                               .tok_s = r->tok_s,
                               .step_s = r->step_s,
                               .ckpt_s = r->ckpt_s,
                               .mem_bytes = r->mem,
                               .ckpt_count = r->ckpt_n,
                               .ckpt_bytes = r->ckpt_bytes,
                               .stale = r->stale};
        snprintf(o->host, sizeof o->host, "%s", host_of(wd, r->agent, host, sizeof host));
    }
    n = n < MAX ? n : MAX;
    sr__run_status_update(out, n, wd->attempt, wd->hangs);
    sr__metrics_publish(out, nlocal < n ? nlocal : n, wd->node, wd->attempt, wd->hangs);
}

int sr__watchdog_host_silent(sr__watchdog *wd) {
    if (!wd) return 0;
    double now = sr__now_s();
    if (now < wd->next_check) return 0;
    wd->next_check = now + check_period(wd);
    if (wd->hosting || wd->nagents < 2 || wd->agent_id == 0 || wd->T <= 0) return 0;
    sr__buf b = {0};
    pthread_mutex_lock(&wd->mu);
    wd->counter++;
    format_record(wd, NULL, 0, &b); /* its ranks are stopping: none to compare */
    free(wd->mine);
    wd->mine = b.s;
    int silent = now - wd->peers[0].heard_at >= wd->T;
    pthread_mutex_unlock(&wd->mu);
    return silent;
}

int sr__watchdog_check(sr__watchdog *wd, const int *reaped, sr__hang *h) {
    if (!wd) return 0;
    /* hang_timeout = 0: no verdict, the ranks are still watched for the status file and the metrics;
       a node quiet for SR__STATUS_STALE_S is then shown stale */
    double now = sr__now_s(), T = wd->T > 0 ? wd->T : SR__STATUS_STALE_S;
    if (now < wd->next_check) return 0;
    wd->next_check = now + check_period(wd);
    enum { MAX_RANKS = 4096 };
    static wd_rank rs[MAX_RANKS];
    int n = local_ranks(wd, reaped, rs, now), nlocal = n;

    /* this agent's record out, the others' in (wd->mu held from here: the thread replaces them) */
    sr__buf b = {0};
    pthread_mutex_lock(&wd->mu);
    wd->counter++;
    format_record(wd, rs, nlocal, &b);
    free(wd->mine);
    wd->mine = b.s; /* NULL when out of memory: nothing is sent this time */
    if (wd->hosting && wd->nagents > 1 && wd->rdzv->server) {
        char key[64];
        wd_key(key, sizeof key, wd->attempt, wd->agent_id);
        if (b.s) sr__store_server_set(wd->rdzv->server, key, b.s, b.n);
        for (int a = 1; a < wd->nagents; a++) {
            size_t len;
            wd_key(key, sizeof key, wd->attempt, a);
            const char *v = sr__store_server_get(wd->rdzv->server, key, &len);
            if (v) take_record(wd, a, sr__strndup(v, len));
        }
    }
    /* node 0's agent hears every agent and judges every rank; another one hears node 0's only, and
       judges node 0's silence only (the others' ranks it does not see could be moving) */
    int judge_all = wd->hosting || wd->nagents < 2;
    int silent = -1; /* the first other agent not heard from for hang_timeout */
    int unheard = 0; /* others not heard from yet, within hang_timeout */
    for (int a = 0; a < (judge_all ? wd->nagents : 1); a++) {
        if (a == wd->agent_id) continue;
        if (wd->hosting && !sr__rdzv_takes_part(wd->rdzv, a)) continue; /* elastic: not in this world */
        double quiet = now - wd->peers[a].heard_at;
        unsigned long long c;
        int node;
        char host[128];
        int got = parse_record(wd->peers[a].rec, a, rs + n, MAX_RANKS - n, &c, &node, host, sizeof host);
        if (quiet >= T && silent < 0) silent = a;
        if (got < 0) {
            unheard += quiet < T;
            continue;
        }
        for (int k = n; k < n + got; k++) rs[k].age += quiet, rs[k].stale = quiet >= T; /* aged since written */
        n += got;
    }

    /* the collective waited in longest, the ranks that have not entered it, whether all are quiet */
    int waiting = -1, behind = -1, all_quiet = !unheard, ever = 0, said = 0;
    for (int i = 0; i < n; i++) {
        int quiet = rs[i].age >= T;
        all_quiet &= quiet;
        ever |= rs[i].ever;
        said |= rs[i].said;
        if (rs[i].in && quiet && !rs[i].stale && (waiting < 0 || rs[i].seq > rs[waiting].seq)) waiting = i;
    }
    for (int i = 0; waiting >= 0 && i < n; i++)
        if (rs[i].age >= T && rs[i].seq < rs[waiting].seq && (behind < 0 || rs[i].seq < rs[behind].seq)) behind = i;
    int hung = (waiting >= 0 && behind >= 0) || (waiting >= 0 && all_quiet) ||
               ((wd->model_task || said) && all_quiet && ever && n > 0) || (waiting >= 0 && silent >= 0);
    hung &= wd->T > 0 && (judge_all || silent >= 0);
    wd->hangs += (unsigned long long)hung;
    publish(wd, rs, n, nlocal);
    if (!hung) {
        pthread_mutex_unlock(&wd->mu);
        return 0;
    }

    /* the report */
    memset(h, 0, sizeof *h);
    h->lost_node = h->lost_agent = -1;
    char host[128], line[700], wait_text[300] = "";
    if (waiting >= 0) {
        int nw = 0, first = -1;
        for (int i = 0; i < n; i++)
            if (rs[i].in && !rs[i].stale && rs[i].seq == rs[waiting].seq && rs[i].age >= T)
                nw++, first = first < 0 ? i : first;
        snprintf(wait_text, sizeof wait_text, "%s %d%s wait%s in %s #%llu", nw == 1 ? "rank" : "ranks", rs[first].rank,
                 nw > 1 ? " and others" : "", nw == 1 ? "s" : "", sr__watch_coll_names[rs[waiting].kind % 5],
                 rs[waiting].seq);
    }
    char st[160];
    if (silent >= 0) {
        unsigned long long c;
        int node = -1;
        host_of(wd, silent, host, sizeof host);
        parse_record(wd->peers[silent].rec, silent, NULL, 0, &c, &node, host, sizeof host);
        if (node < 0) node = silent; /* never heard: agents are numbered as nodes when one per node */
        h->lost_node = node;
        h->lost_agent = silent;
        h->host_lost = silent == 0 && !wd->hosting;
        snprintf(h->what, sizeof h->what,
                 "node %d's shardrun (host %s) has not answered for %.0fs: it is stopped, or the "
                 "link to it is down%s%s (hang_timeout = %gs)",
                 node, host, now - wd->peers[silent].heard_at, wait_text[0] ? "; " : "", wait_text, T);
    } else if (behind >= 0) {
        const wd_rank *r = &rs[behind];
        snprintf(h->what, sizeof h->what,
                 "rank %d (node %d, host %s, pid %d) is behind: %s%s; it has not entered the "
                 "collective %s (no progress for %.0fs, hang_timeout = %gs)",
                 r->rank, r->node, host_of(wd, r->agent, host, sizeof host), r->pid, state_text(r, st, sizeof st),
                 busy(r), wait_text, r->age, T);
    } else {
        /* no rank behind: those outside a collective, or the collective itself */
        int culprit = -1, held = -1;
        for (int i = 0; i < n && culprit < 0; i++)
            if (!rs[i].in) culprit = i;
        /* every rank entered the collective, but one cannot run to finish it: stopped (SIGSTOP, a
           debugger) or held in the kernel; a stopped one is named before one in the kernel */
        for (int i = 0; culprit < 0 && waiting >= 0 && i < n; i++)
            if (!rs[i].stale && (rs[i].state == 'T' || rs[i].state == 'D') &&
                (held < 0 || (rs[i].state == 'T' && rs[held].state != 'T')))
                held = i;
        if (held >= 0) {
            const wd_rank *r = &rs[held];
            snprintf(h->what, sizeof h->what,
                     "rank %d (node %d, host %s, pid %d) is behind: %s%s; it entered %s #%llu but cannot "
                     "run to finish it (no progress for %.0fs, hang_timeout = %gs)",
                     r->rank, r->node, host_of(wd, r->agent, host, sizeof host), r->pid, state_text(r, st, sizeof st),
                     busy(r), sr__watch_coll_names[r->kind % 5], r->seq, r->age, T);
        } else if (culprit >= 0) {
            const wd_rank *r = &rs[culprit];
            /* every rank quiet outside a collective: each is stuck on its own (the list names them) */
            const char *none =
                waiting < 0 && all_quiet && n > 1 ? "; nor did any other rank, none in a collective" : "";
            snprintf(h->what, sizeof h->what,
                     "rank %d (node %d, host %s, pid %d) made no progress for %.0fs: %s%s%s%s%s "
                     "(hang_timeout = %gs)",
                     r->rank, r->node, host_of(wd, r->agent, host, sizeof host), r->pid, r->age,
                     state_text(r, st, sizeof st), busy(r), wait_text[0] ? "; " : "", wait_text, none, T);
        } else {
            snprintf(h->what, sizeof h->what,
                     "every rank waits in %s #%llu and none is behind: the collective itself "
                     "does not complete (its transport: a link between nodes, the shared memory) (no progress for "
                     "%.0fs, hang_timeout = %gs)",
                     sr__watch_coll_names[rs[waiting].kind % 5], rs[waiting].seq, rs[waiting].age, T);
        }
    }
    size_t used = 0;
    used += (size_t)snprintf(h->report + used, sizeof h->report - used, "shardrun: hang: %s\n", h->what);
    used += (size_t)snprintf(h->report + used, sizeof h->report - used,
                             "shardrun: where each rank is, as node %d's shardrun (host %s) sees it:\n", wd->node,
                             wd->host);
    for (int i = 0; i < n && used < sizeof h->report - 1; i++) {
        where(&rs[i], host_of(wd, rs[i].agent, host, sizeof host), T, line, sizeof line);
        used += (size_t)snprintf(h->report + used, sizeof h->report - used, "shardrun:   %s\n", line);
    }
    if (unheard && used < sizeof h->report - 1)
        used +=
            (size_t)snprintf(h->report + used, sizeof h->report - used,
                             "shardrun:   (%d other node%s not heard from yet)\n", unheard, unheard == 1 ? "" : "s");
    if (!judge_all && wd->nagents > 2 && used < sizeof h->report - 1)
        snprintf(h->report + used, sizeof h->report - used,
                 "shardrun:   (the ranks of the %d other agents: only node 0's shardrun hears from them)\n",
                 wd->nagents - 2);
    pthread_mutex_unlock(&wd->mu);
    return 1;
}
