/*
 * The trainer's arguments, read from [task] with HuggingFace TrainingArguments' names and
 * defaults (num_train_epochs, max_steps, per_device_train_batch_size, ...), and the learning-rate
 * schedules they name.  Their enumerations (lr_scheduler_type, the strategies, nan_policy) are
 * config/enums.h's lists.  Read once per worker, before the model is built.
 */
#ifndef SR__TRAINER_ARGS_H
#define SR__TRAINER_ARGS_H

#include "config/enums.h"
#include "config/env_table.h"
#include "shardrun/task.h"

/* Bounds of the step and batch keys, so that the samples a run plans (steps x per-device batch x
   accumulation x ranks, at most SR__TRAIN_MAX_SAMPLES) and their tokens fit in 64 bits however long
   a sample is (up to 2^23 tokens), and a micro-batch's buffers stay allocatable. */
#define SR__TRAIN_MAX_STEPS 1000000000LL  /* max_steps, and the steps num_train_epochs may give */
#define SR__TRAIN_MAX_BATCH 1048576LL     /* per_device_train_batch_size, gradient_accumulation_steps: 2^20 */
#define SR__TRAIN_MAX_SAMPLES (1LL << 40) /* samples a run may plan in all ranks together */

typedef struct sr__train_args {
    double num_train_epochs;
    long long max_steps; /* > 0 overrides num_train_epochs */
    long long per_device_train_batch_size, gradient_accumulation_steps;
    double learning_rate, adam_beta1, adam_beta2, adam_epsilon, weight_decay, max_grad_norm;
    long long warmup_steps;
    sr__schedule lr_scheduler_type;
    long long logging_steps, save_steps, seed;
    /* save_strategy, logging_strategy: every epoch and never are turned into save_steps and
       logging_steps once the plan knows the steps of an epoch (trainer.c) */
    sr__every save_every, log_every;
    const char *init_weights;           /* safetensors file to start from, or NULL */
    const char *init_adapters;          /* PEFT adapter folder the adapters start from, or NULL */
    const char *eval_files;             /* [task] eval_files: multiple-choice eval files (choice_file.h), or NULL */
    const char *output_dir;             /* NULL: nothing is written */
    const char *resume_from_checkpoint; /* NULL, "latest", or a checkpoint folder */
    const char *resume_allow_changes;   /* [task] keys a resume may change, comma-separated, "all", or NULL */
    const char *freeze;                 /* [task] freeze: globs of the parameters not trained, or NULL */
    int save_final;                     /* a checkpoint after the last step (default: when output_dir is set) */
    int overwrite_output_dir;           /* an output_dir holding checkpoints may be written over */
    /* evaluation and the records (eval.c, records.c) */
    sr__every eval_strategy; /* never, steps or epoch */
    long long eval_steps;    /* logging_steps unless given */
    long long per_device_eval_batch_size;
    long long max_train_samples, max_eval_samples; /* the first N samples of each set; 0: all */
    int eval_on_start;
    long long save_total_limit; /* 0: keep every checkpoint */
    int track_best;             /* metric_for_best_model is set (eval_loss: lower is better) */
    int load_best_model_at_end;
    sr__nan_policy nan_policy; /* what a step whose loss or gradient norm is not finite does (nan_policy.h) */
} sr__train_args;

/* [task] keys the trainer reads for a model task (train_keys.c), NULL-name terminated: the
   agent checks them before any worker starts, the trainer reads them, `shardrun reference`
   documents them. */
extern const sr_key sr__trainer_keys[];

/* 0, or -1 after printing every bad key. */
int sr__train_args_read(const sr_ctx *ctx, sr__train_args *a);
/* Learning rate for optimizer step `step` (0-based) of `total`, as transformers' schedulers. */
double sr__lr_at(const sr__train_args *a, long long step, long long total);

#endif
