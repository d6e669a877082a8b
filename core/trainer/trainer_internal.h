/*
 * One training run's state, shared by the trainer's parts:
 *   trainer.c    sr__trainer_run: set-up (arguments, the task's model, the engine, parameters),
 *                the step loop (micro-batches, the optimizer step, checkpoints), teardown
 *   train_log.c  what rank 0 shows and keeps of each step: the progress bar, the log line,
 *                output_dir/train_log.jsonl
 *   report.c     this rank's results (sr_report_*) when the last step is done
 *   eval.c       evaluation on the task's eval data (eval_strategy)
 *   choice_eval.c  multiple-choice accuracy on [task] eval_files at each evaluation (choice_file.h)
 *   records.c    log_history, trainer_state.json, loss.svg, save_total_limit (records.h)
 *   nan_policy.c a step whose loss or gradient norm is not finite ([task] nan_policy, nan_policy.h)
 *   resume.c     which checkpoint the run starts from, and whether it may (resume.h)
 *   elastic_batch.c  an elastic run's accumulation for its membership (elastic_batch.h)
 *   profile_table.c  the step profile's tables (SHARDRUN_PROFILE=1, profile_table.h)
 */
#ifndef SR__TRAINER_INTERNAL_H
#define SR__TRAINER_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "fsdp/checkpoint.h"
#include "fsdp/engine.h"
#include "trainer/choice_file.h"
#include "trainer/elastic_batch.h"
#include "trainer/profile_table.h"
#include "trainer/records.h"
#include "trainer/sampler.h"
#include "trainer/train_args.h"

/* Steps per epoch as transformers' Trainer counts them: micro-batches per epoch (the sampler's
   share of this rank, DataLoader without drop_last) // gradient_accumulation_steps. */
typedef struct sr__plan {
    long long micro_per_epoch, steps_per_epoch, total_steps;
} sr__plan;

typedef struct sr__trainer {
    /* the run */
    sr_ctx *ctx;
    const char *task;
    const sr_model_ops *ops;
    sr__train_args a; /* in an elastic run a.gradient_accumulation_steps is the effective one (below) */
    int rank, ws, tty;
    /* an elastic run (SHARDRUN_ELASTIC_RANKS; elastic_batch.h): its ranks (0: not elastic), the job
       file's accumulation, and the batch of this membership, whose accumulation replaced the job
       file's in `a` so that every use of it follows the membership */
    int elastic_ranks;
    long long job_accum;
    sr__elastic_batch elastic;
    /* the model and its engine */
    sr_model *model;
    void *state; /* the task's, from create() */
    sr__engine *e;
    const sr__fsdp_config *cfg;
    sr__train_state ts;      /* global_step: optimizer steps done */
    long long weights_bytes; /* read from init_weights */
    /* the data and the optimizer */
    int64_t nsamples;     /* the samples trained on: the task's, or the first max_train_samples */
    int64_t task_samples; /* the task's (num_samples) */
    sr__sampler smp;
    sr__plan plan;
    int64_t *idx; /* one micro-batch's sample indices */
    sr__optim o;
    /* what the log and the results need */
    FILE *log; /* output_dir/train_log.jsonl (rank 0), or NULL */
    double t0, last_log_t, final_loss;
    long long samples_done, tokens_since_log;
    double *step_times; /* seconds, one per step this run took (grown as it goes; when memory runs out,
                           the first nst steps' only) */
    long long nst, st_cap;
    int skipped;
    long long saved_step;     /* the step of the last checkpoint this run wrote, -1: none */
    char *resume_dir;         /* the checkpoint this run starts from (owned; resume.c), or NULL */
    long long resume_step;    /* the step it holds */
    char resume_strategy[32]; /* the sharding strategy it was saved under ("": not recorded) */
    char resume_data[256];    /* the data identity it records ("": none) */
    char *settings;           /* what checkpoints record of the configuration (owned; resume.c) */
    /* evaluation and the records (eval.c, records.c) */
    sr__history hist;
    int64_t neval;      /* eval samples evaluated (0: no evaluation): the first max_eval_samples, or all */
    int64_t task_neval; /* the task's eval samples */
    int64_t *eval_idx;  /* one eval batch's sample indices */
    double loss_sum;    /* of the steps this run took: the summary's train_loss */
    long long loss_steps;
    double eval_s, last_eval_s; /* seconds of this run's evaluations, and of the last one (0: none yet) */
    long long first_step;       /* the global step this run's step loop started from */
    int bar_len;                /* the length of the progress line last drawn (rank 0, terminal) */
    double eval_metric;         /* the last evaluation's eval_loss, and its step (-1: none) */
    long long eval_step;
    /* multiple-choice evaluation ([task] eval_files; choice_eval.c): the examples, one batch's
       sequences, their tokens and losses; the last evaluation's accuracy (NaN: none) */
    sr__choice_set choice;
    sr_choice_seq *choice_seq;
    int32_t *choice_tok;
    double *choice_loss;
    int choice_per_batch; /* examples per batch */
    double eval_accuracy;
    sr__step_profile prof; /* SHARDRUN_PROFILE=1 (profile_table.h) */
    /* nan_policy.c: steps of this run whose loss or gradient norm was not finite, those of them in a
       row up to the last step, those skipped (nan_policy = skip_step) */
    long long nan_steps, nan_skipped;
    int nan_in_a_row;
} sr__trainer;

/* output_dir/train_log.jsonl (rank 0, with output_dir; else NULL): a resumed run keeps the lines
   up to the step it resumed from and drops those a killed run wrote after it. */
FILE *sr__train_log_open(const sr__train_args *a, int rank, long long resumed_step);
/* After each step: the progress bar (rank 0, on a terminal), and every logging_steps and at the
   last step the log line and its train_log.jsonl record; the tokens/s window restarts then.  0, or
   -1 after an error (memory for the log history ran out). */
int sr__trainer_log_step(sr__trainer *t, double loss, const sr__step_result *r);
/* Rank 0 on a terminal: draws the progress line in place: the bar, the step, then `doing` (e.g.
   "evaluating 3/40 batches, 2.0s left") or else the loss, and the run's elapsed and remaining time
   (doing_left: the seconds `doing` still needs, > 0 when known, counted in). */
void sr__trainer_bar(sr__trainer *t, double loss, const char *doing, double doing_left);
/* The run's results, as sr_report_* values.  0, or -1 when the parameter statistics (a
   collective) failed. */
int sr__trainer_report(sr__trainer *t, double runtime);

/* records.c: see records.h for the order. */
/* An elastic run (t->elastic_ranks > 0): the entry of this attempt's membership at the step it
   starts from: world_size, nodes, gradient_accumulation_steps (effective), global_batch, restart.
   0, or -1 after an error (memory for the log history ran out). */
int sr__records_membership(sr__trainer *t);
/* The eval configuration against the task's eval data; an exit code. */
int sr__records_setup(sr__trainer *t);
/* A resumed run continues the checkpoint's log_history and best checkpoint (a checkpoint without
   them, from an older shardrun: a note, and the records start at its step).  The best checkpoint
   is looked for in this run's output_dir (records.c: find_best_again).  An exit code. */
int sr__records_resume(sr__trainer *t, const char *checkpoint_dir);
/* A logged step's entry (loss, grad_norm, learning_rate, epoch, step).  0, or -1 after an error. */
int sr__records_train_entry(sr__trainer *t, double loss, const sr__step_result *r);
/* Saves checkpoint-<global_step> (collective), then output_dir/trainer_state.json, loss.svg and the
   save_total_limit rotation (rank 0).  0 or -1. */
int sr__records_save_checkpoint(sr__trainer *t);
/* After the last step: the summary line and entry, the files, load_best_model_at_end.  0 or -1. */
int sr__records_finish(sr__trainer *t, double runtime);
void sr__records_free(sr__trainer *t);

/* choice_eval.c */
/* [task] eval_files: read and checked against the task (before step 0).  An exit code. */
int sr__choice_setup(sr__trainer *t);
/* Scores every example (each rank its share): *accuracy = the share of examples whose completion
   with the lowest mean loss is the labelled one, over every rank.  Collective; 0 or -1. */
int sr__choice_evaluate(sr__trainer *t, double *accuracy);
void sr__choice_teardown(sr__trainer *t);

/* eval.c */
/* Evaluates when eval_strategy says this step is due (start: before the first step, for
   eval_on_start).  0 or -1. */
int sr__eval_if_due(sr__trainer *t, int start);
/* evals_left.c: the evaluations eval_strategy has due after global step `step`, up to the last step. */
long long sr__evals_left(const sr__trainer *t, long long step);

#endif
