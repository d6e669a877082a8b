/*
 * The master shards' first values: the task's initialisers (sr__engine_init_params), or any filler
 * (weights.c: a safetensors file) through sr__engine_fill_master, each rank filling its own shard
 * or rank 0 filling whole units and broadcasting them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "fsdp/engine_internal.h"
#include "fsdp/param_init.h"

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
                if (sr__engine_wait_gather_one(e, u) != 0) {
                    free(host);
                    return -1;
                }
                e->slot[u].st = SR__U_RELEASED;
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
                return sr__engine_pg_fail(e->world, "broadcast of rank 0's parameters");
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
