/*
 * Hashes of byte buffers.
 *
 * sr__hash64 and its streaming form: XXH3, 64-bit (xxHash 0.8, Debian's libxxhash; the published
 * specification is xxHash's doc/xxhash_spec.md), the content hash of checkpoint files (format 3,
 * docs/checkpoint-format.md: fsdp/ckpt_*.c hashes every tensor as it writes it and again as it loads
 * it) and of the job files and tokens the agents compare.  It detects damage (flipped bits, appended
 * or missing bytes, moved blocks), not an attacker: it is no cryptographic hash.
 *
 * sr__fnv1a64: FNV-1a, 64-bit, for hash tables keyed by short strings (no seed, no state).
 *
 * Lifecycle: none for the one-shot functions (pure functions of bytes, length and seed, the same
 * value on every machine and build).  A streaming state is init, then update (or copy) with
 * consecutive pieces of the data in order, then final (which leaves it as it was); the value
 * equals sr__hash64 of the concatenation.  The state holds XXH3's 64-byte aligned state: on the
 * stack or in a static it is aligned by the compiler; on the heap use aligned_alloc(64, ...).
 */
#ifndef SR__BASE_HASH64_H
#define SR__BASE_HASH64_H

#include <stddef.h>
#include <stdint.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t's layout, so that a state lives without malloc */
#include <xxhash.h>

uint64_t sr__hash64(const void *data, size_t n, uint64_t seed);

typedef struct sr__hash64_state {
    XXH3_state_t x;
} sr__hash64_state;
void sr__hash64_init(sr__hash64_state *s, uint64_t seed);
void sr__hash64_update(sr__hash64_state *s, const void *data, size_t n);
/* update with the next n bytes at src that also copies them to dst (dst may be NULL): the source is
   read once, in pieces small enough that the hash reads them again from the cache, instead of a copy
   and a hash each reading it from memory (the checkpoint loader verifies what it copies this way). */
void sr__hash64_copy(sr__hash64_state *s, void *dst, const void *src, size_t n);
uint64_t sr__hash64_final(const sr__hash64_state *s);

/* 16 lowercase hex digits and a NUL into buf[17]; returns buf. */
char *sr__hash64_hex(uint64_t h, char buf[17]);

/* FNV-1a 64 of n bytes, continuing from h: start with SR__FNV1A64_BASIS (the offset basis). */
#define SR__FNV1A64_BASIS 14695981039346656037ull
#define SR__FNV1A64_PRIME 1099511628211ull
static inline uint64_t sr__fnv1a64(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * SR__FNV1A64_PRIME;
    return h;
}
/* The same over a NUL-terminated string (without its NUL). */
static inline uint64_t sr__fnv1a64_str(uint64_t h, const char *s) {
    for (; *s; s++) h = (h ^ (unsigned char)*s) * SR__FNV1A64_PRIME;
    return h;
}

#endif
