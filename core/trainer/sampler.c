#include "trainer/sampler.h"

#include <stdlib.h>

#include "base/rand.h"

#include <stdint.h>

#include "base/alloc.h"

int sr__sampler_init(sr__sampler *s, int64_t n, int ranks, int rank, uint64_t seed) {
    s->n = n, s->ranks = ranks, s->rank = rank, s->seed = seed, s->epoch = -1;
    s->per_rank = (n + ranks - 1) / ranks;
    s->perm = n > 0 && (uint64_t)n <= SIZE_MAX / sizeof *s->perm ? sr__malloc((size_t)n * sizeof *s->perm) : NULL;
    return s->perm ? 0 : -1;
}

void sr__sampler_free(sr__sampler *s) { free(s->perm), s->perm = NULL; }

static void shuffle(sr__sampler *s, int64_t epoch) {
    for (int64_t i = 0; i < s->n; i++) s->perm[i] = i;
    uint64_t key = sr__mix64(s->seed + (uint64_t)epoch); /* DistributedSampler seeds with seed + epoch */
    for (int64_t i = s->n - 1; i > 0; i--) {             /* Fisher-Yates */
        int64_t j = (int64_t)(sr__mix64(key ^ (uint64_t)i) % (uint64_t)(i + 1));
        int64_t t = s->perm[i];
        s->perm[i] = s->perm[j], s->perm[j] = t;
    }
    s->epoch = epoch;
}

int64_t sr__sampler_take(sr__sampler *s, int64_t epoch, int64_t first, int64_t count, int64_t *out) {
    if (s->epoch != epoch) shuffle(s, epoch);
    int64_t k = 0;
    for (; k < count && first + k < s->per_rank; k++) {
        int64_t g = (first + k) * s->ranks + s->rank; /* position in the padded permutation */
        out[k] = s->perm[g % s->n];                   /* padding wraps around to the start */
    }
    return k;
}
