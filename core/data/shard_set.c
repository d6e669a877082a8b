/* A set of token shards named by globs: one token stream (shardrun/data.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/glob_each.h"
#include "data/shard_check.h"
#include "shardrun/data.h"

typedef struct names {
    char **v;
    size_t n, cap;
    dev_t *dev;
    ino_t *ino;
} names;

static int add_name(names *l, const char *path, const struct stat *st) {
    for (size_t i = 0; i < l->n; i++)
        if (l->dev[i] == st->st_dev && l->ino[i] == st->st_ino) return 0; /* the same file again */
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **v = sr__realloc(l->v, cap * sizeof *v);
        if (v) l->v = v;
        dev_t *d = sr__realloc(l->dev, cap * sizeof *d);
        if (d) l->dev = d;
        ino_t *i = sr__realloc(l->ino, cap * sizeof *i);
        if (i) l->ino = i;
        if (!v || !d || !i) return -1;
        l->cap = cap;
    }
    if (!(l->v[l->n] = sr__strdup(path))) return -1;
    l->dev[l->n] = st->st_dev, l->ino[l->n] = st->st_ino;
    l->n++;
    return 0;
}

static void free_names(names *l) {
    for (size_t i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v), free(l->dev), free(l->ino);
}

typedef struct {
    names *out;
    char *err;
    size_t errlen;
} expand_ctx;

static int add_match(const char *path, void *arg) {
    expand_ctx *x = arg;
    struct stat st;
    /* stat, not lstat: a link to a shard is a shard; what is not a regular file is refused by sr_shard_open */
    if (stat(path, &st) != 0) {
        snprintf(x->err, x->errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (add_name(x->out, path, &st) != 0) {
        snprintf(x->err, x->errlen, "out of memory listing the shards");
        return -1;
    }
    return 0;
}

/* Every shard holds the first one's token width and tokenizer: a set mixing two tokenizers' ids
   (a prefix prepared again with another tokenizer, a glob over two corpora) would train on ids that
   mean other tokens, with nothing to show for it but a worse loss. */
static int check_alike(const sr_shard_set *set, char *err, size_t errlen) {
    const sr_shard *a = &set->shards[0];
    for (int i = 1; i < set->n; i++) {
        const sr_shard *b = &set->shards[i];
        if (b->token_bytes == a->token_bytes && sr_shard_tokenizer_same(&a->tokenizer, &b->tokenizer)) continue;
        char da[256], db[256];
        sr_shard_tokenizer_describe(&a->tokenizer, da, sizeof da);
        sr_shard_tokenizer_describe(&b->tokenizer, db, sizeof db);
        snprintf(err, errlen,
                 "the shards mix tokenizers: %s holds uint%d tokens, %s, but %s holds uint%d tokens, %s. "
                 "The ids of one tokenizer are other tokens in another: name one tokenizer's shards only "
                 "(narrow the pattern, or remove the others and prepare them again with the model's tokenizer)",
                 a->path, 8 * a->token_bytes, da, b->path, 8 * b->token_bytes, db);
        return -1;
    }
    return 0;
}

/* Every file the patterns name, in order; each pattern must match. */
static int expand(names *out, const char *patterns, const char *base_dir, char *err, size_t errlen) {
    expand_ctx x = {out, err, errlen};
    int n = sr__glob_each(patterns, base_dir, "shard", add_match, &x, err, errlen);
    if (n == 0) snprintf(err, errlen, "no shard named (the list of files is empty)");
    return n > 0 ? 0 : -1;
}

int sr_shard_set_open(sr_shard_set *set, const char *patterns, const char *base_dir, char *err, size_t errlen) {
    memset(set, 0, sizeof *set);
    names l = {0};
    if (expand(&l, patterns ? patterns : "", base_dir, err, errlen) != 0) goto fail;
    set->shards = sr__calloc(l.n, sizeof *set->shards);
    set->first = sr__calloc(l.n + 1, sizeof *set->first);
    if (!set->shards || !set->first) {
        snprintf(err, errlen, "out of memory for %zu shards", l.n);
        goto fail;
    }
    for (size_t i = 0; i < l.n; i++) {
        if (sr_shard_open(&set->shards[i], l.v[i], err, errlen) != 0) goto fail;
        set->n++;
        set->first[i + 1] = set->first[i] + set->shards[i].ntokens;
        set->bytes += set->shards[i].bytes;
    }
    set->ntokens = set->first[set->n];
    if (check_alike(set, err, errlen) != 0) goto fail;
    set->token_bytes = set->shards[0].token_bytes;
    set->tokenizer = set->shards[0].tokenizer;
    free_names(&l);
    return 0;
fail:
    free_names(&l);
    sr_shard_set_close(set);
    return -1;
}

/* The shard holding stream token t: the last i with first[i] <= t */
static int shard_of(const sr_shard_set *set, int64_t t) {
    int lo = 0, hi = set->n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (set->first[mid] <= t) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

int sr_shard_set_read(const sr_shard_set *set, int64_t first, int64_t n, int32_t *out, char *err, size_t errlen) {
    if (first < 0 || n < 0 || first + n > set->ntokens) {
        snprintf(err, errlen, "tokens %lld..%lld are outside the shards' %lld", (long long)first,
                 (long long)(first + n), (long long)set->ntokens);
        return -1;
    }
    while (n > 0) {
        int i = shard_of(set, first);
        int64_t at = first - set->first[i], k = set->first[i + 1] - first;
        if (k > n) k = n;
        if (sr_shard_read(&set->shards[i], at, k, out, err, errlen) != 0) return -1;
        first += k, n -= k, out += k;
    }
    return 0;
}

int sr_shard_set_check_vocab_range(const sr_shard_set *set, int64_t vocab, int64_t first, int64_t n, char *err,
                                   size_t errlen) {
    if (first < 0 || n < 0 || first + n > set->ntokens) {
        snprintf(err, errlen, "tokens %lld..%lld are outside the shards' %lld", (long long)first,
                 (long long)(first + n), (long long)set->ntokens);
        return -1;
    }
    while (n > 0) { /* the range's part in each shard it touches, in stream order */
        int i = shard_of(set, first);
        int64_t at = first - set->first[i], k = set->first[i + 1] - first;
        if (k > n) k = n;
        if (sr__shard_check_vocab_range(&set->shards[i], vocab, at, k, err, errlen) != 0) return -1;
        first += k, n -= k;
    }
    return 0;
}

int sr_shard_set_check_vocab(const sr_shard_set *set, int64_t vocab, char *err, size_t errlen) {
    return sr_shard_set_check_vocab_range(set, vocab, 0, set->ntokens, err, errlen);
}

void sr_shard_set_share(const sr_shard_set *set, int rank, int size, int64_t *first, int64_t *n) {
    /* token-balanced: the shares differ by at most one token, whatever the shards' sizes; a share
       may start or end inside a shard, so one big shard is split as well as many small ones */
    int64_t a = size > 0 ? set->ntokens / size * rank + set->ntokens % size * rank / size : 0;
    int64_t b = size > 0 ? set->ntokens / size * (rank + 1) + set->ntokens % size * (rank + 1) / size : 0;
    *first = a, *n = b - a;
}

void sr_shard_set_close(sr_shard_set *set) {
    for (int i = 0; i < set->n; i++) sr_shard_close(&set->shards[i]);
    free(set->shards);
    free(set->first);
    memset(set, 0, sizeof *set);
}
