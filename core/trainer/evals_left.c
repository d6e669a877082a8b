/* The evaluations still due (trainer_internal.h), in a file of its own: the progress line
   (train_log.c) counts them in the time left, and an evaluation (eval.c) draws that line, so neither
   calls back into the other. */
#include "trainer/trainer_internal.h"

long long sr__evals_left(const sr__trainer *t, long long step) {
    const sr__train_args *a = &t->a;
    long long total = t->plan.total_steps, spe = t->plan.steps_per_epoch;
    if ((!t->neval && !t->choice.n) || step >= total) return 0;
    if (a->eval_strategy == SR__EVERY_STEPS) return total / a->eval_steps - step / a->eval_steps;
    if (a->eval_strategy == SR__EVERY_EPOCH) return total / spe - step / spe + (total % spe != 0);
    return 0;
}
