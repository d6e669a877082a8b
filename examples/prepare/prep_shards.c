/* The prepare command's shards (prep_shards.h), written with libshardrun's shard writer
   (shardrun/data.h).  While a shard's file already exists and every token so far equals its
   tokens, nothing is written: the tokens are compared with the file (mapped) instead.  At the first
   difference a writer opens, takes the equal prefix from the old file, and the rest from the
   stream; the rename replaces the old file only when the new one is complete. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shardrun/data.h"

#include "prep_shards.h"

/* The temporary being written, for prep_shards_abort (a signal handler): the name the shard writer
   documents, ".<name>.partial-<pid>" next to the shard. */
static char tmp_path[4096 + 64];
static volatile sig_atomic_t tmp_live;

void prep_shards_abort(void) {
    if (tmp_live) unlink(tmp_path);
}

void prep_shards_name(const prep_shards *s, int val, int index, char *out, size_t cap) {
    snprintf(out, cap, "%s_%s_%06d.bin", s->prefix, val ? "val" : "train", index);
}

typedef struct {
    sr_shard old;
    int have_old;
    sr_shard_writer *w;
    char path[4096];
} cur_shard;
static cur_shard cur; /* one prep_shards per process */

static int open_writer(prep_shards *s, char *err, size_t errlen) {
    const char *slash = strrchr(cur.path, '/');
    int dirlen = slash ? (int)(slash - cur.path + 1) : 0;
    if (snprintf(tmp_path, sizeof tmp_path, "%.*s.%s.partial-%ld", dirlen, cur.path, cur.path + dirlen,
                 (long)getpid()) < 0)
        tmp_path[0] = 0;
    tmp_live = 1;
    if (!(cur.w = sr_shard_writer_open(cur.path, sr_shard_token_bytes(s->vocab_size), err, errlen))) {
        tmp_live = 0;
        return -1;
    }
    /* the prefix that equalled the old file: from it */
    int32_t buf[1 << 14];
    for (uint64_t at = 0; at < s->n;) {
        uint64_t k = s->n - at < (uint64_t)(sizeof buf / sizeof *buf) ? s->n - at : sizeof buf / sizeof *buf;
        if (sr_shard_read(&cur.old, (int64_t)at, (int64_t)k, buf, err, errlen) ||
            sr_shard_writer_append(cur.w, buf, (size_t)k, err, errlen))
            return -1;
        at += k;
    }
    if (cur.have_old) sr_shard_close(&cur.old), cur.have_old = 0;
    return 0;
}

static void start_shard(prep_shards *s) {
    prep_shards_name(s, s->in_val, s->index, cur.path, sizeof cur.path);
    char err[512];
    /* an existing file that is no valid shard (a leftover, another format) is simply replaced */
    cur.have_old = sr_shard_open(&cur.old, cur.path, err, sizeof err) == 0;
    if (cur.have_old && cur.old.token_bytes != sr_shard_token_bytes(s->vocab_size))
        sr_shard_close(&cur.old), cur.have_old = 0;
    cur.w = NULL;
    s->n = 0;
}

int prep_shards_init(prep_shards *s, const char *prefix, uint64_t shard_tokens, uint64_t val_tokens, int vocab_size,
                     char *err, size_t errlen) {
    (void)err, (void)errlen;
    memset(s, 0, sizeof *s);
    s->prefix = prefix;
    s->shard_tokens = shard_tokens;
    s->val_tokens = val_tokens;
    s->vocab_size = vocab_size;
    s->in_val = val_tokens > 0;
    s->index = 0;
    memset(&cur, 0, sizeof cur);
    start_shard(s);
    return 0;
}

static int end_shard(prep_shards *s, char *err, size_t errlen) {
    if (!cur.w && cur.have_old && s->n == (uint64_t)cur.old.ntokens) {
        sr_shard_close(&cur.old), cur.have_old = 0;
        s->kept++;
        return 0;
    }
    if (!cur.w && open_writer(s, err, errlen)) return -1;
    int rc = sr_shard_writer_close(cur.w, err, errlen);
    cur.w = NULL;
    tmp_live = 0;
    if (rc) return -1;
    s->written++;
    return 0;
}

/* tokens ids[0 .. n) into the current shard, which has room for them */
static int put(prep_shards *s, const int32_t *ids, uint64_t n, char *err, size_t errlen) {
    if (!cur.w && cur.have_old && s->n + n <= (uint64_t)cur.old.ntokens) {
        int32_t buf[1 << 14];
        uint64_t at = 0;
        for (; at < n; at += sizeof buf / sizeof *buf) {
            uint64_t k = n - at < (uint64_t)(sizeof buf / sizeof *buf) ? n - at : sizeof buf / sizeof *buf;
            if (sr_shard_read(&cur.old, (int64_t)(s->n + at), (int64_t)k, buf, err, errlen)) return -1;
            if (memcmp(buf, ids + at, k * sizeof *buf)) break;
        }
        if (at >= n) {
            s->n += n;
            return 0;
        }
    }
    if (!cur.w && open_writer(s, err, errlen)) return -1;
    if (sr_shard_writer_append(cur.w, ids, (size_t)n, err, errlen)) return -1;
    s->n += n;
    return 0;
}

int prep_shards_push(prep_shards *s, const int32_t *ids, size_t n, char *err, size_t errlen) {
    while (n) {
        uint64_t cap = (s->in_val ? s->val_tokens : s->shard_tokens) - s->n;
        uint64_t k = n < cap ? n : cap;
        if (put(s, ids, k, err, errlen)) return -1;
        ids += k, n -= (size_t)k;
        s->tokens += k;
        if (s->n == (s->in_val ? s->val_tokens : s->shard_tokens)) {
            if (end_shard(s, err, errlen)) return -1;
            s->in_val = 0;
            s->index++;
            start_shard(s);
        }
    }
    return 0;
}

int prep_shards_finish(prep_shards *s, char *err, size_t errlen) {
    int rc = 0;
    if (s->n) rc = end_shard(s, err, errlen);
    else if (cur.have_old) sr_shard_close(&cur.old), cur.have_old = 0;
    return rc;
}
