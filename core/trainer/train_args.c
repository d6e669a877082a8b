#include "trainer/train_args.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "config/value.h"
#include "task/ctx.h"

/* The value of a trainer key: [task] (after overrides), else the table's default.  The agent
   already checked given values (task_spec.c); this re-check covers a task started otherwise. */
static int get(const sr_ctx *c, const char *name, char **out) {
    const sr_key *k = sr__find_key(sr__trainer_keys, name);
    const char *v = sr_config(c, name);
    char err[256];
    *out = NULL;
    if (!v) v = k->def;
    if (!v) return 0;
    if (sr__value_normalize(k, v, out, err, sizeof err) == 0) return 0;
    sr__log(SR_LOG_ERROR, "[task] %s = \"%s\": %s", name, v, err);
    return -1;
}

static int get_double(const sr_ctx *c, const char *name, double *out) {
    char *v;
    if (get(c, name, &v) != 0) return -1;
    *out = v ? strtod(v, NULL) : 0;
    free(v);
    return 0;
}

static int get_int(const sr_ctx *c, const char *name, long long *out) {
    char *v;
    if (get(c, name, &v) != 0) return -1;
    *out = v ? strtoll(v, NULL, 10) : 0;
    free(v);
    return 0;
}

/* An enumeration key's number: its value (already checked and spelled as in `choices` by get)
   in config/enums.h's list, or `unset` when the key has no value. */
static int member(const char *choices, const char *v, int unset) { return v ? sr__enum_index(choices, 0, v) : unset; }

/* Where [task] key was set ("job.ini:12", "command line --set ..."), for a message. */
static const char *where(const sr_ctx *c, const char *key) {
    const char *w = sr__ctx_task_where(c, key);
    return w ? w : "[task]";
}

/* transformers' save_strategy and logging_strategy, in terms of save_steps and logging_steps:
   what shardrun does the same way is taken, the rest refused by name.  0 or -1. */
static int read_strategies(const sr_ctx *c, sr__train_args *a, const char *save, const char *log) {
    int rc = 0;
    const char *steps = sr_config(c, "save_steps");
    a->save_every = (sr__every)member(SR__SAVE_STRATEGY_CHOICES, save, SR__EVERY_STEPS);
    if (a->save_every == SR__EVERY_BEST) {
        sr__log(SR_LOG_ERROR,
                "%s: [task] save_strategy = best (a checkpoint whenever the metric improves) is not supported; "
                "use save_strategy = steps with save_steps, and metric_for_best_model with save_total_limit to keep "
                "the best checkpoint",
                where(c, "save_strategy"));
        rc = -1;
    } else if (save && a->save_every != SR__EVERY_STEPS && steps) {
        sr__log(SR_LOG_ERROR,
                "%s: [task] save_steps = %s has no effect with save_strategy = %s (%s); remove one of the two",
                where(c, "save_steps"), steps, save, where(c, "save_strategy"));
        rc = -1;
    } else if (save && a->save_every == SR__EVERY_STEPS) {
        if (!steps) a->save_steps = 500; /* transformers' default */
        if (a->save_steps <= 0) {
            sr__log(SR_LOG_ERROR, "%s: [task] save_strategy = steps needs save_steps >= 1 (%s: save_steps = %s)",
                    where(c, "save_strategy"), where(c, "save_steps"), steps);
            rc = -1;
        }
    }
    const char *lsteps = sr_config(c, "logging_steps");
    a->log_every = (sr__every)member(SR__INTERVAL_CHOICES, log, SR__EVERY_STEPS);
    if (a->log_every != SR__EVERY_STEPS && lsteps) {
        sr__log(SR_LOG_ERROR,
                "%s: [task] logging_steps = %s has no effect with logging_strategy = %s (%s); remove one of the two",
                where(c, "logging_steps"), lsteps, log, where(c, "logging_strategy"));
        rc = -1;
    }
    return rc;
}

int sr__train_args_read(const sr_ctx *c, sr__train_args *a) {
    memset(a, 0, sizeof *a);
    int rc = 0;
    rc |= get_double(c, "num_train_epochs", &a->num_train_epochs);
    rc |= get_int(c, "max_steps", &a->max_steps);
    rc |= get_int(c, "per_device_train_batch_size", &a->per_device_train_batch_size);
    rc |= get_int(c, "gradient_accumulation_steps", &a->gradient_accumulation_steps);
    rc |= get_double(c, "learning_rate", &a->learning_rate);
    rc |= get_double(c, "adam_beta1", &a->adam_beta1);
    rc |= get_double(c, "adam_beta2", &a->adam_beta2);
    rc |= get_double(c, "adam_epsilon", &a->adam_epsilon);
    rc |= get_double(c, "weight_decay", &a->weight_decay);
    rc |= get_double(c, "max_grad_norm", &a->max_grad_norm);
    rc |= get_int(c, "warmup_steps", &a->warmup_steps);
    rc |= get_int(c, "logging_steps", &a->logging_steps);
    rc |= get_int(c, "save_steps", &a->save_steps);
    rc |= get_int(c, "seed", &a->seed);
    rc |= get_int(c, "eval_steps", &a->eval_steps);
    rc |= get_int(c, "per_device_eval_batch_size", &a->per_device_eval_batch_size);
    rc |= get_int(c, "save_total_limit", &a->save_total_limit);
    rc |= get_int(c, "max_train_samples", &a->max_train_samples);
    rc |= get_int(c, "max_eval_samples", &a->max_eval_samples);
    char *sched = NULL, *save_final = NULL, *overwrite = NULL, *eval = NULL, *on_start = NULL, *metric = NULL,
         *best = NULL, *nan = NULL, *save_strategy = NULL, *log_strategy = NULL;
    rc |= get(c, "lr_scheduler_type", &sched);
    rc |= get(c, "save_final", &save_final);
    rc |= get(c, "overwrite_output_dir", &overwrite);
    rc |= get(c, "eval_strategy", &eval);
    rc |= get(c, "eval_on_start", &on_start);
    rc |= get(c, "metric_for_best_model", &metric);
    rc |= get(c, "load_best_model_at_end", &best);
    rc |= get(c, "nan_policy", &nan);
    rc |= get(c, "save_strategy", &save_strategy);
    rc |= get(c, "logging_strategy", &log_strategy);
    if (!rc) rc = read_strategies(c, a, save_strategy, log_strategy);
    free(save_strategy), free(log_strategy);
    if (!rc) {
        a->nan_policy = (sr__nan_policy)member(SR__NAN_POLICY_CHOICES, nan, SR__NAN_STOP);
        a->eval_strategy = (sr__every)member(SR__INTERVAL_CHOICES, eval, SR__EVERY_NEVER);
        a->lr_scheduler_type = (sr__schedule)member(SR__SCHEDULE_CHOICES, sched, SR__SCHED_LINEAR);
        a->eval_on_start = !strcmp(on_start, "true");
        a->load_best_model_at_end = !strcmp(best, "true");
        a->track_best = metric != NULL || a->load_best_model_at_end;
    }
    free(eval), free(on_start), free(metric), free(best), free(nan), free(sched);
    if (rc) {
        free(save_final), free(overwrite);
        return -1;
    }
    if (a->eval_steps <= 0) a->eval_steps = a->logging_steps;
    a->overwrite_output_dir = overwrite && !strcmp(overwrite, "true");
    free(overwrite);
    /* paths: relative to the job file when written there (sr_config_path) */
    a->init_weights = sr_config_path(c, "init_weights");
    if (a->init_weights && !*a->init_weights) a->init_weights = NULL;
    a->init_adapters = sr_config_path(c, "init_adapters");
    if (a->init_adapters && !*a->init_adapters) a->init_adapters = NULL;
    a->eval_files = sr_config(c, "eval_files"); /* patterns, relative to sr_config_base_dir (choice_eval.c) */
    if (a->eval_files && !*a->eval_files) a->eval_files = NULL;
    a->output_dir = sr_config_path(c, "output_dir");
    a->resume_allow_changes = sr_config(c, "resume_allow_changes");
    a->freeze = sr_config(c, "freeze"); /* applied to the model once the task described it (model_freeze.c) */
    if (a->output_dir && !*a->output_dir) a->output_dir = NULL;
    a->save_final =
        save_final ? !strcmp(save_final, "true") : a->output_dir != NULL && a->save_every != SR__EVERY_NEVER;
    free(save_final);
    if (a->max_steps <= 0 && !(a->num_train_epochs > 0)) {
        sr__log(SR_LOG_ERROR, "[task] neither max_steps nor num_train_epochs is positive: nothing to train");
        rc = -1;
    }
    const char *r = sr_config(c, "resume_from_checkpoint");
    int yes = 0;
    if (r && *r) {
        /* a boolean (true: the latest checkpoint in output_dir), or a checkpoint folder */
        a->resume_from_checkpoint = sr__parse_bool(r, &yes) == 0 ? (yes ? "latest" : NULL)
                                    : !strcmp(r, "latest")       ? r
                                                                 : sr_config_path(c, "resume_from_checkpoint");
        if (a->resume_from_checkpoint && !strcmp(a->resume_from_checkpoint, "latest") && !a->output_dir) {
            sr__log(SR_LOG_ERROR,
                    "[task] resume_from_checkpoint = %s needs output_dir (where the latest "
                    "checkpoint-N folder is looked for)",
                    r);
            rc = -1;
        }
    }
    if (a->load_best_model_at_end &&
        (a->eval_strategy != SR__EVERY_STEPS || a->save_steps <= 0 || a->save_steps % a->eval_steps != 0)) {
        sr__log(SR_LOG_ERROR,
                "[task] load_best_model_at_end = true needs an evaluation at every checkpoint: "
                "eval_strategy = steps and save_steps a multiple of eval_steps (now eval_strategy = %s, "
                "save_steps = %lld, eval_steps = %lld), as transformers' Trainer requires",
                sr__every_name(a->eval_strategy), a->save_steps, a->eval_steps);
        rc = -1;
    }
    if (a->track_best && a->eval_strategy == SR__EVERY_NEVER) {
        sr__log(SR_LOG_ERROR, "[task] metric_for_best_model needs an evaluation: set eval_strategy = steps or epoch");
        rc = -1;
    }
    if ((a->save_steps > 0 || a->save_final || a->save_every == SR__EVERY_EPOCH) && !a->output_dir) {
        sr__log(SR_LOG_ERROR, "[task] save_steps/save_strategy/save_final need output_dir (where checkpoints go)");
        rc = -1;
    }
    return rc;
}

double sr__lr_at(const sr__train_args *a, long long step, long long total) {
    double base = a->learning_rate, w = (double)a->warmup_steps, s = (double)step;
    if (a->lr_scheduler_type == SR__SCHED_CONSTANT) return base;
    if (s < w) return base * s / (w > 1 ? w : 1);
    if (a->lr_scheduler_type == SR__SCHED_CONSTANT_WARMUP) return base;
    double rest = (double)total - w, done = s - w;
    if (rest < 1) rest = 1;
    if (a->lr_scheduler_type == SR__SCHED_COSINE) {
        double p = done / rest;
        double v = 0.5 * (1.0 + cos(3.14159265358979323846 * p));
        return base * (v > 0 ? v : 0);
    }
    double v = ((double)total - s) / rest;
    return base * (v > 0 ? v : 0);
}
