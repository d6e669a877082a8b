/*
 * Set-up and free.  sr__engine_create reads FSDP_*, picks the compute device (and the host under
 * FSDP_OFFLOAD_PARAMS), splits the process groups, builds the units, allocates each rank's
 * persistent shards, sizes the pools and makes the root's buffers; the master shards get their
 * values next (engine_init_params.c or a checkpoint).  sr__engine_free waits for whatever is
 * still in flight and frees it all, also after a set-up that failed halfway.
 */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/profile.h"
#include "config/worker_settings.h"
#include "fsdp/engine_internal.h"

static int split_groups(sr__engine *e) {
    sr_pg *w = e->world;
    e->shard_size = 1, e->rep_size = 1;
    if (!w) return 0;
    int hybrid = e->cfg.strategy == SR__HYBRID_SHARD || e->cfg.strategy == SR__HYBRID_SHARD_ZERO2;
    if (!e->cfg.enabled || e->cfg.strategy == SR__NO_SHARD) {
        e->rep_pg = e->world_size > 1 ? w : NULL;
    } else if (!hybrid) {
        e->shard_pg = e->world_size > 1 ? w : NULL;
    } else { /* shard within a node, replicate across nodes */
        sr_pg *sh = NULL, *rep = NULL;
        if (sr_pg_split(w, sr_node_rank(e->ctx), sr_local_rank(e->ctx), &sh) != 0 ||
            sr_pg_split(w, sr_local_rank(e->ctx), sr_node_rank(e->ctx), &rep) != 0)
            return sr__engine_pg_fail(w, "creating the HYBRID_SHARD groups");
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
    /* FSDP_* and ACCELERATE_*, read and checked at the worker's start-up (config/worker_settings.h);
       the settings own the wrap classes */
    e->cfg = sr__worker_settings_get()->fsdp;
    if (e->cfg.enabled && strcmp(e->cfg.enabled_spelling, "true"))
        sr__log(SR_LOG_WARN,
                "ACCELERATE_USE_FSDP=%s enables FSDP here, but accelerate itself only "
                "accepts the spelling `true`",
                e->cfg.enabled_spelling);
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
        if (e->dev->kind != SR_DEVICE_CPU || sr__worker_settings_get()->offload_staging) {
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
        e->slot[r].full = sr__engine_pool_get(e, &rp);
        if (!e->units.u[r].frozen) e->slot[r].gfull = sr__engine_pool_get(e, &rp);
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
        while (e->npending) sr__engine_complete_reduce(e, e->pending_rs[0]);
        for (int u = 0; e->slot && u < e->units.n; u++) { /* no slots: out of memory making them */
            sr__uslot *s = &e->slot[u];
            if (s->st == SR__U_GATHERING) sr__engine_wait_gather_one(e, u);
            e->hdev->free(s->master), e->hdev->free(s->grad), e->hdev->free(s->exp_avg), e->hdev->free(s->exp_avg_sq);
            if (e->units.u[u].root) e->dev->free(s->full), e->dev->free(s->gfull);
            else sr__engine_pool_put(sr__engine_param_pool_of(e, u), s->full);
        }
        sr__engine_pool_drain(e, &e->param_pool), sr__engine_pool_drain(e, &e->grad_pool),
            sr__engine_pool_drain(e, &e->temp_pool);
        sr__engine_pool_drain(e, &e->companion_pool);
        sr__engine_pool_drain(e, &e->root_temp_pool);
        e->dev->free(e->scalar);
        e->dev->free(e->xfer);
        if (e->hdev) e->hdev->free(e->stage);
    }
    sr__units_free(&e->units);
    free(e->slot), free(e->fwd_units), free(e->pending_rs), free(e->mod_pos), free(e->pptr), free(e->gptr);
    free(e);
}

const sr__fsdp_config *sr__engine_config(const sr__engine *e) { return &e->cfg; }
