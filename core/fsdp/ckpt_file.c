/* Writing one safetensors file of a checkpoint (see ckpt_file.h). */
#define _GNU_SOURCE
#include "fsdp/ckpt_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/hash64.h"
#include "base/log.h"
#include "base/progress.h"
#include "base/strbuf.h"
#include "fsdp/ckpt_format.h"

void sr__ckpt_kv_add(sr__ckpt_kvlist *l, const char *key, char *value) {
    char *k = l->oom || !value ? NULL : sr__strdup(key);
    if (!k || sr__grow((void **)&l->kv, &l->cap, l->n + 1, sizeof *l->kv) != 0) {
        free(k), free(value);
        l->oom = 1;
        return;
    }
    l->kv[l->n++] = (sr__st_kv){k, value};
}

void sr__ckpt_kv_free(sr__ckpt_kvlist *l) {
    for (size_t i = 0; i < l->n; i++) free((char *)l->kv[i].key), free((char *)l->kv[i].value);
    free(l->kv);
    memset(l, 0, sizeof *l);
}

void sr__ckpt_add_common(sr__ckpt_kvlist *l, const sr__ckpt_meta *m, const char *role) {
    sr__ckpt_kv_add(l, "shardrun_checkpoint", sr__fmt(SR__CKPT_FORMAT));
    sr__ckpt_kv_add(l, "file", sr__fmt("%s", role));
    sr__ckpt_kv_add(l, "checkpoint_id", sr__fmt("%s", m->id));
    sr__ckpt_kv_add(l, "global_step", sr__fmt("%lld", m->step));
    sr__ckpt_kv_add(l, "world_size", sr__fmt("%d", m->world_size));
    sr__ckpt_kv_add(l, "shard_group_size", sr__fmt("%d", m->shard_group_size));
    sr__ckpt_kv_add(l, "model_digest", sr__fmt("%s", m->digest));
}

void sr__ckpt_add_hashes(sr__ckpt_kvlist *l, const sr__st_tensor *t, size_t n) {
    char hex[17];
    sr__ckpt_kv_add(l, "index_hash", sr__fmt("%s", sr__hash64_hex(sr__ckpt_index_hash(l->kv, l->n), hex)));
    for (size_t i = 0; i < n && !l->oom; i++) {
        char *k = sr__fmt("hash:%s", t[i].name);
        if (k) sr__ckpt_kv_add(l, k, sr__fmt(SR__CKPT_HASH_PLACEHOLDER));
        else l->oom = 1;
        free(k);
    }
}

int sr__ckpt_out_create(sr__ckpt_out *o, char *path, const sr__st_tensor *t, size_t n, const sr__ckpt_kvlist *l,
                        sr__ckpt_times *times) {
    char err[256];
    memset(o, 0, sizeof *o);
    o->path = path, o->n = n, o->times = times;
    o->names = sr__calloc(n + 1, sizeof *o->names), o->hash = sr__calloc(n + 1, sizeof *o->hash);
    int oom = !path || !o->names || !o->hash || l->oom;
    for (size_t i = 0; i < n && !oom; i++) oom = !(o->names[i] = sr__strdup(t[i].name));
    if (oom) {
        sr__log(SR_LOG_ERROR, "checkpoint: out of memory for %s's layout (%zu tensors)", path ? path : "a file", n);
        return -1;
    }
    o->w = sr__st_create(path, t, n, l->kv, l->n, err, sizeof err);
    if (!o->w) sr__progress_io_failed(errno, path), sr__log(SR_LOG_ERROR, "checkpoint: %s", err);
    return o->w ? 0 : -1;
}

int sr__ckpt_out_put(sr__ckpt_out *o, size_t idx, const void *data, size_t bytes) {
    char err[256];
    double t0 = sr__now_s();
    o->hash[idx] = sr__hash64(data, bytes, 0);
    o->times->hash_s += sr__now_s() - t0, o->times->hash_bytes += (long long)bytes;
    if (sr__st_write(o->w, idx, 0, data, bytes, err, sizeof err) == 0) return 0;
    sr__progress_io_failed(errno, o->path);
    sr__log(SR_LOG_ERROR, "checkpoint: %s: %s", o->path, err);
    return -1;
}

int sr__ckpt_out_close(sr__ckpt_out *o, int ok) {
    char err[256] = "", hex[17];
    if (o->w && ok)
        for (size_t i = 0; i < o->n && ok; i++) {
            char *k = sr__fmt("hash:%s", o->names[i]);
            if (!k) snprintf(err, sizeof err, "out of memory for %s's hashes", o->path);
            ok = k && sr__st_set_metadata(o->w, k, sr__hash64_hex(o->hash[i], hex), err, sizeof err) == 0;
            free(k);
        }
    if (o->w && !ok) sr__st_abort(o->w);
    else if (o->w && sr__st_finish(o->w, err, sizeof err) != 0) ok = 0, sr__progress_io_failed(errno, o->path);
    if (!ok && *err) sr__log(SR_LOG_ERROR, "checkpoint: %s", err);
    for (size_t i = 0; o->names && i < o->n; i++) free(o->names[i]);
    free(o->names), free(o->hash), free(o->path);
    memset(o, 0, sizeof *o);
    return ok ? 0 : -1;
}
