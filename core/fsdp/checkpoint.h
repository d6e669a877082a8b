/*
 * Checkpoints of a training run, per FSDP_STATE_DICT_TYPE:
 *   SHARDED_STATE_DICT (and LOCAL): every rank of one replica writes
 *     shard-RRRRR-of-SSSSS.safetensors (R: its rank in the shard group of S ranks) holding, per
 *     unit U, the fp32 tensors uU.param, uU.exp_avg and uU.exp_avg_sq (its shard of the unit's
 *     flat buffer).  Its __metadata__ is the index: format = shardrun-sharded-2, "unit:U" =
 *     "numel padded shard" and, per parameter (tied ones under their owner only), "param:NAME" =
 *     "unit offset numel [shape]".  Loading reads the index of shard 0 and copies each parameter's
 *     range out of whichever files hold it, so another world size or wrap policy can resume from it;
 *   FULL_STATE_DICT: rank 0 writes model.safetensors (original names and shapes, fp32, format =
 *     pt) and optimizer.safetensors (NAME.exp_avg, NAME.exp_avg_sq), gathered one unit at a time.
 * Both add trainer_state.json, one JSON object in the shape of transformers' TrainerState (the
 * trainer's members: global_step, epoch, log_history, ...; TrainerState.load_from_json reads it),
 * whose "stateful_callbacks" member holds shardrun's own under "shardrun": global_step, adam_steps,
 * seed, loss_scale and good_steps (read back on resume), checkpoint_id and model_digest (checked
 * on resume), world_size, shard_group_size, state_dict_type and model_params (for the reader).  A
 * checkpoint of an earlier shardrun, which has these at the top level, reads the same.
 * A checkpoint is written into checkpoint-N.tmp and renamed to checkpoint-N once every rank has
 * finished: a run killed while saving leaves the previous checkpoint as it was.
 *
 * Integrity.  A worker knows no run fingerprint; a checkpoint proves what it is with three things
 * instead: a checkpoint id (a 128-bit digest of the state saved: every rank's hash of its master,
 * exp_avg and exp_avg_sq shards and the resume scalars, combined in rank order; the same state gives
 * the same id, so a resumed run writes the bytes an uninterrupted one writes), the step,
 * and the model digest (base/hash64.h over every parameter's name, shape and tie, independent of
 * declaration order, world size and wrap policy).  Every safetensors file of a checkpoint says in
 * its __metadata__:
 *   shardrun_checkpoint = 2 (this format; a file without it comes from an older shardrun and is
 *   refused), file = shard | model | optimizer, checkpoint_id, global_step, world_size,
 *   shard_group_size, model_digest, shard_rank (shards only), index_hash (the hash of every other
 *   metadata entry but the hash:* ones, in order), and "hash:TENSOR" = the hash of that tensor's
 *   bytes (16 hex digits), taken as the tensor is written and set in place of a placeholder before
 *   the file is finished (no second pass).
 * sr__ckpt_load verifies, before training starts and on every rank: trainer_state.json names a
 * checkpoint_id; every file has the metadata, an intact index, its role, the checkpoint_id and step
 * of trainer_state.json (or, when no file has, trainer_state.json is the one named), shard file R
 * says shard_rank R of as many files as the folder holds; the model digest and parameter list match
 * the model being resumed (a checkpoint with parameters the model lacks -- unused tensors -- is
 * refused like one lacking parameters); no file has bytes after its last tensor (io/safetensors.c);
 * every tensor's data matches its hash.  The data hashes are split over the ranks: each tensor is
 * hashed once, by the rank that copies the most of it, in the same pass as that copy (no second
 * read of the data; what that rank does not copy itself it hashes from the file), and a tensor no
 * rank copies by ranks in turn; all of it before sr__ckpt_load returns.  Any difference: one
 * message naming the file and what differs, and -1 on every rank.  [shardrun] log_level = debug
 * prints each rank's save and load time and its hashing time.
 */
#ifndef SR_FSDP_CHECKPOINT_H
#define SR_FSDP_CHECKPOINT_H

#include "fsdp/engine.h"

typedef struct sr__train_state {
    long long global_step; /* optimizer steps done */
    long long seed;
    char job_id[80];       /* SHARDRUN_JOB_ID of the run that saves ("" when unknown) */
    char requeue_key[96];  /* SHARDRUN_REQUEUE_KEY of the run that saves ("" when none) */
    char run_id[80];       /* the training run this continues: the job_id of the launch that started it
                              from scratch, kept by every resume (fsdp/ckpt_dir.h) */
    /* Saving: what the run was configured with, as JSON members of stateful_callbacks.shardrun
       ("\"mixed_precision\": ..., \"task_settings\": {...}"), from the trainer; NULL: none. */
    const char *settings;
    /* Saving: the members transformers' TrainerState has (global_step, epoch, log_history, ...), as
       a JSON fragment ("\"a\": 1, \"b\": [...]"), from the trainer; NULL: global_step only. */
    const char *hf_members;
} sr__train_state;

/* Collective: every rank calls it.  Writes output_dir/checkpoint-<step>.  0 or -1. */
int sr__ckpt_save(sr__engine *e, const char *output_dir, const sr__train_state *ts);
/* Collective: loads `dir` (any world size) into the engine's shards; fills *ts.  0 or -1. */
int sr__ckpt_load(sr__engine *e, const char *dir, sr__train_state *ts);
/* Creates output_dir and its missing parents (mkdir -p).  0, or -1 after printing why. */
int sr__make_output_dir(const char *dir);
#endif
