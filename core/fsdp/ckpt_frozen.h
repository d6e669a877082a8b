/*
 * The frozen base of a SHARDED checkpoint.  A run with frozen parameters (SR_PARAM_FROZEN, [task]
 * freeze, LoRA's base) saves SHARDED_STATE_DICT checkpoints without the frozen units' values: only
 * the trainable units (values and AdamW moments) and `frozen_digest`, a digest of the frozen values,
 * in every shard file's metadata and in trainer_state.json.  A resume rebuilds the base from the
 * run's own initialisation (init_weights, or the task's initialisers and the seed) as a fresh run
 * does, and refuses to continue when its digest is not the checkpoint's (exit 2).
 *
 * The two layouts are told apart by that entry: shard files with `frozen_digest` leave the frozen
 * units out; shard files without it (written before, or by a run with nothing frozen) hold every
 * unit's values, which a resume loads as it always did.
 *
 * The digest does not depend on the world size, the sharding strategy or the wrap policy, since a
 * SHARDED checkpoint resumes under any of them: it is the sum modulo 2^64, over every element of
 * every frozen parameter (tied names counted once, under their owner; padding excluded), of
 *     mix64(mix64(XXH3-64(NAME) + i) ^ BITS)
 * where NAME is the parameter's name, i the element's index in the parameter (row-major), BITS the
 * 32 bits of its fp32 value and mix64 SplitMix64's finaliser (a bijection).  A sum does not care in
 * which order, or on which rank, an element is counted: each rank of the first replica adds up the
 * elements of its own shards, and the ranks' partial sums are added (an all-gather of one 64-bit
 * word per rank).
 */
#ifndef SR__FSDP_CKPT_FROZEN_H
#define SR__FSDP_CKPT_FROZEN_H

#include <stdint.h>

#include "fsdp/ckpt_source.h"
#include "fsdp/engine_internal.h"

/* The metadata key (shard files) and trainer_state.json member. */
#define SR__CKPT_FROZEN_KEY "frozen_digest"

/* Collective over the world: the frozen base's digest as above, computed once and kept (the engine
   forgets it when its shards are filled again).  0, or -1 on every rank after printing why. */
int sr__frozen_digest(sr__engine *e, uint64_t *out);

/* Loading, after the files are verified and every rank agreed on it.  Collective over the world.
   When the checkpoint holds no frozen base: compares this run's base with its frozen_digest and sets
   *skip (the frozen units are not loaded); else *skip = 0.  0; -1 after printing why; -2 on every
   rank when the digests differ (rank 0 printed what to do: a configuration error). */
int sr__ckpt_frozen_check(sr__engine *e, const sr__ckpt_source *s, long long ckpt_seed, int *skip, char digest[17]);

#endif
