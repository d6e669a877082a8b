/* A real rendezvous store server on a free loopback port, served from a thread, for the unit tests
   that talk to it through real connections.  fixture_server_start() returns its port (or -1, the
   reason printed); fixture_lock()/fixture_unlock() around the test's own calls on `server` (they
   would race the serving thread); fixture_server_stop() stops the thread and frees the server. */
#ifndef SR__TEST_STORE_FIXTURE_H
#define SR__TEST_STORE_FIXTURE_H

#include <poll.h>
#include <pthread.h>
#include <stdio.h>

#include "store/store.h"

static sr__store_server *server;
static pthread_mutex_t fixture_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t fixture_thread;
static volatile int fixture_stop;

static inline void fixture_lock(void) { pthread_mutex_lock(&fixture_mu); }
static inline void fixture_unlock(void) { pthread_mutex_unlock(&fixture_mu); }

static void *fixture_serve(void *arg) {
    (void)arg;
    struct pollfd pfds[16];
    while (!fixture_stop) {
        fixture_lock();
        int n = sr__store_server_pollfds(server, pfds, 16);
        int t = sr__store_server_timeout_ms(server);
        fixture_unlock();
        poll(pfds, (nfds_t)n, t < 0 || t > 10 ? 10 : t);
        fixture_lock();
        sr__store_server_handle(server, pfds, n);
        fixture_unlock();
    }
    return NULL;
}

static inline int fixture_server_start(void) {
    char err[512];
    server = sr__store_server_start("127.0.0.1", 0, "secret", err, sizeof err);
    if (!server) {
        fprintf(stderr, "cannot start the store server: %s\n", err);
        return -1;
    }
    if (pthread_create(&fixture_thread, NULL, fixture_serve, NULL) != 0) {
        fprintf(stderr, "cannot start the thread that serves the store\n");
        return -1;
    }
    return sr__store_server_port(server);
}

static inline void fixture_server_stop(void) {
    fixture_stop = 1;
    pthread_join(fixture_thread, NULL);
    sr__store_server_free(server);
    server = NULL;
}

#endif
