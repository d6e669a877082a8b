/* The prepare command's shards (prep_shards.h), written with libshardrun's shard writer
   (shardrun/data.h).  While a shard's file already exists and every token so far equals its
   tokens, nothing is written: the tokens (already in the shard's layout) are compared with the
   file's bytes instead.  At the first difference a writer opens, takes the equal prefix from the old
   file, and the rest from the stream; the rename replaces the old file only when the new one is
   complete.  The old file is read with pread, never mapped: one that shrinks meanwhile is a short
   read, an error, not a fault. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
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
    int old_fd; /* the file already there when it is a valid shard of this width with tokens to
                   compare, else -1 */
    uint64_t old_tokens;
    sr_shard_writer *w;
    char path[4096];
} cur_shard;
static cur_shard cur; /* one prep_shards per process */

static void close_old(void) {
    if (cur.old_fd >= 0) close(cur.old_fd);
    cur.old_fd = -1;
}

/* tokens first .. first+n-1 of the old file, as bytes: 0, or -1 when the file no longer holds them */
static int read_old(const prep_shards *s, uint64_t first, uint64_t n, unsigned char *out, char *err, size_t errlen) {
    size_t want = (size_t)n * (size_t)s->token_bytes, got = 0;
    off_t at = (off_t)(SR_SHARD_HEADER_BYTES + first * (uint64_t)s->token_bytes);
    while (got < want) {
        ssize_t k = pread(cur.old_fd, out + got, want - got, at + (off_t)got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            snprintf(err, errlen,
                     "%s: the file shrank or cannot be read while it was compared (%s); is another run "
                     "writing it?",
                     cur.path, k < 0 ? strerror(errno) : "end of file");
            return -1;
        }
        got += (size_t)k;
    }
    return 0;
}

static int open_writer(prep_shards *s, char *err, size_t errlen) {
    const char *slash = strrchr(cur.path, '/');
    int dirlen = slash ? (int)(slash - cur.path + 1) : 0;
    if (snprintf(tmp_path, sizeof tmp_path, "%.*s.%s.partial-%ld", dirlen, cur.path, cur.path + dirlen,
                 (long)getpid()) < 0)
        tmp_path[0] = 0;
    tmp_live = 1;
    if (!(cur.w = sr_shard_writer_open(cur.path, s->token_bytes, err, errlen))) {
        tmp_live = 0;
        return -1;
    }
    sr_shard_writer_set_tokenizer(cur.w, &s->tokenizer);
    /* the prefix that equalled the old file: from it */
    unsigned char buf[1 << 16];
    const uint64_t per = sizeof buf / (size_t)s->token_bytes;
    for (uint64_t at = 0; at < s->n;) {
        uint64_t k = s->n - at < per ? s->n - at : per;
        if (read_old(s, at, k, buf, err, errlen) || sr_shard_writer_append_encoded(cur.w, buf, (size_t)k, err, errlen))
            return -1;
        at += k;
    }
    close_old();
    return 0;
}

static void start_shard(prep_shards *s) {
    prep_shards_name(s, s->in_val, s->index, cur.path, sizeof cur.path);
    char err[512];
    /* an existing file that is no valid shard (a leftover, another format) is simply replaced */
    sr_shard old;
    cur.old_fd = -1;
    if (sr_shard_open(&old, cur.path, err, sizeof err) == 0) {
        if (old.token_bytes == s->token_bytes) {
            cur.old_tokens = (uint64_t)old.ntokens;
            cur.old_fd = open(cur.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        }
        sr_shard_close(&old);
    }
    cur.w = NULL;
    s->n = 0;
}

int prep_shards_init(prep_shards *s, const char *prefix, uint64_t shard_tokens, prep_val_mode val_mode,
                     uint64_t val_tokens, int vocab_size, const sr_shard_tokenizer *t, char *err, size_t errlen) {
    (void)err, (void)errlen;
    memset(s, 0, sizeof *s);
    s->tokenizer = *t;
    s->train_last = -1;
    s->val_last = -1;
    s->prefix = prefix;
    s->shard_tokens = shard_tokens;
    s->val_mode = val_mode;
    s->val_auto = val_mode == PREP_VAL_AUTO;
    s->val_tokens = val_mode == PREP_VAL_TOKENS ? val_tokens : 0;
    s->vocab_size = vocab_size;
    s->token_bytes = sr_shard_token_bytes(vocab_size);
    s->in_val = val_mode != PREP_VAL_TOKENS || val_tokens > 0; /* (auto: at least 1 token, decided later) */
    s->index = 0;
    memset(&cur, 0, sizeof cur);
    cur.old_fd = -1;
    start_shard(s);
    return 0;
}

int prep_shards_wrote(const prep_shards *s, int val, long index) {
    return val ? s->val_done && index <= s->val_last
               : index >= (s->val_mode != PREP_VAL_TOKENS || s->val_tokens > 0) && index <= s->train_last;
}

static int end_shard(prep_shards *s, char *err, size_t errlen) {
    if (s->in_val) s->val_done = 1, s->val_last = s->index;
    else s->train_last = s->index;
    if (!cur.w && cur.old_fd >= 0 && s->n == cur.old_tokens) {
        close_old();
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

/* tokens[0 .. n) into the current shard, which has room for them */
static int put(prep_shards *s, const unsigned char *tokens, uint64_t n, char *err, size_t errlen) {
    const size_t tb = (size_t)s->token_bytes;
    if (!cur.w && cur.old_fd >= 0 && s->n + n <= cur.old_tokens) {
        unsigned char buf[1 << 16];
        const uint64_t per = sizeof buf / tb;
        uint64_t at = 0;
        for (; at < n; at += per) {
            uint64_t k = n - at < per ? n - at : per;
            if (read_old(s, s->n + at, k, buf, err, errlen)) return -1;
            if (memcmp(buf, tokens + at * tb, (size_t)k * tb)) break;
        }
        if (at >= n) {
            s->n += n;
            return 0;
        }
    }
    if (!cur.w && open_writer(s, err, errlen)) return -1;
    if (sr_shard_writer_append_encoded(cur.w, tokens, (size_t)n, err, errlen)) return -1;
    s->n += n;
    return 0;
}

/* The size of the current shard when full */
static uint64_t shard_cap(const prep_shards *s) {
    return s->in_val && s->val_mode == PREP_VAL_TOKENS ? s->val_tokens : s->shard_tokens;
}

/* PREP_VAL_AUTO: the val split is val tokens; the tokens held so far go out */
static int decide(prep_shards *s, uint64_t val, char *err, size_t errlen) {
    unsigned char *h = s->held;
    uint64_t n = s->held_n;
    s->val_mode = PREP_VAL_TOKENS, s->val_tokens = val, s->in_val = val > 0;
    s->held = NULL, s->held_n = s->held_cap = 0;
    s->tokens -= n; /* counted again as they are written */
    int rc = prep_shards_push(s, h, (size_t)n, err, errlen);
    free(h);
    return rc;
}

/* PREP_VAL_AUTO, undecided: tokens kept until the share reaches its bound */
static int hold(prep_shards *s, const unsigned char *tokens, size_t n, char *err, size_t errlen) {
    const size_t tb = (size_t)s->token_bytes;
    if (s->held_n + n > s->held_cap) {
        uint64_t cap = s->held_cap ? 2 * s->held_cap : (uint64_t)1 << 16;
        if (cap < s->held_n + n) cap = s->held_n + n;
        unsigned char *g = realloc(s->held, (size_t)cap * tb);
        if (!g) {
            snprintf(err, errlen,
                     "out of memory for the %llu tokens held until the val split's size is known (give "
                     "--val-tokens N to write them at once)",
                     (unsigned long long)cap);
            return -1;
        }
        s->held = g, s->held_cap = cap;
    }
    memcpy(s->held + (size_t)s->held_n * tb, tokens, n * tb);
    s->held_n += n;
    s->tokens += n;
    if (s->held_n * PREP_VAL_AUTO_PERCENT >= (uint64_t)PREP_VAL_AUTO_MAX * 100)
        return decide(s, PREP_VAL_AUTO_MAX, err, errlen);
    return 0;
}

int prep_shards_push(prep_shards *s, const unsigned char *tokens, size_t n, char *err, size_t errlen) {
    if (s->val_mode == PREP_VAL_AUTO) return hold(s, tokens, n, err, errlen);
    while (n) {
        uint64_t cap = shard_cap(s) - s->n;
        uint64_t k = n < cap ? n : cap;
        if (put(s, tokens, k, err, errlen)) return -1;
        tokens += k * (uint64_t)s->token_bytes, n -= (size_t)k;
        s->tokens += k;
        if (s->n == shard_cap(s)) {
            if (end_shard(s, err, errlen)) return -1;
            if (s->val_mode != PREP_VAL_ALL) s->in_val = 0;
            s->index++;
            start_shard(s);
        }
    }
    return 0;
}

int prep_shards_finish(prep_shards *s, char *err, size_t errlen) {
    int rc = 0;
    /* the end came first: the share of what there is, rounded up (every input has a token) */
    if (s->val_mode == PREP_VAL_AUTO && decide(s, (s->held_n * PREP_VAL_AUTO_PERCENT + 99) / 100, err, errlen) != 0)
        return -1;
    if (s->n) rc = end_shard(s, err, errlen);
    else close_old();
    return rc;
}
