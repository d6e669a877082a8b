/* Loading a checkpoint into the engine's shards, any world size and wrap policy (checkpoint.h).
   trainer_state.json first, then every file opened and verified (ckpt_verify.c) before a value is
   copied; the data is hashed as it is copied (ckpt_check.c); all of it before any rank returns. */
#define _GNU_SOURCE
#include "fsdp/checkpoint.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "fsdp/ckpt_check.h"
#include "fsdp/ckpt_format.h"
#include "fsdp/ckpt_frozen.h"
#include "fsdp/ckpt_source.h"
#include "fsdp/ckpt_state.h"
#include "fsdp/ckpt_verify.h"
#include "fsdp/engine_internal.h"

/* FULL: elements [first, first + n) of parameter p's `kind`, from its tensor (any float type). */
static int read_full(sr__ckpt_source *s, const sr__param *p, int kind, size_t first, size_t n, float *dst) {
    char name[1024];
    snprintf(name, sizeof name, kind == SR__CKPT_PARAM ? "%s" : "%s.%s", p->name, sr__ckpt_kind[kind]);
    const void *data;
    const sr__st_tensor *t = sr__st_find(kind == SR__CKPT_PARAM ? s->model : s->optim, name, &data);
    if (!t) {
        sr__log(SR_LOG_ERROR,
                "resume_from_checkpoint: %s: no tensor \"%s\" in %s.safetensors; the "
                "checkpoint belongs to another model",
                s->dir, name, kind == SR__CKPT_PARAM ? "model" : "optimizer");
        return -1;
    }
    int bad = t->nbytes / sr_dtype_size(t->dtype) != p->numel;
    if (!bad && t->dtype == SR_FLOAT32) /* a checkpoint's own fp32: copied and verified in one pass */
        sr__ckpt_copy_checked(s, kind == SR__CKPT_PARAM ? 0 : 1, t, data, first * sizeof(float), dst,
                              n * sizeof(float));
    else if (!bad) bad = sr__st_to_f32(t, data, first, n, dst) != 0;
    if (bad) {
        sr__log(SR_LOG_ERROR,
                "resume_from_checkpoint: %s: tensor \"%s\" has %" PRIu64 " elements of %s; "
                "the model's has %zu floating-point elements",
                s->dir, name, t->nbytes / sr_dtype_size(t->dtype), sr__st_dtype_name(t->dtype), p->numel);
        return -1;
    }
    return 0;
}

/* SHARDED: the same range, from the index's place of p: it may span several saved shards. */
static int read_sharded(sr__ckpt_source *s, const sr__param *p, int kind, size_t first, size_t n, float *dst) {
    const sr__ckpt_param *cp = sr__ckpt_index_find(&s->index, p->name);
    if (!cp || cp->numel != p->numel) {
        sr__log(SR_LOG_ERROR,
                "resume_from_checkpoint: %s: parameter \"%s\" (%zu elements) is %s in the "
                "checkpoint; it belongs to another model",
                s->dir, p->name, p->numel, cp ? "different" : "missing");
        return -1;
    }
    size_t ushard = s->index.units[cp->unit].shard, flat = cp->offset + first, done = 0;
    char tname[64];
    snprintf(tname, sizeof tname, "u%d.%s", cp->unit, sr__ckpt_kind[kind]);
    while (done < n) {
        size_t file = (flat + done) / ushard, pos = (flat + done) % ushard, take = ushard - pos;
        if (take > n - done) take = n - done;
        const void *data;
        const sr__st_tensor *t = file < (size_t)s->nshards ? sr__st_find(s->shards[file], tname, &data) : NULL;
        if (!t || t->nbytes != ushard * sizeof(float)) {
            sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s: shard %zu lacks \"%s\"", s->dir, file, tname);
            return -1;
        }
        sr__ckpt_copy_checked(s, (int)file, t, data, pos * sizeof(float), dst + done, take * sizeof(float));
        done += take;
    }
    return 0;
}

/* This rank's shard of every unit, each kind in turn, through one host buffer; not the frozen units
   when skip_frozen (the checkpoint holds no frozen base: this run's own is in place). */
static int copy_shards(sr__engine *e, sr__ckpt_source *s, int skip_frozen) {
    int failed = 0;
    for (int u = 0; u < e->units.n && !failed; u++) {
        const sr__unit *un = &e->units.u[u];
        if (skip_frozen && un->frozen) continue;
        size_t lo = (size_t)e->shard_rank * un->shard, a, b;
        float *host = sr__malloc(un->shard * sizeof *host + 1);
        if (!host) { /* agreed on by the caller: every rank fails the load together */
            sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s: out of memory for a shard of %zu values", s->dir,
                    un->shard);
            failed = 1;
            break;
        }
        for (int k = 0; k < SR__CKPT_KINDS && !failed; k++) {
            if (!sr__ckpt_kind_shard(&e->slot[u], k)) continue; /* a frozen unit: values only */
            memset(host, 0, un->shard * sizeof *host);
            for (int j = 0; j < un->nparams && !failed; j++) {
                const sr__param *p = &e->model->params[un->params[j]];
                if (!sr__param_in_range(p, lo, un->shard, &a, &b)) continue;
                failed = (s->full ? read_full : read_sharded)(s, p, k, a - p->offset, b - a, host + (a - lo)) != 0;
            }
            if (!failed) e->hdev->to_device(sr__ckpt_kind_shard(&e->slot[u], k), host, un->shard * sizeof *host);
        }
        free(host);
    }
    return failed ? -1 : 0;
}

int sr__ckpt_load(sr__engine *e, const char *dir, sr__train_state *ts) {
    sr__ckpt_source src = {0};
    char sid[33] = "";
    double t0 = sr__now_s();
    int failed = sr__ckpt_state_read(e, dir, ts, sid) != 0 || sr__ckpt_source_open(&src, dir) != 0;
    int verified = failed ? -1 : sr__ckpt_verify(e, &src, sid, ts->global_step);
    /* the frozen base's check is collective: every rank gets there, or none; -2 (another model)
       on any rank is a configuration error on every rank */
    int rc = sr__engine_agree_rc(e, e->world, verified), skip = 0;
    if (rc == 0) rc = sr__ckpt_frozen_check(e, &src, ts->seed, &skip, ts->frozen_digest);
    if (rc != 0) { /* -2: another frozen base (a configuration error), said before any copy */
        sr__ckpt_source_close(&src);
        return rc;
    }
    failed = copy_shards(e, &src, skip) != 0;
    if (!failed) failed = sr__ckpt_checks_finish(&src) != 0;
    sr__ckpt_times tm = src.times;
    sr__ckpt_source_close(&src);
    if (!skip) { /* the frozen values, if any, came from the files */
        e->frozen_digest_known = 0;
        snprintf(e->base_from, sizeof e->base_from, "resume_from_checkpoint = %s", dir);
    }
    rc = sr__engine_agree(e, e->world, failed);
    if (rc == 0)
        sr__log(SR_LOG_DEBUG,
                "checkpoint: rank %d loaded %s in %.3f s, %.3f s of it hashing %lld bytes on their own "
                "and %.3f s copying and hashing %lld bytes in one pass",
                e->rank, dir, sr__now_s() - t0, tm.hash_s, tm.hash_bytes, tm.copy_s, tm.copy_bytes);
    return rc;
}
