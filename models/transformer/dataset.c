/*
 * transformer dataset (see dataset.h): patterns -> files -> texts -> samples.
 *
 * Lifecycle: load expands every pattern first (so a wrong pattern is reported before any reading),
 * drops directories and files already taken, then reads the files one by one, splitting each into
 * texts that are trimmed, filtered, tokenized and stored as rows of T ids; it stops at max_samples.
 * Everything it allocates is in the dataset (freed by tf_dataset_free) or freed before it returns.
 */
#define _POSIX_C_SOURCE 200809L
#include "dataset.h"

#include "base/fail.h"
#include "read_file.h"

#include <errno.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ASCII whitespace: what trimming, blank lines and the short-text filter mean by whitespace */
static int is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

int tf_split_parse(const char *s, tf_split *out) {
    static const char *const names[] = {"paragraph", "line", "file"};
    for (int k = 0; k < 3; k++)
        if (s && !strcmp(s, names[k])) return *out = (tf_split)k, 0;
    return -1;
}

/* ---- patterns -> files ------------------------------------------------------------------------ */

typedef struct {
    char *path;
    dev_t dev;
    ino_t ino;
    size_t order;
    unsigned long long size;
} data_file;

static int by_identity(const void *a, const void *b) {
    const data_file *x = a, *y = b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int by_order(const void *a, const void *b) {
    const data_file *x = a, *y = b;
    return x->order < y->order ? -1 : x->order > y->order;
}

static void free_files(data_file *f, size_t n) {
    for (size_t k = 0; k < n; k++) free(f[k].path);
    free(f);
}

/* Adds the matches of one pattern (directories skipped) to files[*n]. */
static int expand(const char *pat, data_file **files, size_t *n, size_t *cap, char *err, size_t errlen) {
    glob_t g;
    int rc = glob(pat, 0, NULL, &g);
    if (rc == GLOB_NOMATCH)
        return sr__fail(
            err, errlen,
            "the data pattern \"%s\" matches no file; give existing files or glob(3) patterns, separated by "
            "whitespace",
            pat);
    if (rc) {
        if (rc != GLOB_NOSPACE) globfree(&g);
        return sr__fail(err, errlen, "the data pattern \"%s\" cannot be expanded: %s", pat,
                        rc == GLOB_NOSPACE ? "out of memory" : "a directory on its way cannot be read");
    }
    size_t taken = 0;
    for (size_t k = 0; k < g.gl_pathc; k++) {
        const char *p = g.gl_pathv[k];
        struct stat st;
        if (stat(p, &st)) {
            rc = sr__fail(err, errlen, "cannot read data file %s (matched by \"%s\"): %s", p, pat, strerror(errno));
            break;
        }
        if (S_ISDIR(st.st_mode)) continue;
        if (!S_ISREG(st.st_mode)) {
            rc = sr__fail(err, errlen,
                          "data file %s (matched by \"%s\") is %s, not a regular file; give regular text files", p, pat,
                          tf_file_kind((unsigned)st.st_mode));
            break;
        }
        if (*n == *cap) {
            size_t c = *cap ? 2 * *cap : 64;
            data_file *f = realloc(*files, c * sizeof *f);
            if (!f) {
                rc = sr__fail(err, errlen, "out of memory listing the data files");
                break;
            }
            *files = f;
            *cap = c;
        }
        char *copy = strdup(p);
        if (!copy) {
            rc = sr__fail(err, errlen, "out of memory listing the data files");
            break;
        }
        (*files)[*n] = (data_file){
            .path = copy, .dev = st.st_dev, .ino = st.st_ino, .order = *n, .size = (unsigned long long)st.st_size};
        ++*n;
        taken++;
    }
    if (!rc && !taken)
        rc = sr__fail(err, errlen,
                      "the data pattern \"%s\" matches only directories; name the files in them (like \"%s/*\")", pat,
                      g.gl_pathv[0]);
    globfree(&g);
    return rc ? -1 : 0;
}

/* Every pattern's files, in order, each file once. */
static int list_files(const char *patterns, const char *base_dir, data_file **out, size_t *nout, char *err,
                      size_t errlen) {
    size_t len = strlen(patterns), n = 0, cap = 0, blen = base_dir ? strlen(base_dir) : 0;
    data_file *files = NULL;
    char *pat = malloc(2 * blen + 2 + len + 1);
    if (!pat) return sr__fail(err, errlen, "out of memory");
    int rc = 0;
    for (size_t i = 0; !rc;) {
        while (i < len && is_space(patterns[i])) i++;
        if (i == len) break;
        size_t k = 0;
        if (blen && patterns[i] != '/') { /* relative: the base folder first, its glob characters escaped */
            for (size_t b = 0; b < blen; b++) {
                if (strchr("*?[\\", base_dir[b])) pat[k++] = '\\';
                pat[k++] = base_dir[b];
            }
            pat[k++] = '/';
        }
        /* a backslash keeps the next character in the pattern (glob unescapes it) */
        for (; i < len && !is_space(patterns[i]); i++) {
            if (patterns[i] == '\\' && i + 1 < len) pat[k++] = patterns[i++];
            pat[k++] = patterns[i];
        }
        pat[k] = 0;
        rc = expand(pat, &files, &n, &cap, err, errlen);
    }
    free(pat);
    if (!rc && !n) rc = sr__fail(err, errlen, "no data files given: the list of data patterns is empty");
    if (rc) {
        free_files(files, n);
        return -1;
    }
    /* the same file twice: keep its first appearance */
    qsort(files, n, sizeof *files, by_identity);
    size_t kept = 0;
    for (size_t k = 0; k < n; k++) {
        if (kept && files[kept - 1].dev == files[k].dev && files[kept - 1].ino == files[k].ino) free(files[k].path);
        else files[kept++] = files[k];
    }
    qsort(files, kept, sizeof *files, by_order);
    unsigned long long total = 0;
    for (size_t k = 0; k < kept; k++) total += files[k].size;
    if (total > TF_DATA_MAX) {
        sr__fail(err, errlen,
                 "the data files hold %llu bytes together (%zu files, from \"%s\"), more than the %llu "
                 "bytes (4 GiB) the gpt2 task reads; name fewer files",
                 total, kept, patterns, TF_DATA_MAX);
        free_files(files, kept);
        return -1;
    }
    *out = files;
    *nout = kept;
    return 0;
}

/* ---- files -> texts -> samples ----------------------------------------------------------------- */

typedef struct {
    tf_dataset *d;
    const tf_data_opts *o;
    tf_tokenizer *tok;
    int32_t *tmp; /* the current text's ids */
    size_t tmp_n, tmp_cap;
    long long cap;    /* samples d->ids and d->lengths hold */
    sr_packer pack;   /* packing: every text so far, joined by eos */
    const char *file; /* the file being read, for messages */
    char *err;
    size_t errlen;
} loader;

/* One text: trimmed, filtered, tokenized, stored.  1 once max_samples are kept, 0 to go on, -1 on error. */
static int take(loader *L, const char *s, size_t n) {
    tf_dataset *d = L->d;
    while (n && is_space(s[0])) s++, n--;
    while (n && is_space(s[n - 1])) n--;
    if (!n) return 0;
    d->texts_read++;
    long long chars = 0; /* non-whitespace code points: the bytes that do not continue a UTF-8 sequence */
    for (size_t i = 0; i < n; i++) chars += !is_space(s[i]) && ((unsigned char)s[i] & 0xC0) != 0x80;
    if (chars < L->o->min_chars) {
        d->texts_dropped++;
        return 0;
    }
    L->tmp_n = 0;
    int rc = tf_tokenizer_encode(L->tok, s, n, &L->tmp, &L->tmp_n, &L->tmp_cap);
    if (rc == TF_TOKENIZER_PATTERN_LIMIT)
        return sr__fail(L->err, L->errlen, "%s: %s", L->file, tf_tokenizer_error(L->tok));
    if (rc) return sr__fail(L->err, L->errlen, "out of memory tokenizing the data");
    if (L->o->packing) {
        if (sr_packer_add(&L->pack, L->tmp, L->tmp_n) != 0)
            return sr__fail(L->err, L->errlen, "out of memory packing %lld tokens", (long long)L->pack.n);
        return L->o->max_samples && L->pack.docs >= L->o->max_samples;
    }
    if (d->n == L->cap) {
        long long c = L->cap ? 2 * L->cap : 256;
        if (L->o->max_samples && c > L->o->max_samples) c = L->o->max_samples;
        int32_t *ids = realloc(d->ids, (size_t)c * (size_t)d->T * sizeof *ids);
        if (ids) d->ids = ids;
        int32_t *lengths = ids ? realloc(d->lengths, (size_t)c * sizeof *lengths) : NULL;
        if (!lengths) return sr__fail(L->err, L->errlen, "out of memory: %lld samples of %d tokens", c, d->T);
        d->lengths = lengths;
        L->cap = c;
    }
    size_t len = L->tmp_n < (size_t)d->T ? L->tmp_n : (size_t)d->T;
    int32_t *row = d->ids + (size_t)d->n * (size_t)d->T, eos = tf_tokenizer_eos(L->tok);
    memcpy(row, L->tmp, len * sizeof *row);
    for (size_t k = len; k < (size_t)d->T; k++) row[k] = eos;
    d->lengths[d->n++] = (int32_t)len;
    d->tokens += (long long)len;
    return L->o->max_samples && d->n >= L->o->max_samples;
}

/* One file's contents into texts: take()'s result for the last one. */
static int split(loader *L, const char *s, size_t n) {
    if (L->o->split == TF_SPLIT_FILE) return take(L, s, n);
    size_t start = 0, end = 0; /* the paragraph so far: s[start, end); end == 0: none */
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t e = nl ? (size_t)(nl - s) : n;
        int rc = 0;
        if (L->o->split == TF_SPLIT_LINE) {
            rc = take(L, s + i, e - i);
        } else {
            size_t k = i;
            while (k < e && is_space(s[k])) k++;
            if (k < e) { /* a line with text: the paragraph starts or goes on */
                if (!end) start = i;
                end = e;
            } else if (end) { /* a blank line ends it */
                rc = take(L, s + start, end - start);
                end = 0;
            }
        }
        if (rc) return rc;
        i = e + 1;
    }
    return end ? take(L, s + start, end - start) : 0;
}

/* sr_jsonl_each's callback: one record's text */
static int take_record(void *user, const char *text, size_t len, long long line) {
    (void)line;
    return take(user, text, len);
}

/* Packing's blocks: the stream cut into rows of T, the rest dropped (group_texts) */
static int cut_blocks(loader *L) {
    tf_dataset *d = L->d;
    long long n = sr_packer_blocks(&L->pack);
    d->tokens_left = L->pack.n - n * d->T;
    if (!n) return 0;     /* no sample: said by the caller */
    d->ids = L->pack.ids; /* rows of T are the stream itself: no copy */
    L->pack.ids = NULL;
    if (!(d->lengths = malloc((size_t)n * sizeof *d->lengths))) return sr__fail(L->err, L->errlen, "out of memory");
    for (long long i = 0; i < n; i++) d->lengths[i] = d->T;
    d->n = n;
    d->tokens = n * d->T;
    return 0;
}

int tf_dataset_sample(const tf_dataset *d, long long i, int32_t *out, int *len, char *err, size_t errlen) {
    if (d->shards) {
        *len = d->T;
        return sr_shard_set_read(d->shards, (d->block0 + i) * d->T, d->T, out, err, errlen);
    }
    memcpy(out, d->ids + (size_t)i * (size_t)d->T, (size_t)d->T * sizeof *out);
    *len = d->lengths[i];
    return 0;
}

void tf_dataset_free(tf_dataset *d) {
    if (!d) return;
    if (d->shards && d->owns_shards) {
        sr_shard_set_close(d->shards);
        free(d->shards);
    }
    free(d->ids);
    free(d->lengths);
    memset(d, 0, sizeof *d);
}

int tf_dataset_split_tail(tf_dataset *d, long long n, tf_dataset *tail, char *err, size_t errlen) {
    memset(tail, 0, sizeof *tail);
    if (n < 1 || n >= d->n)
        return sr__fail(err, errlen, "a held-out split of %lld of %lld samples leaves %s", n, d->n,
                        n < 1 ? "no eval sample" : "no training sample");
    long long keep = d->n - n;
    size_t T = (size_t)d->T;
    if (d->shards) { /* the last blocks of the same mapped stream */
        *tail = *d;
        tail->owns_shards = 0;
        tail->block0 = d->block0 + keep;
        tail->n = n, tail->tokens = n * d->T, tail->texts_read = n;
        d->n = keep, d->tokens = keep * d->T;
        return 0;
    }
    tail->ids = malloc((size_t)n * T * sizeof *tail->ids);
    tail->lengths = malloc((size_t)n * sizeof *tail->lengths);
    if (!tail->ids || !tail->lengths) {
        tf_dataset_free(tail);
        return sr__fail(err, errlen, "out of memory for %lld held-out samples", n);
    }
    memcpy(tail->ids, d->ids + (size_t)keep * T, (size_t)n * T * sizeof *tail->ids);
    memcpy(tail->lengths, d->lengths + keep, (size_t)n * sizeof *tail->lengths);
    tail->n = n, tail->T = d->T;
    for (long long i = 0; i < n; i++) tail->tokens += tail->lengths[i];
    tail->texts_read = n;
    d->n = keep, d->tokens -= tail->tokens;
    return 0;
}

int tf_dataset_load(tf_dataset *d, const tf_data_opts *o, tf_tokenizer *tok, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    if (!o->patterns) return sr__fail(err, errlen, "no data files given: set the data patterns");
    if (o->max_length < 1)
        return sr__fail(err, errlen, "max_length must be at least 1 token (it is %d)", o->max_length);
    if (o->min_chars < 0) return sr__fail(err, errlen, "min_chars must be 0 or more (it is %d)", o->min_chars);
    if (o->max_samples < 0)
        return sr__fail(err, errlen, "max_samples must be 0 (all) or more (it is %lld)", o->max_samples);
    if ((unsigned)o->split > TF_SPLIT_FILE) return sr__fail(err, errlen, "unknown split mode %d", (int)o->split);
    data_file *files = NULL;
    size_t nfiles = 0;
    if (list_files(o->patterns, o->base_dir, &files, &nfiles, err, errlen)) return -1;
    /* a JSON Lines file that is bad from its first line is refused now, not after the files before it
       and it are read whole (gigabytes of a wrong file: a minute and its size in memory) */
    for (size_t k = 0; k < nfiles && o->format == TF_FORMAT_JSONL; k++)
        if (sr_jsonl_check_start(files[k].path, o->text_field ? o->text_field : "text", err, errlen) < 0) {
            free_files(files, nfiles);
            return -1;
        }
    d->T = o->max_length;
    loader L = {.d = d, .o = o, .tok = tok, .err = err, .errlen = errlen};
    sr_packer_init(&L.pack, o->max_length, tf_tokenizer_eos(tok));
    int rc = 0;
    unsigned long long budget = TF_DATA_MAX; /* the files may have grown since they were listed */
    for (size_t k = 0; k < nfiles && !rc; k++) {
        size_t len;
        char *text = tf_read_file_max(files[k].path, "data file", (size_t)budget,
                                      "what is left of the 4 GiB all data files may hold together", &len, err, errlen);
        if (!text) {
            rc = -1;
            break;
        }
        d->files++;
        budget -= len;
        L.file = files[k].path;
        if (o->format == TF_FORMAT_JSONL)
            rc = sr_jsonl_each(text, len, files[k].path, 1, o->text_field ? o->text_field : "text", take_record, &L,
                               err, errlen);
        else rc = split(&L, text, len);
        free(text);
    }
    if (rc >= 0 && o->packing && cut_blocks(&L) != 0) rc = -1;
    if (rc >= 0 && o->packing && !d->n && d->texts_read > d->texts_dropped) {
        sr__fail(err, errlen,
                 "packing: the %lld texts hold %lld tokens together, fewer than one block of max_length = %d; "
                 "add data or lower max_length",
                 d->texts_read - d->texts_dropped, (long long)L.pack.n, d->T);
        rc = -1;
    }
    sr_packer_free(&L.pack);
    free(L.tmp);
    free_files(files, nfiles);
    if (rc >= 0 && !d->n) {
        if (!d->texts_read)
            sr__fail(err, errlen, "no text in the data: the %lld files matched by \"%s\" are empty or only whitespace",
                     d->files, o->patterns);
        else
            sr__fail(
                err, errlen,
                "no sample left: all %lld texts read from %lld files have fewer than min_chars = %d non-whitespace "
                "characters; lower min_chars, or split into longer texts, or add files",
                d->texts_read, d->files, o->min_chars);
        rc = -1;
    }
    if (rc < 0) {
        tf_dataset_free(d);
        return -1;
    }
    return 0;
}
