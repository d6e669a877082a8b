/* The checkpoint id and the rest of what every file of a checkpoint says about itself (see
   ckpt_id.h). */
#define _GNU_SOURCE
#include "fsdp/ckpt_id.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/hash64.h"
#include "base/log.h"
#include "fsdp/ckpt_format.h"
#include "fsdp/ckpt_frozen.h"
#include "fsdp/engine_internal.h"

/* This rank's part of the checkpoint id: a hash of the state it saves (its master, exp_avg and
   exp_avg_sq shards) and the scalars a resume reads back. */
static int state_hash(sr__engine *e, const sr__train_state *ts, uint64_t *out, sr__ckpt_times *tm) {
    double t0 = sr__now_s();
    sr__hash64_state h;
    sr__hash64_init(&h, 0x636b7074u /* "ckpt" */);
    long long scalars[6] = {ts->global_step, ts->seed, e->adam_steps, e->good_steps, e->world_size, e->shard_size};
    sr__hash64_update(&h, scalars, sizeof scalars);
    sr__hash64_update(&h, &e->loss_scale, sizeof e->loss_scale);
    size_t max = 0;
    for (int u = 0; u < e->units.n; u++) max = e->units.u[u].shard > max ? e->units.u[u].shard : max;
    float *host = NULL;
    if (e->hdev->kind != SR_DEVICE_CPU && !(host = sr__malloc(max * sizeof *host))) {
        sr__log(SR_LOG_ERROR, "checkpoint: out of memory for a shard's host copy (%zu bytes)", max * sizeof *host);
        return -1;
    }
    for (int u = 0; u < e->units.n; u++)
        for (int k = 0; k < SR__CKPT_KINDS; k++) {
            const float *src = sr__ckpt_kind_shard(&e->slot[u], k);
            size_t bytes = e->units.u[u].shard * sizeof(float);
            if (!src) continue; /* a frozen unit's moments: none */
            if (host) {
                e->hdev->to_host(host, src, bytes);
                src = host;
            }
            sr__hash64_update(&h, src, bytes);
        }
    free(host);
    tm->hash_s += sr__now_s() - t0;
    *out = sr__hash64_final(&h);
    return 0;
}

/* XXH3-128 of the ranks' state hashes in rank order, each as 8 little-endian bytes (into b, which
   holds 8 * n): 32 hex digits, the high half first. */
static void checkpoint_id(const uint64_t *h, size_t n, unsigned char *b, char out[33]) {
    for (size_t r = 0; r < n; r++)
        for (int i = 0; i < 8; i++) b[8 * r + (size_t)i] = (unsigned char)(h[r] >> (8 * i));
    XXH128_hash_t id = XXH3_128bits(b, 8 * n);
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)id.high64, (unsigned long long)id.low64);
}

/* The checkpoint's identity: a digest of the state it holds, every rank's state_hash() combined in
   rank order, so that the same id means the same saved state.  A run resumed after a failure or a
   preemption then writes checkpoints that are byte for byte those of an uninterrupted run, while a
   file of another run or another step (other weights, other moments, another step number) still
   carries another id and is refused on resume.  Collective; 0 or -1. */
int sr__ckpt_make_meta(sr__engine *e, const sr__train_state *ts, sr__ckpt_meta *m, sr__ckpt_times *tm) {
    uint64_t mine = 0, *all;
    size_t n;
    /* every rank takes part in the gather, also one that failed (sr__engine_gather_u64 agrees first) */
    int failed = state_hash(e, ts, &mine, tm) != 0;
    /* the id's bytes, taken before the gather (as many as it returns): out of memory is then a
       failure the ranks agree on */
    size_t world = e->world ? (size_t)e->world_size : 1;
    unsigned char *b = sr__malloc(8 * world + 1);
    if (!b) sr__log(SR_LOG_ERROR, "checkpoint: out of memory for the checkpoint id of %zu ranks", world);
    if (sr__engine_gather_u64(e, failed || !b, mine, "the checkpoint id", &all, &n) != 0) {
        free(b);
        return -1;
    }
    checkpoint_id(all, n, b, m->id); /* n is world: the gather's count, one per rank */
    free(b);
    free(all);
    sr__ckpt_model_digest(e->model, m->digest);
    /* SHARDED files leave the frozen units out and say which base they were trained on instead */
    m->frozen[0] = 0;
    if (e->cfg.state_dict != SR__SD_FULL && sr__model_frozen_numel(e->model) > 0) {
        uint64_t d;
        if (sr__frozen_digest(e, &d) != 0) return -1;
        sr__hash64_hex(d, m->frozen);
    }
    m->step = ts->global_step, m->world_size = e->world_size, m->shard_group_size = e->shard_size;
    return 0;
}
