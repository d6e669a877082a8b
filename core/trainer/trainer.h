/*
 * The trainer: runs a model task (shardrun/model.h) the way transformers' Trainer runs a model
 * under `accelerate launch` — arguments from [task], a DistributedSampler-style data split,
 * AdamW with a warmup schedule, gradient accumulation, clipping, logging on rank 0, checkpoints
 * and resume — with the FSDP engine doing every collective.
 */
#ifndef SR__TRAINER_H
#define SR__TRAINER_H

#include "shardrun/model.h"

/* Runs the whole training in this worker; the exit code (0 ok, 1 failed, 2 bad configuration). */
int sr__trainer_run(sr_ctx *ctx, const char *task_name, const sr_model_ops *ops);

#endif
