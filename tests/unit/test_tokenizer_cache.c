/* The tokenizer's shared piece cache (models/transformer/tokenizer_cache.c) under concurrent use:
   THREADS threads look up and add the same KEYS pieces in different orders while the table grows
   from its smallest size; every id found must be the piece's own, and growth must keep what was
   added.  Then the bounds: max_entries, max_key, and an arena used up by long pieces. */
#include "check.h"
#include "tokenizer_impl.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define KEYS 60000
#define PASSES 3

static void key_of(unsigned k, char *buf, size_t *n) {
    *n = (size_t)snprintf(buf, 32, "piece-%u-%x", k, k * 2654435761u);
}
static uint32_t ids_of(unsigned k, int32_t *ids) {
    uint32_t count = 1 + k % 4;
    for (uint32_t j = 0; j < count; j++) ids[j] = (int32_t)(k * 7 + j);
    return count;
}

/* 1 when the cache holds piece k with its ids, 0 when it does not hold it, -1 for wrong ids */
static int holds(const tf__shared_cache *c, unsigned k) {
    char key[32];
    size_t n;
    int32_t want[4];
    key_of(k, key, &n);
    uint32_t count, wcount = ids_of(k, want);
    const int32_t *got = tf__shared_cache_find(c, key, n, &count);
    if (!got) return 0;
    return count == wcount && !memcmp(got, want, count * sizeof *got) ? 1 : -1;
}

static void add(tf__shared_cache *c, unsigned k) {
    char key[32];
    size_t n;
    int32_t ids[4];
    key_of(k, key, &n);
    uint32_t count = ids_of(k, ids);
    tf__shared_cache_add(c, key, n, ids, count);
}

typedef struct {
    tf__shared_cache *c;
    unsigned seed;
    long wrong, hits, lookups, last_pass_misses;
} worker_arg;

static void *worker(void *p) {
    worker_arg *a = p;
    unsigned *order = malloc(KEYS * sizeof *order);
    if (!order) return NULL;
    for (unsigned i = 0; i < KEYS; i++) order[i] = i;
    uint64_t x = a->seed;
    for (unsigned i = KEYS - 1; i > 0; i--) { /* each thread its own order */
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        unsigned j = (unsigned)((x >> 33) % (i + 1)), t = order[i];
        order[i] = order[j], order[j] = t;
    }
    for (int pass = 0; pass < PASSES; pass++)
        for (unsigned i = 0; i < KEYS; i++) {
            int h = holds(a->c, order[i]);
            a->lookups++;
            if (h < 0) a->wrong++;
            else if (h) a->hits++;
            else {
                add(a->c, order[i]);
                a->last_pass_misses += pass == PASSES - 1;
            }
        }
    free(order);
    return NULL;
}

int main(void) {
    /* concurrent: from 1024 slots up, while THREADS threads add and look up.  The arena has room
       for every thread to add every piece once (a piece two threads add at once takes room twice) */
    tf__shared_cache *c = tf__shared_cache_new(1024, 2 * THREADS * KEYS, 64);
    CHECK(c != NULL);
    if (!c) return CHECK_DONE();
    pthread_t th[THREADS];
    worker_arg args[THREADS];
    for (int t = 0; t < THREADS; t++) {
        args[t] = (worker_arg){c, 17u + (unsigned)t * 1000003u, 0, 0, 0, 0};
        CHECK(pthread_create(&th[t], NULL, worker, &args[t]) == 0);
    }
    long wrong = 0, hits = 0, lookups = 0, last = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        wrong += args[t].wrong, hits += args[t].hits, lookups += args[t].lookups, last += args[t].last_pass_misses;
    }
    printf("%d threads, %d pieces, %d passes: %ld lookups, %ld hits, %ld wrong, %ld misses in the last pass\n", THREADS,
           KEYS, PASSES, lookups, hits, wrong, last);
    /* how many hit depends on the threads' timing (pieces added while the table grows can be
       dropped, and all are while a grower that lost its core holds the lock); the ids never do */
    CHECK(lookups == (long)THREADS * KEYS * PASSES && wrong == 0);
    /* afterwards every piece is there with its ids, and again after one more round of adds (which
       must not store a second, different copy) */
    long held = 0, bad = 0;
    for (unsigned k = 0; k < KEYS; k++) {
        int h = holds(c, k);
        if (!h) add(c, k), h = holds(c, k);
        held += h == 1, bad += h < 0;
    }
    printf("afterwards: %ld of %d held, %ld wrong\n", held, KEYS, bad);
    CHECK(held == KEYS && bad == 0);
    tf__shared_cache_free(c);

    /* one thread: each growth keeps every piece, and the piece that set it off goes to the new table */
    c = tf__shared_cache_new(1024, 2 * KEYS, 64);
    CHECK(c != NULL);
    if (!c) return CHECK_DONE();
    for (unsigned k = 0; k < KEYS; k++) add(c, k);
    held = 0, bad = 0;
    for (unsigned k = 0; k < KEYS; k++) {
        int h = holds(c, k);
        held += h == 1, bad += h < 0;
    }
    printf("one thread, %d pieces from 1024 slots: %ld held, %ld wrong\n", KEYS, held, bad);
    CHECK(held == KEYS && bad == 0);
    tf__shared_cache_free(c);

    /* max_entries: one thread, 5000 short pieces (24 bytes of arena each) offered, room for 3000 */
    c = tf__shared_cache_new(1024, 3000, 64);
    CHECK(c != NULL);
    if (!c) return CHECK_DONE();
    char key[16];
    int32_t one = 5;
    uint32_t count;
    for (unsigned k = 0; k < 5000; k++) {
        snprintf(key, sizeof key, "k%u", k);
        tf__shared_cache_add(c, key, strlen(key), &one, 1);
    }
    held = 0;
    for (unsigned k = 0; k < 5000; k++) {
        snprintf(key, sizeof key, "k%u", k);
        held += tf__shared_cache_find(c, key, strlen(key), &count) != NULL;
    }
    printf("room for 3000: %ld held\n", held);
    CHECK(held == 3000);
    /* max_key: a longer piece is not kept */
    char long_key[80];
    memset(long_key, 'a', sizeof long_key);
    tf__shared_cache_add(c, long_key, 65, &one, 1);
    CHECK(tf__shared_cache_find(c, long_key, 65, &count) == NULL);
    tf__shared_cache_free(c);

    /* the arena (32 bytes a piece on average) used up by 64-byte pieces: what fits is kept, right */
    c = tf__shared_cache_new(1024, 1000, 64);
    CHECK(c != NULL);
    if (!c) return CHECK_DONE();
    long kept = 0;
    for (unsigned k = 0; k < 1000; k++) {
        snprintf(long_key, sizeof long_key, "%064u", k);
        int32_t id = (int32_t)k;
        tf__shared_cache_add(c, long_key, 64, &id, 1);
    }
    for (unsigned k = 0; k < 1000; k++) {
        snprintf(long_key, sizeof long_key, "%064u", k);
        const int32_t *got = tf__shared_cache_find(c, long_key, 64, &count);
        if (got) {
            kept++;
            CHECK(count == 1 && got[0] == (int32_t)k);
        }
    }
    printf("arena of 32000 bytes, 80-byte entries: %ld kept\n", kept);
    CHECK(kept == 32000 / 80);
    tf__shared_cache_free(c);
    return CHECK_DONE();
}
