/* llm.c's multiple-choice eval files: read and checked (see choice_file.h). */
#define _GNU_SOURCE
#include "trainer/choice_file.h"
#include "base/alloc.h"
#include "base/fail.h"
#include "base/glob_each.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A file's bytes can hold at most 2^16 examples of less than 2^16 bytes each (the writer's bounds) */
#define MAX_FILE_BYTES ((long long)SR__CHOICE_HEADER_BYTES + (1ll << 32))

static int32_t le32(const uint8_t *p) {
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}
static unsigned le16(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }

static const char *file_kind(mode_t m) {
    return S_ISDIR(m)                 ? "a directory"
           : S_ISCHR(m) || S_ISBLK(m) ? "a device"
           : S_ISFIFO(m)              ? "a FIFO"
                                      : "not a regular file";
}

/* The whole file, bounded by what the format can hold.  NULL with err[]. */
static uint8_t *read_whole(const char *path, size_t *size, char *err, size_t len) {
    struct stat st;
    if (stat(path, &st) != 0) return sr__fail(err, len, "cannot read %s: %s", path, strerror(errno)), NULL;
    if (!S_ISREG(st.st_mode))
        return sr__fail(err, len, "%s is %s; name llm.c eval files (.bin)", path, file_kind(st.st_mode)), NULL;
    if ((long long)st.st_size > MAX_FILE_BYTES)
        return sr__fail(err, len, "%s is %lld bytes, more than an eval file can be (2^16 examples under 64 KiB each)",
                        path, (long long)st.st_size),
               NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return sr__fail(err, len, "cannot open %s: %s", path, strerror(errno)), NULL;
    uint8_t *b = sr__malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
    size_t got = b ? fread(b, 1, (size_t)st.st_size, f) : 0;
    int bad = b && ferror(f);
    fclose(f);
    if (!b) return sr__fail(err, len, "out of memory for %s (%lld bytes)", path, (long long)st.st_size), NULL;
    if (bad) {
        free(b);
        return sr__fail(err, len, "cannot read %s: read error", path), NULL;
    }
    *size = got; /* a file that shrank meanwhile is checked as it was read */
    return b;
}

static int add_example(sr__choice_set *s, const sr__choice_example *e) {
    if (s->n == s->cap) {
        int64_t c = s->cap ? 2 * s->cap : 256;
        sr__choice_example *x = sr__realloc(s->ex, (size_t)c * sizeof *x);
        if (!x) return -1;
        s->ex = x, s->cap = c;
    }
    s->ex[s->n++] = *e;
    return 0;
}

/* Checks a run of n tokens at byte offset `at` against the vocabulary. */
static int check_tokens(const char *path, const uint8_t *b, size_t at, int n, int64_t vocab, long long example,
                        char *err, size_t len) {
    for (int k = 0; k < n; k++)
        if ((int64_t)le16(b + at + 2 * (size_t)k) >= vocab)
            return sr__fail(err, len,
                            "%s: offset %zu (example %lld): token id %u is not below the model's vocabulary of "
                            "%lld; the file was tokenized for another model",
                            path, at + 2 * (size_t)k, example, le16(b + at + 2 * (size_t)k), (long long)vocab);
    return 0;
}

/* One file's examples, appended to s. */
static int parse(sr__choice_set *s, const char *path, const uint8_t *b, size_t size, int64_t vocab, int64_t max_tokens,
                 char *err, size_t len) {
    if (size < SR__CHOICE_HEADER_BYTES)
        return sr__fail(err, len, "%s: offset %zu: truncated: the header takes %d bytes and the file has %zu", path,
                        size, SR__CHOICE_HEADER_BYTES, size);
    int32_t magic = le32(b), version = le32(b + 4), count = le32(b + 8), longest = le32(b + 12);
    if (magic != SR__CHOICE_MAGIC)
        return sr__fail(
            err, len, "%s: offset 0: magic number %d, not %d (llm.c's eval file)%s", path, magic, SR__CHOICE_MAGIC,
            magic == 20240520 || magic == 20240801 ? ": this is a token shard, which is training data, not an eval file"
                                                   : "");
    if (version != SR__CHOICE_VERSION)
        return sr__fail(err, len, "%s: offset 4: version %d, not %d (the version llm.c writes and reads)", path,
                        version, SR__CHOICE_VERSION);
    if (count < 1 || count > 65535)
        return sr__fail(err, len, "%s: offset 8: %d examples; an eval file holds 1 to 65535", path, count);
    if (longest < 12 || longest > 65535)
        return sr__fail(err, len, "%s: offset 12: longest example of %d bytes; expected 12 to 65535", path, longest);
    size_t at = SR__CHOICE_HEADER_BYTES;
    for (long long i = 0; i < count; i++) {
        if (size - at < 12)
            return sr__fail(err, len,
                            "%s: offset %zu: truncated: example %lld of %d starts here and the file ends at %zu", path,
                            at, i, count, size);
        const uint8_t *x = b + at;
        unsigned start = le16(x), bytes = le16(x + 2), index = le16(x + 4), label = le16(x + 6), ncomp = le16(x + 8),
                 ctx = le16(x + 10);
        if (start != 65535)
            return sr__fail(err, len, "%s: offset %zu: %u where example %lld should start with 65535", path, at, start,
                            i);
        if (bytes > size - at)
            return sr__fail(err, len, "%s: offset %zu: truncated: example %lld is %u bytes and the file ends at %zu",
                            path, at, i, bytes, size);
        if (bytes < 12 || bytes % 2 || bytes > (unsigned)longest)
            return sr__fail(err, len,
                            "%s: offset %zu: example %lld says it is %u bytes; expected an even size of 12 to "
                            "%d (the header's longest example)",
                            path, at + 2, i, bytes, longest);
        if (index != (unsigned)i)
            return sr__fail(err, len, "%s: offset %zu: example %lld has index %u", path, at + 4, i, index);
        if (ncomp > SR__CHOICE_MAX || ncomp < 2)
            return sr__fail(err, len, "%s: offset %zu: example %lld has %u completions; the format allows 2 to %d",
                            path, at + 8, i, ncomp, SR__CHOICE_MAX);
        if (label >= ncomp)
            return sr__fail(err, len, "%s: offset %zu: example %lld has label %u of %u completions", path, at + 6, i,
                            label, ncomp);
        sr__choice_example e = {.ctx = x + 12, .ctx_len = (int)ctx, .ncomp = (int)ncomp, .label = (int)label};
        size_t end = at + bytes, p = at + 12;
        if (ctx < 1)
            return sr__fail(err, len,
                            "%s: offset %zu: example %lld has no context token; the first completion token "
                            "needs one before it",
                            path, at + 10, i);
        if (2 * (size_t)ctx > end - p)
            return sr__fail(err, len, "%s: offset %zu: example %lld's %u context tokens run past its %u bytes", path,
                            at + 10, i, ctx, bytes);
        if (check_tokens(path, b, p, (int)ctx, vocab, i, err, len)) return -1;
        p += 2 * (size_t)ctx;
        for (unsigned c = 0; c < ncomp; c++) {
            if (end - p < 2)
                return sr__fail(err, len, "%s: offset %zu: example %lld ends before its completion %u", path, p, i, c);
            unsigned n = le16(b + p);
            if (n < 1 || 2 * (size_t)n > end - p - 2)
                return sr__fail(err, len,
                                "%s: offset %zu: example %lld's completion %u has %u tokens; expected 1 to what "
                                "the example's %u bytes hold",
                                path, p, i, c, n, bytes);
            if ((int64_t)ctx + n > max_tokens)
                return sr__fail(err, len,
                                "%s: offset %zu: example %lld's context and completion %u are %u tokens, more "
                                "than the model takes (%lld, max_length); raise max_length or leave the file out",
                                path, p, i, c, ctx + n, (long long)max_tokens);
            if (check_tokens(path, b, p + 2, (int)n, vocab, i, err, len)) return -1;
            e.comp[c] = b + p + 2, e.comp_len[c] = (int)n;
            if ((int)(ctx + n) > s->longest) s->longest = (int)(ctx + n);
            p += 2 + 2 * (size_t)n;
        }
        if (p != end)
            return sr__fail(err, len, "%s: offset %zu: example %lld says it is %u bytes but its fields end after %zu",
                            path, at + 2, i, bytes, p - at);
        if (add_example(s, &e) != 0) return sr__fail(err, len, "out of memory for the examples of %s", path);
        at = end;
    }
    if (at != size)
        return sr__fail(err, len, "%s: offset %zu: %zu bytes follow the %d examples the header counts", path, at,
                        size - at, count);
    return 0;
}

static int load_file(sr__choice_set *s, const char *path, int64_t vocab, int64_t max_tokens, char *err, size_t len) {
    size_t size = 0;
    uint8_t *b = read_whole(path, &size, err, len);
    if (!b) return -1;
    uint8_t **f = sr__realloc(s->bytes, (size_t)(s->nfiles + 1) * sizeof *f);
    if (!f) {
        free(b);
        return sr__fail(err, len, "out of memory for %s", path);
    }
    s->bytes = f;
    s->bytes[s->nfiles++] = b;
    return parse(s, path, b, size, vocab, max_tokens, err, len);
}

typedef struct {
    sr__choice_set *s;
    int64_t vocab, max_tokens;
    char *err;
    size_t errlen;
} load_ctx;

static int load_match(const char *path, void *arg) {
    load_ctx *x = arg;
    return load_file(x->s, path, x->vocab, x->max_tokens, x->err, x->errlen);
}

int sr__choice_load(sr__choice_set *s, const char *patterns, const char *base_dir, int64_t vocab, int64_t max_tokens,
                    char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    load_ctx x = {s, vocab, max_tokens, err, errlen};
    int n = sr__glob_each(patterns, base_dir, "eval file", load_match, &x, err, errlen);
    if (n == 0) sr__fail(err, errlen, "no file named: the list of eval files is empty");
    if (n <= 0) sr__choice_free(s);
    return n > 0 ? 0 : -1;
}

void sr__choice_free(sr__choice_set *s) {
    for (int i = 0; i < s->nfiles; i++) free(s->bytes[i]);
    free(s->bytes);
    free(s->ex);
    memset(s, 0, sizeof *s);
}
