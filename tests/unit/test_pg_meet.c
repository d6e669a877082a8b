/* The creation meetings of pg/meet.h against a real store server: every rank (a thread with its
   own client, as a worker has) learns every rank's number; the requests and the keys each rank
   sends stay the same whatever the group's size (counted through the store-call table the
   backends use); a rank that never comes is named after the timeout; a table that says a rank ran
   out of memory, and a number given without waiting, reach the others. */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "store_fixture.h"
#include "pg/meet.h"
#include "store/store.h"

enum { MAXN = 32 };

/* per rank: its client, and what it sent through the table */
static sr__store *clients[MAXN];
static int requests[MAXN], keys[MAXN];

static int rank_of(const sr__store *c) {
    for (int r = 0; r < MAXN; r++)
        if (clients[r] == c) return r;
    return 0;
}
static void count(const sr__store *c, int n) { requests[rank_of(c)]++, keys[rank_of(c)] += n; }

static int c_set(sr__store *c, const char *key, const void *value, size_t len) {
    count(c, 1);
    return sr__store_set(c, key, value, len);
}
static int c_get(sr__store *c, const char *key, void **value, size_t *len) {
    count(c, 1);
    return sr__store_get(c, key, value, len);
}
static int c_wait(sr__store *c, const char *const *k, int n, double timeout_s, char *missing, size_t mlen) {
    count(c, n);
    return sr__store_wait(c, k, n, timeout_s, missing, mlen);
}
static long long c_add(sr__store *c, const char *key, long long delta) {
    count(c, 1);
    return sr__store_add(c, key, delta);
}
static int c_fetch(sr__store *c, const char *const *k, int n, double timeout_s, void **values, size_t *lens,
                   char *missing, size_t mlen) {
    count(c, n);
    return sr__store_fetch(c, k, n, timeout_s, values, lens, missing, mlen);
}
static const sr__pg_store_ops counting = {c_set, c_get, c_wait, c_add, c_fetch, sr__store_error, NULL};

typedef struct rank_arg {
    sr__pg_setup setup;
    pthread_mutex_t lock;
    const char *stage;
    long long vals[MAXN];
    int rc, who;
    char why[512];
} rank_arg;

static void *meet_thread(void *a) {
    rank_arg *r = a;
    r->rc = sr__pg_meet(&r->setup, r->stage, 10LL * r->setup.rank - 1, r->vals, &r->who, r->why, sizeof r->why);
    return NULL;
}

/* ranks 0 .. n-1 of a group under `prefix` meet at `stage`, except rank `absent` (-1: none) */
static void meet_group(rank_arg *ranks, int n, const char *prefix, const char *stage, int absent, double timeout_s) {
    pthread_t th[MAXN];
    for (int r = 0; r < n; r++) {
        rank_arg *a = &ranks[r];
        memset(a, 0, sizeof *a);
        pthread_mutex_init(&a->lock, NULL);
        a->setup = (sr__pg_setup){.store = clients[r],
                                  .store_ops = &counting,
                                  .store_lock = &a->lock,
                                  .prefix = prefix,
                                  .rank = r,
                                  .size = n,
                                  .timeout_s = timeout_s};
        a->stage = stage;
        requests[r] = keys[r] = 0;
        if (r != absent) pthread_create(&th[r], NULL, meet_thread, a);
    }
    for (int r = 0; r < n; r++)
        if (r != absent) pthread_join(th[r], NULL);
}

/* Every rank of n learns every number; returns the most requests and keys any rank but the one
   that made the table sent (*table_keys: that one's keys). */
static void linear(int n, int *most_requests, int *most_keys, int *table_keys) {
    static rank_arg ranks[MAXN];
    char prefix[64];
    snprintf(prefix, sizeof prefix, "pg/world%d/shm/", n);
    meet_group(ranks, n, prefix, "pid", -1, 10);
    *most_requests = *most_keys = *table_keys = 0;
    for (int r = 0; r < n; r++) {
        CHECK(ranks[r].rc == SR__MEET_OK);
        int all = 1;
        for (int q = 0; q < n; q++) all &= ranks[r].vals[q] == 10LL * q - 1;
        CHECK(all);
        if (keys[r] > n) { /* the one that read every rank's number to make the table */
            CHECK(*table_keys == 0);
            *table_keys = keys[r];
            continue;
        }
        if (requests[r] > *most_requests) *most_requests = requests[r];
        if (keys[r] > *most_keys) *most_keys = keys[r];
    }
    printf("  %2d ranks: at most %d requests and %d keys a rank; the table's maker %d keys\n", n, *most_requests,
           *most_keys, *table_keys);
}

int main(void) {
    char err[512];
    int port = fixture_server_start();
    CHECK(port > 0);
    if (port <= 0) return CHECK_DONE();
    for (int r = 0; r < MAXN; r++) {
        clients[r] = sr__store_connect("127.0.0.1", sr__store_server_port(server), "secret", 5, err, sizeof err);
        CHECK(clients[r] != NULL);
        if (!clients[r]) return CHECK_DONE();
    }

    /* the same few requests and keys per rank at 4 and at 32 ranks; the maker reads n keys once */
    int req4, keys4, maker4, req32, keys32, maker32;
    linear(4, &req4, &keys4, &maker4);
    linear(32, &req32, &keys32, &maker32);
    CHECK(req4 == 3 && keys4 == 3);
    CHECK(req32 == 3 && keys32 == 3);
    CHECK(maker4 == 3 + 1 + 4 && maker32 == 3 + 1 + 32);

    /* rank 2 of 3 never comes: the others time out naming it */
    static rank_arg ranks[MAXN];
    meet_group(ranks, 3, "pg/late/", "pid", 2, 0.5);
    for (int r = 0; r < 2; r++) {
        CHECK(ranks[r].rc == SR__MEET_LATE);
        CHECK_STR(ranks[r].why, "2");
    }

    /* the table says rank 1 ran out of memory while making it: the others fail with its rank */
    CHECK(sr__store_set(clients[0], "pg/oom/pid/all", "oom 1", 5) == 0);
    meet_group(ranks, 2, "pg/oom/", "pid", 1, 5);
    CHECK(ranks[0].rc == SR__MEET_OOM && ranks[0].who == 1);
    CHECK(strstr(ranks[0].why, "rank 1 ran out of memory") != NULL);

    /* rank 1 gives its number without waiting (it failed before the meeting); rank 0 learns it */
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    sr__pg_setup say = {.store = clients[1],
                        .store_ops = &counting,
                        .store_lock = &lock,
                        .prefix = "pg/say/",
                        .rank = 1,
                        .size = 2,
                        .timeout_s = 5};
    sr__pg_meet_say(&say, "mapped", 3);
    meet_group(ranks, 2, "pg/say/", "mapped", 1, 5);
    CHECK(ranks[0].rc == SR__MEET_OK && ranks[0].vals[0] == -1 && ranks[0].vals[1] == 3);

    for (int r = 0; r < MAXN; r++) sr__store_close(clients[r]);
    fixture_server_stop();
    return CHECK_DONE();
}
