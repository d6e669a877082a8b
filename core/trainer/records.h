/*
 * The trainer's records, as transformers' Trainer keeps them: log_history (one entry per logged
 * step, per evaluation, and the closing summary; in an elastic run also one per attempt, its
 * membership), the best checkpoint by eval loss, and what is
 * written from them -- trainer_state.json in the shape of HF's TrainerState (in every checkpoint
 * and in output_dir), output_dir/loss.svg, and the save_total_limit rotation of checkpoint-N
 * folders.
 *
 * Lifecycle, driven by trainer.c (every rank keeps the same records; rank 0 writes the files):
 *   sr__records_setup (after the engine exists: checks the eval configuration against the task)
 *   -> sr__records_resume (a resumed run: log_history and the best checkpoint from the checkpoint)
 *   -> sr__records_membership (an elastic run, before its first step: this attempt's membership)
 *   -> per step: sr__records_train_entry (at logging steps, train_log.c), sr__eval_if_due (eval.c)
 *   -> at a save: sr__records_save_checkpoint (the checkpoint with its trainer_state.json, then
 *      output_dir/trainer_state.json, loss.svg and the rotation)
 *   -> sr__records_finish (the summary entry and line, the files again, load_best_model_at_end)
 *   -> sr__records_free.
 */
#ifndef SR__TRAINER_RECORDS_H
#define SR__TRAINER_RECORDS_H

#include <stddef.h>

#include "base/strbuf.h"

/* One log_history entry: numbers under names of SR__HIST_KEYS (NaN: written as null). */
#define SR__HIST_MAX 10
typedef struct sr__hist_entry {
    int n;
    int key[SR__HIST_MAX]; /* index into sr__hist_keys */
    double v[SR__HIST_MAX];
} sr__hist_entry;

typedef struct sr__history {
    sr__hist_entry *e;
    int n, cap;
    double best_metric;    /* NaN: none yet */
    char *best_checkpoint; /* the folder, or NULL */
} sr__history;

/* The names entries use ("loss", "eval_loss", "step", ...), NULL-terminated. */
extern const char *const sr__hist_keys[];
int sr__hist_key(const char *name);

/* Appends an entry of n (name, value) pairs.  0, or -1 when out of memory. */
int sr__history_add(sr__history *h, int n, const char *const *names, const double *values);
void sr__history_free(sr__history *h);
/* The value of `name` in entry e, or NaN. */
double sr__hist_get(const sr__hist_entry *e, const char *name);
/* A number as log_history writes it: integers for "step" and an elastic run's membership counts,
   else %.9g; null for NaN/inf. */
void sr__hist_number(char *buf, size_t len, int key, double v);

/* Reads output_dir's or a checkpoint's trainer_state.json: log_history, best_metric and
   best_model_checkpoint.  0, or -1 with why[] (naming the file). */
int sr__history_read(const char *path, sr__history *h, char *why, size_t len);

#endif
