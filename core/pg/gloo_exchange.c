/* The store traffic of Gloo's address exchange (gloo_exchange.h). */
#define _GNU_SOURCE
#include "pg/gloo_exchange.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"

int sr__gloo_store_init(sr__gloo_store *gs, sr__store *store, pthread_mutex_t *lock, const char *group_prefix,
                        sr__gloo_context which, double timeout_s, char *err, size_t errlen) {
    *gs = (sr__gloo_store){.store = store, .lock = lock, .timeout_s = timeout_s};
    size_t n = (size_t)snprintf(gs->prefix, sizeof gs->prefix, "%s%s", group_prefix,
                                which == SR__GLOO_DIRECT_CONTEXT ? "direct/" : "");
    if (n < sizeof gs->prefix) return 0;
    snprintf(err, errlen, "gloo: the group's store prefix is %zu bytes, at most %zu fit", strlen(group_prefix),
             sizeof gs->prefix - sizeof "direct/");
    return -1;
}

static void store_failed(const sr__gloo_store *gs, const char *what, char *err, size_t errlen) {
    snprintf(err, errlen, "store %s failed: %s", what, sr__store_error(gs->store));
}

int sr__gloo_mesh_exchange(const sr__gloo_store *gs, int rank, int size, const void *mine, size_t addr_len,
                           void *theirs, char *err, size_t errlen) {
    int npeers = size - 1, rc = 0;
    char **keys = sr__calloc((size_t)size, sizeof *keys), *own = sr__fmt("%s%d", gs->prefix, rank);
    void **v = sr__calloc((size_t)size, sizeof *v);
    size_t *lens = sr__calloc((size_t)size, sizeof *lens);
    for (int i = 0; i < size && keys; i++)
        if (i != rank && !(keys[i] = sr__fmt("%s%d", gs->prefix, i))) rc = -1;
    if (!keys || !own || !v || !lens || rc) {
        snprintf(err, errlen, "gloo: out of memory for the address lists of %d ranks", size);
        rc = -1;
    }
    char missing[1024] = "";
    if (rc == 0) {
        pthread_mutex_lock(gs->lock);
        if (sr__store_set(gs->store, own, mine, (size_t)npeers * addr_len) != 0) {
            store_failed(gs, "set", err, errlen);
            rc = -1;
        } else {
            /* this rank's address: piece rank - 1 of the lower ranks' lists, piece rank of the
               higher ranks' (one round trip each, and only the bytes for this rank travel) */
            if (rank > 0)
                rc = sr__store_fetch_pieces(gs->store, (const char *const *)keys, rank, rank - 1, npeers, gs->timeout_s,
                                            v, lens, missing, sizeof missing);
            if (rc == 0 && rank < npeers)
                rc =
                    sr__store_fetch_pieces(gs->store, (const char *const *)keys + rank + 1, npeers - rank, rank, npeers,
                                           gs->timeout_s, v + rank + 1, lens + rank + 1, missing, sizeof missing);
            if (rc == 1) snprintf(err, errlen, "timed out waiting for store keys %s", missing);
            else if (rc < 0) store_failed(gs, "get", err, errlen);
        }
        pthread_mutex_unlock(gs->lock);
    }
    for (int i = 0, k = 0; i < size && rc == 0; i++) {
        if (i == rank) continue;
        if (lens[i] != addr_len) {
            snprintf(err, errlen, "gloo: rank %d's address for rank %d is %zu bytes, expected %zu", i, rank, lens[i],
                     addr_len);
            rc = -1;
        } else memcpy((char *)theirs + (size_t)k++ * addr_len, v[i], addr_len);
    }
    for (int i = 0; i < size && keys; i++) free(keys[i]);
    for (int i = 0; i < size && v; i++) free(v[i]);
    free(keys), free(own), free(v), free(lens);
    return rc;
}

int sr__gloo_pair_publish(const sr__gloo_store *gs, int rank, int peer, const void *addr, size_t len, char *err,
                          size_t errlen) {
    char key[480];
    snprintf(key, sizeof key, "%spair/%d/%d", gs->prefix, rank, peer);
    pthread_mutex_lock(gs->lock);
    int rc = sr__store_set(gs->store, key, addr, len);
    if (rc != 0) store_failed(gs, "set", err, errlen);
    pthread_mutex_unlock(gs->lock);
    return rc ? -1 : 0;
}

int sr__gloo_pair_fetch(const sr__gloo_store *gs, int rank, int peer, void **addr, size_t *len, char *err,
                        size_t errlen) {
    char key[480];
    snprintf(key, sizeof key, "%spair/%d/%d", gs->prefix, peer, rank);
    *addr = NULL;
    *len = 0;
    pthread_mutex_lock(gs->lock);
    int rc = sr__store_get(gs->store, key, addr, len);
    if (rc < 0) store_failed(gs, "get", err, errlen);
    pthread_mutex_unlock(gs->lock);
    return rc < 0 ? -1 : rc == 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int sr__gloo_pair_exchange(const sr__gloo_store *gs, int rank, const int *peers, int n, const void *addrs,
                           size_t addr_len, sr__gloo_arrived_fn arrived, void *arg, int *late, char *err,
                           size_t errlen) {
    *late = -1;
    for (int i = 0; i < n; i++)
        if (sr__gloo_pair_publish(gs, rank, peers[i], (const char *)addrs + (size_t)i * addr_len, addr_len, err,
                                  errlen) != 0)
            return -1;
    unsigned char *came = sr__calloc(n > 0 ? (size_t)n : 1, 1);
    if (!came) return snprintf(err, errlen, "gloo: out of memory for the addresses of %d peers", n), -1;
    int waiting = n, rc = 0;
    double deadline = now_s() + gs->timeout_s;
    useconds_t pause = 200;
    while (waiting && rc == 0) {
        for (int i = 0; i < n && rc == 0; i++) {
            void *addr;
            size_t len;
            if (came[i]) continue;
            int got = sr__gloo_pair_fetch(gs, rank, peers[i], &addr, &len, err, errlen);
            if (got < 0) rc = -1;
            if (got <= 0) continue;
            came[i] = 1, waiting--;
            if (arrived && arrived(arg, i, addr, len, err, errlen) != 0) rc = -1;
            free(addr);
        }
        if (!waiting || rc || now_s() >= deadline) break;
        usleep(pause); /* polls the store: a few requests while peers arrive */
        pause = pause * 2 < 20000 ? pause * 2 : 20000;
    }
    for (int i = 0; i < n && rc == 0 && waiting; i++)
        if (!came[i]) {
            *late = i;
            snprintf(err, errlen, "rank %d did not come to connect within %gs (no address at pair/%d/%d)", peers[i],
                     gs->timeout_s, peers[i], rank);
            rc = 1;
        }
    free(came);
    return rc;
}
