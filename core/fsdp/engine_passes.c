/*
 * Calling the task: one micro-batch's forward (units gathered just in time, prefetched,
 * resharded), its loss and its backward (a unit's forward recomputed first under activation
 * checkpointing, its gradients reduce-scattered as the backward leaves it).  The forward pass is
 * also evaluation's (engine_eval.c).
 */
#include "base/log.h"
#include "base/profile.h"
#include "base/watch.h"
#include "fsdp/engine_internal.h"

void sr__engine_module_call(sr__engine *e, int mi, sr_module_call *c, int with_grads) {
    const sr__module *m = &e->model->mods[mi];
    for (int k = 0; k < m->nparams; k++) {
        const sr__param *p = &e->model->params[sr__param_owner(e->model, m->params[k])];
        const sr__uslot *s = &e->slot[p->unit]; /* the module's unit, or its frozen companion */
        e->pptr[k] = (char *)s->full + p->offset * e->dsize;
        /* a frozen parameter's gradient pointer is NULL (shardrun/model.h) */
        e->gptr[k] = with_grads && !sr__engine_is_frozen(e, p->unit) ? (char *)s->gdst + p->offset * e->dsize : NULL;
    }
    c->module = mi;
    c->name = m->name;
    c->nparams = m->nparams;
    c->params = e->pptr;
    c->grads = with_grads ? e->gptr : NULL;
}

static int forward(sr__engine *e, sr_module_call *c, int mi, int save, int recompute) {
    sr__engine_module_call(e, mi, c, 0);
    c->save_activations = save;
    c->recompute = recompute;
    double t0 = sr__prof_now();
    int rc = e->ops->forward(e->state, c);
    if (sr__prof.on) e->dev->sync(), sr__prof_add(SR__PROF_TASK, t0, 0, 0);
    return rc == 0 ? 0 : sr__engine_task_fail(e, recompute ? "forward (recompute)" : "forward", mi);
}

static int unit_first(const sr__engine *e, int mi) { return e->units.u[e->model->mods[mi].unit].mods[0] == mi; }
static int unit_last(const sr__engine *e, int mi) {
    const sr__unit *u = &e->units.u[e->model->mods[mi].unit];
    return u->mods[u->nmods - 1] == mi;
}

/* The forward over every module in declaration order: the root's parameters gathered first, each
   wrapped unit's as its first module comes (prefetching the next one with forward_prefetch), and
   released after its last module when `reshard` (training: reshard_after_forward; evaluation:
   always, no backward follows).  keep_wrapped: wrapped modules keep their activations (training
   without activation checkpointing); the root's are kept whenever `keep_root`.  0 or -1. */
int sr__engine_forward_pass(sr__engine *e, sr_module_call *c, int keep_root, int keep_wrapped, int reshard) {
    int root = e->units.root, nm = e->model->nmods;
    const sr__fsdp_config *cfg = &e->cfg;
    if (root >= 0 && sr__engine_issue_gather(e, root) != 0) return -1;
    if (cfg->forward_prefetch && e->nfwd && sr__engine_issue_gather(e, e->fwd_units[0]) != 0) return -1;
    if (root >= 0 && sr__engine_wait_gather(e, root) != 0) return -1;
    for (int mi = 0; mi < nm; mi++) {
        int pos = e->mod_pos[mi], u = e->model->mods[mi].unit;
        if (pos >= 0 && unit_first(e, mi)) {
            sr__watch_unit(u);
            if (sr__engine_ensure_gathered(e, u) != 0) return -1;
            if (cfg->forward_prefetch && pos + 1 < e->nfwd && sr__engine_issue_gather(e, e->fwd_units[pos + 1]) != 0)
                return -1;
        }
        if (forward(e, c, mi, pos >= 0 ? keep_wrapped : keep_root, 0) != 0) return -1;
        if (pos >= 0 && unit_last(e, mi) && reshard) sr__engine_release_params(e, u);
    }
    return 0;
}

int sr__engine_micro_batch(sr__engine *e, long long step, int micro, int accum, const int64_t *samples, int n,
                           double *loss, long long *tokens) {
    *tokens = 0;
    sr__watch_step(step, micro);
    sr__watch_phase(SR__PHASE_FORWARD);
    double t0 = sr__prof_now();
    if (e->ops->batch(e->state, samples, n, tokens) != 0) {
        sr__log(SR_LOG_ERROR, "task %s: batch() failed for step %lld", e->task, step);
        return -1;
    }
    if (sr__prof.on) e->dev->sync(), sr__prof_add(SR__PROF_DATA, t0, 0, 0);
    sr_module_call c = sr__engine_call_of(e, n, step, micro, 0);
    int root = e->units.root, nm = e->model->nmods, ckpt = e->cfg.enabled && e->cfg.activation_checkpointing;
    const sr__fsdp_config *cfg = &e->cfg;

    /* forward */
    if (sr__engine_forward_pass(e, &c, 1, !ckpt, e->cfg.reshard_after_forward) != 0) return -1;

    /* loss: the gradient seed carries 1/accum (micro-batches are averaged) and the fp16 scale */
    sr__engine_module_call(e, nm - 1, &c, 0);
    c.grad_scale = (float)(e->loss_scale / accum);
    t0 = sr__prof_now();
    if (e->ops->loss(e->state, &c, loss) != 0) return sr__engine_task_fail(e, "loss", -1);
    if (sr__prof.on) e->dev->sync(), sr__prof_add(SR__PROF_TASK, t0, 0, 0);
    c.grad_scale = 0.0f;

    /* backward */
    sr__watch_phase(SR__PHASE_BACKWARD);
    if (root >= 0 && sr__engine_get_grad_buffer(e, root) != 0) return -1;
    if (cfg->backward_prefetch != SR__PREFETCH_NONE && e->nfwd &&
        sr__engine_issue_gather(e, e->fwd_units[e->nfwd - 1]) != 0)
        return -1;
    for (int mi = nm - 1; mi >= 0; mi--) {
        int pos = e->mod_pos[mi], u = e->model->mods[mi].unit;
        if (pos >= 0 && unit_last(e, mi)) {
            sr__watch_unit(u);
            if (sr__engine_ensure_gathered(e, u) != 0) return -1;
            if (cfg->backward_prefetch == SR__PREFETCH_PRE && pos > 0 &&
                sr__engine_issue_gather(e, e->fwd_units[pos - 1]) != 0)
                return -1;
            if (sr__engine_get_grad_buffer(e, u) != 0) return -1;
            if (ckpt) /* activation checkpointing: the unit's forward again, keeping everything */
                for (int k = 0; k < e->units.u[u].nmods; k++)
                    if (forward(e, &c, e->units.u[u].mods[k], 1, 1) != 0) return -1;
        }
        sr__engine_module_call(e, mi, &c, 1);
        c.save_activations = 1;
        c.recompute = 0;
        t0 = sr__prof_now();
        if (e->ops->backward(e->state, &c) != 0) return sr__engine_task_fail(e, "backward", mi);
        if (sr__prof.on) e->dev->sync(), sr__prof_add(SR__PROF_TASK, t0, 0, 0);
        if (pos >= 0 && unit_first(e, mi)) {
            if (cfg->backward_prefetch == SR__PREFETCH_POST && pos > 0 &&
                sr__engine_issue_gather(e, e->fwd_units[pos - 1]) != 0)
                return -1;
            if (sr__engine_issue_reduce(e, u) != 0) return -1;
            sr__engine_release_params(e, u);
        }
    }
    if (root >= 0) {
        if (sr__engine_issue_reduce(e, root) != 0) return -1;
        sr__engine_release_params(e, root);
    }
    return 0;
}
