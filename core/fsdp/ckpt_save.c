/* Saving a checkpoint (checkpoint.h; the format: docs/checkpoint-format.md).  Every rank: the
   checkpoint id from every rank's state (ckpt_id.c); the files (SHARDED: each rank of the first replica its
   shard file; FULL: rank 0 model.safetensors and optimizer.safetensors, its shard group gathering
   one unit at a time; then PEFT's adapter files and the task's files, ckpt_files.h); rank 0
   trainer_state.json last; checkpoint-N.tmp renamed to checkpoint-N
   once every rank has finished. */
#define _GNU_SOURCE
#include "fsdp/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/fs.h"
#include "base/hash64.h"
#include "base/log.h"
#include "base/progress.h"
#include "base/strbuf.h"
#include "fsdp/ckpt_adapter.h"
#include "fsdp/ckpt_file.h"
#include "fsdp/ckpt_files.h"
#include "fsdp/ckpt_format.h"
#include "fsdp/ckpt_frozen.h"
#include "fsdp/ckpt_id.h"
#include "fsdp/ckpt_state.h"
#include "fsdp/engine_internal.h"
#include "config/worker_settings.h"

int sr__make_output_dir(const char *dir) {
    char failed[4096];
    if (sr__mkdir_p(dir, failed, sizeof failed) == 0) return 0;
    sr__log(SR_LOG_ERROR, "cannot create output_dir %s: %s: %s", dir, failed, strerror(errno));
    return -1;
}

static void fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) fsync(fd), close(fd);
}

/* Testing aid: SHARDRUN_DEBUG_SAVE_DELAY_MS slows every unit's write, so a test can kill a run
   in the middle of a save. */
static void debug_delay(void) {
    long ms = sr__worker_settings_get()->save_delay_ms;
    if (ms > 0) nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
}

/* Whether a SHARDED file holds unit u's `kind`: not a frozen unit's moments (it has none), nor its
   values when the checkpoint leaves the frozen base out (cm->frozen names its digest instead). */
static int saved(sr__engine *e, const sr__ckpt_meta *cm, int u, int kind) {
    if (!sr__ckpt_kind_shard(&e->slot[u], kind)) return 0;
    return !(cm->frozen[0] && e->units.u[u].frozen);
}

static int save_sharded(sr__engine *e, const char *tmp, const sr__ckpt_meta *cm, sr__ckpt_times *tm) {
    if (e->rep_rank != 0) return 0; /* one replica writes */
    int nu = e->units.n, rc = 0;
    sr__st_tensor *t = sr__calloc((size_t)nu * SR__CKPT_KINDS, sizeof *t);
    char **names = sr__calloc((size_t)nu * SR__CKPT_KINDS, sizeof *names);
    if (!t || !names) {
        sr__log(SR_LOG_ERROR, "checkpoint: out of memory for the layout of %d units", nu);
        free(t), free(names);
        return -1;
    }
    /* uU.param, uU.exp_avg and uU.exp_avg_sq for the trainable units; nothing of a frozen unit, whose
       values a resume rebuilds from the run's own initialisation and checks against frozen_digest
       (fsdp/ckpt_frozen.h); the missing moments say it was frozen (ckpt_verify.c) */
    int oom = 0, nt = 0;
    for (int u = 0; u < nu; u++)
        for (int k = 0; k < SR__CKPT_KINDS; k++) {
            if (!saved(e, cm, u, k)) continue;
            sr__st_tensor *x = &t[nt];
            names[nt] = sr__fmt("u%d.%s", u, sr__ckpt_kind[k]);
            x->name = names[nt] ? names[nt] : "";
            oom |= !names[nt++];
            x->dtype = SR_FLOAT32;
            x->ndim = 1;
            x->shape[0] = (int64_t)e->units.u[u].shard;
        }
    /* metadata: where every parameter lives, so another world size or wrap policy can load it */
    sr__ckpt_kvlist l = {.oom = oom};
    sr__ckpt_kv_add(&l, "format", sr__fmt("shardrun-sharded-2"));
    sr__ckpt_add_common(&l, cm, "shard");
    sr__ckpt_kv_add(&l, "shard_rank", sr__fmt("%d", e->shard_rank));
    if (cm->frozen[0]) sr__ckpt_kv_add(&l, SR__CKPT_FROZEN_KEY, sr__fmt("%s", cm->frozen));
    for (int u = 0; u < nu; u++) {
        char *k = sr__fmt("unit:%d", u);
        if (k)
            sr__ckpt_kv_add(&l, k,
                            sr__fmt("%zu %zu %zu", e->units.u[u].numel, e->units.u[u].padded, e->units.u[u].shard));
        else l.oom = 1;
        free(k);
    }
    for (int i = 0; i < e->model->nparams; i++) {
        const sr__param *p = &e->model->params[i];
        char shape[160], *k;
        if (p->tied_to >= 0) continue;
        k = sr__fmt("param:%s", p->name);
        if (k)
            sr__ckpt_kv_add(&l, k,
                            sr__fmt("%d %zu %zu %s", p->unit, p->offset, p->numel,
                                    sr__st_shape_str(shape, sizeof shape, p->ndim, p->shape)));
        else l.oom = 1;
        free(k);
    }
    sr__ckpt_add_hashes(&l, t, (size_t)nt);
    sr__ckpt_out o;
    char name[64];
    rc = sr__ckpt_out_create(
        &o, sr__fmt("%s/%s", tmp, sr__ckpt_shard_name(name, sizeof name, e->shard_rank, e->shard_size)), t, (size_t)nt,
        &l, tm);
    size_t maxs = 0;
    for (int u = 0; u < nu; u++) maxs = e->units.u[u].shard > maxs ? e->units.u[u].shard : maxs;
    float *host = rc ? NULL : sr__malloc(maxs * sizeof *host + 1);
    if (!rc && !host) {
        sr__log(SR_LOG_ERROR, "checkpoint: out of memory for a unit's shard (%zu bytes)", maxs * sizeof *host + 1);
        rc = -1;
    }
    for (int u = 0, ti = 0; u < nu && !rc; u++) {
        size_t n = e->units.u[u].shard;
        for (int k = 0; k < SR__CKPT_KINDS && !rc; k++) {
            const float *src = sr__ckpt_kind_shard(&e->slot[u], k);
            if (!saved(e, cm, u, k)) continue;
            e->hdev->to_host(host, src, n * sizeof *host);
            rc = sr__ckpt_out_put(&o, (size_t)ti++, host, n * sizeof *host);
        }
        debug_delay();
    }
    rc = sr__ckpt_out_close(&o, rc == 0);
    free(host);
    for (int i = 0; i < nt; i++) free(names[i]);
    sr__ckpt_kv_free(&l);
    free(names), free(t);
    return rc;
}

/* Rank 0 writes model.safetensors and optimizer.safetensors; its shard group gathers each unit. */
static int save_full(sr__engine *e, const char *tmp, const sr__ckpt_meta *cm, sr__ckpt_times *tm) {
    if (e->rep_rank != 0) return 0;
    int me = e->rank == 0, rc = 0, np = e->model->nparams;
    sr__ckpt_out mo = {0}, oo = {0};
    /* param -> tensor index in model.safetensors, and in optimizer.safetensors (-1: frozen, no state) */
    int *idx = me ? sr__calloc((size_t)np * 2, sizeof *idx) : NULL, *oidx = idx ? idx + np : NULL;
    if (me) {
        sr__st_tensor *mt = sr__calloc((size_t)np, sizeof *mt), *ot = sr__calloc((size_t)np * 2, sizeof *ot);
        char **onames = sr__calloc((size_t)np * 2, sizeof *onames);
        int n = 0, on = 0, oom = !idx || !mt || !ot || !onames;
        for (int i = 0; i < np && !oom; i++) {
            const sr__param *p = &e->model->params[i];
            if (p->tied_to >= 0) continue; /* tied names are saved once, under the owner (as HF does) */
            idx[i] = n;
            oidx[i] = -1;
            mt[n] = (sr__st_tensor){.name = p->name, .dtype = SR_FLOAT32, .ndim = p->ndim};
            memcpy(mt[n].shape, p->shape, sizeof p->shape);
            /* a frozen parameter has no optimizer state, as in torch's optimizer state_dict */
            for (int k = 0; k < 2 && !sr__param_frozen(e->model, i); k++) {
                oidx[i] = on / 2;
                onames[on] = sr__fmt("%s.%s", p->name, sr__ckpt_kind[1 + k]);
                ot[on] = mt[n];
                ot[on].name = onames[on] ? onames[on] : "";
                oom |= !onames[on++];
            }
            n++;
        }
        sr__ckpt_kvlist ml = {.oom = oom}, ol = {.oom = oom};
        sr__ckpt_kv_add(&ml, "format", sr__fmt("pt"));
        sr__ckpt_add_common(&ml, cm, "model");
        sr__ckpt_add_file_hashes(&ml, e->model); /* the task's files (tokenizer, config.json) */
        sr__ckpt_add_hashes(&ml, mt, (size_t)n);
        sr__ckpt_add_common(&ol, cm, "optimizer");
        sr__ckpt_add_hashes(&ol, ot, (size_t)on);
        rc = sr__ckpt_out_create(&mo, sr__fmt("%s/model.safetensors", tmp), mt, (size_t)n, &ml, tm);
        if (!rc) rc = sr__ckpt_out_create(&oo, sr__fmt("%s/optimizer.safetensors", tmp), ot, (size_t)on, &ol, tm);
        sr__ckpt_kv_free(&ml), sr__ckpt_kv_free(&ol);
        for (int i = 0; onames && i < 2 * np; i++) free(onames[i]);
        free(onames), free(mt), free(ot);
    }
    /* rank 0's failure to create the files must stop the whole shard group before any gather */
    rc = sr__engine_agree(e, e->shard_pg, rc != 0);
    size_t maxp = 0;
    for (int u = 0; u < e->units.n; u++) maxp = e->units.u[u].padded > maxp ? e->units.u[u].padded : maxp;
    float *full = rc || !e->shard_pg ? NULL : e->dev->alloc(maxp * sizeof(float));
    float *host = me && !rc ? sr__malloc(maxp * sizeof(float)) : NULL;
    if (!rc && ((e->shard_pg && !full) || (me && !host)))
        sr__log(SR_LOG_ERROR, "checkpoint: out of memory for a gathered unit (%zu bytes)", maxp * sizeof(float));
    /* every rank of the group learns of one's missing buffer before the gathers */
    if (!rc) rc = sr__engine_agree(e, e->shard_pg, (e->shard_pg && !full) || (me && !host));
    for (int u = 0; u < e->units.n && !rc; u++) { /* one unit at a time: nobody holds the whole model */
        const sr__unit *un = &e->units.u[u];
        for (int k = 0; k < SR__CKPT_KINDS && !rc; k++) {
            float *src = sr__ckpt_kind_shard(&e->slot[u], k);
            if (!src) continue; /* a frozen unit's moments: none, on every rank alike */
            if (e->offload) {   /* collectives and the copy below read device memory */
                sr__engine_shard_to_dev(e, e->xfer, src, un->shard);
                src = e->xfer;
            }
            if (e->shard_pg) {
                if (sr_pg_all_gather(e->shard_pg, src, full, un->shard, SR_FLOAT32, NULL) != 0) {
                    sr__log(SR_LOG_ERROR, "checkpoint: %s", sr_pg_error(e->shard_pg));
                    rc = -1;
                    break;
                }
                src = full;
            }
            if (!me) continue;
            e->dev->to_host(host, src, un->padded * sizeof(float));
            for (int j = 0; j < un->nparams && !rc; j++) {
                const sr__param *p = &e->model->params[un->params[j]];
                const float *data = host + p->offset;
                size_t bytes = p->numel * sizeof(float);
                if (k == SR__CKPT_PARAM) rc = sr__ckpt_out_put(&mo, (size_t)idx[un->params[j]], data, bytes);
                else rc = sr__ckpt_out_put(&oo, (size_t)(2 * oidx[un->params[j]] + k - 1), data, bytes);
            }
        }
        debug_delay();
    }
    if (me) {
        int ok = rc == 0;
        ok = sr__ckpt_out_close(&mo, ok) == 0 && ok;
        ok = sr__ckpt_out_close(&oo, ok) == 0 && ok;
        rc = ok ? 0 : -1;
    }
    e->dev->free(full);
    free(host), free(idx);
    return rc;
}

int sr__ckpt_save(sr__engine *e, const char *outdir, const sr__train_state *ts) {
    char *final = sr__fmt("%s/checkpoint-%lld", outdir, ts->global_step),
         *tmp = final ? sr__fmt("%s.tmp", final) : NULL, *old = final ? sr__fmt("%s.old", final) : NULL;
    double t0 = sr__now_s();
    sr__ckpt_times tm = {0};
    int failed = !final || !tmp || !old; /* still agreed on below: every rank stops together */
    if (failed) sr__log(SR_LOG_ERROR, "checkpoint: out of memory for the paths under %s", outdir);
    failed |= ts->incomplete;
    if (e->rank == 0 && !failed) {
        failed = sr__make_output_dir(outdir) != 0;
        sr__remove_tree(tmp); /* a save that was killed earlier */
        if (!failed && mkdir(tmp, 0777) != 0) {
            sr__progress_io_failed(errno, tmp);
            sr__log(SR_LOG_ERROR, "checkpoint: cannot create %s: %s", tmp, strerror(errno));
            failed = 1;
        }
    }
    int rc = sr__engine_agree(e, e->world, failed);
    sr__ckpt_meta cm = {0};
    if (rc == 0) rc = sr__ckpt_make_meta(e, ts, &cm, &tm);
    if (rc == 0) {
        failed = (e->cfg.state_dict == SR__SD_FULL ? save_full(e, tmp, &cm, &tm) : save_sharded(e, tmp, &cm, &tm)) != 0;
        /* PEFT's adapter files, out of the model.safetensors rank 0 just wrote */
        if (!failed && e->cfg.state_dict == SR__SD_FULL && e->rank == 0)
            failed = sr__ckpt_save_adapter(e->model, tmp) != 0;
        /* the task's files, which model.safetensors lists with their hashes; before trainer_state.json */
        if (!failed && e->cfg.state_dict == SR__SD_FULL && e->rank == 0)
            failed = sr__ckpt_write_files(e->model, tmp) != 0;
        rc = sr__engine_agree(e, e->world, failed);
    }
    if (rc == 0 && e->rank == 0) {
        failed = sr__ckpt_state_write(e, tmp, ts, &cm) != 0;
        fsync_dir(tmp);
        if (!failed) { /* replace an existing checkpoint-N only once the new one is complete */
            sr__remove_tree(old);
            int had = rename(final, old) == 0;
            if (rename(tmp, final) != 0) {
                sr__log(SR_LOG_ERROR, "checkpoint: cannot rename %s to %s: %s", tmp, final, strerror(errno));
                failed = 1;
                if (had) rename(old, final);
            } else if (had) {
                sr__remove_tree(old);
            }
            fsync_dir(outdir);
        }
    }
    if (rc == 0) rc = sr__engine_agree(e, e->world, failed);
    if (rc != 0 && e->rank == 0) sr__remove_tree(tmp);
    if (rc == 0)
        sr__log(SR_LOG_DEBUG, "checkpoint: rank %d saved %s in %.3f s, %.3f s of it hashing %lld bytes", e->rank, final,
                sr__now_s() - t0, tm.hash_s, tm.hash_bytes);
    free(final), free(tmp), free(old);
    return rc;
}
