/*
 * The optimizer step, once a step's micro-batches are done: the pending reduce-scatters finished,
 * the replicas' gradient shards averaged (HYBRID_SHARD, NO_SHARD), the fp16 overflow check and
 * loss scale, the gradient norm and clipping, AdamW on each shard, the gradients zeroed.  Also
 * scalars reduced over a group (sr__engine_avg, sr__engine_mean; the parameter statistics).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/profile.h"
#include "base/watch.h"
#include "fsdp/engine_internal.h"

/* A scalar reduced over a group (through device memory, so NCCL works too). */
int sr__engine_reduce_scalar(sr__engine *e, sr_pg *pg, double *v, sr_redop op) {
    if (!pg) return 0;
    float f = (float)*v;
    e->dev->to_device(e->scalar, &f, sizeof f);
    double t0 = sr__prof_now();
    if (sr_pg_all_reduce(pg, e->scalar, 1, SR_FLOAT32, op, NULL) != 0) return sr__engine_pg_fail(pg, "all-reduce");
    if (sr__prof.on) sr__prof_add(SR__PROF_COLL_WAIT, t0, 0, sizeof f);
    e->dev->to_host(&f, e->scalar, sizeof f);
    *v = f;
    return 0;
}

int sr__engine_avg(sr__engine *e, double *v) {
    double m = *v;
    if (sr__engine_reduce_scalar(e, e->world, &m, SR_AVG) != 0) return -1;
    *v = m;
    return 0;
}

double sr__engine_mean(sr__engine *e, double v) { return sr__engine_avg(e, &v) == 0 ? v : NAN; }

/* bytes of this rank's fp32 gradient shards (the profile's traffic figures); frozen units have none */
static double shard_bytes(const sr__engine *e) {
    double b = 0;
    for (int u = 0; u < e->units.n; u++)
        if (!sr__engine_is_frozen(e, u)) b += (double)(e->units.u[u].shard * sizeof(float));
    return b;
}

static void zero_grads(sr__engine *e) {
    double t0 = sr__prof_now();
    for (int u = 0; u < e->units.n; u++) {
        if (sr__engine_is_frozen(e, u)) continue;
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
        args.weight_decay = (p->flags & SR_PARAM_NO_DECAY) ? 0.0 : o->weight_decay;
        size_t off = a - lo;
        e->hdev->adamw(s->master + off, s->grad + off, s->exp_avg + off, s->exp_avg_sq + off, b - a, &args);
    }
}

int sr__engine_step(sr__engine *e, const sr__optim *o, sr__step_result *out) {
    memset(out, 0, sizeof *out);
    sr__watch_phase(SR__PHASE_OPTIMIZER);
    while (e->npending)
        if (sr__engine_complete_reduce(e, e->pending_rs[0]) != 0) return -1;
    if (e->rep_pg && e->offload) { /* host shards go through the device, one at a time */
        for (int u = 0; u < e->units.n; u++) {
            size_t n = e->units.u[u].shard;
            if (sr__engine_is_frozen(e, u)) continue;
            sr__engine_shard_to_dev(e, e->xfer, e->slot[u].grad, n);
            e->dev->sync();
            if (sr_pg_all_reduce(e->rep_pg, e->xfer, n, SR_FLOAT32, SR_AVG, NULL) != 0)
                return sr__engine_pg_fail(e->rep_pg, "gradient all-reduce across replicas");
            sr__engine_shard_from_dev(e, e->slot[u].grad, e->xfer, n);
        }
    } else if (e->rep_pg) { /* HYBRID / NO_SHARD: the replicas average their (identical-layout) shards */
        sr_work **w = sr__calloc((size_t)e->units.n, sizeof *w);
        int rc = w ? 0 : -1;
        if (!w) sr__log(SR_LOG_ERROR, "out of memory for %d all-reduce handles", e->units.n);
        double t0 = sr__prof_now();
        for (int u = 0; u < e->units.n && !rc; u++)
            if (!sr__engine_is_frozen(e, u))
                rc = sr_pg_all_reduce(e->rep_pg, e->slot[u].grad, e->units.u[u].shard, SR_FLOAT32, SR_AVG, &w[u]);
        for (int u = 0; w && u < e->units.n; u++)
            if (w[u] && sr_work_wait(w[u]) != 0) rc = -1;
        if (sr__prof.on) sr__prof_add(SR__PROF_COLL_WAIT, t0, 0, shard_bytes(e));
        free(w);
        if (rc) return sr__engine_pg_fail(e->rep_pg, "gradient all-reduce across replicas");
    }
    out->loss_scale = e->loss_scale;
    if (e->dtype == SR_FLOAT16) { /* every rank decides together whether this step overflowed */
        double bad = 0, t0 = sr__prof_now();
        for (int u = 0; u < e->units.n && !bad; u++)
            if (!sr__engine_is_frozen(e, u)) bad = e->hdev->nonfinite(e->slot[u].grad, e->units.u[u].shard);
        if (sr__prof.on) sr__prof_add(SR__PROF_CLIP, t0, 0, shard_bytes(e));
        if (sr__engine_reduce_scalar(e, e->world, &bad, SR_MAX) != 0) return -1;
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
        if (!sr__engine_is_frozen(e, u)) sq += e->hdev->sumsq(e->slot[u].grad, e->units.u[u].shard);
    if (sr__prof.on) sr__prof_add(SR__PROF_CLIP, t0, 2 * shard_bytes(e) / sizeof(float), shard_bytes(e));
    if (sr__engine_reduce_scalar(e, e->shard_pg, &sq, SR_SUM) != 0) return -1;
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
    a.lr = o->lr;
    a.beta1 = o->beta1;
    a.beta2 = o->beta2;
    a.eps = o->eps;
    a.step = e->adam_steps;
    a.grad_mul = (float)(coef * inv);
    t0 = sr__prof_now();
    for (int u = 0; u < e->units.n; u++)
        if (!sr__engine_is_frozen(e, u)) adamw_unit(e, u, o, &a);
    /* reads param, grad and both moments, writes param and both moments */
    if (sr__prof.on) e->hdev->sync(), sr__prof_add(SR__PROF_OPTIM, t0, 0, 7 * shard_bytes(e));
    zero_grads(e);
    if (e->dtype == SR_FLOAT16 && ++e->good_steps >= 2000) e->loss_scale *= 2, e->good_steps = 0; /* growth */
    return e->dev->sync();
}
