/* One llm.c token shard, mapped and read (shardrun/data.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "data/fault_guard.h"
#include "data/shard_check.h"
#include "data/shard_tokenizer.h"
#include "shardrun/data.h"

static const char *kind_of(mode_t m) {
    return S_ISDIR(m)                 ? "a directory"
           : S_ISCHR(m) || S_ISBLK(m) ? "a device"
           : S_ISFIFO(m)              ? "a pipe"
           : S_ISSOCK(m)              ? "a socket"
                                      : "not a regular file";
}

static int32_t le32(const unsigned char *p) {
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

int sr_shard_open(sr_shard *s, const char *path, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    s->fd = -1;
    struct stat st;
    unsigned char h[SR__SHARD_TOKENIZER_END];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* NONBLOCK: a FIFO must not hang the open */
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open the token shard: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: is %s, not a token shard; name shard files only", path, kind_of(st.st_mode));
        goto fail;
    }
    if (st.st_size == 0) {
        snprintf(err, errlen,
                 "%s: empty file (0 bytes), not a token shard (a header of %d bytes comes first); "
                 "write it again",
                 path, SR_SHARD_HEADER_BYTES);
        goto fail;
    }
    if (st.st_size < SR_SHARD_HEADER_BYTES) {
        snprintf(err, errlen,
                 "%s: truncated: %lld bytes, shorter than the %d-byte header of a token shard "
                 "(llm.c format); write it again",
                 path, (long long)st.st_size, SR_SHARD_HEADER_BYTES);
        goto fail;
    }
    if (pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h) {
        snprintf(err, errlen, "%s: cannot read the header: %s", path, strerror(errno));
        goto fail;
    }
    int32_t magic = le32(h), version = le32(h + 4), count = le32(h + 8);
    if (magic == SR_SHARD_MAGIC_U16 || magic == SR_SHARD_MAGIC_U32) {
        int u16 = magic == SR_SHARD_MAGIC_U16, want = u16 ? SR_SHARD_VERSION_U16 : SR_SHARD_VERSION_U32;
        if (version != want) {
            snprintf(err, errlen,
                     "%s: offset 4: version %d with magic %d; llm.c's %s shards have version %d. "
                     "Write the shard again with a current writer",
                     path, version, magic, u16 ? "uint16" : "uint32", want);
            goto fail;
        }
        s->token_bytes = u16 ? 2 : 4;
    } else {
        snprintf(err, errlen,
                 "%s: offset 0: magic %d is not a token shard's (llm.c's: %d for uint16 tokens, %d "
                 "for uint32); is this file a shard?",
                 path, magic, SR_SHARD_MAGIC_U16, SR_SHARD_MAGIC_U32);
        goto fail;
    }
    if (count <= 0) {
        snprintf(err, errlen,
                 "%s: offset 8: the header counts %d tokens; a shard holds at least one. "
                 "Leave empty shards out",
                 path, count);
        goto fail;
    }
    long long want = SR_SHARD_HEADER_BYTES + (long long)count * s->token_bytes;
    if (st.st_size != want) {
        snprintf(err, errlen,
                 "%s: offset 8: the header counts %d tokens (%lld bytes with the header) but the "
                 "file has %lld bytes (%s); write the shard again",
                 path, count, want, (long long)st.st_size,
                 st.st_size < want ? "truncated" : "extra bytes after the tokens");
        goto fail;
    }
    if (sr__shard_tokenizer_get(h, &s->tokenizer, path, err, errlen) != 0) goto fail;
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "%s: cannot map the shard: %s", path, strerror(errno));
        goto fail;
    }
    /* samples are blocks in shuffled order: read-ahead would fetch pages no one asked for */
    madvise(m, (size_t)st.st_size, MADV_RANDOM);
    if (!(s->path = sr__strdup(path))) {
        munmap(m, (size_t)st.st_size);
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    s->fd = fd;
    s->map = m;
    s->map_len = (size_t)st.st_size;
    s->ntokens = count;
    s->bytes = st.st_size;
    return 0;
fail:
    close(fd);
    s->token_bytes = 0;
    return -1;
}

typedef struct copy_job {
    const unsigned char *src;
    int token_bytes;
    int64_t n;
    int32_t *out;
} copy_job;

static void copy_tokens(void *arg) {
    const copy_job *j = arg;
    if (j->token_bytes == 2) {
        const uint16_t *p = (const uint16_t *)(const void *)j->src; /* little-endian hosts only */
        for (int64_t i = 0; i < j->n; i++) j->out[i] = p[i];
    } else {
        const uint32_t *p = (const uint32_t *)(const void *)j->src;
        for (int64_t i = 0; i < j->n; i++) j->out[i] = (int32_t)p[i];
    }
}

/* The file still holds end bytes: fstat costs far less than a step, and catches a shrink that
   happened before this read (the fault guard catches one during it). */
static int still_there(const sr_shard *s, int64_t end, char *err, size_t errlen) {
    struct stat st;
    if (fstat(s->fd, &st) != 0 || st.st_size < end) {
        snprintf(err, errlen,
                 "%s: the shard shrank to %lld bytes while training (it had %lld at start-up; "
                 "another process rewrote it?); byte %lld is needed.  Do not change shards a run "
                 "reads",
                 s->path, (long long)st.st_size, (long long)s->bytes, (long long)end);
        return -1;
    }
    return 0;
}

int sr_shard_read(const sr_shard *s, int64_t first, int64_t n, int32_t *out, char *err, size_t errlen) {
    if (first < 0 || n < 0 || first + n > s->ntokens) {
        snprintf(err, errlen, "%s: tokens %lld..%lld are outside the shard's %lld", s->path, (long long)first,
                 (long long)(first + n), (long long)s->ntokens);
        return -1;
    }
    int64_t off = SR_SHARD_HEADER_BYTES + first * s->token_bytes;
    if (still_there(s, off + n * s->token_bytes, err, errlen) != 0) return -1;
    copy_job j = {s->map + off, s->token_bytes, n, out};
    if (sr__fault_guard_run(copy_tokens, &j) != 0) {
        snprintf(err, errlen,
                 "%s: the shard shrank while its bytes %lld..%lld were read (another process "
                 "rewrote it?); do not change shards a run reads",
                 s->path, (long long)off, (long long)(off + n * s->token_bytes));
        return -1;
    }
    return 0;
}

typedef struct scan_job {
    const unsigned char *src;
    int token_bytes;
    int64_t n;
    uint32_t max; /* out */
} scan_job;

static void scan_max(void *arg) {
    scan_job *j = arg;
    uint32_t m = 0;
    if (j->token_bytes == 2) {
        const uint16_t *p = (const uint16_t *)(const void *)j->src;
        for (int64_t i = 0; i < j->n; i++) m = p[i] > m ? p[i] : m;
    } else {
        const uint32_t *p = (const uint32_t *)(const void *)j->src;
        for (int64_t i = 0; i < j->n; i++) m = p[i] > m ? p[i] : m;
    }
    j->max = m;
}

int sr__shard_check_vocab_range(const sr_shard *s, int64_t vocab, int64_t first, int64_t n_check, char *err,
                                size_t errlen) {
    /* chunks of 16 MiB: read ahead within a chunk, then dropped from this process (the page cache keeps
       them for the other ranks), so the check leaves the resident set as it found it */
    const int64_t chunk = ((int64_t)16 << 20) / s->token_bytes;
    if (first < 0 || n_check < 0 || first + n_check > s->ntokens) {
        snprintf(err, errlen, "%s: tokens %lld..%lld are outside the shard's %lld", s->path, (long long)first,
                 (long long)(first + n_check), (long long)s->ntokens);
        return -1;
    }
    if (s->token_bytes == 2 && vocab >= 65536) return 0; /* nothing a uint16 can hold is out of range */
    const int64_t end = first + n_check;
    for (int64_t at = first; at < end; at += chunk) {
        int64_t n = end - at < chunk ? end - at : chunk;
        int64_t off = SR_SHARD_HEADER_BYTES + at * s->token_bytes;
        size_t pg = (size_t)sysconf(_SC_PAGESIZE), a0 = (size_t)off / pg * pg, a1 = (size_t)(off + n * s->token_bytes);
        madvise((void *)(s->map + a0), a1 - a0, MADV_WILLNEED);
        scan_job j = {s->map + off, s->token_bytes, n, 0};
        if (still_there(s, off + n * s->token_bytes, err, errlen) != 0) return -1;
        if (sr__fault_guard_run(scan_max, &j) != 0) {
            snprintf(err, errlen, "%s: the shard shrank while it was checked (another process rewrote it?)", s->path);
            return -1;
        }
        madvise((void *)(s->map + a0), a1 - a0, MADV_DONTNEED);
        if ((int64_t)j.max < vocab) continue;
        for (int64_t i = 0; i < n; i++) {
            const unsigned char *p = s->map + off + i * s->token_bytes;
            uint32_t t = s->token_bytes == 2 ? (uint32_t)(p[0] | p[1] << 8) : (uint32_t)le32(p);
            if ((int64_t)t >= vocab) {
                snprintf(err, errlen,
                         "%s: offset %lld (token %lld): id %u is not below the model's vocabulary of "
                         "%lld; the shard was written with another tokenizer, or the model needs a "
                         "larger vocab_size",
                         s->path, (long long)(off + i * s->token_bytes), (long long)(at + i), t, (long long)vocab);
                return -1;
            }
        }
    }
    return 0;
}

int sr_shard_check_vocab(const sr_shard *s, int64_t vocab, char *err, size_t errlen) {
    return sr__shard_check_vocab_range(s, vocab, 0, s->ntokens, err, errlen);
}

void sr_shard_close(sr_shard *s) {
    if (s->map) { /* only an opened shard has its file open ({0} is fd 0: not ours) */
        munmap((void *)s->map, s->map_len);
        close(s->fd);
    }
    free(s->path);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}
