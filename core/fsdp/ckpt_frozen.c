/* The frozen base of a SHARDED checkpoint: its digest, and the resume's check (see ckpt_frozen.h). */
#define _GNU_SOURCE
#include "fsdp/ckpt_frozen.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/hash64.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "fsdp/checkpoint.h"
#include "fsdp/ckpt_format.h"
#include "io/safetensors.h"

/* SplitMix64's finaliser: a bijection of 64-bit words that spreads every input bit over the output. */
static uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* This rank's part of the digest: the elements of its shards of the frozen units (first replica
   only: the other replicas hold the same shards).  0, or -1 after printing why. */
static int local_sum(sr__engine *e, uint64_t *sum) {
    *sum = 0;
    if (e->rep_rank != 0) return 0;
    size_t max = 0;
    for (int u = 0; u < e->units.n; u++)
        if (e->units.u[u].frozen && e->units.u[u].shard > max) max = e->units.u[u].shard;
    float *host = NULL;
    if (max && e->hdev->kind != SR_DEVICE_CPU && !(host = sr__malloc(max * sizeof *host))) {
        sr__log(SR_LOG_ERROR, "checkpoint: out of memory for a frozen shard's host copy (%zu bytes)",
                max * sizeof *host);
        return -1;
    }
    uint64_t s = 0;
    for (int u = 0; u < e->units.n; u++) {
        const sr__unit *un = &e->units.u[u];
        if (!un->frozen) continue;
        size_t lo = (size_t)e->shard_rank * un->shard, a, b;
        const float *v = e->slot[u].master;
        if (host) {
            e->hdev->to_host(host, v, un->shard * sizeof *host);
            v = host;
        }
        for (int j = 0; j < un->nparams; j++) {
            const sr__param *p = &e->model->params[un->params[j]];
            if (p->tied_to >= 0 || !sr__param_in_range(p, lo, un->shard, &a, &b)) continue;
            uint64_t name = sr__hash64(p->name, strlen(p->name), 0);
            for (size_t x = a; x < b; x++) {
                uint32_t bits;
                memcpy(&bits, v + (x - lo), sizeof bits);
                s += mix64(mix64(name + (uint64_t)(x - p->offset)) ^ bits);
            }
        }
    }
    free(host);
    *sum = s;
    return 0;
}

int sr__frozen_digest(sr__engine *e, uint64_t *out) {
    if (e->frozen_digest_known) {
        *out = e->frozen_digest;
        return 0;
    }
    uint64_t mine = 0, total = 0, *all;
    size_t n;
    int failed = local_sum(e, &mine) != 0;
    if (sr__engine_gather_u64(e, failed, mine, "the frozen base's digest", &all, &n) != 0) return -1;
    for (size_t r = 0; r < n; r++) total += all[r];
    free(all);
    e->frozen_digest = total, e->frozen_digest_known = 1;
    *out = total;
    return 0;
}

/* Reads shard 0's header; a folder it cannot read: 0, and the load says what is wrong. */
int sr__ckpt_without_base(const char *dir) {
    char *full = sr__fmt("%s/model.safetensors", dir);
    int is_full = !full || access(full, F_OK) == 0; /* FULL_STATE_DICT: the files hold the whole model */
    free(full);
    if (is_full) return 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    int found = 0, r, n;
    while (d && !found && (de = readdir(d)))
        if (sr__ckpt_shard_name_parse(de->d_name, &r, &n) && r == 0) {
            char *path = sr__fmt("%s/%s", dir, de->d_name), why[256];
            sr__st_file *f = path ? sr__st_open(path, why, sizeof why) : NULL;
            found = f && sr__st_metadata(f, SR__CKPT_FROZEN_KEY) != NULL;
            if (f) sr__st_close(f);
            free(path);
            break;
        }
    if (d) closedir(d);
    return found;
}

int sr__ckpt_frozen_check(sr__engine *e, const sr__ckpt_source *s, long long ckpt_seed, int *skip, char digest[17]) {
    *skip = 0, digest[0] = 0;
    const char *want = s->full ? NULL : sr__st_metadata(s->shards[0], SR__CKPT_FROZEN_KEY);
    if (!want) return 0; /* the frozen values are in the files (or nothing was frozen) */
    int bad = 0;
    for (int i = 1; i < s->nshards && !bad; i++) {
        const char *w = sr__st_metadata(s->shards[i], SR__CKPT_FROZEN_KEY);
        if (w && !strcmp(w, want)) continue;
        char name[64];
        sr__log(SR_LOG_ERROR,
                "resume_from_checkpoint: %s/%s says %s \"%s\", shard 0 says \"%s\": the files were edited or "
                "belong to different checkpoints",
                s->dir, sr__ckpt_shard_name(name, sizeof name, i, s->nshards), SR__CKPT_FROZEN_KEY, w ? w : "(none)",
                want);
        bad = 1;
    }
    if (!e->base_from[0]) { /* the trainer initialises the base first (sr__ckpt_without_base) */
        sr__log(SR_LOG_ERROR,
                "resume_from_checkpoint: %s holds no frozen base and this run's parameters were not initialised "
                "before the load (an internal error)",
                s->dir);
        bad = 1;
    }
    if (sr__engine_agree(e, e->world, bad) != 0) return -1;
    uint64_t mine;
    if (sr__frozen_digest(e, &mine) != 0) return -1;
    char hex[17];
    sr__hash64_hex(mine, hex);
    snprintf(digest, 17, "%s", want);
    if (!strcmp(hex, want)) {
        *skip = 1;
        return 0;
    }
    if (e->rank == 0)
        sr__log(SR_LOG_ERROR,
                "resume_from_checkpoint: %s was saved without its frozen base (SHARDED_STATE_DICT with frozen "
                "parameters: it holds the trainable parameters, their optimizer state, and %s %s, the digest of "
                "the frozen base they were trained on), and this run's frozen base is another one: %s %s, from "
                "%s.  Adapters trained on one base mean nothing on another, so nothing was trained.  Resume on "
                "the base the run that wrote the checkpoint started from: the same init_weights file and model "
                "settings as that run, or, when it had no init_weights, its seed (%lld); its trainer_state.json "
                "lists the settings it was trained with (stateful_callbacks.shardrun.task_settings)",
                s->dir, SR__CKPT_FROZEN_KEY, want, SR__CKPT_FROZEN_KEY, hex, e->base_from, ckpt_seed);
    return -2;
}
