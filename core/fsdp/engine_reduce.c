/*
 * Reducing gradients: each unit's full-gradient buffer (from the grad pool, at most grad_limit of
 * them at once), the reduce-scatter issued once the backward has left the unit, and its
 * completion, which adds the result into the unit's fp32 gradient shard.  A reduce-scatter stays
 * in flight (pending_rs, oldest first) until the unit's next micro-batch, a full grad pool or the
 * optimizer step (engine_step.c) waits for it.
 */
#include <string.h>

#include "base/profile.h"
#include "fsdp/engine_internal.h"

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

int sr__engine_complete_reduce(sr__engine *e, int u) {
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
    if (sr__prof.on) sr__engine_wait_done(s->issued_rs, t0, e->units.u[u].padded * e->dsize);
    s->rs_work = NULL;
    if (rc == 0 && s->rs_recv) accumulate_shard(e, s->grad, s->rs_recv, e->units.u[u].shard);
    sr__engine_pool_put(sr__engine_temp_pool_of(e, u), s->rs_recv);
    s->rs_recv = NULL;
    if (!sr__engine_is_root(e, u)) {
        sr__engine_pool_put(&e->grad_pool, s->gfull);
        s->gfull = NULL;
    }
    return rc == 0 ? 0 : sr__engine_pg_fail(e->shard_pg, "reduce-scatter");
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
int sr__engine_get_grad_buffer(sr__engine *e, int u) {
    sr__uslot *s = &e->slot[u];
    if (sr__engine_is_frozen(e, u)) { /* no gradient at all: the task gets NULL for every parameter */
        s->gdst = NULL;
        return 0;
    }
    if (sr__engine_complete_reduce(e, u) != 0) return -1; /* its previous micro-batch's reduction */
    if (grads_direct(e, u)) {
        s->gdst = s->grad;
        s->grad_clean = 0;
        return 0;
    }
    if (!sr__engine_is_root(e, u)) {
        while (e->grad_pool.nfree == 0 && e->grad_pool.allocated >= e->grad_limit && e->npending)
            if (sr__engine_complete_reduce(e, e->pending_rs[0]) != 0) return -1;
        s->gfull = sr__engine_pool_get(e, &e->grad_pool);
        if (!s->gfull) return -1;
    }
    double t0 = sr__prof_now();
    e->dev->zero(s->gfull, e->units.u[u].padded * e->dsize);
    if (sr__prof.on) e->dev->sync(), sr__prof_add(SR__PROF_CAST, t0, 0, (double)(e->units.u[u].padded * e->dsize));
    s->gdst = s->gfull;
    return 0;
}

int sr__engine_issue_reduce(sr__engine *e, int u) {
    sr__uslot *s = &e->slot[u];
    const sr__unit *un = &e->units.u[u];
    if (sr__engine_is_frozen(e, u)) return 0; /* nothing to reduce: a frozen unit does no reduce-scatter */
    if (s->gdst == (void *)s->grad) return 0; /* the task added into the shard itself */
    if (!e->shard_pg) {
        accumulate_shard(e, s->grad, s->gfull, un->shard);
        s->grad_clean = 0;
        if (!sr__engine_is_root(e, u)) sr__engine_pool_put(&e->grad_pool, s->gfull), s->gfull = NULL;
        return 0;
    }
    /* The first reduction into a zeroed fp32 shard on the device is the shard itself: no temporary
       and no accumulate pass (0 + x is x, bit for bit) */
    int direct = e->dtype == SR_FLOAT32 && !e->offload && s->grad_clean;
    s->grad_clean = 0;
    if (!direct && !(s->rs_recv = sr__engine_pool_get(e, sr__engine_temp_pool_of(e, u)))) return -1;
    e->dev->sync(); /* the task's gradient kernels must have finished */
    s->issued_rs = sr__prof_now();
    void *recv = direct ? (void *)s->grad : s->rs_recv;
    if (sr_pg_reduce_scatter(e->shard_pg, s->gfull, recv, un->shard, e->dtype, SR_AVG, &s->rs_work) != 0)
        return sr__engine_pg_fail(e->shard_pg, "reduce-scatter");
    e->rs_bytes += (double)(un->padded * e->dsize);
    s->rs_pending = 1;
    e->pending_rs[e->npending++] = u;
    return 0;
}
