/* XXH3 (64-bit) through libxxhash, and the copy that hashes what it copies (see hash64.h). */
#include "base/hash64.h"

#include <stdio.h>
#include <string.h>

/* Pieces of the fused copy: the copy brings each piece into L1/L2, the hash reads it from there. */
#define COPY_PIECE (16u << 10)

uint64_t sr__hash64(const void *data, size_t n, uint64_t seed) { return XXH3_64bits_withSeed(data, n, seed); }

void sr__hash64_init(sr__hash64_state *s, uint64_t seed) {
    XXH3_INITSTATE(&s->x);
    XXH3_64bits_reset_withSeed(&s->x, seed);
}

void sr__hash64_update(sr__hash64_state *s, const void *data, size_t n) { XXH3_64bits_update(&s->x, data, n); }

void sr__hash64_copy(sr__hash64_state *s, void *dst, const void *src, size_t n) {
    if (!dst) {
        XXH3_64bits_update(&s->x, src, n);
        return;
    }
    unsigned char *d = dst;
    const unsigned char *p = src;
    for (size_t at = 0; at < n; at += COPY_PIECE) {
        size_t k = n - at < COPY_PIECE ? n - at : COPY_PIECE;
        memcpy(d + at, p + at, k);
        XXH3_64bits_update(&s->x, d + at, k);
    }
}

uint64_t sr__hash64_final(const sr__hash64_state *s) { return XXH3_64bits_digest(&s->x); }

char *sr__hash64_hex(uint64_t h, char buf[17]) {
    snprintf(buf, 17, "%016llx", (unsigned long long)h);
    return buf;
}
