/* The engine's thread pool (see pool.h). */
#define _GNU_SOURCE
#include "device/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_THREADS 256

static struct {
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    pthread_mutex_t busy; /* held by the thread whose loop the pool runs */
    int want;             /* threads loops use (0: not read yet) */
    int started;          /* threads started (besides callers) */
    unsigned long gen;    /* one per loop */
    int active;           /* pool threads still in the current loop */
    int joining;          /* pool threads the current loop uses */
    sr__pool_fn fn;
    void *arg;
    size_t nparts;
    atomic_size_t next;
} P = {.mu = PTHREAD_MUTEX_INITIALIZER,
       .go = PTHREAD_COND_INITIALIZER,
       .done = PTHREAD_COND_INITIALIZER,
       .busy = PTHREAD_MUTEX_INITIALIZER};

size_t sr__pool_grain(size_t n) {
    size_t g = (n + SR__POOL_MAX_PARTS - 1) / SR__POOL_MAX_PARTS;
    return g < SR__POOL_GRAIN ? SR__POOL_GRAIN : g;
}

/* The CPUs this process may run on: the count when nobody set one (sr__pool_set_threads) */
static int threads_by_default(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set) > MAX_THREADS ? MAX_THREADS : CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

int sr__pool_threads(void) {
    pthread_mutex_lock(&P.mu);
    if (!P.want) P.want = threads_by_default();
    int n = P.want;
    pthread_mutex_unlock(&P.mu);
    return n;
}

void sr__pool_set_threads(int n) {
    pthread_mutex_lock(&P.mu);
    P.want = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
    pthread_mutex_unlock(&P.mu);
}

static void run_parts(void) {
    for (;;) {
        size_t p = atomic_fetch_add(&P.next, 1);
        if (p >= P.nparts) return;
        P.fn(P.arg, p);
    }
}

static void *pool_thread(void *arg) {
    int index = (int)(size_t)arg;
    unsigned long seen = 0;
    pthread_mutex_lock(&P.mu);
    for (;;) {
        while (P.gen == seen) pthread_cond_wait(&P.go, &P.mu);
        seen = P.gen;
        if (index >= P.joining) continue; /* this loop uses fewer threads */
        pthread_mutex_unlock(&P.mu);
        run_parts();
        pthread_mutex_lock(&P.mu);
        if (--P.active == 0) pthread_cond_signal(&P.done);
    }
    return NULL;
}

/* A process forked after the pool started has none of its threads: the child starts afresh (the
   locks are held across fork() so that the child's copies are consistent). */
static void fork_prepare(void) {
    pthread_mutex_lock(&P.busy);
    pthread_mutex_lock(&P.mu);
}
static void fork_parent(void) {
    pthread_mutex_unlock(&P.mu);
    pthread_mutex_unlock(&P.busy);
}
static void fork_child(void) {
    P.started = 0, P.active = 0, P.joining = 0;
    pthread_cond_init(&P.go, NULL);
    pthread_cond_init(&P.done, NULL);
    pthread_mutex_unlock(&P.mu);
    pthread_mutex_unlock(&P.busy);
}

/* Starts threads up to want - 1 (under P.mu); the ones that fail to start are simply not there. */
static void start_threads(void) {
    static int atfork;
    if (!atfork && P.started < P.want - 1) atfork = pthread_atfork(fork_prepare, fork_parent, fork_child) == 0;
    while (P.started < P.want - 1) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&t, &attr, pool_thread, (void *)(size_t)P.started);
        pthread_attr_destroy(&attr);
        if (rc != 0) {
            P.want = P.started + 1;
            break;
        }
        P.started++;
    }
}

void sr__pool_run(size_t nparts, sr__pool_fn fn, void *arg) {
    if (nparts == 0) return;
    if (nparts == 1 || pthread_mutex_trylock(&P.busy) != 0) {
        for (size_t p = 0; p < nparts; p++) fn(arg, p);
        return;
    }
    pthread_mutex_lock(&P.mu);
    if (!P.want) P.want = threads_by_default();
    start_threads();
    int helpers = P.want - 1 < P.started ? P.want - 1 : P.started;
    if ((size_t)helpers > nparts - 1) helpers = (int)(nparts - 1);
    if (helpers <= 0) {
        pthread_mutex_unlock(&P.mu);
        pthread_mutex_unlock(&P.busy);
        for (size_t p = 0; p < nparts; p++) fn(arg, p);
        return;
    }
    P.fn = fn, P.arg = arg, P.nparts = nparts;
    atomic_store(&P.next, 0);
    P.joining = helpers;
    P.active = helpers;
    P.gen++;
    pthread_cond_broadcast(&P.go);
    pthread_mutex_unlock(&P.mu);
    run_parts();
    pthread_mutex_lock(&P.mu);
    while (P.active > 0) pthread_cond_wait(&P.done, &P.mu);
    pthread_mutex_unlock(&P.mu);
    pthread_mutex_unlock(&P.busy);
}
