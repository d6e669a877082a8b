/*
 * Checkpoints of a training run, per FSDP_STATE_DICT_TYPE:
 *   SHARDED_STATE_DICT (and LOCAL): every rank of one replica writes
 *     shard-RRRRR-of-SSSSS.safetensors (R: its rank in the shard group of S ranks) holding, per
 *     unit U, the fp32 tensors uU.param, uU.exp_avg and uU.exp_avg_sq (its shard of the unit's
 *     flat buffer).  The file's __metadata__ is the index: format = shardrun-sharded-1,
 *     shard_group_size, shard_rank, "unit:U" = "numel padded shard" and, per parameter (tied ones
 *     under their owner only), "param:NAME" = "unit offset numel".  Loading reads the index of
 *     shard 0 and copies each parameter's range out of whichever files hold it, so another world
 *     size or wrap policy can resume from it;
 *   FULL_STATE_DICT: rank 0 writes model.safetensors (original names and shapes, fp32) and
 *     optimizer.safetensors (NAME.exp_avg, NAME.exp_avg_sq), gathered one unit at a time.
 * Both add trainer_state.json, one JSON object: global_step, adam_steps, seed, loss_scale and
 * good_steps (read back on resume), world_size, shard_group_size, state_dict_type and
 * model_params (for the reader).
 * A checkpoint is written into checkpoint-N.tmp and renamed to checkpoint-N once every rank has
 * finished: a run killed while saving leaves the previous checkpoint as it was.
 */
#ifndef SR_FSDP_CHECKPOINT_H
#define SR_FSDP_CHECKPOINT_H

#include "fsdp/engine.h"

typedef struct sr__train_state {
    long long global_step; /* optimizer steps done */
    long long seed;
} sr__train_state;

/* Collective: every rank calls it.  Writes output_dir/checkpoint-<step>.  0 or -1. */
int sr__ckpt_save(sr__engine *e, const char *output_dir, const sr__train_state *ts);
/* Collective: loads `dir` (any world size) into the engine's shards; fills *ts.  0 or -1. */
int sr__ckpt_load(sr__engine *e, const char *dir, sr__train_state *ts);
/* Creates output_dir and its missing parents (mkdir -p).  0, or -1 after printing why. */
int sr__make_output_dir(const char *dir);
/* output_dir/checkpoint-N with the largest N that is complete, or NULL (a new string). */
char *sr__ckpt_latest(const char *output_dir);

#endif
