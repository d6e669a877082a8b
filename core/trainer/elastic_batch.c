/* The global batch of an elastic run (see elastic_batch.h). */
#include "trainer/elastic_batch.h"

#include <limits.h>
#include <stdio.h>

int sr__elastic_batch_rule(long long per_device, long long accum, long long elastic_ranks, long long world_size,
                           sr__elastic_batch *out, char *why, size_t whylen) {
    if (per_device < 1 || accum < 1 || elastic_ranks < 1 || world_size < 1) {
        snprintf(why, whylen,
                 "per_device_train_batch_size %lld, gradient_accumulation_steps %lld, SHARDRUN_ELASTIC_RANKS %lld "
                 "and WORLD_SIZE %lld must each be at least 1",
                 per_device, accum, elastic_ranks, world_size);
        return -1;
    }
    if (world_size > elastic_ranks) {
        snprintf(why, whylen,
                 "WORLD_SIZE %lld is more than SHARDRUN_ELASTIC_RANKS %lld, the ranks of the largest membership the "
                 "job allows",
                 world_size, elastic_ranks);
        return -1;
    }
    long long micro, job, global;
    if (__builtin_mul_overflow(accum, elastic_ranks, &micro) ||
        __builtin_mul_overflow(micro, per_device, &job)) { /* micro-batches of all ranks per step, and G */
        snprintf(why, whylen,
                 "per_device_train_batch_size %lld x gradient_accumulation_steps %lld x SHARDRUN_ELASTIC_RANKS %lld "
                 "does not fit in 64 bits",
                 per_device, accum, elastic_ranks);
        return -1;
    }
    /* ceil(micro / world_size), without micro + world_size - 1 overflowing */
    long long eff = micro / world_size + (micro % world_size != 0);
    if (eff > INT_MAX || __builtin_mul_overflow(eff, world_size, &global) ||
        __builtin_mul_overflow(global, per_device, &global)) {
        snprintf(why, whylen,
                 "gradient_accumulation_steps %lld x SHARDRUN_ELASTIC_RANKS %lld / WORLD_SIZE %lld makes %lld "
                 "micro-batches per step, more than %d",
                 accum, elastic_ranks, world_size, eff, INT_MAX);
        return -1;
    }
    *out = (sr__elastic_batch){eff, global, job, global == job};
    return 0;
}
