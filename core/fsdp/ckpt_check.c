/* Verifying a checkpoint's data as it loads (see ckpt_check.h). */
#define _GNU_SOURCE
#include "fsdp/ckpt_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/hash64.h"
#include "base/log.h"
#include "ckpt/tensor_hash.h"
#include "fsdp/ckpt_format.h"

typedef struct sr__ckpt_check {
    sr__hash64_state st; /* first: XXH3's state is 64-byte aligned */
    int owner;           /* the shard rank (first replica) that verifies this tensor, or -1: check_unowned */
    int mine;            /* this rank is that one */
    uint64_t done;       /* bytes [0, done) are in st */
} sr__ckpt_check;

int sr__ckpt_hash_mismatch(const char *dir, const char *file, const char *tensor, const char *want, uint64_t got) {
    char hex[17];
    sr__log(SR_LOG_ERROR,
            "resume_from_checkpoint: %s/%s: the data of tensor \"%s\" does not match its hash (hash %s, "
            "the data hashes to %s): the file was damaged or changed after it was written",
            dir, file, tensor, want, sr__hash64_hex(got, hex));
    return -1;
}

/* Adds to want[r] the bytes of a tensor that shard rank r copies: the bytes [x, x + n) of that
   tensor hold elements [at, at + n / 4) of unit u's flat buffer. */
static void count_copy(const sr__engine *e, uint64_t *want, int u, size_t at, uint64_t n) {
    size_t sh = e->units.u[u].shard, end = at + (size_t)(n / sizeof(float));
    for (int r = 0; r < e->shard_size; r++) {
        size_t lo = (size_t)r * sh, hi = lo + sh;
        lo = lo > at ? lo : at, hi = hi < end ? hi : end;
        if (hi > lo) want[r] += (uint64_t)(hi - lo) * sizeof(float);
    }
}

/* The tensor of file `f` called `name`: its index, or -1. */
static long tensor_index(const sr__st_file *f, const char *name) {
    const sr__st_tensor *t = sr__st_find(f, name, NULL);
    return t ? (long)(t - sr__st_at(f, 0)) : -1;
}

/* Adds the bytes each shard rank will copy of parameter p's `kind` to want[file][tensor * S + r]. */
static void count_param(const sr__engine *e, const sr__ckpt_source *s, const sr__param *p, int k, uint64_t **want) {
    int S = e->shard_size > 0 ? e->shard_size : 1;
    if (s->full) { /* tensor NAME (model) or NAME.KIND (optimizer): the whole parameter */
        char name[1024];
        snprintf(name, sizeof name, k == SR__CKPT_PARAM ? "%s" : "%s.%s", p->name, sr__ckpt_kind[k]);
        int f = k == SR__CKPT_PARAM ? 0 : 1;
        long t = tensor_index(sr__ckpt_source_file(s, f), name);
        if (t >= 0) count_copy(e, want[f] + t * S, p->unit, p->offset, (uint64_t)p->numel * sizeof(float));
        return;
    }
    /* SHARDED: the parameter sits at [off, off + numel) of saved unit U, whose file f holds
       [f * ushard, (f + 1) * ushard) as tensor uU.KIND */
    const sr__ckpt_param *cp = sr__ckpt_index_find(&s->index, p->name);
    if (!cp || cp->numel != p->numel) return; /* the load refuses it */
    size_t ushard = s->index.units[cp->unit].shard, off = cp->offset, numel = cp->numel;
    char tname[64];
    snprintf(tname, sizeof tname, "u%d.%s", cp->unit, sr__ckpt_kind[k]);
    for (size_t x = off; x < off + numel;) {
        size_t f = x / ushard, take = (f + 1) * ushard - x;
        if (take > off + numel - x) take = off + numel - x;
        long t = f < (size_t)s->nshards ? tensor_index(s->shards[f], tname) : -1;
        if (t >= 0) count_copy(e, want[f] + t * S, p->unit, p->offset + (x - off), (uint64_t)take * sizeof(float));
        x += take;
    }
}

int sr__ckpt_checks_plan(const sr__engine *e, sr__ckpt_source *s) {
    int nf = sr__ckpt_source_nfiles(s), S = e->shard_size > 0 ? e->shard_size : 1, oom = 0;
    const sr_model *m = e->model;
    uint64_t **want = sr__calloc((size_t)nf, sizeof *want);
    s->chk = sr__calloc((size_t)nf, sizeof *s->chk);
    for (int f = 0; f < nf && want && s->chk && !oom; f++) {
        size_t n = sr__st_count(sr__ckpt_source_file(s, f)) + 1, bytes = n * sizeof **s->chk;
        s->chk[f] = sr__aligned_alloc(_Alignof(sr__ckpt_check), bytes); /* sizeof is a multiple of the alignment */
        want[f] = sr__calloc(n * (size_t)S, sizeof **want);
        oom = !s->chk[f] || !want[f];
        if (s->chk[f]) memset(s->chk[f], 0, bytes);
    }
    if (!want || !s->chk || oom) { /* sr__ckpt_source_close frees what s->chk holds */
        for (int f = 0; want && f < nf; f++) free(want[f]);
        free(want);
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s: out of memory for the plan of its hash checks (%d files)",
                s->dir, nf);
        return -1;
    }
    for (int i = 0; i < m->nparams; i++)
        if (m->params[i].tied_to < 0) /* a frozen parameter's values only: it has no moments */
            for (int k = 0; k < (sr__param_frozen(m, i) ? 1 : SR__CKPT_KINDS); k++)
                count_param(e, s, &m->params[i], k, want);
    int turn = 0;
    for (int f = 0; f < nf; f++)
        for (size_t t = 0; t < sr__st_count(sr__ckpt_source_file(s, f)); t++) {
            sr__ckpt_check *c = &s->chk[f][t];
            uint64_t *w = want[f] + t * S, best = 0;
            c->owner = -1;
            for (int j = 0; j < S; j++) { /* the most bytes; ties go to alternate ranks */
                int r = (turn + j) % S;
                if (w[r] > best) best = w[r], c->owner = r;
            }
            turn++;
            c->mine = c->owner >= 0 && c->owner == e->shard_rank && e->rep_rank == 0;
            if (c->mine) sr__hash64_init(&c->st, 0);
        }
    for (int f = 0; f < nf; f++) free(want[f]);
    free(want);
    return 0;
}

void sr__ckpt_copy_checked(sr__ckpt_source *s, int f, const sr__st_tensor *t, const void *data, uint64_t off, void *dst,
                           size_t n) {
    sr__ckpt_check *c = s->chk ? &s->chk[f][t - sr__st_at(sr__ckpt_source_file(s, f), 0)] : NULL;
    const unsigned char *b = data;
    if (!c || !c->mine || off < c->done) {
        memcpy(dst, b + off, n);
        return;
    }
    double t0 = sr__now_s();
    if (off > c->done) sr__hash64_update(&c->st, b + c->done, (size_t)(off - c->done));
    double t1 = sr__now_s();
    sr__hash64_copy(&c->st, dst, b + off, n);
    s->times.hash_s += t1 - t0, s->times.hash_bytes += (long long)(off - c->done);
    s->times.copy_s += sr__now_s() - t1, s->times.copy_bytes += (long long)n;
    c->done = off + n;
}

int sr__ckpt_checks_finish(sr__ckpt_source *s) {
    int bad = 0;
    for (int f = 0; s->chk && f < sr__ckpt_source_nfiles(s) && !bad; f++) {
        const sr__st_file *sf = sr__ckpt_source_file(s, f);
        for (size_t i = 0; i < sr__st_count(sf) && !bad; i++) {
            sr__ckpt_check *c = &s->chk[f][i];
            if (!c->mine) continue;
            const void *data;
            const sr__st_tensor *t = sr__st_at(sf, i);
            sr__st_find(sf, t->name, &data);
            double t0 = sr__now_s();
            sr__hash64_update(&c->st, (const unsigned char *)data + c->done, (size_t)(t->nbytes - c->done));
            uint64_t got = sr__hash64_final(&c->st);
            s->times.hash_s += sr__now_s() - t0, s->times.hash_bytes += (long long)(t->nbytes - c->done);
            char hex[17], fname[64];
            const char *want = sr__ckpt_tensor_hash(sf, t->name);
            if (sr__ckpt_hash_check(want, got, hex) == 0) continue;
            sr__ckpt_source_file_name(s, f, fname, sizeof fname);
            bad = sr__ckpt_hash_mismatch(s->dir, fname, t->name, want ? want : "missing", got) != 0;
        }
    }
    return bad ? -1 : 0;
}

int sr__ckpt_check_unowned(const sr__engine *e, sr__ckpt_source *s) {
    int nf = sr__ckpt_source_nfiles(s);
    uint64_t total = 0, at = 0;
    for (int i = 0; i < nf; i++)
        for (size_t k = 0; k < sr__st_count(sr__ckpt_source_file(s, i)); k++)
            if (s->chk[i][k].owner < 0) total += sr__st_at(sr__ckpt_source_file(s, i), k)->nbytes;
    int bad = 0, W = e->world_size > 0 ? e->world_size : 1;
    for (int i = 0; i < nf && !bad; i++) {
        const sr__st_file *f = sr__ckpt_source_file(s, i);
        char fname[64];
        sr__ckpt_source_file_name(s, i, fname, sizeof fname);
        for (size_t k = 0; k < sr__st_count(f) && !bad; k++) {
            const sr__st_tensor *t = sr__st_at(f, k);
            const void *data;
            int owner = total ? (int)((double)at / (double)total * W) : 0; /* the bytes split evenly, in file order */
            if (owner >= W) owner = W - 1;
            char hex[17];
            const char *want = sr__ckpt_tensor_hash(f, t->name);
            if (!want) {
                sr__log(SR_LOG_ERROR,
                        "resume_from_checkpoint: %s/%s: tensor \"%s\" has no \"hash:\" entry in the "
                        "metadata",
                        s->dir, fname, t->name);
                bad = 1;
                break;
            }
            if (s->chk[i][k].owner >= 0) continue; /* verified by the rank copying it */
            at += t->nbytes;
            if (owner != e->rank) continue;
            sr__st_find(f, t->name, &data);
            double t0 = sr__now_s();
            uint64_t got = sr__hash64(data, (size_t)t->nbytes, 0);
            s->times.hash_s += sr__now_s() - t0, s->times.hash_bytes += (long long)t->nbytes;
            if (sr__ckpt_hash_check(want, got, hex) != 0)
                bad = sr__ckpt_hash_mismatch(s->dir, fname, t->name, want, got) != 0;
        }
    }
    return bad ? -1 : 0;
}
