#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/watch.h"
#include "fsdp/engine_internal.h"
#include "fsdp/param_init.h"

/* ---- errors ---------------------------------------------------------------------------------- */

static int pg_fail(sr_pg *pg, const char *what) {
    sr__log(SR_LOG_ERROR, "FSDP %s failed: %s", what, pg ? sr_pg_error(pg) : "no process group");
    return -1;
}

static int task_fail(sr__engine *e, const char *what, int mi) {
    sr__log(SR_LOG_ERROR, "task %s: %s of module %s returned an error", e->task, what,
            mi >= 0 ? e->model->mods[mi].name : "(loss)");
    return -1;
}

/* ---- buffer pools ------------------------------------------------------------------------------ */

static void *pool_get(sr__engine *e, sr__pool *p) {
    void *b;
    if (p->nfree) {
        b = p->free[--p->nfree];
    } else {
        b = e->dev->alloc(p->bytes);
        if (!b) {
            sr__log(SR_LOG_ERROR, "out of memory allocating a %zu-byte FSDP buffer", p->bytes);
            return NULL;
        }
        void **g = sr__realloc(p->free, (size_t)(p->allocated + 1) * sizeof *p->free);
        if (!g) { /* the free list must hold every buffer the pool made */
            e->dev->free(b);
            sr__log(SR_LOG_ERROR, "out of memory for an FSDP buffer pool's list (%d buffers)", p->allocated + 1);
            return NULL;
        }
        p->free = g;
        p->allocated++;
        e->pool_peak += p->bytes;
        if (e->persistent + e->pool_peak > e->peak) e->peak = e->persistent + e->pool_peak;
    }
    return b;
}

static void pool_put(sr__pool *p, void *b) {
    if (b) p->free[p->nfree++] = b;
}

static void pool_drain(sr__engine *e, sr__pool *p) {
    for (int i = 0; i < p->nfree; i++) e->dev->free(p->free[i]);
    free(p->free);
    memset(p, 0, sizeof *p);
}

/* ---- gathering parameters ---------------------------------------------------------------------- */

static int is_root(const sr__engine *e, int u) { return e->units.u[u].root; }

/* where wrapped unit u's gathered buffer comes from */
static sr__pool *param_pool_of(sr__engine *e, int u) {
    return e->units.u[u].owner >= 0 ? &e->companion_pool : &e->param_pool;
}

/* where unit u's shard-sized temporaries come from */
static sr__pool *temp_pool_of(sr__engine *e, int u) { return is_root(e, u) ? &e->root_temp_pool : &e->temp_pool; }

/* dst (device, compute dtype) = the fp32 shard; offloaded shards are cast on the host and copied */
static void cast_shard(sr__engine *e, void *dst, const float *shard, size_t n) {
    double t0 = sr__prof_now();
    if (!e->offload) {
        e->dev->cast(dst, e->dtype, shard, SR_FLOAT32, n);
    } else {
        e->hdev->cast(e->stage, e->dtype, shard, SR_FLOAT32, n);
        e->dev->to_device(dst, e->stage, n * e->dsize);
    }
    if (sr__prof.on) e->dev->sync(), sr__prof_add(SR__PROF_CAST, t0, 0, (double)n * (double)(sizeof(float) + e->dsize));
}

/* grad (fp32 shard) += src (device, compute dtype) */
static void accumulate_shard(sr__engine *e, float *grad, const void *src, size_t n) {
    double t0 = sr__prof_now();
    if (!e->offload) {
        e->dev->accumulate(grad, src, e->dtype, n);
    } else {
        e->dev->to_host(e->stage, src, n * e->dsize);
        e->hdev->accumulate(grad, e->stage, e->dtype, n);
    }
    if (sr__prof.on)
        e->dev->sync(), sr__prof_add(SR__PROF_CAST, t0, 0, (double)n * (double)(2 * sizeof(float) + e->dsize));
}

void sr__engine_shard_to_dev(sr__engine *e, float *dev_dst, const float *shard, size_t n) {
    if (e->offload) e->dev->to_device(dev_dst, shard, n * sizeof(float));
    else if (dev_dst != shard) e->dev->cast(dev_dst, SR_FLOAT32, shard, SR_FLOAT32, n);
}

void sr__engine_shard_from_dev(sr__engine *e, float *shard, const float *dev_src, size_t n) {
    if (e->offload) e->dev->to_host(shard, dev_src, n * sizeof(float));
    else if (shard != dev_src) e->dev->cast(shard, SR_FLOAT32, dev_src, SR_FLOAT32, n);
}

static int is_frozen(const sr__engine *e, int u) { return e->units.u[u].frozen; }

static int issue_gather_one(sr__engine *e, int u) {
    sr__uslot *s = &e->slot[u];
    if (s->st != SR_U_RELEASED) return 0;
    const sr__unit *un = &e->units.u[u];
    if (!s->full) s->full = pool_get(e, param_pool_of(e, u));
    if (!s->full) return -1;
    if (!e->shard_pg) { /* one shard holds everything: a cast is the gather */
        cast_shard(e, s->full, s->master, un->shard);
        s->st = SR_U_GATHERED;
        return 0;
    }
    const void *send = s->master;
    e->dev->sync(); /* a GPU's collectives run on their own stream: the casts must be done */
    if (e->dtype != SR_FLOAT32 || e->offload) {
        s->gather_send = pool_get(e, temp_pool_of(e, u));
        if (!s->gather_send) return -1;
        cast_shard(e, s->gather_send, s->master, un->shard);
        e->dev->sync();
        send = s->gather_send;
    }
    s->issued = sr__prof_now();
    if (sr_pg_all_gather(e->shard_pg, send, s->full, un->shard, e->dtype, &s->gather_work) != 0)
        return pg_fail(e->shard_pg, "all-gather");
    s->st = SR_U_GATHERING;
    return 0;
}

/* The profile of a collective issued at `issued` whose wait began at t0 and just returned:
   in flight meanwhile (overlapped), then waited on. */
static void wait_done(double issued, double t0, size_t bytes) {
    sr__prof_add_sec(SR__PROF_COLL_OVERLAP, t0 - issued, 0, 0);
    sr__prof_add(SR__PROF_COLL_WAIT, t0, 0, (double)bytes);
}

static int wait_gather_one(sr__engine *e, int u) {
    sr__uslot *s = &e->slot[u];
    if (s->st != SR_U_GATHERING) return 0;
    double t0 = sr__prof_now();
    int rc = sr_work_wait(s->gather_work);
    if (sr__prof.on) wait_done(s->issued, t0, e->units.u[u].padded * e->dsize);
    s->gather_work = NULL;
    pool_put(temp_pool_of(e, u), s->gather_send);
    s->gather_send = NULL;
    if (rc != 0) return pg_fail(e->shard_pg, "all-gather");
    s->st = SR_U_GATHERED;
    return 0;
}

/* A unit and its frozen companion (units.h) are gathered, waited for and released together. */
static int issue_gather(sr__engine *e, int u) {
    int c = e->units.u[u].companion;
    if (issue_gather_one(e, u) != 0) return -1;
    return c >= 0 ? issue_gather_one(e, c) : 0;
}

static int wait_gather(sr__engine *e, int u) {
    int c = e->units.u[u].companion, rc = wait_gather_one(e, u);
    if (c >= 0 && wait_gather_one(e, c) != 0) rc = -1;
    return rc;
}

static int ensure_gathered(sr__engine *e, int u) {
    if (issue_gather(e, u) != 0) return -1;
    return wait_gather(e, u);
}

static void release_one(sr__engine *e, int u) {
    sr__uslot *s = &e->slot[u];
    if (s->st != SR_U_GATHERED) return;
    s->st = SR_U_RELEASED;
    if (!is_root(e, u)) { /* the root keeps its own buffer */
        pool_put(param_pool_of(e, u), s->full);
        s->full = NULL;
    }
}

static void release_params(sr__engine *e, int u) {
    release_one(e, u);
    if (e->units.u[u].companion >= 0) release_one(e, e->units.u[u].companion);
}

/* ---- reducing gradients ------------------------------------------------------------------------ */

static int complete_reduce(sr__engine *e, int u) {
    sr__uslot *s = &e->slot[u];
    if (!s->rs_pending) return 0;
    for (int i = 0; i < e->npending; i++)
        if (e->pending_rs[i] == u) {
            memmove(&e->pending_rs[i], &e->pending_rs[i + 1], (size_t)(e->npending - i - 1) * sizeof(int));
            e->npending--;
            break;
        }
    s->rs_pending = 0;
    double t0 = sr__prof_now();
    int rc = sr_work_wait(s->rs_work);
    if (sr__prof.on) wait_done(s->issued_rs, t0, e->units.u[u].padded * e->dsize);
    s->rs_work = NULL;
    if (rc == 0 && s->rs_recv) accumulate_shard(e, s->grad, s->rs_recv, e->units.u[u].shard);
    pool_put(temp_pool_of(e, u), s->rs_recv);
    s->rs_recv = NULL;
    if (!is_root(e, u)) {
        pool_put(&e->grad_pool, s->gfull);
        s->gfull = NULL;
    }
    return rc == 0 ? 0 : pg_fail(e->shard_pg, "reduce-scatter");
}

/* The task can add straight into the fp32 gradient shard when that shard is the whole unit in
   the compute dtype on the compute device (one shard, fp32, no offload) and still holds zeros (the
   first micro-batch of a step): the gradients still arrive zeroed, and the separate buffer's
   zeroing and its addition into the shard -- two passes over every gradient -- go away, with the
   same bits (0 + g = g).  Later micro-batches add into a zeroed buffer as before, so what a
   micro-batch contributes is summed on its own whatever the accumulation. */
static int grads_direct(const sr__engine *e, int u) {
    return !e->shard_pg && !e->offload && e->dtype == SR_FLOAT32 && e->slot[u].grad_clean &&
           e->units.u[u].shard == e->units.u[u].padded;
}

/* The unit's full gradient buffer, zeroed.  At most grad_limit buffers exist: when all are busy
   the oldest reduce-scatter is finished first (that bounds memory, as limit_all_gathers does). */
static int get_grad_buffer(sr__engine *e, int u) {
    sr__uslot *s = &e->slot[u];
    if (is_frozen(e, u)) { /* no gradient at all: the task gets NULL for every parameter */
        s->gdst = NULL;
        return 0;
    }
    if (complete_reduce(e, u) != 0) return -1; /* its previous micro-batch's reduction */
    if (grads_direct(e, u)) {
        s->gdst = s->grad;
        s->grad_clean = 0;
        return 0;
    }
    if (!is_root(e, u)) {
        while (e->grad_pool.nfree == 0 && e->grad_pool.allocated >= e->grad_limit && e->npending)
            if (complete_reduce(e, e->pending_rs[0]) != 0) return -1;
        s->gfull = pool_get(e, &e->grad_pool);
        if (!s->gfull) return -1;
    }
    double t0 = sr__prof_now();
    e->dev->zero(s->gfull, e->units.u[u].padded * e->dsize);
    if (sr__prof.on) e->dev->sync(), sr__prof_add(SR__PROF_CAST, t0, 0, (double)(e->units.u[u].padded * e->dsize));
    s->gdst = s->gfull;
    return 0;
}

static int issue_reduce(sr__engine *e, int u) {
    sr__uslot *s = &e->slot[u];
    const sr__unit *un = &e->units.u[u];
    if (is_frozen(e, u)) return 0;            /* nothing to reduce: a frozen unit does no reduce-scatter */
    if (s->gdst == (void *)s->grad) return 0; /* the task added into the shard itself */
    if (!e->shard_pg) {
        accumulate_shard(e, s->grad, s->gfull, un->shard);
        s->grad_clean = 0;
        if (!is_root(e, u)) pool_put(&e->grad_pool, s->gfull), s->gfull = NULL;
        return 0;
    }
    /* The first reduction into a zeroed fp32 shard on the device is the shard itself: no temporary
       and no accumulate pass (0 + x is x, bit for bit) */
    int direct = e->dtype == SR_FLOAT32 && !e->offload && s->grad_clean;
    s->grad_clean = 0;
    if (!direct && !(s->rs_recv = pool_get(e, temp_pool_of(e, u)))) return -1;
    e->dev->sync(); /* the task's gradient kernels must have finished */
    s->issued_rs = sr__prof_now();
    void *recv = direct ? (void *)s->grad : s->rs_recv;
    if (sr_pg_reduce_scatter(e->shard_pg, s->gfull, recv, un->shard, e->dtype, SR_AVG, &s->rs_work) != 0)
        return pg_fail(e->shard_pg, "reduce-scatter");
    e->rs_bytes += (double)(un->padded * e->dsize);
    s->rs_pending = 1;
    e->pending_rs[e->npending++] = u;
    return 0;
}

/* ---- calling the task ---------------------------------------------------------------------------- */

static void module_call(sr__engine *e, int mi, sr_module_call *c, int with_grads) {
    const sr__module *m = &e->model->mods[mi];
    for (int k = 0; k < m->nparams; k++) {
        const sr__param *p = &e->model->params[sr__param_owner(e->model, m->params[k])];
        const sr__uslot *s = &e->slot[p->unit]; /* the module's unit, or its frozen companion */
        e->pptr[k] = (char *)s->full + p->offset * e->dsize;
        /* a frozen parameter's gradient pointer is NULL (shardrun/model.h) */
        e->gptr[k] = with_grads && !is_frozen(e, p->unit) ? (char *)s->gdst + p->offset * e->dsize : NULL;
    }
    c->module = mi;
    c->name = m->name;
    c->nparams = m->nparams;
    c->params = e->pptr;
    c->grads = with_grads ? e->gptr : NULL;
}

static int forward(sr__engine *e, sr_module_call *c, int mi, int save, int recompute) {
    module_call(e, mi, c, 0);
    c->save_activations = save;
    c->recompute = recompute;
    double t0 = sr__prof_now();
    int rc = e->ops->forward(e->state, c);
    if (sr__prof.on) e->dev->sync(), sr__prof_add(SR__PROF_TASK, t0, 0, 0);
    return rc == 0 ? 0 : task_fail(e, recompute ? "forward (recompute)" : "forward", mi);
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
static int forward_pass(sr__engine *e, sr_module_call *c, int keep_root, int keep_wrapped, int reshard) {
    int root = e->units.root, nm = e->model->nmods;
    const sr__fsdp_config *cfg = &e->cfg;
    if (root >= 0 && issue_gather(e, root) != 0) return -1;
    if (cfg->forward_prefetch && e->nfwd && issue_gather(e, e->fwd_units[0]) != 0) return -1;
    if (root >= 0 && wait_gather(e, root) != 0) return -1;
    for (int mi = 0; mi < nm; mi++) {
        int pos = e->mod_pos[mi], u = e->model->mods[mi].unit;
        if (pos >= 0 && unit_first(e, mi)) {
            sr__watch_unit(u);
            if (ensure_gathered(e, u) != 0) return -1;
            if (cfg->forward_prefetch && pos + 1 < e->nfwd && issue_gather(e, e->fwd_units[pos + 1]) != 0) return -1;
        }
        if (forward(e, c, mi, pos >= 0 ? keep_wrapped : keep_root, 0) != 0) return -1;
        if (pos >= 0 && unit_last(e, mi) && reshard) release_params(e, u);
    }
    return 0;
}

int sr__engine_micro_batch(sr__engine *e, long long step, int micro, int accum, const int64_t *samples, int n,
                           double *loss, long long *tokens) {
    *tokens = 0;
    sr__watch_step(step, micro);
    sr__watch_phase(SR_PHASE_FORWARD);
    double t0 = sr__prof_now();
    if (e->ops->batch(e->state, samples, n, tokens) != 0) {
        sr__log(SR_LOG_ERROR, "task %s: batch() failed for step %lld", e->task, step);
        return -1;
    }
    if (sr__prof.on) e->dev->sync(), sr__prof_add(SR__PROF_DATA, t0, 0, 0);
    sr_module_call c = {0};
    c.dtype = e->dtype;
    c.device = e->dev->kind;
    c.batch_size = n;
    c.step = step;
    c.micro_step = micro;
    int root = e->units.root, nm = e->model->nmods, ckpt = e->cfg.enabled && e->cfg.activation_checkpointing;
    const sr__fsdp_config *cfg = &e->cfg;

    /* forward */
    if (forward_pass(e, &c, 1, !ckpt, e->cfg.reshard_after_forward) != 0) return -1;

    /* loss: the gradient seed carries 1/accum (micro-batches are averaged) and the fp16 scale */
    module_call(e, nm - 1, &c, 0);
    c.grad_scale = (float)(e->loss_scale / accum);
    t0 = sr__prof_now();
    if (e->ops->loss(e->state, &c, loss) != 0) return task_fail(e, "loss", -1);
    if (sr__prof.on) e->dev->sync(), sr__prof_add(SR__PROF_TASK, t0, 0, 0);
    c.grad_scale = 0.0f;

    /* backward */
    sr__watch_phase(SR_PHASE_BACKWARD);
    if (root >= 0 && get_grad_buffer(e, root) != 0) return -1;
    if (cfg->backward_prefetch != SR_PREFETCH_NONE && e->nfwd && issue_gather(e, e->fwd_units[e->nfwd - 1]) != 0)
        return -1;
    for (int mi = nm - 1; mi >= 0; mi--) {
        int pos = e->mod_pos[mi], u = e->model->mods[mi].unit;
        if (pos >= 0 && unit_last(e, mi)) {
            sr__watch_unit(u);
            if (ensure_gathered(e, u) != 0) return -1;
            if (cfg->backward_prefetch == SR_PREFETCH_PRE && pos > 0 && issue_gather(e, e->fwd_units[pos - 1]) != 0)
                return -1;
            if (get_grad_buffer(e, u) != 0) return -1;
            if (ckpt) /* activation checkpointing: the unit's forward again, keeping everything */
                for (int k = 0; k < e->units.u[u].nmods; k++)
                    if (forward(e, &c, e->units.u[u].mods[k], 1, 1) != 0) return -1;
        }
        module_call(e, mi, &c, 1);
        c.save_activations = 1;
        c.recompute = 0;
        t0 = sr__prof_now();
        if (e->ops->backward(e->state, &c) != 0) return task_fail(e, "backward", mi);
        if (sr__prof.on) e->dev->sync(), sr__prof_add(SR__PROF_TASK, t0, 0, 0);
        if (pos >= 0 && unit_first(e, mi)) {
            if (cfg->backward_prefetch == SR_PREFETCH_POST && pos > 0 && issue_gather(e, e->fwd_units[pos - 1]) != 0)
                return -1;
            if (issue_reduce(e, u) != 0) return -1;
            release_params(e, u);
        }
    }
    if (root >= 0) {
        if (issue_reduce(e, root) != 0) return -1;
        release_params(e, root);
    }
    return 0;
}

/* ---- evaluation ---------------------------------------------------------------------------------- */

/* The forward and loss() of an eval batch the task has loaded (n samples). */
static int eval_forward(sr__engine *e, long long step, int batch, int n, double *loss) {
    sr__watch_phase(SR_PHASE_EVAL);
    sr_module_call c = {0};
    c.dtype = e->dtype;
    c.device = e->dev->kind;
    c.batch_size = n;
    c.step = step;
    c.micro_step = batch;
    c.eval = 1;
    int root = e->units.root, nm = e->model->nmods;
    /* the training forward's gathers and prefetches, no activations kept; every unit is resharded
       after its forward (whatever the strategy: no backward will come for it) */
    if (forward_pass(e, &c, 0, 0, 1) != 0) return -1;
    module_call(e, nm - 1, &c, 0);
    c.grad_scale = 0.0f; /* nothing flows back */
    if (e->ops->loss(e->state, &c, loss) != 0) return task_fail(e, "loss (evaluation)", -1);
    if (root >= 0) release_params(e, root);
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
            rc = pg_fail(e->world, "all-gather");
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

/* ---- the optimizer step -------------------------------------------------------------------------- */

/* A scalar reduced over a group (through device memory, so NCCL works too). */
static int reduce_scalar(sr__engine *e, sr_pg *pg, double *v, sr_redop op) {
    if (!pg) return 0;
    float f = (float)*v;
    e->dev->to_device(e->scalar, &f, sizeof f);
    double t0 = sr__prof_now();
    if (sr_pg_all_reduce(pg, e->scalar, 1, SR_FLOAT32, op, NULL) != 0) return pg_fail(pg, "all-reduce");
    if (sr__prof.on) sr__prof_add(SR__PROF_COLL_WAIT, t0, 0, sizeof f);
    e->dev->to_host(&f, e->scalar, sizeof f);
    *v = f;
    return 0;
}

int sr__engine_avg(sr__engine *e, double *v) {
    double m = *v;
    if (reduce_scalar(e, e->world, &m, SR_AVG) != 0) return -1;
    *v = m;
    return 0;
}

double sr__engine_mean(sr__engine *e, double v) { return sr__engine_avg(e, &v) == 0 ? v : NAN; }

/* bytes of this rank's fp32 gradient shards (the profile's traffic figures); frozen units have none */
static double shard_bytes(const sr__engine *e) {
    double b = 0;
    for (int u = 0; u < e->units.n; u++)
        if (!is_frozen(e, u)) b += (double)(e->units.u[u].shard * sizeof(float));
    return b;
}

static void zero_grads(sr__engine *e) {
    double t0 = sr__prof_now();
    for (int u = 0; u < e->units.n; u++) {
        if (is_frozen(e, u)) continue;
        e->hdev->zero(e->slot[u].grad, e->units.u[u].shard * sizeof(float));
        e->slot[u].grad_clean = 1;
    }
    if (sr__prof.on) e->hdev->sync(), sr__prof_add(SR__PROF_CAST, t0, 0, shard_bytes(e));
}

static void adamw_unit(sr__engine *e, int u, const sr__optim *o, const sr__adamw_args *base) {
    const sr__unit *un = &e->units.u[u];
    const sr__uslot *s = &e->slot[u];
    size_t lo = (size_t)e->shard_rank * un->shard, a, b;
    for (int k = 0; k < un->nparams; k++) { /* per parameter: weight decay differs */
        const sr__param *p = &e->model->params[un->params[k]];
        if (!sr__param_in_range(p, lo, un->shard, &a, &b)) continue;
        sr__adamw_args args = *base;
        args.weight_decay = (p->flags & SR_PARAM_NO_DECAY) ? 0.0f : (float)o->weight_decay;
        size_t off = a - lo;
        e->hdev->adamw(s->master + off, s->grad + off, s->exp_avg + off, s->exp_avg_sq + off, b - a, &args);
    }
}

int sr__engine_step(sr__engine *e, const sr__optim *o, sr__step_result *out) {
    memset(out, 0, sizeof *out);
    sr__watch_phase(SR_PHASE_OPTIMIZER);
    while (e->npending)
        if (complete_reduce(e, e->pending_rs[0]) != 0) return -1;
    if (e->rep_pg && e->offload) { /* host shards go through the device, one at a time */
        for (int u = 0; u < e->units.n; u++) {
            size_t n = e->units.u[u].shard;
            if (is_frozen(e, u)) continue;
            sr__engine_shard_to_dev(e, e->xfer, e->slot[u].grad, n);
            e->dev->sync();
            if (sr_pg_all_reduce(e->rep_pg, e->xfer, n, SR_FLOAT32, SR_AVG, NULL) != 0)
                return pg_fail(e->rep_pg, "gradient all-reduce across replicas");
            sr__engine_shard_from_dev(e, e->slot[u].grad, e->xfer, n);
        }
    } else if (e->rep_pg) { /* HYBRID / NO_SHARD: the replicas average their (identical-layout) shards */
        sr_work **w = sr__calloc((size_t)e->units.n, sizeof *w);
        int rc = w ? 0 : -1;
        if (!w) sr__log(SR_LOG_ERROR, "out of memory for %d all-reduce handles", e->units.n);
        double t0 = sr__prof_now();
        for (int u = 0; u < e->units.n && !rc; u++)
            if (!is_frozen(e, u))
                rc = sr_pg_all_reduce(e->rep_pg, e->slot[u].grad, e->units.u[u].shard, SR_FLOAT32, SR_AVG, &w[u]);
        for (int u = 0; w && u < e->units.n; u++)
            if (w[u] && sr_work_wait(w[u]) != 0) rc = -1;
        if (sr__prof.on) sr__prof_add(SR__PROF_COLL_WAIT, t0, 0, shard_bytes(e));
        free(w);
        if (rc) return pg_fail(e->rep_pg, "gradient all-reduce across replicas");
    }
    out->loss_scale = e->loss_scale;
    if (e->dtype == SR_FLOAT16) { /* every rank decides together whether this step overflowed */
        double bad = 0, t0 = sr__prof_now();
        for (int u = 0; u < e->units.n && !bad; u++)
            if (!is_frozen(e, u)) bad = e->hdev->nonfinite(e->slot[u].grad, e->units.u[u].shard);
        if (sr__prof.on) sr__prof_add(SR__PROF_CLIP, t0, 0, shard_bytes(e));
        if (reduce_scalar(e, e->world, &bad, SR_MAX) != 0) return -1;
        if (bad) {
            out->skipped = 1;
            out->grad_norm = NAN;
            e->loss_scale /= 2; /* torch.cuda.amp.GradScaler: backoff 0.5 */
            e->good_steps = 0;
            zero_grads(e);
            return 0;
        }
    }
    double inv = 1.0 / e->loss_scale, sq = 0, t0 = sr__prof_now();
    for (int u = 0; u < e->units.n; u++) /* frozen parameters have no place in the norm */
        if (!is_frozen(e, u)) sq += e->hdev->sumsq(e->slot[u].grad, e->units.u[u].shard);
    if (sr__prof.on) sr__prof_add(SR__PROF_CLIP, t0, 2 * shard_bytes(e) / sizeof(float), shard_bytes(e));
    if (reduce_scalar(e, e->shard_pg, &sq, SR_SUM) != 0) return -1;
    double norm = sqrt(sq) * inv, coef = 1.0;
    if (o->max_grad_norm > 0) { /* torch.nn.utils.clip_grad_norm_: max / (norm + 1e-6), at most 1 */
        coef = o->max_grad_norm / (norm + 1e-6);
        if (coef > 1.0) coef = 1.0;
    }
    out->grad_norm = norm;
    if (o->guard_nonfinite && (o->nonfinite_loss || !isfinite(norm))) {
        /* as an fp16 overflow, without touching the loss scale: no AdamW step is counted */
        out->withheld = 1;
        zero_grads(e);
        return e->dev->sync();
    }
    e->adam_steps++;
    sr__adamw_args a = {0};
    a.lr = (float)o->lr;
    a.beta1 = (float)o->beta1;
    a.beta2 = (float)o->beta2;
    a.eps = (float)o->eps;
    a.bias_correction1 = (float)(1.0 - pow(o->beta1, (double)e->adam_steps));
    a.bias_correction2 = (float)(1.0 - pow(o->beta2, (double)e->adam_steps));
    a.grad_mul = (float)(coef * inv);
    t0 = sr__prof_now();
    for (int u = 0; u < e->units.n; u++)
        if (!is_frozen(e, u)) adamw_unit(e, u, o, &a);
    /* reads param, grad and both moments, writes param and both moments */
    if (sr__prof.on) e->hdev->sync(), sr__prof_add(SR__PROF_OPTIM, t0, 0, 7 * shard_bytes(e));
    zero_grads(e);
    if (e->dtype == SR_FLOAT16 && ++e->good_steps >= 2000) e->loss_scale *= 2, e->good_steps = 0; /* growth */
    return e->dev->sync();
}

/* ---- set-up -------------------------------------------------------------------------------------- */

static int split_groups(sr__engine *e) {
    sr_pg *w = e->world;
    e->shard_size = 1, e->rep_size = 1;
    if (!w) return 0;
    int hybrid = e->cfg.strategy == SR_HYBRID_SHARD || e->cfg.strategy == SR_HYBRID_SHARD_ZERO2;
    if (!e->cfg.enabled || e->cfg.strategy == SR_NO_SHARD) {
        e->rep_pg = e->world_size > 1 ? w : NULL;
    } else if (!hybrid) {
        e->shard_pg = e->world_size > 1 ? w : NULL;
    } else { /* shard within a node, replicate across nodes */
        sr_pg *sh = NULL, *rep = NULL;
        if (sr_pg_split(w, sr_node_rank(e->ctx), sr_local_rank(e->ctx), &sh) != 0 ||
            sr_pg_split(w, sr_local_rank(e->ctx), sr_node_rank(e->ctx), &rep) != 0)
            return pg_fail(w, "creating the HYBRID_SHARD groups");
        e->shard_pg = sr_pg_size(sh) > 1 ? sh : NULL;
        e->rep_pg = sr_pg_size(rep) > 1 ? rep : NULL;
    }
    if (e->shard_pg) e->shard_size = sr_pg_size(e->shard_pg), e->shard_rank = sr_pg_rank(e->shard_pg);
    if (e->rep_pg) e->rep_size = sr_pg_size(e->rep_pg), e->rep_rank = sr_pg_rank(e->rep_pg);
    return 0;
}

static int check_dtype(const sr__engine *e) {
    if (e->ops->dtypes & (1u << e->dtype)) return 0;
    static const sr_dtype floating[] = {SR_FLOAT32, SR_BFLOAT16, SR_FLOAT16};
    char have[64] = "";
    for (int k = 0; k < 3; k++)
        if (e->ops->dtypes & (1u << floating[k]))
            strcat(have, *have ? ", " : ""), strcat(have, sr_dtype_name(floating[k]));
    sr__log(SR_LOG_ERROR,
            "ACCELERATE_MIXED_PRECISION=%s: task %s computes in %s only; set "
            "[accelerate] mixed_precision to one of those%s",
            e->dtype == SR_FLOAT32 ? "no" : sr_dtype_name(e->dtype), e->task, *have ? have : "nothing",
            (e->ops->dtypes & 1u) ? " (fp32: mixed_precision = no)" : "");
    return -1;
}

sr__engine *sr__engine_create(sr_ctx *ctx, const char *task, const sr_model_ops *ops, void *state, sr_model *model,
                              uint64_t seed) {
    sr__engine *e = sr__calloc(1, sizeof *e);
    if (!e) {
        sr__log(SR_LOG_ERROR, "out of memory for the FSDP engine (%zu bytes)", sizeof *e);
        return NULL;
    }
    e->ctx = ctx, e->task = task, e->ops = ops, e->state = state, e->model = model, e->seed = seed;
    e->units.root = -1;
    e->rank = sr_rank(ctx), e->world_size = sr_world_size(ctx);
    e->world = sr_world(ctx);
    e->loss_scale = 1.0;
    sr__prof_init(); /* SHARDRUN_PROFILE, read once the worker's environment is in place */
    if (sr__fsdp_config_read(&e->cfg) != 0) goto fail;
    e->dtype = e->cfg.param_dtype;
    e->dsize = sr_dtype_size(e->dtype);
    if (check_dtype(e) != 0) goto fail;
    if (e->dtype == SR_FLOAT16) e->loss_scale = 65536.0; /* GradScaler's init_scale */
    if (!e->world && e->world_size > 1) {
        sr__log(SR_LOG_ERROR,
                "task %s is a model task on %d ranks but no process group exists; add the torch "
                "plugin to [shardrun] plugins",
                task, e->world_size);
        goto fail;
    }
    char err[256];
    const char *devname = e->world && !strcmp(sr_pg_backend(e->world), "nccl") ? "cuda" : "cpu";
    e->dev = sr__device_get(devname, err, sizeof err);
    if (!e->dev) {
        sr__log(SR_LOG_ERROR, "device %s: %s", devname, err);
        goto fail;
    }
    if (!(ops->devices & (1u << e->dev->kind))) {
        sr__log(SR_LOG_ERROR,
                "task %s cannot compute on the %s device this run uses (backend %s); run it "
                "with the gloo backend ([torch] backend = gloo) or use a task built for %s",
                task, e->dev->name, e->world ? sr_pg_backend(e->world) : "none", e->dev->name);
        goto fail;
    }
    e->hdev = e->dev;
    if (e->cfg.enabled && e->cfg.offload_params) {
        /* shards and optimizer state in host memory, AdamW on the CPU; gathers and reductions on
           the device through staging copies.  SHARDRUN_DEBUG_OFFLOAD_STAGING=1 takes that path on a
           CPU too (two "devices" that are both the CPU), so the tests check it without a GPU. */
        const char *force = getenv("SHARDRUN_DEBUG_OFFLOAD_STAGING");
        if (e->dev->kind != SR_DEVICE_CPU || (force && !strcmp(force, "1"))) {
            e->hdev = sr__device_get("cpu", err, sizeof err);
            e->offload = 1;
        } else if (e->rank == 0) {
            sr__log(SR_LOG_INFO, "FSDP_OFFLOAD_PARAMS=true: the device is the CPU, so shards and optimizer "
                                 "state already live in host memory; nothing to offload");
        }
    }
    if (split_groups(e) != 0) goto fail;
    if (sr__units_build(model, &e->cfg, e->shard_size, &e->units) != 0) goto fail;
    int nu = e->units.n;
    e->slot = sr__calloc((size_t)nu, sizeof *e->slot);
    e->fwd_units = sr__calloc((size_t)nu, sizeof(int));
    e->pending_rs = sr__calloc((size_t)nu, sizeof(int));
    e->mod_pos = sr__calloc((size_t)model->nmods + 1, sizeof(int));
    if (!e->slot || !e->fwd_units || !e->pending_rs || !e->mod_pos) {
        sr__log(SR_LOG_ERROR, "out of memory for the FSDP engine's tables (%d units, %d modules)", nu, model->nmods);
        goto fail;
    }
    size_t max_padded = 0, max_comp_padded = 0, max_grad_padded = 0, max_shard = 0, max_block_shard = 0, root_shard = 0;
    for (int mi = 0; mi < model->nmods; mi++) {
        int u = model->mods[mi].unit;
        e->mod_pos[mi] = -1;
        if (!e->units.u[u].root) {
            if (e->nfwd == 0 || e->fwd_units[e->nfwd - 1] != u) e->fwd_units[e->nfwd++] = u;
            e->mod_pos[mi] = e->nfwd - 1;
        }
        if (model->mods[mi].nparams > e->max_mod_params) e->max_mod_params = model->mods[mi].nparams;
    }
    e->pptr = sr__calloc((size_t)e->max_mod_params + 1, sizeof(void *));
    e->gptr = sr__calloc((size_t)e->max_mod_params + 1, sizeof(void *));
    if (!e->pptr || !e->gptr) {
        sr__log(SR_LOG_ERROR, "out of memory for the FSDP engine's tables (%d parameters)", e->max_mod_params + 1);
        goto fail;
    }
    for (int u = 0; u < nu; u++) {
        const sr__unit *un = &e->units.u[u];
        sr__uslot *s = &e->slot[u];
        size_t b = un->shard * sizeof(float);
        s->master = e->hdev->alloc(b);
        if (!un->frozen) { /* a frozen unit keeps its values only: no gradient, no AdamW moments */
            s->grad = e->hdev->alloc(b);
            s->exp_avg = e->hdev->alloc(b), s->exp_avg_sq = e->hdev->alloc(b);
        }
        if (!s->master || (!un->frozen && (!s->grad || !s->exp_avg || !s->exp_avg_sq))) {
            sr__log(SR_LOG_ERROR, "out of memory allocating the shards of unit %s (%zu bytes each)", un->label, b);
            goto fail;
        }
        s->grad_clean = 1; /* alloc zero-fills (device.h) */
        e->persistent += (un->frozen ? 1 : 4) * b;
        if (un->shard > max_shard) max_shard = un->shard;
        if (un->root && un->shard > root_shard) root_shard = un->shard;
        if (!un->root && un->shard > max_block_shard) max_block_shard = un->shard;
        if (!un->root && un->owner < 0 && un->padded > max_padded) max_padded = un->padded;
        if (!un->root && un->owner >= 0 && un->padded > max_comp_padded) max_comp_padded = un->padded;
        if (!un->root && !un->frozen && un->padded > max_grad_padded) max_grad_padded = un->padded;
    }
    e->peak = e->persistent;
    /* pools: FULL_SHARD holds at most two units (current + prefetched); SHARD_GRAD_OP keeps every
       unit gathered from its forward to its backward */
    e->param_pool.bytes = max_padded * e->dsize;
    e->companion_pool.bytes = max_comp_padded * e->dsize;
    e->grad_pool.bytes = max_grad_padded * e->dsize;
    e->temp_pool.bytes = max_block_shard * e->dsize;
    e->root_temp_pool.bytes = root_shard * e->dsize; /* the root's and its frozen companion's */
    e->grad_limit = 2;
    for (int r = 0; r < nu; r++) { /* the root unit's buffers (and its companion's) live for the whole run */
        if (!e->units.u[r].root) continue;
        sr__pool rp = {e->units.u[r].padded * e->dsize, NULL, 0, 0};
        e->slot[r].full = pool_get(e, &rp);
        if (!e->units.u[r].frozen) e->slot[r].gfull = pool_get(e, &rp);
        free(rp.free);
        if (!e->slot[r].full || (!e->units.u[r].frozen && !e->slot[r].gfull)) goto fail;
    }
    e->scalar = e->dev->alloc(16);
    if (!e->scalar) {
        sr__log(SR_LOG_ERROR, "out of memory for the FSDP engine's scalars");
        goto fail;
    }
    if (e->offload) { /* one shard's worth of staging on each side (not counted: it is not per unit) */
        e->stage = e->hdev->alloc(max_shard * sizeof(float));
        e->xfer = e->dev->alloc(max_shard * sizeof(float));
        if (!e->stage || !e->xfer) goto fail;
    }
    return e;
fail:
    sr__engine_free(e);
    return NULL;
}

void sr__engine_free(sr__engine *e) {
    if (!e) return;
    if (e->dev) {
        while (e->npending) complete_reduce(e, e->pending_rs[0]);
        for (int u = 0; e->slot && u < e->units.n; u++) { /* no slots: out of memory making them */
            sr__uslot *s = &e->slot[u];
            if (s->st == SR_U_GATHERING) wait_gather_one(e, u);
            e->hdev->free(s->master), e->hdev->free(s->grad), e->hdev->free(s->exp_avg), e->hdev->free(s->exp_avg_sq);
            if (e->units.u[u].root) e->dev->free(s->full), e->dev->free(s->gfull);
            else pool_put(param_pool_of(e, u), s->full);
        }
        pool_drain(e, &e->param_pool), pool_drain(e, &e->grad_pool), pool_drain(e, &e->temp_pool);
        pool_drain(e, &e->companion_pool);
        pool_drain(e, &e->root_temp_pool);
        e->dev->free(e->scalar);
        e->dev->free(e->xfer);
        if (e->hdev) e->hdev->free(e->stage);
    }
    sr__units_free(&e->units);
    sr__fsdp_config_free(&e->cfg);
    free(e->slot), free(e->fwd_units), free(e->pending_rs), free(e->mod_pos), free(e->pptr), free(e->gptr);
    free(e);
}

const sr__fsdp_config *sr__engine_config(const sr__engine *e) { return &e->cfg; }

/* ---- initial parameters -------------------------------------------------------------------------- */

/* Fills elements [lo, lo + n) of unit u's flat buffer (host memory) from the initialisers. */
void sr__engine_init_range(const sr__engine *e, int u, float *dst, size_t lo, size_t n) {
    const sr__unit *un = &e->units.u[u];
    size_t a, b;
    memset(dst, 0, n * sizeof *dst); /* padding stays zero */
    for (int k = 0; k < un->nparams; k++) {
        const sr__param *p = &e->model->params[un->params[k]];
        if (sr__param_in_range(p, lo, n, &a, &b))
            sr__init_fill(dst + (a - lo), e->seed, p->name, p->init, a - p->offset, b - a);
    }
}

static int init_oom(const sr__unit *un, size_t n) {
    sr__log(SR_LOG_ERROR, "out of memory for unit %s's initial parameters (%zu bytes)", un->label, n * sizeof(float));
    return -1;
}

int sr__engine_fill_master(sr__engine *e, sr__unit_filler fill, void *arg, int from_rank0) {
    from_rank0 = from_rank0 && e->world && e->world_size > 1;
    e->frozen_digest_known = 0; /* new values: the frozen base's digest is computed again when needed */
    for (int u = 0; u < e->units.n; u++) {
        const sr__unit *un = &e->units.u[u];
        size_t lo = (size_t)e->shard_rank * un->shard;
        int whole = from_rank0 && e->rank == 0; /* only rank 0 fills a whole unit */
        size_t nhost = whole ? un->padded : un->shard;
        float *host = sr__malloc(nhost * sizeof(float));
        if (!host) return init_oom(un, nhost);
        if (!from_rank0) { /* each rank fills only its own shard */
            fill(e, u, host, lo, un->shard, arg);
        } else { /* rank 0's values, one unit at a time: no rank holds the whole model */
            /* the root's gathered buffer is free until training and as large (fp32): broadcast into
               it rather than into a second copy of what may be the token embedding */
            int borrow = un->root && e->dsize == sizeof(float) && e->slot[u].full;
            if (borrow) { /* what it held is stale from here on: the next use gathers again */
                if (wait_gather_one(e, u) != 0) {
                    free(host);
                    return -1;
                }
                e->slot[u].st = SR_U_RELEASED;
            }
            float *dev = borrow ? e->slot[u].full : e->dev->alloc(un->padded * sizeof(float));
            if (!dev) {
                free(host);
                return init_oom(un, un->padded);
            }
            if (whole) fill(e, u, host, 0, un->padded, arg), e->dev->to_device(dev, host, un->padded * sizeof(float));
            int rc = sr_pg_broadcast(e->world, dev, un->padded, SR_FLOAT32, 0, NULL);
            if (rc == 0) e->dev->to_host(host, (float *)dev + lo, un->shard * sizeof(float));
            if (!borrow) e->dev->free(dev);
            if (rc != 0) {
                free(host);
                return pg_fail(e->world, "broadcast of rank 0's parameters");
            }
        }
        e->hdev->to_device(e->slot[u].master, host, un->shard * sizeof(float));
        free(host);
    }
    return e->dev->sync();
}

static void init_filler(sr__engine *e, int u, float *dst, size_t lo, size_t n, void *arg) {
    (void)arg;
    sr__engine_init_range(e, u, dst, lo, n);
}

int sr__engine_init_params(sr__engine *e) {
    snprintf(e->base_from, sizeof e->base_from, "the task's initialisers with seed %llu (no init_weights)",
             (unsigned long long)e->seed);
    return sr__engine_fill_master(e, init_filler, NULL, e->cfg.enabled && e->cfg.sync_module_states);
}

/* ---- agreeing on failure -------------------------------------------------------------------------- */

int sr__engine_agree(sr__engine *e, sr_pg *pg, int failed) {
    if (!pg) return failed ? -1 : 0;
    int v = failed ? 1 : 0, *d = (int *)e->scalar;
    e->dev->to_device(d, &v, sizeof v);
    if (sr_pg_all_reduce(pg, d, 1, SR_INT32, SR_MAX, NULL) != 0) {
        sr__log(SR_LOG_ERROR, "%s", sr_pg_error(pg));
        return -1;
    }
    e->dev->to_host(&v, d, sizeof v);
    return v ? -1 : 0;
}

/* Every rank's `mine`, in rank order, into a malloc'ed *all of *n entries (1 without a process group).
   Collective: the ranks first agree on `failed` and on their own allocations, so that one that
   cannot take part makes every rank return -1 instead of leaving the others in the gather. */
int sr__engine_gather_u64(sr__engine *e, int failed, uint64_t mine, const char *what, uint64_t **all, size_t *n) {
    *n = e->world ? (size_t)e->world_size : 1;
    *all = sr__malloc(*n * sizeof **all);
    void *send = e->world ? e->dev->alloc(sizeof mine) : NULL,
         *recv = e->world ? e->dev->alloc(*n * sizeof mine) : NULL;
    if (!*all || (e->world && (!send || !recv))) {
        sr__log(SR_LOG_ERROR, "checkpoint: out of memory for %s", what);
        failed = 1;
    }
    int rc = sr__engine_agree(e, e->world, failed);
    if (rc == 0 && e->world) {
        e->dev->to_device(send, &mine, sizeof mine);
        if (sr_pg_all_gather(e->world, send, recv, 2, SR_INT32, NULL) != 0) {
            sr__log(SR_LOG_ERROR, "checkpoint: %s", sr_pg_error(e->world));
            rc = -1;
        } else {
            e->dev->to_host(*all, recv, *n * sizeof mine);
        }
    } else if (rc == 0) {
        (*all)[0] = mine;
    }
    if (send) e->dev->free(send);
    if (recv) e->dev->free(recv);
    if (rc) free(*all), *all = NULL;
    return rc;
}

/* ---- reporting ------------------------------------------------------------------------------------ */

void sr__engine_memory(const sr__engine *e, sr__engine_mem *m) {
    m->persistent = e->persistent;
    m->pool = e->pool_peak;
    m->peak = e->peak;
    m->params = sr__model_numel(e->model);
    m->frozen = sr__model_frozen_numel(e->model);
    m->rs_bytes = e->rs_bytes;
    m->expected = (m->frozen * sizeof(float) + (m->params - m->frozen) * 4 * sizeof(float)) / (size_t)e->shard_size;
}

int sr__engine_param_stats(sr__engine *e, double *sum, double *sumsq) {
    double s = 0, q = 0;
    int oom = 0;
    for (int u = 0; u < e->units.n; u++) {
        size_t n = e->units.u[u].shard;
        float *h = sr__malloc(n * sizeof *h + 1);
        if (!h) { /* still takes part in the reductions below, so the other ranks do not wait */
            sr__log(SR_LOG_ERROR, "out of memory for a shard's statistics (%zu bytes)", n * sizeof *h);
            oom = 1;
            break;
        }
        e->hdev->to_host(h, e->slot[u].master, n * sizeof *h);
        for (size_t i = 0; i < n; i++) s += h[i], q += (double)h[i] * h[i];
        free(h);
    }
    if (reduce_scalar(e, e->shard_pg, &s, SR_SUM) != 0 || reduce_scalar(e, e->shard_pg, &q, SR_SUM) != 0 || oom)
        return -1;
    *sum = s, *sumsq = q;
    return 0;
}

void sr__engine_describe(const sr__engine *e, char *buf, size_t len) {
    int wrapped = e->nfwd;
    char frozen[96] = "";
    size_t nf = sr__model_frozen_numel(e->model);
    if (nf) snprintf(frozen, sizeof frozen, ", %zu of them frozen", nf);
    if (!e->cfg.enabled) {
        snprintf(buf, len,
                 "replicated on %d rank%s (ACCELERATE_USE_FSDP is not true): gradients all-reduced, %s, "
                 "%zu parameters%s",
                 e->world_size, e->world_size == 1 ? "" : "s", sr_dtype_name(e->dtype), sr__model_numel(e->model),
                 frozen);
        return;
    }
    snprintf(buf, len,
             "FSDP %s on %d rank%s (shard group %d, replicas %d): %d unit%s (%d wrapped%s), %zu parameters%s, "
             "%s compute, backward prefetch %s, forward prefetch %s%s%s",
             sr__strategy_name(e->cfg.strategy), e->world_size, e->world_size == 1 ? "" : "s", e->shard_size,
             e->rep_size, e->units.n, e->units.n == 1 ? "" : "s", wrapped, e->units.root >= 0 ? " + root" : "",
             sr__model_numel(e->model), frozen, sr_dtype_name(e->dtype), sr__prefetch_name(e->cfg.backward_prefetch),
             e->cfg.forward_prefetch ? "on" : "off",
             e->cfg.activation_checkpointing ? ", activation checkpointing" : "",
             e->offload ? ", shards offloaded to host memory" : "");
}
