/* selftest random inputs: a fixed-seed generator, so a failing line reproduces. */
#ifndef SELFTEST_RNG_H
#define SELFTEST_RNG_H

#include <stdint.h>

typedef struct st_rng {
    uint64_t s;
} st_rng;

static inline uint64_t st_next(st_rng *r) { /* splitmix64 */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* uniform in [-a, a) */
static inline float st_uniform(st_rng *r, float a) {
    return (float)((double)(st_next(r) >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0) * a;
}

#endif
