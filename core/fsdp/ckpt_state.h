/*
 * A checkpoint's trainer_state.json: one JSON object in the shape of transformers' TrainerState
 * (the trainer's members: global_step, epoch, log_history, ...), whose stateful_callbacks.shardrun
 * member holds shardrun's own (docs/checkpoint-format.md "trainer_state.json").  Written last into
 * the checkpoint-N.tmp folder by rank 0; read back by every rank on resume (the resume scalars and
 * the checkpoint id the files must carry) and by fsdp/ckpt_dir.c (who wrote it).
 */
#ifndef SR__FSDP_CKPT_STATE_H
#define SR__FSDP_CKPT_STATE_H

#include <stddef.h>

#include "fsdp/checkpoint.h"
#include "fsdp/ckpt_file.h"

/* trainer_state.json grows with log_history; one larger than this is not ours */
#define SR__CKPT_STATE_MAX_BYTES (256u << 20)

/* The whole of dir/trainer_state.json (a new string of *n bytes, NUL-terminated), or NULL with
   why[] naming the file and what is wrong (missing, not a regular file, larger than
   SR__CKPT_STATE_MAX_BYTES, a read error).  Prints nothing. */
char *sr__ckpt_state_text(const char *dir, size_t *n, char *why, size_t len);

/* Writes dir/trainer_state.json (fsync'd).  0, or -1 after printing why. */
int sr__ckpt_state_write(const sr__engine *e, const char *dir, const sr__train_state *ts, const sr__ckpt_meta *m);

/* Reads dir/trainer_state.json's resume scalars into *ts and the engine (adam_steps, good_steps,
   loss_scale under fp16) and the checkpoint id into id[33].  0, or -1 after printing why. */
int sr__ckpt_state_read(sr__engine *e, const char *dir, sr__train_state *ts, char id[33]);

#endif
