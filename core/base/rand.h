/*
 * Counter-based random numbers: a value is a function of a key and an index, never of how many
 * values were drawn before, so every rank and every world size computes the same one (the
 * trainer's shuffles, the FSDP engine's seeded initialisers).
 */
#ifndef SR__BASE_RAND_H
#define SR__BASE_RAND_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64's finaliser: a bijection of 64-bit values with good avalanche. */
uint64_t sr__mix64(uint64_t x);
/* FNV-1a of a NUL-terminated string: a key per parameter name. */
uint64_t sr__hash_str(const char *s);

/* n bytes from /dev/urandom, the one source that is NOT reproducible: run ids and rendezvous
   tokens. */
void sr__random_bytes(unsigned char *b, size_t n);

#endif
