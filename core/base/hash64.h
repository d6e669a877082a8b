/*
 * A fast 64-bit hash of a byte buffer: the content hash of checkpoint files (core/fsdp/checkpoint.c
 * hashes every tensor as it writes it and again when it loads it).  It detects damage (flipped
 * bits, appended or missing bytes, moved blocks), not an attacker: it is no cryptographic hash.
 *
 * Lifecycle: none, a pure function of (bytes, length, seed); the same value on every machine
 * (little-endian reads) and every build.
 *
 * Design (written for shardrun): 8 lanes of 64-bit accumulators take one 64-byte stripe at a
 * time; each lane adds the product of the two 32-bit halves of (word ^ a key that depends on the
 * lane and the stripe's position) and, in its neighbour lane, the raw word, so a change of any one
 * word always changes an accumulator; every 16 stripes the lanes are scrambled by a bijection; the
 * tail is zero-padded and the length folded into the final mix.  On x86-64 the stripe loop is also
 * compiled for AVX2 and picked at load time (same values): ~15 GB/s on one core of the benchmark
 * machine (baseline SSE2: ~8.6 GB/s, memcpy ~12 GB/s); sr__hash64_copy copies while it hashes at
 * ~10.6 GB/s, so a loader verifies what it copies for about a tenth of the copy's time.
 */
#ifndef SR_BASE_HASH64_H
#define SR_BASE_HASH64_H

#include <stddef.h>
#include <stdint.h>

uint64_t sr__hash64(const void *data, size_t n, uint64_t seed);

/* The same hash taken piece by piece: init, then update (or copy) with consecutive pieces of the
   data in order, then final; the value equals sr__hash64 of the concatenation. */
typedef struct sr__hash64_state {
    uint64_t acc[8], pos, n, seed; /* lanes, whole stripes taken, bytes taken, seed */
    unsigned char buf[64];         /* the partial stripe */
    size_t nbuf;
} sr__hash64_state;
void sr__hash64_init(sr__hash64_state *s, uint64_t seed);
void sr__hash64_update(sr__hash64_state *s, const void *data, size_t n);
/* update with the next n bytes at src that also copies them to dst (dst may be NULL): one pass over
   memory instead of a copy and a hash (the checkpoint loader verifies what it copies this way). */
void sr__hash64_copy(sr__hash64_state *s, void *dst, const void *src, size_t n);
uint64_t sr__hash64_final(const sr__hash64_state *s);

/* Combines a sequence of hashes in order: h = sr__hash64_fold(h, next). */
uint64_t sr__hash64_fold(uint64_t h, uint64_t next);

/* 16 lowercase hex digits and a NUL into buf[17]; returns buf. */
char *sr__hash64_hex(uint64_t h, char buf[17]);

#endif
