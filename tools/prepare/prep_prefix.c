/* The shards already under a prefix (prep_prefix.h). */
#define _GNU_SOURCE
#include "prep_prefix.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether name is BASE_train_NNNNNN.bin or BASE_val_NNNNNN.bin (six digits or more, as
   prep_shards_name writes them): *val and *index say which. */
static int shard_name(const char *name, const char *base, int *val, long *index) {
    size_t b = strlen(base);
    if (strncmp(name, base, b) || name[b] != '_') return 0;
    const char *p = name + b + 1;
    if (!strncmp(p, "train_", 6)) *val = 0, p += 6;
    else if (!strncmp(p, "val_", 4)) *val = 1, p += 4;
    else return 0;
    size_t digits = strspn(p, "0123456789");
    if (digits < 6 || strcmp(p + digits, ".bin")) return 0;
    *index = strtol(p, NULL, 10);
    return 1;
}

typedef int (*each_fn)(void *user, const char *path, int val, long index);

/* fn for each file of the prefix's folder named like one of its shards, in no particular order */
static int each_shard(const char *prefix, each_fn fn, void *user, char *err, size_t errlen) {
    const char *slash = strrchr(prefix, '/'), *base = slash ? slash + 1 : prefix;
    char dir[4096], path[8192];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - prefix) + (slash == prefix) : 1, slash ? prefix : ".");
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "-o %s: cannot list the folder %s: %s", prefix, dir, strerror(errno));
        return -1;
    }
    struct dirent *e;
    int rc = 0, val;
    long index;
    while (!rc && (e = readdir(d))) {
        if (!shard_name(e->d_name, base, &val, &index)) continue;
        snprintf(path, sizeof path, "%.*s%s", slash ? (int)(slash - prefix) + 1 : 0, prefix, e->d_name);
        rc = fn(user, path, val, index);
    }
    closedir(d);
    return rc;
}

typedef struct {
    const sr_shard_tokenizer *t;
    int token_bytes;
    int n;                   /* shards of another tokenizer */
    char names[3][4096];     /* the first three */
    sr_shard_tokenizer seen; /* the first one's */
    int seen_bytes;
} check_ctx;

static int check_one(void *user, const char *path, int val, long index) {
    (void)val, (void)index;
    check_ctx *c = user;
    sr_shard s;
    char err[512];
    /* a file that is no valid shard (truncated, damaged) is rewritten or left as before: what it
       held is unknown, and every reader refuses it */
    if (sr_shard_open(&s, path, err, sizeof err) != 0) return 0;
    if (s.token_bytes != c->token_bytes || !sr_shard_tokenizer_same(&s.tokenizer, c->t)) {
        if (!c->n) c->seen = s.tokenizer, c->seen_bytes = s.token_bytes;
        if (c->n < 3) snprintf(c->names[c->n], sizeof c->names[c->n], "%s", path);
        c->n++;
    }
    sr_shard_close(&s);
    return 0;
}

int prep_prefix_check(const char *prefix, const sr_shard_tokenizer *t, int token_bytes, char *err, size_t errlen) {
    check_ctx c;
    memset(&c, 0, sizeof c);
    c.t = t, c.token_bytes = token_bytes;
    if (each_shard(prefix, check_one, &c, err, errlen) != 0) return -1;
    if (!c.n) return 0;
    char theirs[256], ours[256], more[64] = "";
    sr_shard_tokenizer_describe(&c.seen, theirs, sizeof theirs);
    sr_shard_tokenizer_describe(t, ours, sizeof ours);
    if (c.n > 3) snprintf(more, sizeof more, " and %d more", c.n - 3);
    snprintf(err, errlen,
             "-o %s: the prefix already holds %d shard%s of another tokenizer: %s%s%s%s%s%s (uint%d tokens, %s); this "
             "run's is %s (uint%d). A prefix holds one tokenizer's shards, and a PREFIX_train_*.bin pattern would "
             "train on both: remove them (rm %s_train_*.bin %s_val_*.bin) or give another -o",
             prefix, c.n, c.n == 1 ? "" : "s", c.names[0], c.n > 1 ? ", " : "", c.n > 1 ? c.names[1] : "",
             c.n > 2 ? ", " : "", c.n > 2 ? c.names[2] : "", more, 8 * c.seen_bytes, theirs, ours, 8 * token_bytes,
             prefix, prefix);
    return -1;
}

typedef struct {
    const prep_shards *s;
    const sr_shard_tokenizer *t;
    int removed, invalid;
    char *first, *bad;
    size_t cap;
    char *err;
    size_t errlen;
} clean_ctx;

static int clean_one(void *user, const char *path, int val, long index) {
    clean_ctx *c = user;
    if (prep_shards_wrote(c->s, val, index)) return 0;
    sr_shard s;
    char err[512];
    if (sr_shard_open(&s, path, err, sizeof err) != 0) {
        if (!c->invalid++) snprintf(c->bad, c->cap, "%s", path);
        return 0;
    }
    int ours = sr_shard_tokenizer_same(&s.tokenizer, c->t) && s.token_bytes == c->s->token_bytes;
    sr_shard_close(&s);
    if (!ours) return 0; /* (prep_prefix_check refused the run: none can be here but one written since) */
    if (unlink(path) != 0) {
        snprintf(c->err, c->errlen,
                 "%s: left from an earlier run and not part of this data, but it cannot be removed: %s", path,
                 strerror(errno));
        return -1;
    }
    if (!c->removed++) snprintf(c->first, c->cap, "%s", path);
    return 0;
}

int prep_prefix_clean(const prep_shards *s, const sr_shard_tokenizer *t, int *removed, char *first, int *invalid,
                      char *bad, size_t cap, char *err, size_t errlen) {
    clean_ctx c = {s, t, 0, 0, first, bad, cap, err, errlen};
    int rc = each_shard(s->prefix, clean_one, &c, err, errlen);
    *removed = c.removed, *invalid = c.invalid;
    return rc;
}
