/* A checkpoint folder opened for loading (see ckpt_source.h). */
#define _GNU_SOURCE
#include "fsdp/ckpt_source.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "fsdp/ckpt_format.h"

int sr__ckpt_source_nfiles(const sr__ckpt_source *s) { return s->full ? 2 : s->nshards; }

sr__st_file *sr__ckpt_source_file(const sr__ckpt_source *s, int i) {
    return s->full ? (i ? s->optim : s->model) : s->shards[i];
}

void sr__ckpt_source_file_name(const sr__ckpt_source *s, int i, char *buf, size_t len) {
    if (s->full) snprintf(buf, len, "%s.safetensors", i ? "optimizer" : "model");
    else sr__ckpt_shard_name(buf, len, i, s->nshards);
}

void sr__ckpt_source_close(sr__ckpt_source *s) {
    /* The plan's per-file arrays (ckpt_check.c fills them); freed here so that this file, which
       ckpt_check.c uses, needs nothing of it. */
    for (int f = 0; s->chk && f < sr__ckpt_source_nfiles(s); f++) free(s->chk[f]);
    free(s->chk);
    if (s->model) sr__st_close(s->model);
    if (s->optim) sr__st_close(s->optim);
    for (int i = 0; i < s->nshards; i++)
        if (s->shards[i]) sr__st_close(s->shards[i]);
    free(s->shards);
    sr__ckpt_index_free(&s->index);
    memset(s, 0, sizeof *s);
}

static sr__st_file *open_st(const char *dir, const char *name) {
    char *p = sr__fmt("%s/%s", dir, name), err[512];
    if (!p) snprintf(err, sizeof err, "out of memory for the path of %s/%s", dir, name);
    sr__st_file *f = p ? sr__st_open(p, err, sizeof err) : NULL;
    if (!f) sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s", err);
    free(p);
    return f;
}

/* The shard group's size, from the files' names (one size per folder).  0 when there are none, -1
   after printing why. */
static int count_shards(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0, bad = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) && !bad) {
        int r, m;
        if (!sr__ckpt_shard_name_parse(de->d_name, &r, &m)) continue;
        if (n && m != n) {
            sr__log(SR_LOG_ERROR,
                    "resume_from_checkpoint: %s holds shard files of two shard groups (of %d and of %d "
                    "files, e.g. %s): one checkpoint is one group's files",
                    dir, n, m, de->d_name);
            bad = 1;
        } else if (m <= 0 || r < 0 || r >= m) {
            sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s/%s: shard number %d is not below its group size %d", dir,
                    de->d_name, r, m);
            bad = 1;
        }
        n = m;
    }
    if (d) closedir(d);
    return bad ? -1 : n;
}

int sr__ckpt_source_open(sr__ckpt_source *s, const char *dir) {
    memset(s, 0, sizeof *s);
    s->dir = dir;
    char *p = sr__fmt("%s/model.safetensors", dir);
    if (!p) {
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: out of memory for the paths under %s", dir);
        return -1;
    }
    s->full = access(p, F_OK) == 0;
    free(p);
    if (s->full) {
        s->model = open_st(dir, "model.safetensors");
        s->optim = s->model ? open_st(dir, "optimizer.safetensors") : NULL;
        return s->model && s->optim ? 0 : -1;
    }
    int n = count_shards(dir);
    if (n < 0) return -1;
    if (n == 0) {
        sr__log(SR_LOG_ERROR,
                "resume_from_checkpoint: %s has neither model.safetensors (FULL_STATE_DICT) nor "
                "shard-00000-of-N.safetensors (SHARDED_STATE_DICT)",
                dir);
        return -1;
    }
    s->shards = sr__calloc((size_t)n, sizeof *s->shards); /* zeroed: close skips what never opened */
    if (!s->shards) {
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: out of memory for %d shard files", n);
        return -1;
    }
    s->nshards = n;
    for (int i = 0; i < n; i++) {
        char name[64];
        if (!(s->shards[i] = open_st(dir, sr__ckpt_shard_name(name, sizeof name, i, n)))) return -1;
    }
    return 0;
}
