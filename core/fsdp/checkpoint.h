/*
 * Checkpoints of a training run, per FSDP_STATE_DICT_TYPE: SHARDED_STATE_DICT (and LOCAL) writes
 * one shard-RRRRR-of-SSSSS.safetensors per rank of one replica, resumable at any world size or wrap
 * policy; FULL_STATE_DICT writes model.safetensors (HF names and shapes) and optimizer.safetensors
 * from rank 0, with the task's files (sr_model_file: its tokenizer, config.json) hashed in
 * model.safetensors' metadata; both add trainer_state.json (transformers' TrainerState, shardrun's own members under
 * stateful_callbacks.shardrun).  Every file proves what it is (checkpoint id, step, model digest,
 * index hash, an XXH3 hash per tensor), verified on every rank before training resumes.
 *
 * The on-disk format, complete enough to write a reader: docs/checkpoint-format.md.  The code:
 * ckpt_save.c (saving), ckpt_id.c (the checkpoint id), ckpt_load.c (loading), ckpt_verify.c and
 * ckpt_check.c (verification), ckpt_index.c (the shard index), ckpt_state.c (trainer_state.json),
 * ckpt_file.c (writing one file), ckpt_format.c (names and digests), ckpt_source.c (the opened
 * folder), ckpt_files.c (the task's files: tokenizer, config.json), ckpt_frozen.c (the frozen base a SHARDED checkpoint leaves out, and its digest); ckpt_dir.c: the checkpoint-N folders of an output_dir.  [shardrun] log_level = debug prints each rank's save and
 * load time and its hashing time.
 */
#ifndef SR__FSDP_CHECKPOINT_H
#define SR__FSDP_CHECKPOINT_H

#include "fsdp/engine.h"

typedef struct sr__train_state {
    long long global_step; /* optimizer steps done */
    long long seed;
    char job_id[80];      /* SHARDRUN_JOB_ID of the run that saves ("" when unknown) */
    char requeue_key[96]; /* SHARDRUN_REQUEUE_KEY of the run that saves ("" when none) */
    char run_id[80];      /* the training run this continues: the job_id of the launch that started it
                              from scratch, kept by every resume (fsdp/ckpt_dir.h) */
    /* Saving: what the run was configured with, as JSON members of stateful_callbacks.shardrun
       ("\"mixed_precision\": ..., \"task_settings\": {...}"), from the trainer; NULL: none. */
    const char *settings;
    /* Saving: the members transformers' TrainerState has (global_step, epoch, log_history, ...), as
       a JSON fragment ("\"a\": 1, \"b\": [...]"), from the trainer; NULL: global_step only. */
    const char *hf_members;
    /* Saving: this rank could not build the above (out of memory, said already): the save fails on
       every rank, together, before writing anything. */
    int incomplete;
    /* Loading: the checkpoint's frozen_digest when it holds no frozen base and this run's base matched
       it (fsdp/ckpt_frozen.h), else "". */
    char frozen_digest[17];
} sr__train_state;

/* Collective: every rank calls it.  Writes output_dir/checkpoint-<step>.  0 or -1. */
int sr__ckpt_save(sr__engine *e, const char *output_dir, const sr__train_state *ts);
/* Collective: loads `dir` (any world size) into the engine's shards; fills *ts.  A SHARDED checkpoint
   saved without its frozen base (sr__ckpt_without_base) needs this run's base in place first (as a
   fresh run initialises it), which must match the checkpoint's frozen_digest.  0, -1, or -2 on every
   rank when the checkpoint holds another model or the base is another one (a configuration error,
   said before any value is copied). */
int sr__ckpt_load(sr__engine *e, const char *dir, sr__train_state *ts);
/* Whether dir is a SHARDED checkpoint saved without its frozen base (fsdp/ckpt_frozen.h).  Quiet. */
int sr__ckpt_without_base(const char *dir);
/* Creates output_dir and its missing parents (mkdir -p).  0, or -1 after printing why. */
int sr__make_output_dir(const char *dir);
#endif
