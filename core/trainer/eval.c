/* Evaluation (see trainer_internal.h): the eval set split over every rank without padding, each
   rank's batches run forward only through the engine, and one mean over the whole set.
   Rank r takes eval samples r, r + D, r + 2D, ... (D ranks), per_device_eval_batch_size at a
   time.  Every rank runs the same number of batches, because the engine's gathers are collective:
   a rank whose share ran out runs one sample again and gives it no weight.  eval_loss =
   sum(batch loss x batch tokens) / sum(tokens) over every batch of every rank, added up in double
   precision in rank order (sr__engine_sum): the same number on every rank, and the same as one
   rank's evaluation up to the rounding of the sums.  With [task] eval_files, the same evaluation
   also scores their multiple-choice examples (choice_eval.c): eval_accuracy, next to eval_loss. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "trainer/trainer_internal.h"

static int due(const sr__trainer *t, int start) {
    const sr__train_args *a = &t->a;
    long long step = t->ts.global_step;
    if (start) { /* not again at a resumed checkpoint's step that was evaluated already */
        for (int i = t->hist.n - 1; i >= 0 && a->eval_on_start; i--)
            if (isfinite(sr__hist_get(&t->hist.e[i], "eval_loss")) ||
                isfinite(sr__hist_get(&t->hist.e[i], "eval_accuracy")))
                return sr__hist_get(&t->hist.e[i], "step") != (double)step;
        return a->eval_on_start;
    }
    if (a->eval_strategy == SR__EVERY_STEPS) return step % a->eval_steps == 0;
    if (a->eval_strategy == SR__EVERY_EPOCH) return step % t->plan.steps_per_epoch == 0 || step == t->plan.total_steps;
    return 0;
}

/* Rank 0 on a terminal, while an evaluation runs: "evaluating 12/40 batches, 3.1s left" in the
   progress line (at most 5 times a second), the time left from this evaluation's batches so far
   (before the first: the last evaluation's runtime). */
static void eval_bar(sr__trainer *t, long long done, long long batches, double t0, double *drawn) {
    double now = sr__now_s();
    if (t->rank != 0 || !t->tty || (done > 0 && now - *drawn < 0.2)) return;
    *drawn = now;
    double left = done > 0 ? (now - t0) / (double)done * (double)(batches - done) : t->last_eval_s;
    char doing[96];
    if (left > 0) snprintf(doing, sizeof doing, "evaluating %lld/%lld batches, %.1fs left", done, batches, left);
    else snprintf(doing, sizeof doing, "evaluating %lld/%lld batches", done, batches);
    sr__trainer_bar(t, NAN, doing, left);
}

/* The console line, as transformers' Trainer prints its logs: a Python dict. */
static void print_entry(sr__trainer *t, const sr__hist_entry *e) {
    if (t->tty) printf("\r%*s\r", t->bar_len > 110 ? t->bar_len : 110, ""); /* over the progress bar */
    printf("{");
    for (int i = 0, k = 0; i < e->n; i++) {
        if (!strcmp(sr__hist_keys[e->key[i]], "step")) continue;
        char num[48];
        sr__hist_number(num, sizeof num, e->key[i], e->v[i]);
        printf("%s'%s': %s", k++ ? ", " : "", sr__hist_keys[e->key[i]], !strcmp(num, "null") ? "nan" : num);
    }
    printf("}\n");
    fflush(stdout);
    t->bar_len = 0;
}

static int evaluate(sr__trainer *t) {
    const long long bs = t->a.per_device_eval_batch_size, ws = t->ws, step = t->ts.global_step;
    const long long per_rank = (t->neval + ws - 1) / ws, batches = t->neval ? (per_rank + bs - 1) / bs : 0;
    double acc[3] = {0, 0, 0}; /* sum of loss x tokens, tokens, samples */
    double t0 = sr__now_s(), drawn = 0;
    for (long long b = 0; b < batches; b++) {
        eval_bar(t, b, batches, t0, &drawn);
        int n = 0;
        for (long long k = 0; k < bs; k++) {
            long long i = (b * bs + k) * ws + t->rank;
            if (i < t->neval) t->eval_idx[n++] = i;
        }
        int weight = n > 0;
        if (!weight) t->eval_idx[0] = t->rank % t->neval, n = 1; /* keeps in step with the others' gathers */
        double loss;
        long long tokens;
        if (sr__engine_eval_batch(t->e, step, (int)b, t->eval_idx, n, &loss, &tokens) != 0) return -1;
        if (weight) acc[0] += loss * (double)tokens, acc[1] += (double)tokens, acc[2] += n;
    }
    if (sr__engine_sum(t->e, acc, 3) != 0) return -1;
    double accuracy = NAN; /* eval_files (choice_eval.c) */
    if (t->choice.n && t->rank == 0 && t->tty) sr__trainer_bar(t, NAN, "evaluating eval_files", 0);
    if (t->choice.n && sr__choice_evaluate(t, &accuracy) != 0) return -1;
    double runtime = sr__now_s() - t0;
    t->eval_s += runtime, t->last_eval_s = runtime; /* the progress line's time left (train_log.c) */
    double loss = acc[1] > 0 ? acc[0] / acc[1] : NAN;
    if (t->neval && acc[1] <= 0 && t->rank == 0)
        sr__log(SR_LOG_WARN, "evaluation at step %lld: the eval batches hold no predicted token; eval_loss is nan",
                step);
    /* eval_perplexity only for a task whose loss is a cross-entropy (sr_model_eval.cross_entropy) */
    int ce = t->model->eval.cross_entropy;
    /* the samples and steps per second count the eval data's (as HF's); eval_files' examples come
       on top in the runtime */
    const char *all[] = {"eval_loss",
                         "eval_perplexity",
                         "eval_accuracy",
                         "eval_runtime",
                         "eval_samples_per_second",
                         "eval_steps_per_second",
                         "epoch",
                         "step"};
    double vall[] = {loss,
                     exp(loss),
                     accuracy,
                     round(runtime * 1e4) / 1e4,
                     runtime > 0 ? round(acc[2] / runtime * 1e3) / 1e3 : 0,
                     runtime > 0 ? round((double)batches / runtime * 1e3) / 1e3 : 0,
                     (double)step / (double)t->plan.steps_per_epoch,
                     (double)step};
    const char *names[8];
    double v[8];
    int k = 0;
    for (int i = 0; i < 8; i++) {
        if ((i == 0 && !t->neval) || (i == 1 && (!ce || !t->neval)) || (i == 2 && !t->choice.n)) continue;
        if (!t->neval && (i == 4 || i == 5)) continue; /* no eval samples, no rate of them */
        names[k] = all[i], v[k++] = vall[i];
    }
    if (sr__history_add(&t->hist, k, names, v) != 0) {
        sr__log(SR_LOG_ERROR, "out of memory for the log history");
        return -1;
    }
    t->eval_metric = loss;
    t->eval_accuracy = accuracy;
    t->eval_step = step;
    if (t->rank == 0) print_entry(t, &t->hist.e[t->hist.n - 1]);
    return 0;
}

int sr__eval_if_due(sr__trainer *t, int start) {
    if ((!t->neval && !t->choice.n) || !due(t, start)) return 0;
    return evaluate(t);
}
