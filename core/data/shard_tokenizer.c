/* Which tokenizer wrote a shard: its identity and the header record (shardrun/data.h). */
#define _GNU_SOURCE
#include "data/shard_tokenizer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/hash64.h"

static void put32(unsigned char *p, uint32_t v) {
    for (int b = 0; b < 4; b++) p[b] = (unsigned char)(v >> (8 * b));
}

static uint32_t get32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* a file's size and bytes into st: 0, or -1 with errno */
static int hash_file(sr__hash64_state *st, const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0) return -1;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        errno = errno ? errno : EINVAL;
        return -1;
    }
    int64_t size = sb.st_size, seen = 0;
    sr__hash64_update(st, &size, sizeof size);
    unsigned char buf[1 << 16];
    ssize_t k;
    while ((k = read(fd, buf, sizeof buf)) != 0) {
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) break;
        sr__hash64_update(st, buf, (size_t)k);
        seen += k;
    }
    close(fd);
    if (k < 0) return -1;
    if (seen != size) return errno = EAGAIN, -1; /* it changed while read */
    return 0;
}

/* the last two components of path ("dir/file"), or the file alone */
static const char *tail2(const char *path) {
    const char *end = path + strlen(path), *p = end, *last = NULL;
    while (p > path) {
        if (*--p != '/' || p == end - 1) continue;
        if (last) return p + 1;
        last = p;
    }
    return path;
}

int sr_shard_tokenizer_of_files(sr_shard_tokenizer *t, const char *const *files, int n, int64_t vocab, char *err,
                                size_t errlen) {
    memset(t, 0, sizeof *t);
    sr__hash64_state st;
    sr__hash64_init(&st, 0);
    static const char byte_level[] = "byte-level";
    if (n == 0) sr__hash64_update(&st, byte_level, sizeof byte_level);
    char name[4096 * 2] = "";
    for (int i = 0; i < n; i++) {
        errno = 0;
        if (hash_file(&st, files[i]) != 0) {
            snprintf(err, errlen, "%s: cannot read the tokenizer file to record which tokenizer this is: %s", files[i],
                     errno == EAGAIN ? "it changed while it was read" : strerror(errno));
            return -1;
        }
        /* named from the real path: the same files get the same name whichever way the job and
           prepare reached them (a relative path has no folder to show) */
        char real[PATH_MAX];
        const char *f = realpath(files[i], real) ? real : files[i], *slash = strrchr(f, '/');
        size_t k = strlen(name);
        snprintf(name + k, sizeof name - k, "%s%s", i ? "+" : "", i ? (slash ? slash + 1 : f) : tail2(f));
    }
    t->hash = sr__hash64_final(&st);
    if (!t->hash) t->hash = 1; /* 0 means "not recorded" */
    t->vocab = vocab;
    const char *nm = n ? name : byte_level;
    size_t len = strlen(nm), keep = sizeof t->name - 1;
    snprintf(t->name, sizeof t->name, "%s", len > keep ? nm + (len - keep) : nm);
    return 0;
}

int sr_shard_tokenizer_same(const sr_shard_tokenizer *a, const sr_shard_tokenizer *b) { return a->hash == b->hash; }

void sr_shard_tokenizer_describe(const sr_shard_tokenizer *t, char *out, size_t len) {
    char hex[17];
    if (!t->hash)
        snprintf(out, len,
                 "no tokenizer record (llm.c's writer or an earlier shardrun: which tokenizer wrote it "
                 "is unknown)");
    else
        snprintf(out, len, "tokenizer %s (xxh3 %s, vocabulary %lld)", t->name, sr__hash64_hex(t->hash, hex),
                 (long long)t->vocab);
}

void sr__shard_tokenizer_put(unsigned char *header, const sr_shard_tokenizer *t) {
    memset(header + 12, 0, SR__SHARD_TOKENIZER_END - 12);
    if (!t || !t->hash) return;
    put32(header + 12, SR_SHARD_TOKENIZER_TAG);
    put32(header + 16, SR_SHARD_TOKENIZER_VERSION);
    put32(header + 20, (uint32_t)t->hash);
    put32(header + 24, (uint32_t)(t->hash >> 32));
    put32(header + 28, (uint32_t)t->vocab);
    memcpy(header + 32, t->name, strnlen(t->name, SR_SHARD_TOKENIZER_NAME - 1));
}

int sr__shard_tokenizer_get(const unsigned char *h, sr_shard_tokenizer *t, const char *path, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    uint32_t tag = get32(h + 12), version = get32(h + 16);
    if (tag == 0) return 0;
    const char *what = tag != SR_SHARD_TOKENIZER_TAG                 ? "is not shardrun's tokenizer record"
                       : version != SR_SHARD_TOKENIZER_VERSION       ? "is a tokenizer record of another version"
                       : !memchr(h + 32, 0, SR_SHARD_TOKENIZER_NAME) ? "is a tokenizer record with no name's end"
                                                                     : NULL;
    if (what) {
        snprintf(err, errlen,
                 "%s: offset 12: header word 3 = %u (version %u) %s (llm.c leaves words 3.. zero; shardrun writes "
                 "%d, version %d): a damaged header or a newer writer; write the shard again",
                 path, tag, version, what, SR_SHARD_TOKENIZER_TAG, SR_SHARD_TOKENIZER_VERSION);
        return -1;
    }
    t->hash = (uint64_t)get32(h + 20) | (uint64_t)get32(h + 24) << 32;
    t->vocab = get32(h + 28);
    memcpy(t->name, h + 32, SR_SHARD_TOKENIZER_NAME);
    if (!t->hash) {
        snprintf(err, errlen,
                 "%s: offset 20: the tokenizer record's hash is 0: a damaged header; write the shard again", path);
        return -1;
    }
    return 0;
}
