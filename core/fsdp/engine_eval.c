/*
 * Evaluation: the forward and loss of an eval batch or a multiple-choice batch (no backward; every
 * unit resharded after its forward), and sums over every rank of what evaluation counts.
 */
#include <stdlib.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/watch.h"
#include "fsdp/engine_internal.h"

/* The forward and loss() of an eval batch the task has loaded (n samples). */
static int eval_forward(sr__engine *e, long long step, int batch, int n, double *loss) {
    sr__watch_phase(SR__PHASE_EVAL);
    sr_module_call c = sr__engine_call_of(e, n, step, batch, 1);
    int root = e->units.root, nm = e->model->nmods;
    /* the training forward's gathers and prefetches, no activations kept; every unit is resharded
       after its forward (whatever the strategy: no backward will come for it) */
    if (sr__engine_forward_pass(e, &c, 0, 0, 1) != 0) return -1;
    sr__engine_module_call(e, nm - 1, &c, 0);
    c.grad_scale = 0.0f; /* nothing flows back */
    if (e->ops->loss(e->state, &c, loss) != 0) return sr__engine_task_fail(e, "loss (evaluation)", -1);
    if (root >= 0) sr__engine_release_params(e, root);
    return e->dev->sync();
}

int sr__engine_eval_batch(sr__engine *e, long long step, int batch, const int64_t *samples, int n, double *loss,
                          long long *tokens) {
    const sr_model_eval *ev = &e->model->eval;
    *tokens = 0;
    if (!ev->batch || ev->batch(e->state, samples, n, tokens) != 0) {
        sr__log(SR_LOG_ERROR, "task %s: the eval batch() failed for eval batch %d at step %lld", e->task, batch, step);
        return -1;
    }
    return eval_forward(e, step, batch, n, loss);
}

int sr__engine_choice_batch(sr__engine *e, long long step, int batch, const sr_choice_seq *seqs, int n,
                            double *losses) {
    const sr_model_eval *ev = &e->model->eval;
    double loss;
    if (!ev->choice_batch || ev->choice_batch(e->state, seqs, n) != 0) {
        sr__log(SR_LOG_ERROR, "task %s: choice_batch() failed for multiple-choice batch %d at step %lld", e->task,
                batch, step);
        return -1;
    }
    if (eval_forward(e, step, batch, n, &loss) != 0) return -1;
    if (ev->choice_losses(e->state, losses, n) != 0) {
        sr__log(SR_LOG_ERROR, "task %s: choice_losses() failed for multiple-choice batch %d at step %lld", e->task,
                batch, step);
        return -1;
    }
    return 0;
}

int sr__engine_sum(sr__engine *e, double *v, int n) {
    if (!e->world || e->world_size < 2) return 0;
    /* all-gathered as 64-bit patterns (no reduction touches them) and added up in rank order: the
       same double on every rank, as exact as one rank's sum */
    size_t bytes = (size_t)n * sizeof(double);
    void *send = e->dev->alloc(bytes), *recv = e->dev->alloc(bytes * (size_t)e->world_size);
    double *all = sr__malloc(bytes * (size_t)e->world_size);
    int rc = send && recv && all ? 0 : -1;
    if (rc) sr__log(SR_LOG_ERROR, "out of memory for a %zu-byte evaluation sum", bytes * (size_t)e->world_size);
    if (!rc) {
        e->dev->to_device(send, v, bytes);
        e->dev->sync();
        if (sr_pg_all_gather(e->world, send, recv, (size_t)n, SR_INT64, NULL) != 0)
            rc = sr__engine_pg_fail(e->world, "all-gather");
    }
    if (!rc) {
        e->dev->to_host(all, recv, bytes * (size_t)e->world_size);
        for (int k = 0; k < n; k++) {
            double s = 0;
            for (int r = 0; r < e->world_size; r++) s += all[(size_t)r * (size_t)n + (size_t)k];
            v[k] = s;
        }
    }
    if (send) e->dev->free(send);
    if (recv) e->dev->free(recv);
    free(all);
    return rc;
}
