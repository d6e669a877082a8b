/*
 * The engine's buffer pools and the gathering of parameters.  A wrapped unit's full parameters are
 * all-gathered from the ranks' shards (cast to the compute dtype first, through host staging when
 * offloaded) into a pool buffer just before its first use, and released back to the pool after
 * its last: its slot goes RELEASED -> GATHERING (issued) -> GATHERED (waited for) -> RELEASED, and
 * its frozen companion (units.h) goes along.  The root unit keeps its buffer for the whole run.
 * Also the copies of shard-sized arrays between the shards' memory and the device.
 */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/profile.h"
#include "fsdp/engine_internal.h"

/* ---- buffer pools ------------------------------------------------------------------------------ */

void *sr__engine_pool_get(sr__engine *e, sr__pool *p) {
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

void sr__engine_pool_put(sr__pool *p, void *b) {
    if (b) p->free[p->nfree++] = b;
}

void sr__engine_pool_drain(sr__engine *e, sr__pool *p) {
    for (int i = 0; i < p->nfree; i++) e->dev->free(p->free[i]);
    free(p->free);
    memset(p, 0, sizeof *p);
}

/* ---- gathering parameters ---------------------------------------------------------------------- */

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

void sr__engine_shard_to_dev(sr__engine *e, float *dev_dst, const float *shard, size_t n) {
    if (e->offload) e->dev->to_device(dev_dst, shard, n * sizeof(float));
    else if (dev_dst != shard) e->dev->cast(dev_dst, SR_FLOAT32, shard, SR_FLOAT32, n);
}

void sr__engine_shard_from_dev(sr__engine *e, float *shard, const float *dev_src, size_t n) {
    if (e->offload) e->dev->to_host(shard, dev_src, n * sizeof(float));
    else if (shard != dev_src) e->dev->cast(shard, SR_FLOAT32, dev_src, SR_FLOAT32, n);
}

static int issue_gather_one(sr__engine *e, int u) {
    sr__uslot *s = &e->slot[u];
    if (s->st != SR__U_RELEASED) return 0;
    const sr__unit *un = &e->units.u[u];
    if (!s->full) s->full = sr__engine_pool_get(e, sr__engine_param_pool_of(e, u));
    if (!s->full) return -1;
    if (!e->shard_pg) { /* one shard holds everything: a cast is the gather */
        cast_shard(e, s->full, s->master, un->shard);
        s->st = SR__U_GATHERED;
        return 0;
    }
    const void *send = s->master;
    e->dev->sync(); /* a GPU's collectives run on their own stream: the casts must be done */
    if (e->dtype != SR_FLOAT32 || e->offload) {
        s->gather_send = sr__engine_pool_get(e, sr__engine_temp_pool_of(e, u));
        if (!s->gather_send) return -1;
        cast_shard(e, s->gather_send, s->master, un->shard);
        e->dev->sync();
        send = s->gather_send;
    }
    s->issued = sr__prof_now();
    if (sr_pg_all_gather(e->shard_pg, send, s->full, un->shard, e->dtype, &s->gather_work) != 0)
        return sr__engine_pg_fail(e->shard_pg, "all-gather");
    s->st = SR__U_GATHERING;
    return 0;
}

/* The profile of a collective issued at `issued` whose wait began at t0 and just returned:
   in flight meanwhile (overlapped), then waited on. */
void sr__engine_wait_done(double issued, double t0, size_t bytes) {
    sr__prof_add_sec(SR__PROF_COLL_OVERLAP, t0 - issued, 0, 0);
    sr__prof_add(SR__PROF_COLL_WAIT, t0, 0, (double)bytes);
}

int sr__engine_wait_gather_one(sr__engine *e, int u) {
    sr__uslot *s = &e->slot[u];
    if (s->st != SR__U_GATHERING) return 0;
    double t0 = sr__prof_now();
    int rc = sr_work_wait(s->gather_work);
    if (sr__prof.on) sr__engine_wait_done(s->issued, t0, e->units.u[u].padded * e->dsize);
    s->gather_work = NULL;
    sr__engine_pool_put(sr__engine_temp_pool_of(e, u), s->gather_send);
    s->gather_send = NULL;
    if (rc != 0) return sr__engine_pg_fail(e->shard_pg, "all-gather");
    s->st = SR__U_GATHERED;
    return 0;
}

/* A unit and its frozen companion (units.h) are gathered, waited for and released together. */
int sr__engine_issue_gather(sr__engine *e, int u) {
    int c = e->units.u[u].companion;
    if (issue_gather_one(e, u) != 0) return -1;
    return c >= 0 ? issue_gather_one(e, c) : 0;
}

int sr__engine_wait_gather(sr__engine *e, int u) {
    int c = e->units.u[u].companion, rc = sr__engine_wait_gather_one(e, u);
    if (c >= 0 && sr__engine_wait_gather_one(e, c) != 0) rc = -1;
    return rc;
}

int sr__engine_ensure_gathered(sr__engine *e, int u) {
    if (sr__engine_issue_gather(e, u) != 0) return -1;
    return sr__engine_wait_gather(e, u);
}

static void release_one(sr__engine *e, int u) {
    sr__uslot *s = &e->slot[u];
    if (s->st != SR__U_GATHERED) return;
    s->st = SR__U_RELEASED;
    if (!sr__engine_is_root(e, u)) { /* the root keeps its own buffer */
        sr__engine_pool_put(sr__engine_param_pool_of(e, u), s->full);
        s->full = NULL;
    }
}

void sr__engine_release_params(sr__engine *e, int u) {
    release_one(e, u);
    if (e->units.u[u].companion >= 0) release_one(e, e->units.u[u].companion);
}
