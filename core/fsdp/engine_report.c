/*
 * What the engine reports: its memory figures, the parameters' sum and sum of squares over every
 * shard, and a one-line description of its set-up.
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/log.h"
#include "fsdp/engine_internal.h"

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
    if (sr__engine_reduce_scalar(e, e->shard_pg, &s, SR_SUM) != 0 ||
        sr__engine_reduce_scalar(e, e->shard_pg, &q, SR_SUM) != 0 || oom)
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
