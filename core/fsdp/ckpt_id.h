/*
 * The checkpoint id: a digest of the state a checkpoint holds (every rank's hash of its master,
 * exp_avg and exp_avg_sq shards and the resume scalars, combined in rank order by XXH3-128), so that
 * the same id means the same saved state.  A run resumed after a failure or a preemption then writes
 * checkpoints that are byte for byte those of an uninterrupted run, while a file of another run or
 * another step still carries another id and is refused on resume (docs/checkpoint-format.md).
 */
#ifndef SR__FSDP_CKPT_ID_H
#define SR__FSDP_CKPT_ID_H

#include "fsdp/checkpoint.h"
#include "fsdp/ckpt_file.h"

/* Collective: fills *m (id, model digest, step, world and shard group size); the hashing time goes
   to *tm.  0, or -1 on every rank after printing why. */
int sr__ckpt_make_meta(sr__engine *e, const sr__train_state *ts, sr__ckpt_meta *m, sr__ckpt_times *tm);

#endif
