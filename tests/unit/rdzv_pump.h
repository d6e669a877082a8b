/* What the rendezvous unit tests (test_rdzv.c, test_rdzv_elastic.c) share: another agent's side of
   the supervisor's poll loop, driven by hand. */
#ifndef SR__TEST_RDZV_PUMP_H
#define SR__TEST_RDZV_PUMP_H

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>

#include "base/clock.h"
#include "store/rdzv.h"
#include "store/rdzv_internal.h"

/* Turns of r's poll loop until `done(r)` or 5 s; returns done(r). */
static int pump(sr__rdzv *r, int (*done)(sr__rdzv *r)) {
    for (double t0 = sr__now_s(); sr__now_s() - t0 < 5;) {
        if (done(r)) return 1;
        struct pollfd pfds[4];
        int n = sr__rdzv_pollfds(r, pfds, 4, NULL);
        poll(pfds, (nfds_t)n, 10);
        sr__rdzv_handle(r, pfds, n);
    }
    return done(r);
}
/* Node 0's agent as the supervisor drives it, until *stop: serve, decide, start the next attempt once
   ready; each turn under *lock, which the test takes to look at host. */
static void serve_host(sr__rdzv *host, pthread_mutex_t *lock, atomic_int *stop) {
    struct pollfd pfds[64];
    while (!atomic_load(stop)) {
        pthread_mutex_lock(lock);
        int n = sr__rdzv_pollfds(host, pfds, 64, NULL);
        pthread_mutex_unlock(lock);
        poll(pfds, (nfds_t)n, 10);
        pthread_mutex_lock(lock);
        sr__rdzv_handle(host, pfds, n);
        if (host->phase == SR__RDZV_RESTART && sr__rdzv_restart_ready(host) == 1) sr__rdzv_next_attempt(host);
        pthread_mutex_unlock(lock);
    }
}
static int decided(sr__rdzv *r) { return r->phase != SR__RDZV_RUNNING; }
static int restart_ready(sr__rdzv *r) { return sr__rdzv_restart_ready(r) != 0; }

#endif
