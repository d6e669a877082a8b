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
 * tail is zero-padded and the length folded into the final mix.  Roughly memory speed.
 */
#ifndef SR_BASE_HASH64_H
#define SR_BASE_HASH64_H

#include <stddef.h>
#include <stdint.h>

uint64_t sr__hash64(const void *data, size_t n, uint64_t seed);

/* Combines a sequence of hashes in order: h = sr__hash64_fold(h, next). */
uint64_t sr__hash64_fold(uint64_t h, uint64_t next);

/* 16 lowercase hex digits and a NUL into buf[17]; returns buf. */
char *sr__hash64_hex(uint64_t h, char buf[17]);

#endif
