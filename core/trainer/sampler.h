/*
 * Which samples each data-parallel rank trains on, like torch's DistributedSampler
 * (shuffle=True, drop_last=False): a permutation seeded by seed + epoch, padded by wrapping
 * around to a multiple of the number of ranks, rank r taking every D-th index from r.
 * Stateless: the position is a function of (epoch, batch), so a resumed run needs no extra state.
 */
#ifndef SR__TRAINER_SAMPLER_H
#define SR__TRAINER_SAMPLER_H

#include <stdint.h>

typedef struct sr__sampler {
    int64_t n;       /* samples in the dataset */
    int ranks, rank; /* data-parallel ranks */
    uint64_t seed;
    int64_t epoch; /* the permutation below belongs to this epoch (-1: none yet) */
    int64_t *perm;
    int64_t per_rank; /* ceil(n / ranks) */
} sr__sampler;

/* 0, or -1 when the permutation (n x 8 bytes) cannot be allocated (s->perm NULL; freeing is safe). */
int sr__sampler_init(sr__sampler *s, int64_t n, int ranks, int rank, uint64_t seed);
void sr__sampler_free(sr__sampler *s);
/* Indices [first, first + count) of this rank's share of `epoch` into out; returns how many
   (fewer at the end of the epoch). */
int64_t sr__sampler_take(sr__sampler *s, int64_t epoch, int64_t first, int64_t count, int64_t *out);

#endif
