#include "train_args.h"

#include "../../env/value.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static int positive(const char *key, long long v) {
    if (v > 0) return 0;
    fprintf(stderr, "shardrun: error: [task] %s = %lld: expected a positive integer\n", key, v);
    return -1;
}

int sr__train_args_read(const sr_ctx *c, sr__train_args *a) {
    memset(a, 0, sizeof *a);
    int rc = 0;
    /* transformers' TrainingArguments defaults, except save_steps: nothing is saved unless asked */
    rc |= sr_config_double(c, "num_train_epochs", 3.0, &a->num_train_epochs);
    rc |= sr_config_int(c, "max_steps", -1, &a->max_steps);
    rc |= sr_config_int(c, "per_device_train_batch_size", 8, &a->per_device_train_batch_size);
    rc |= sr_config_int(c, "gradient_accumulation_steps", 1, &a->gradient_accumulation_steps);
    rc |= sr_config_double(c, "learning_rate", 5e-5, &a->learning_rate);
    rc |= sr_config_double(c, "adam_beta1", 0.9, &a->adam_beta1);
    rc |= sr_config_double(c, "adam_beta2", 0.999, &a->adam_beta2);
    rc |= sr_config_double(c, "adam_epsilon", 1e-8, &a->adam_epsilon);
    rc |= sr_config_double(c, "weight_decay", 0.0, &a->weight_decay);
    rc |= sr_config_double(c, "max_grad_norm", 1.0, &a->max_grad_norm);
    rc |= sr_config_int(c, "warmup_steps", 0, &a->warmup_steps);
    rc |= sr_config_int(c, "logging_steps", 500, &a->logging_steps);
    rc |= sr_config_int(c, "save_steps", 0, &a->save_steps);
    rc |= sr_config_int(c, "seed", 42, &a->seed);
    if (rc) return -1;
    a->output_dir = sr_config(c, "output_dir");
    if (a->output_dir && !*a->output_dir) a->output_dir = NULL;
    int save_final = 0;
    if (sr_config_bool(c, "save_final", a->output_dir != NULL, &save_final) != 0) return -1;
    a->save_final = save_final;
    rc |= positive("per_device_train_batch_size", a->per_device_train_batch_size);
    rc |= positive("gradient_accumulation_steps", a->gradient_accumulation_steps);
    rc |= positive("logging_steps", a->logging_steps);
    if (a->max_steps <= 0 && !(a->num_train_epochs > 0)) {
        fprintf(stderr, "shardrun: error: [task] neither max_steps nor num_train_epochs is positive: nothing to train\n");
        rc = -1;
    }
    if (a->warmup_steps < 0 || a->save_steps < 0 || a->weight_decay < 0 || a->learning_rate < 0) {
        fprintf(stderr, "shardrun: error: [task] warmup_steps, save_steps, weight_decay and learning_rate must not be "
                        "negative\n");
        rc = -1;
    }
    const char *s = sr_config(c, "lr_scheduler_type");
    if (!s || !strcasecmp(s, "linear")) a->lr_scheduler_type = SR_SCHED_LINEAR;
    else if (!strcasecmp(s, "cosine")) a->lr_scheduler_type = SR_SCHED_COSINE;
    else if (!strcasecmp(s, "constant")) a->lr_scheduler_type = SR_SCHED_CONSTANT;
    else if (!strcasecmp(s, "constant_with_warmup")) a->lr_scheduler_type = SR_SCHED_CONSTANT_WARMUP;
    else {
        fprintf(stderr, "shardrun: error: [task] lr_scheduler_type = %s: expected linear, cosine, constant or "
                        "constant_with_warmup\n", s);
        rc = -1;
    }
    const char *r = sr_config(c, "resume_from_checkpoint");
    int yes = 0;
    if (r && *r) {
        /* a boolean (true: the latest checkpoint in output_dir), or a checkpoint folder */
        a->resume_from_checkpoint = sr__parse_bool(r, &yes) == 0 ? (yes ? "latest" : NULL) : r;
        if (a->resume_from_checkpoint && !strcmp(a->resume_from_checkpoint, "latest") && !a->output_dir) {
            fprintf(stderr, "shardrun: error: [task] resume_from_checkpoint = %s needs output_dir (where the latest "
                            "checkpoint-N folder is looked for)\n", r);
            rc = -1;
        }
    }
    if ((a->save_steps > 0 || a->save_final) && !a->output_dir) {
        fprintf(stderr, "shardrun: error: [task] save_steps/save_final need output_dir (where checkpoints go)\n");
        rc = -1;
    }
    return rc;
}

double sr__lr_at(const sr__train_args *a, long long step, long long total) {
    double base = a->learning_rate, w = (double)a->warmup_steps, s = (double)step;
    if (a->lr_scheduler_type == SR_SCHED_CONSTANT) return base;
    if (s < w) return base * s / (w > 1 ? w : 1);
    if (a->lr_scheduler_type == SR_SCHED_CONSTANT_WARMUP) return base;
    double rest = (double)total - w, done = s - w;
    if (rest < 1) rest = 1;
    if (a->lr_scheduler_type == SR_SCHED_COSINE) {
        double p = done / rest;
        double v = 0.5 * (1.0 + cos(3.14159265358979323846 * p));
        return base * (v > 0 ? v : 0);
    }
    double v = ((double)total - s) / rest;
    return base * (v > 0 ? v : 0);
}
