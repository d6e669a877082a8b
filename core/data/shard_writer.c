/* Writing an llm.c token shard through a hidden temporary (shardrun/data.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "data/shard_tokenizer.h"
#include "shardrun/data.h"

#define BUF_BYTES (1 << 20)

struct sr_shard_writer {
    char *path, *tmp;
    int fd, token_bytes;
    int64_t ntokens;
    sr_shard_tokenizer tokenizer; /* recorded in the header (hash 0: nothing) */
    size_t used;
    unsigned char buf[BUF_BYTES];
};

int sr_shard_token_bytes(int64_t vocab) { return vocab <= 65536 ? 2 : 4; }

static int write_all(int fd, const void *p, size_t n, off_t at) {
    const unsigned char *b = p;
    while (n) {
        ssize_t k = at >= 0 ? pwrite(fd, b, n, at) : write(fd, b, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        b += k, n -= (size_t)k;
        if (at >= 0) at += k;
    }
    return 0;
}

sr_shard_writer *sr_shard_writer_open(const char *path, int token_bytes, char *err, size_t errlen) {
    if (token_bytes != 2 && token_bytes != 4) {
        snprintf(err, errlen, "%s: token width %d bytes; a shard holds 2 (uint16) or 4 (uint32)", path, token_bytes);
        return NULL;
    }
    sr_shard_writer *w = sr__calloc(1, sizeof *w);
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    if (!w || !(w->path = sr__strdup(path)) ||
        !(w->tmp = sr__fmt("%.*s.%s.partial-%ld", dirlen, path, path + dirlen, (long)getpid()))) {
        if (w) free(w->path);
        free(w);
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    w->token_bytes = token_bytes;
    w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        snprintf(err, errlen, "%s: cannot create %s: %s", path, w->tmp, strerror(errno));
        free(w->path), free(w->tmp), free(w);
        return NULL;
    }
    /* the header goes in at close, once the count is known; a zero one holds its place */
    memset(w->buf, 0, SR_SHARD_HEADER_BYTES);
    w->used = SR_SHARD_HEADER_BYTES;
    return w;
}

static int flush(sr_shard_writer *w, char *err, size_t errlen) {
    if (w->used && write_all(w->fd, w->buf, w->used, -1) != 0) {
        snprintf(err, errlen, "%s: cannot write %s: %s", w->path, w->tmp, strerror(errno));
        return -1;
    }
    w->used = 0;
    return 0;
}

/* whether n more tokens would overflow the header's int32 count (then err says so) */
static int no_room(const sr_shard_writer *w, size_t n, char *err, size_t errlen) {
    if ((int64_t)n <= SR_SHARD_MAX_TOKENS - w->ntokens) return 0;
    snprintf(err, errlen,
             "%s: more than %lld tokens for one shard (the header counts them in an int32); "
             "split the data into more shards",
             w->path, SR_SHARD_MAX_TOKENS);
    return 1;
}

int sr_shard_writer_append(sr_shard_writer *w, const int32_t *ids, size_t n, char *err, size_t errlen) {
    const uint64_t limit = w->token_bytes == 2 ? 65536u : 4294967296u;
    if (no_room(w, n, err, errlen)) return -1;
    for (size_t i = 0; i < n; i++) {
        uint32_t t = (uint32_t)ids[i];
        if (ids[i] < 0 || (uint64_t)t >= limit) {
            snprintf(err, errlen,
                     "%s: token %lld is id %d, which a %s shard cannot hold; use 4-byte tokens "
                     "for vocabularies above 65536",
                     w->path, (long long)(w->ntokens + (int64_t)i), ids[i], w->token_bytes == 2 ? "uint16" : "uint32");
            return -1;
        }
        if (w->used + 4 > BUF_BYTES && flush(w, err, errlen) != 0) return -1;
        unsigned char *p = w->buf + w->used;
        p[0] = (unsigned char)t, p[1] = (unsigned char)(t >> 8);
        if (w->token_bytes == 4) p[2] = (unsigned char)(t >> 16), p[3] = (unsigned char)(t >> 24);
        w->used += (size_t)w->token_bytes;
    }
    w->ntokens += (int64_t)n;
    return 0;
}

int sr_shard_writer_append_encoded(sr_shard_writer *w, const void *tokens, size_t n, char *err, size_t errlen) {
    if (no_room(w, n, err, errlen)) return -1;
    const unsigned char *b = tokens;
    size_t left = n * (size_t)w->token_bytes;
    while (left) { /* through the buffer: the file is written in large pieces whatever n is */
        if (w->used == BUF_BYTES && flush(w, err, errlen) != 0) return -1;
        size_t k = BUF_BYTES - w->used < left ? BUF_BYTES - w->used : left;
        memcpy(w->buf + w->used, b, k);
        w->used += k, b += k, left -= k;
    }
    w->ntokens += (int64_t)n;
    return 0;
}

void sr_shard_writer_set_tokenizer(sr_shard_writer *w, const sr_shard_tokenizer *t) { w->tokenizer = *t; }

int64_t sr_shard_writer_tokens(const sr_shard_writer *w) { return w->ntokens; }

void sr_shard_writer_abort(sr_shard_writer *w) {
    if (!w) return;
    close(w->fd);
    unlink(w->tmp);
    free(w->path), free(w->tmp), free(w);
}

int sr_shard_writer_close(sr_shard_writer *w, char *err, size_t errlen) {
    unsigned char h[SR__SHARD_TOKENIZER_END];
    int32_t v[3] = {w->token_bytes == 2 ? SR_SHARD_MAGIC_U16 : SR_SHARD_MAGIC_U32,
                    w->token_bytes == 2 ? SR_SHARD_VERSION_U16 : SR_SHARD_VERSION_U32, (int32_t)w->ntokens};
    for (int i = 0; i < 3; i++)
        for (int b = 0; b < 4; b++) h[4 * i + b] = (unsigned char)((uint32_t)v[i] >> (8 * b));
    sr__shard_tokenizer_put(h, &w->tokenizer);
    if (w->ntokens == 0) {
        snprintf(err, errlen, "%s: no tokens: an empty shard is not written (readers refuse it)", w->path);
        sr_shard_writer_abort(w);
        return -1;
    }
    if (flush(w, err, errlen) != 0) goto fail;
    if (write_all(w->fd, h, sizeof h, 0) != 0 || fsync(w->fd) != 0) {
        snprintf(err, errlen, "%s: cannot write %s: %s", w->path, w->tmp, strerror(errno));
        goto fail;
    }
    if (close(w->fd) != 0 || rename(w->tmp, w->path) != 0) {
        w->fd = -1;
        snprintf(err, errlen, "%s: cannot rename %s to it: %s", w->path, w->tmp, strerror(errno));
        unlink(w->tmp);
        free(w->path), free(w->tmp), free(w);
        return -1;
    }
    free(w->path), free(w->tmp), free(w);
    return 0;
fail:
    sr_shard_writer_abort(w);
    return -1;
}

int sr_shard_write(const char *path, int token_bytes, const int32_t *ids, size_t n, char *err, size_t errlen) {
    sr_shard_writer *w = sr_shard_writer_open(path, token_bytes, err, errlen);
    if (!w) return -1;
    if (sr_shard_writer_append(w, ids, n, err, errlen) != 0) {
        sr_shard_writer_abort(w);
        return -1;
    }
    return sr_shard_writer_close(w, err, errlen);
}
