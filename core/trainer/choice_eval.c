/* Multiple-choice evaluation (see trainer_internal.h and choice_file.h): llm.c's HellaSwag
   scoring.  Each example's completions go to the task as sequences context + completion, in one
   eval batch; the task gives each sequence's mean loss over its completion tokens, and the
   completion with the lowest one (the first of equal ones) is the prediction.
   Rank r takes examples r, r + D, r + 2D, ... (D ranks), per_device_eval_batch_size / 4 examples
   (at least one) a batch.  Every rank runs the same number of batches, because the engine's
   gathers are collective: a rank whose share ran out scores one example again and counts it not.
   The counts are summed over every rank: the same accuracy at any world size. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "trainer/trainer_internal.h"

int sr__choice_setup(sr__trainer *t) {
    const sr__train_args *a = &t->a;
    const sr_model_eval *ev = &t->model->eval;
    t->eval_accuracy = NAN;
    const char *files = a->eval_files;
    if (!files) return SR__EXIT_OK;
    if (!ev->choice_batch) {
        sr__log(SR_LOG_ERROR,
                "[task] eval_files: task %s cannot score multiple-choice examples (its sr_model_eval has "
                "no choice_batch: see docs/model-tasks.md); remove eval_files",
                t->task);
        return SR__EXIT_CONFIG;
    }
    if (a->eval_strategy == SR__EVERY_NEVER && !a->eval_on_start) {
        sr__log(SR_LOG_ERROR, "[task] eval_files is scored at each evaluation, and eval_strategy = no asks for none; "
                              "set eval_strategy = steps or epoch (or eval_on_start = true)");
        return SR__EXIT_CONFIG;
    }
    char err[2048];
    if (sr__choice_load(&t->choice, files, sr_config_base_dir(t->ctx, "eval_files"), ev->vocab_size, ev->max_tokens,
                        err, sizeof err) != 0) {
        sr__log(SR_LOG_ERROR, "[task] eval_files: %s", err);
        return SR__EXIT_CONFIG;
    }
    int per = (int)(a->per_device_eval_batch_size / SR__CHOICE_MAX);
    t->choice_per_batch = per > 0 ? per : 1;
    size_t seqs = (size_t)t->choice_per_batch * SR__CHOICE_MAX;
    t->choice_seq = sr__calloc(seqs, sizeof *t->choice_seq);
    t->choice_loss = sr__calloc(seqs, sizeof *t->choice_loss);
    t->choice_tok = sr__malloc(seqs * (size_t)t->choice.longest * sizeof *t->choice_tok);
    if (!t->choice_seq || !t->choice_loss || !t->choice_tok) {
        sr__log(SR_LOG_ERROR,
                "out of memory for a multiple-choice batch (%zu sequences of up to %d tokens); lower "
                "per_device_eval_batch_size",
                seqs, t->choice.longest);
        return SR__EXIT_CONFIG;
    }
    if (t->rank == 0)
        printf("shardrun: eval_files: %lld multiple-choice examples from %d file%s, %d a batch per rank\n",
               (long long)t->choice.n, t->choice.nfiles, t->choice.nfiles == 1 ? "" : "s", t->choice_per_batch);
    return SR__EXIT_OK;
}

/* Puts example i's sequences into the batch from sequence *n on. */
static void add_sequences(sr__trainer *t, const sr__choice_example *x, int *n) {
    for (int c = 0; c < x->ncomp; c++) {
        int32_t *tok = t->choice_tok + (size_t)*n * (size_t)t->choice.longest;
        for (int k = 0; k < x->ctx_len; k++) tok[k] = sr__choice_token(x->ctx, k);
        for (int k = 0; k < x->comp_len[c]; k++) tok[x->ctx_len + k] = sr__choice_token(x->comp[c], k);
        t->choice_seq[*n] = (sr_choice_seq){tok, x->ctx_len + x->comp_len[c], x->ctx_len};
        ++*n;
    }
}

int sr__choice_evaluate(sr__trainer *t, double *accuracy) {
    const long long ws = t->ws, N = t->choice.n, per = t->choice_per_batch, step = t->ts.global_step;
    const long long per_rank = (N + ws - 1) / ws, batches = (per_rank + per - 1) / per;
    double counts[2] = {0, 0}; /* right, examples */
    for (long long b = 0; b < batches; b++) {
        int n = 0, nex = 0, weight = 1;
        for (long long k = 0; k < per; k++) {
            long long i = (b * per + k) * ws + t->rank;
            if (i < N) add_sequences(t, &t->choice.ex[i], &n), nex++;
        }
        if (!nex) add_sequences(t, &t->choice.ex[t->rank % N], &n), weight = 0; /* in step with the others' gathers */
        if (sr__engine_choice_batch(t->e, step, (int)b, t->choice_seq, n, t->choice_loss) != 0) return -1;
        if (!weight) continue;
        int s = 0;
        for (long long k = 0; k < per; k++) {
            long long i = (b * per + k) * ws + t->rank;
            if (i >= N) break;
            const sr__choice_example *x = &t->choice.ex[i];
            int best = 0;
            for (int c = 1; c < x->ncomp; c++)
                if (t->choice_loss[s + c] < t->choice_loss[s + best]) best = c;
            counts[0] += best == x->label;
            counts[1] += 1;
            s += x->ncomp;
        }
    }
    if (sr__engine_sum(t->e, counts, 2) != 0) return -1;
    *accuracy = counts[1] > 0 ? counts[0] / counts[1] : NAN;
    return 0;
}

void sr__choice_teardown(sr__trainer *t) {
    sr__choice_free(&t->choice);
    free(t->choice_seq);
    free(t->choice_tok);
    free(t->choice_loss);
    t->choice_seq = NULL, t->choice_tok = NULL, t->choice_loss = NULL;
}
