/* The checkpoint content hash (see hash64.h for the design). */
#include "base/hash64.h"

#include <stdio.h>
#include <string.h>

#include "base/rand.h"

#define LANES 8
#define STRIPE (8 * LANES)
#define SCRAMBLE_EVERY 16 /* stripes */

static const uint64_t KEY[LANES] = {0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull,
                                    0xd6e8feb86659fd93ull, 0xff51afd7ed558ccdull, 0xc4ceb9fe1a85ec53ull,
                                    0x27d4eb2f165667c5ull, 0x85ebca77c2b2ae63ull};
#define POS_STEP 0x2545f4914f6cdd1dull /* odd: every stripe position gets its own keys */
#define SCRAMBLE_MUL 0x9fb21c651e98df25ull

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
static inline uint64_t load64(const unsigned char *p) { /* the value is defined on little-endian words */
    uint64_t v;
    memcpy(&v, p, 8);
    return __builtin_bswap64(v);
}

static inline void stripe(uint64_t acc[LANES], const unsigned char *p, uint64_t pos) {
    uint64_t w[LANES], shift = pos * POS_STEP;
    for (int i = 0; i < LANES; i++) w[i] = load64(p + 8 * i);
    for (int i = 0; i < LANES; i++) {
        uint64_t k = w[i] ^ (KEY[i] + shift);
        acc[i] += (k & 0xffffffffu) * (k >> 32);
    }
    for (int i = 0; i < LANES; i++) acc[i ^ 1] += w[i]; /* a changed word always changes a lane */
}
#else
/* The same arithmetic on GNU C vectors (GCC and Clang): twice the speed of the scalar loop at -O2. */
typedef uint64_t v4 __attribute__((vector_size(32)));
#if defined(__clang__)
#define SWAP_PAIRS(v) __builtin_shufflevector(v, v, 1, 0, 3, 2)
#else
#define SWAP_PAIRS(v) __builtin_shuffle(v, (v4){1, 0, 3, 2})
#endif

static inline void stripe(uint64_t acc[LANES], const unsigned char *p, uint64_t pos) {
    v4 w0, w1, a0, a1;
    memcpy(&w0, p, 32), memcpy(&w1, p + 32, 32), memcpy(&a0, acc, 32), memcpy(&a1, acc + 4, 32);
    uint64_t shift = pos * POS_STEP;
    v4 k0 = {KEY[0] + shift, KEY[1] + shift, KEY[2] + shift, KEY[3] + shift};
    v4 k1 = {KEY[4] + shift, KEY[5] + shift, KEY[6] + shift, KEY[7] + shift};
    k0 ^= w0, k1 ^= w1;
    a0 += (k0 & 0xffffffffu) * (k0 >> 32);
    a1 += (k1 & 0xffffffffu) * (k1 >> 32);
    a0 += SWAP_PAIRS(w0); /* lane i gets word i ^ 1: a changed word always changes a lane */
    a1 += SWAP_PAIRS(w1);
    memcpy(acc, &a0, 32), memcpy(acc + 4, &a1, 32);
}
#endif

static inline void scramble(uint64_t acc[LANES]) { /* a bijection of each lane */
    for (int i = 0; i < LANES; i++) acc[i] = (acc[i] ^ (acc[i] >> 47) ^ KEY[LANES - 1 - i]) * SCRAMBLE_MUL;
}

/* Stripes [pos0, pos0 + count) of the input, at p; with dst, the same bytes are also copied to dst.
   The copy is fused into the hash loop (each 64-byte stripe is loaded once, stored and hashed from
   registers) so a caller copying data it must verify, e.g. a checkpoint load, reads it only once.
   Compiled twice on x86-64 (AVX2 and baseline, picked at load time): with AVX2 a stripe takes two
   vector multiplies instead of four, which lifts the hash from ~9 GB/s to memory speed. */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones) && !defined(__clang__)
#define MULTI_TARGET __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef MULTI_TARGET
#define MULTI_TARGET
#endif

MULTI_TARGET static void stripes(uint64_t acc[LANES], const unsigned char *p, unsigned char *dst, size_t count,
                                 uint64_t pos0) {
    for (size_t i = 0; i < count; i++) {
        uint64_t pos = pos0 + i;
        if (dst) memcpy(dst + i * STRIPE, p + i * STRIPE, STRIPE);
        stripe(acc, p + i * STRIPE, pos);
        if (pos % SCRAMBLE_EVERY == SCRAMBLE_EVERY - 1) scramble(acc);
    }
}

void sr__hash64_init(sr__hash64_state *s, uint64_t seed) {
    memset(s, 0, sizeof *s);
    s->seed = seed;
    for (int i = 0; i < LANES; i++) s->acc[i] = sr__mix64(seed + (uint64_t)i);
}

void sr__hash64_copy(sr__hash64_state *s, void *dst, const void *src, size_t n) {
    const unsigned char *p = src;
    unsigned char *d = dst;
    s->n += n;
    if (s->nbuf) { /* complete the partial stripe of the previous call */
        size_t take = STRIPE - s->nbuf < n ? STRIPE - s->nbuf : n;
        memcpy(s->buf + s->nbuf, p, take);
        if (d) memcpy(d, p, take), d += take;
        s->nbuf += take, p += take, n -= take;
        if (s->nbuf < STRIPE) return;
        stripes(s->acc, s->buf, NULL, 1, s->pos++);
        s->nbuf = 0;
    }
    size_t full = n / STRIPE;
    stripes(s->acc, p, d, full, s->pos);
    s->pos += full, p += full * STRIPE, n -= full * STRIPE;
    if (d) d += full * STRIPE;
    if (n) { /* kept for the next call or the end */
        memcpy(s->buf, p, n);
        if (d) memcpy(d, p, n);
        s->nbuf = n;
    }
}

void sr__hash64_update(sr__hash64_state *s, const void *data, size_t n) { sr__hash64_copy(s, NULL, data, n); }

uint64_t sr__hash64_final(const sr__hash64_state *s) {
    uint64_t acc[LANES];
    memcpy(acc, s->acc, sizeof acc);
    if (s->nbuf) { /* zero-padded; the length below tells "ab" from "ab\0" */
        unsigned char last[STRIPE] = {0};
        memcpy(last, s->buf, s->nbuf);
        stripe(acc, last, s->pos);
    }
    scramble(acc);
    uint64_t h = sr__mix64(s->seed ^ (s->n * POS_STEP));
    for (int i = 0; i < LANES; i++) h = sr__mix64(h ^ acc[i]);
    return h;
}

uint64_t sr__hash64(const void *data, size_t n, uint64_t seed) {
    sr__hash64_state s;
    sr__hash64_init(&s, seed);
    sr__hash64_update(&s, data, n);
    return sr__hash64_final(&s);
}

uint64_t sr__hash64_fold(uint64_t h, uint64_t next) { return sr__mix64(sr__mix64(h) ^ next); }

char *sr__hash64_hex(uint64_t h, char buf[17]) {
    snprintf(buf, 17, "%016llx", (unsigned long long)h);
    return buf;
}
