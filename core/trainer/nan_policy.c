/* [task] nan_policy (see nan_policy.h). */
#define _GNU_SOURCE
#include "trainer/nan_policy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/progress.h"
#include "base/strbuf.h"
#include "trainer/trainer_internal.h"

/* A number as the log shows it: "nan" and "inf" without a sign printf may add to a NaN. */
static const char *num(double v, char *buf, size_t len) {
    if (isnan(v)) return "nan";
    if (isinf(v)) return v > 0 ? "inf" : "-inf";
    snprintf(buf, len, "%.6g", v);
    return buf;
}

/* The step's loss or gradient norm was not finite (an fp16 overflow's NaN norm is loss scaling at work). */
static int nonfinite_step(double loss, const sr__step_result *r) {
    return !isfinite(loss) || (!r->skipped && !isfinite(r->grad_norm));
}

/* The newest checkpoint that holds a state before the bad step (a new string), or NULL: the one
   this run saved last, else the one it resumed from. */
static char *last_checkpoint(const sr__trainer *t) {
    const sr__train_args *a = &t->a;
    if (t->saved_step >= 0) return sr__fmt("%s/checkpoint-%lld", a->output_dir, t->saved_step);
    /* nothing was saved since the resume: the one it resumed from (resume.c chose it) */
    return t->resume_dir ? sr__strdup(t->resume_dir) : NULL;
}

/* After rank 0's message, which every rank knows it prints (the decision is the same everywhere):
   a collective, so that the message is out before any rank exits (the agent stops the others when
   the first one exits, and names the rank that printed an error). */
static void said(sr__trainer *t) {
    double sync = 0;
    fflush(NULL);
    sr__engine_avg(t->e, &sync); /* it fails only when a rank is gone already: the exit is the same */
}

/* Every step of this run so far was non-finite and none was applied: the parameters it started from
   give a non-finite loss or gradient before any update, which no learning rate changes. */
static int before_any_update(const sr__trainer *t, int in_a_row) {
    long long first = t->resume_dir ? t->resume_step : 0;
    return t->ts.global_step - first == in_a_row;
}

/* The stop's message when the parameters were broken before this run's first update. */
static void say_broken_start(const sr__trainer *t, double loss, const sr__step_result *r, const char *row) {
    const sr__train_args *a = &t->a;
    char from[2200], l[32], g[32];
    if (t->resume_dir)
        snprintf(from, sizeof from,
                 "resume_from_checkpoint = %s: its parameters had diverged already; start from an earlier "
                 "checkpoint (with a lower learning_rate) or from other weights",
                 t->resume_dir);
    else if (a->init_weights)
        snprintf(from, sizeof from,
                 "init_weights = %s: check its values (finite ones too large for the forward pass overflow)",
                 a->init_weights);
    else
        snprintf(from, sizeof from,
                 "the task's initialisers with seed %lld: check the task's initialiser scales and model settings",
                 a->seed);
    sr__log(SR_LOG_ERROR,
            "[task] nan_policy = %s: step %lld of %lld has a non-finite %s (loss %s, grad_norm %s)%s before this run "
            "applied any update: the parameters it started from give it, whatever the learning_rate.  They came "
            "from %s; or the step's batch holds bad data",
            sr__nan_policy_name(a->nan_policy), t->ts.global_step, t->plan.total_steps,
            !isfinite(loss) ? "loss" : "gradient norm", num(loss, l, sizeof l), num(r->grad_norm, g, sizeof g), row,
            from);
}

static int stop(sr__trainer *t, double loss, const sr__step_result *r, int in_a_row) {
    const sr__train_args *a = &t->a;
    long long step = t->ts.global_step;
    if (t->rank == 0 && before_any_update(t, in_a_row)) {
        char row[96] = "";
        if (in_a_row > 1) snprintf(row, sizeof row, " (%d non-finite steps in a row, all skipped)", in_a_row);
        say_broken_start(t, loss, r, row);
    } else if (t->rank == 0) {
        char *good = last_checkpoint(t), row[96] = "", where[2400], l[32], g[32];
        if (in_a_row > 1)
            snprintf(row, sizeof row, " (%d non-finite steps in a row; skip_step skips at most %d)", in_a_row,
                     SR__NAN_MAX_SKIPPED_IN_A_ROW);
        if (good)
            snprintf(where, sizeof where,
                     "The last checkpoint before it is %s: continue from it "
                     "(--set task.resume_from_checkpoint=%s --set task.resume_allow_changes=learning_rate), or from an "
                     "earlier one if the steps before diverged already,",
                     good, good);
        else
            snprintf(where, sizeof where, "No checkpoint was written before it%s: start again",
                     a->output_dir ? " (save_steps)" : " (no output_dir)");
        sr__log(SR_LOG_ERROR,
                "[task] nan_policy = %s: step %lld of %lld has a non-finite %s (loss %s, grad_norm %s)%s: "
                "its update was not applied, nothing of it is saved, and the run stops. %s with a lower learning_rate "
                "(now %g) or more warmup_steps; nan_policy = skip_step skips such steps instead",
                sr__nan_policy_name(a->nan_policy), step, t->plan.total_steps,
                !isfinite(loss) ? "loss" : "gradient norm", num(loss, l, sizeof l), num(r->grad_norm, g, sizeof g), row,
                where, a->learning_rate);
        free(good);
    }
    /* the same checkpoint and data give the same step again: not for max_restarts to retry */
    char why[160];
    snprintf(why, sizeof why,
             "had a non-finite loss or gradient norm at step %lld (nan_policy = %s): see its message "
             "above",
             step, sr__nan_policy_name(a->nan_policy));
    sr__progress_send(SR__PROGRESS_UNFIXABLE, why);
    said(t);
    sr_report_int(t->ctx, "nan_step", step);
    sr_report_int(t->ctx, "nan_steps", t->nan_steps);
    sr_report_int(t->ctx, "global_step", step - 1);
    sr_report_num(t->ctx, "final_loss", loss);
    return SR__EXIT_FAILED;
}

int sr__nan_policy_after_step(sr__trainer *t, double loss, const sr__step_result *r) {
    if (!nonfinite_step(loss, r)) {
        t->nan_in_a_row = 0;
        return SR__EXIT_OK;
    }
    t->nan_steps++, t->nan_in_a_row++;
    const sr__train_args *a = &t->a;
    if (a->nan_policy == SR__NAN_STOP ||
        (a->nan_policy == SR__NAN_SKIP_STEP && t->nan_in_a_row > SR__NAN_MAX_SKIPPED_IN_A_ROW))
        return stop(t, loss, r, t->nan_in_a_row);
    char l[32], g[32];
    if (t->rank == 0)
        sr__log(SR_LOG_WARN, "step %lld: non-finite %s (loss %s, grad_norm %s): %s", t->ts.global_step,
                !isfinite(loss) ? "loss" : "gradient norm", num(loss, l, sizeof l), num(r->grad_norm, g, sizeof g),
                a->nan_policy == SR__NAN_SKIP_STEP ? "its update was skipped (nan_policy = skip_step)"
                                                   : "its update was applied (nan_policy = warn)");
    if (a->nan_policy == SR__NAN_SKIP_STEP) t->nan_skipped++;
    return SR__EXIT_OK;
}

int sr__nan_policy_finish(sr__trainer *t) {
    const sr__train_args *a = &t->a;
    char l[32];
    int took_steps = t->loss_steps > 0 || t->nan_skipped > 0; /* not so when it resumed at its last step */
    if (took_steps && !isfinite(t->final_loss)) {             /* a run that diverged must not look finished */
        if (t->rank == 0 && a->nan_policy == SR__NAN_WARN)
            sr__log(SR_LOG_ERROR,
                    "the final loss is %s: training diverged (%lld of this run's steps had a non-finite "
                    "loss or gradient norm and were applied, nan_policy = warn): check the parameters it saved before "
                    "using them",
                    num(t->final_loss, l, sizeof l), t->nan_steps);
        else if (t->rank == 0)
            sr__log(SR_LOG_ERROR,
                    "no step of this run had a finite loss: all %lld were skipped (nan_policy = skip_step); "
                    "the parameters are those it started from",
                    t->nan_steps);
        said(t);
        return SR__EXIT_FAILED;
    }
    if (t->nan_steps && t->rank == 0)
        sr__log(SR_LOG_WARN, "%lld of this run's steps had a non-finite loss or gradient norm (%s)", t->nan_steps,
                a->nan_policy == SR__NAN_SKIP_STEP ? "skipped: nan_policy = skip_step" : "applied: nan_policy = warn");
    return SR__EXIT_OK;
}
