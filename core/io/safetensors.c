/*
 * safetensors reader and writer (see safetensors.h for the layout).
 *
 * The header is walked with the strict pull reader of io/json.h, straight into the tensor table
 * (no JSON tree): a header may be up to 100 MB, and a tree of that costs far more than the table.
 * Strings are decoded into one arena of header length + 1 bytes (the file's, so names and
 * metadata live as long as it), which always suffices: a decoded string plus its NUL is shorter
 * than its quoted JSON form.
 */
#define _POSIX_C_SOURCE 200809L
#define _FILE_OFFSET_BITS 64
#include "io/safetensors.h"

#include "shardrun/half.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "base/hash64.h"
#include "base/strbuf.h"
#include "io/json.h"

/* HuggingFace's reader refuses headers above 100 MB, so the writer never makes one and the
   reader takes a larger length for a corrupt file rather than mapping gigabytes of "JSON". */
#define ST_MAX_HEADER 100000000u

static const struct {
    const char *name;
    uint64_t size;
} dtypes[] = {[SR_FLOAT32] = {"F32", 4},
              [SR_FLOAT16] = {"F16", 2},
              [SR_BFLOAT16] = {"BF16", 2},
              [SR_INT32] = {"I32", 4},
              [SR_INT64] = {"I64", 8}};
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

const char *sr__st_dtype_name(sr_dtype dtype) { return (unsigned)dtype < NDTYPES ? dtypes[dtype].name : "?"; }

/* A name for a message: in double quotes with JSON escapes (names come from files and may hold
   anything, including quotes and newlines), cut short when long. */
typedef struct {
    char s[128];
} qbuf;

static const char *quote(qbuf *q, const char *name) {
    const size_t lim = sizeof q->s - 5; /* room for "...", the closing quote and the NUL */
    size_t n = 0;
    q->s[n++] = '"';
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        char tmp[8];
        size_t k = 2;
        tmp[0] = '\\';
        if (*p == '"' || *p == '\\') tmp[1] = (char)*p;
        else if (*p == '\n') tmp[1] = 'n';
        else if (*p == '\t') tmp[1] = 't';
        else if (*p == '\r') tmp[1] = 'r';
        else if (*p < 0x20 || *p == 0x7f) k = (size_t)snprintf(tmp, sizeof tmp, "\\u%04x", *p);
        else tmp[0] = (char)*p, k = 1;
        if (n + k > lim) {
            memcpy(q->s + n, "...", 3);
            n += 3;
            break;
        }
        memcpy(q->s + n, tmp, k);
        n += k;
    }
    q->s[n++] = '"';
    q->s[n] = 0;
    return q->s;
}

const char *sr__st_shape_str(char *buf, size_t len, int ndim, const int64_t *shape) {
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%" PRId64, i ? ", " : "", shape[i]);
    if (n < len) snprintf(buf + n, len - n, "]");
    return buf;
}

/* The tensor's size in bytes, or -1 when a dimension is negative or the size would not fit in a
   file offset.  A zero dimension makes 0 whatever the others are. */
static int tensor_bytes(sr_dtype dtype, int ndim, const int64_t *shape, uint64_t *out) {
    uint64_t n = dtypes[dtype].size;
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0) return -1;
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0) return *out = 0, 0;
    for (int i = 0; i < ndim; i++) {
        if ((uint64_t)shape[i] > (uint64_t)INT64_MAX / n) return -1;
        n *= (uint64_t)shape[i];
    }
    *out = n;
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* The first name given twice among names[0 .. n) (sorted in place), or NULL. */
static const char *find_dup(const char **names, size_t n) {
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(names[i - 1], names[i])) return names[i];
    return NULL;
}

/* ---- writer ---------------------------------------------------------------------------------- */

struct sr__st_writer {
    char *path;
    int fd;
    uint64_t data_start; /* 8 + header length */
    size_t n;
    sr__st_tensor *t;          /* copies, names owned */
    _Atomic uint64_t *written; /* bytes written per tensor: atomic so threads may write pieces */
    size_t nmeta;
    char **mkey;           /* metadata keys (owned) */
    uint64_t *mpos, *mlen; /* where each value's JSON string sits in the file, and its length */
};

static void writer_free(sr__st_writer *w) {
    for (size_t i = 0; i < w->n; i++) free((char *)w->t[i].name);
    free(w->t);
    free(w->written);
    for (size_t i = 0; i < w->nmeta; i++) free(w->mkey[i]);
    free(w->mkey), free(w->mpos), free(w->mlen);
    free(w->path);
    free(w);
}

/* pwrite all of it: a regular file may take less than asked (a signal, a quota), EINTR is no
   failure, and Linux moves at most ~2 GiB per call. */
static int pwrite_full(int fd, const void *data, size_t len, uint64_t pos) {
    const char *p = data;
    while (len) {
        size_t chunk = len > ((size_t)1 << 30) ? (size_t)1 << 30 : len;
        ssize_t k = pwrite(fd, p, chunk, (off_t)pos);
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (k == 0) {
            errno = EIO;
            return -1;
        }
        p += k;
        len -= (size_t)k;
        pos += (uint64_t)k;
    }
    return 0;
}

/* Why `name` cannot be a tensor name or metadata string, or NULL. */
static const char *bad_string(const char *s) {
    if (!s) return "is NULL";
    if (!sr__json_utf8_valid(s, strlen(s))) return "is not valid UTF-8";
    return NULL;
}

static int check_tensors(const char *path, const sr__st_tensor *t, size_t n, uint64_t *total, char *err,
                         size_t errlen) {
    qbuf q;
    char sb[256];
    *total = 0;
    for (size_t i = 0; i < n; i++) {
        const char *why = bad_string(t[i].name);
        if (why || !*t[i].name || !strcmp(t[i].name, "__metadata__")) {
            sr__fail(err, errlen, "%s: tensor %zu: name %s", path, i,
                     why          ? why
                     : *t[i].name ? "\"__metadata__\" is reserved"
                                  : "is empty");
            return -1;
        }
        const char *nm = quote(&q, t[i].name);
        if ((unsigned)t[i].dtype >= NDTYPES) {
            sr__fail(err, errlen, "%s: tensor %s: dtype %d is not one safetensors files hold here", path, nm,
                     (int)t[i].dtype);
            return -1;
        }
        if (t[i].ndim < 0 || t[i].ndim > SR__ST_MAX_DIMS) {
            sr__fail(err, errlen, "%s: tensor %s: %d dimensions (0 to %d allowed)", path, nm, t[i].ndim,
                     SR__ST_MAX_DIMS);
            return -1;
        }
        uint64_t nb;
        if (tensor_bytes(t[i].dtype, t[i].ndim, t[i].shape, &nb) || nb > (uint64_t)INT64_MAX - *total) {
            sr__fail(err, errlen, "%s: tensor %s: shape %s is invalid or too large", path, nm,
                     sr__st_shape_str(sb, sizeof sb, t[i].ndim, t[i].shape));
            return -1;
        }
        *total += nb;
    }
    if (n) {
        const char **names = sr__malloc(n * sizeof *names);
        if (!names) return sr__fail(err, errlen, "%s: out of memory", path), -1;
        for (size_t i = 0; i < n; i++) names[i] = t[i].name;
        const char *dup = find_dup(names, n);
        if (dup) sr__fail(err, errlen, "%s: tensor %s is given twice", path, quote(&q, dup));
        free(names);
        if (dup) return -1;
    }
    return 0;
}

static int check_meta(const char *path, const sr__st_kv *meta, size_t n, char *err, size_t errlen) {
    qbuf q;
    for (size_t i = 0; i < n; i++) {
        const char *why = bad_string(meta[i].key);
        if (why) return sr__fail(err, errlen, "%s: metadata key %zu %s", path, i, why), -1;
        if ((why = bad_string(meta[i].value)))
            return sr__fail(err, errlen, "%s: metadata %s: value %s", path, quote(&q, meta[i].key), why), -1;
    }
    if (n) {
        const char **keys = sr__malloc(n * sizeof *keys);
        if (!keys) return sr__fail(err, errlen, "%s: out of memory", path), -1;
        for (size_t i = 0; i < n; i++) keys[i] = meta[i].key;
        const char *dup = find_dup(keys, n);
        if (dup) sr__fail(err, errlen, "%s: metadata key %s is given twice", path, quote(&q, dup));
        free(keys);
        if (dup) return -1;
    }
    return 0;
}

sr__st_writer *sr__st_create(const char *path, const sr__st_tensor *tensors, size_t ntensors, const sr__st_kv *meta,
                             size_t nmeta, char *err, size_t errlen) {
    uint64_t total;
    if (!path) return sr__fail(err, errlen, "sr__st_create: no path"), NULL;
    if ((ntensors && !tensors) || (nmeta && !meta))
        return sr__fail(err, errlen, "%s: sr__st_create: NULL tensor or metadata array", path), NULL;
    if (check_tensors(path, tensors, ntensors, &total, err, errlen) || check_meta(path, meta, nmeta, err, errlen))
        return NULL;

    sr__buf h = {0};
    uint64_t *mpos = sr__calloc(nmeta ? nmeta : 1, sizeof *mpos), *mlen = sr__calloc(nmeta ? nmeta : 1, sizeof *mlen);
    if (!mpos || !mlen) {
        free(mpos), free(mlen);
        return sr__fail(err, errlen, "%s: out of memory", path), NULL;
    }
    sr__buf_add(&h, "{", 1);
    if (nmeta) {
        sr__buf_add(&h, "\"__metadata__\":{", 16);
        for (size_t i = 0; i < nmeta; i++) {
            if (i) sr__buf_add(&h, ",", 1);
            sr__buf_json_str(&h, meta[i].key);
            sr__buf_add(&h, ":", 1);
            mpos[i] = 8 + (uint64_t)h.n; /* the value's bytes in the file, for sr__st_set_metadata */
            sr__buf_json_str(&h, meta[i].value);
            mlen[i] = 8 + (uint64_t)h.n - mpos[i];
        }
        sr__buf_add(&h, "}", 1);
    }
    uint64_t off = 0;
    for (size_t i = 0; i < ntensors; i++) {
        const sr__st_tensor *t = &tensors[i];
        uint64_t nb = 0;
        if (tensor_bytes(t->dtype, t->ndim, t->shape, &nb) != 0) { /* check_tensors accepted it: cannot happen */
            sr__buf_free(&h);
            return sr__fail(err, errlen, "%s: tensor %zu: size overflows", path, i), NULL;
        }
        if (i || nmeta) sr__buf_add(&h, ",", 1);
        sr__buf_json_str(&h, t->name);
        sr__buf_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", dtypes[t->dtype].name);
        for (int d = 0; d < t->ndim; d++) sr__buf_printf(&h, "%s%" PRId64, d ? "," : "", t->shape[d]);
        sr__buf_printf(&h, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", off, off + nb);
        off += nb;
    }
    sr__buf_add(&h, "}", 1);
    /* Spaces up to a multiple of 8 keep the data 8-byte aligned in the file (and in a mapping). */
    while (h.n % 8 && !h.oom) sr__buf_add(&h, " ", 1); /* a buffer out of memory grows no more */
    if (h.oom) {
        sr__fail(err, errlen, "%s: out of memory for the header of %zu tensors", path, ntensors);
        sr__buf_free(&h);
        free(mpos), free(mlen);
        return NULL;
    }
    if (h.n > ST_MAX_HEADER || (uint64_t)h.n + 8 > (uint64_t)INT64_MAX - total) {
        sr__fail(err, errlen, "%s: the header would be %zu bytes, over the %u-byte limit of safetensors readers", path,
                 h.n, ST_MAX_HEADER);
        sr__buf_free(&h);
        free(mpos), free(mlen);
        return NULL;
    }

    sr__st_writer *w = sr__calloc(1, sizeof *w);
    if (w) {
        w->fd = -1;
        w->path = sr__strdup(path);
        w->t = sr__calloc(ntensors ? ntensors : 1, sizeof *w->t);
        w->written = sr__calloc(ntensors ? ntensors : 1, sizeof *w->written);
        w->mkey = sr__calloc(nmeta ? nmeta : 1, sizeof *w->mkey);
        w->mpos = mpos, w->mlen = mlen;
        mpos = mlen = NULL;
    }
    if (!w || !w->path || !w->t || !w->written || !w->mkey) {
        sr__fail(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    for (; w->nmeta < nmeta; w->nmeta++)
        if (!(w->mkey[w->nmeta] = sr__strdup(meta[w->nmeta].key))) {
            sr__fail(err, errlen, "%s: out of memory", path);
            goto fail;
        }
    w->data_start = 8 + (uint64_t)h.n;
    off = 0;
    for (size_t i = 0; i < ntensors; i++, w->n++) {
        w->t[i] = tensors[i];
        if (!(w->t[i].name = sr__strdup(tensors[i].name))) {
            sr__fail(err, errlen, "%s: out of memory", path);
            goto fail;
        }
        tensor_bytes(w->t[i].dtype, w->t[i].ndim, w->t[i].shape, &w->t[i].nbytes);
        w->t[i].offset = off;
        off += w->t[i].nbytes;
        atomic_init(&w->written[i], 0);
    }

    w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (w->fd < 0) {
        sr__fail(err, errlen, "%s: cannot create: %s", path, strerror(errno));
        goto fail;
    }
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)((uint64_t)h.n >> (8 * i));
    if (pwrite_full(w->fd, len, 8, 0) || pwrite_full(w->fd, h.s, h.n, 8)) {
        sr__fail(err, errlen, "%s: writing the header: %s", path, strerror(errno));
        sr__buf_free(&h);
        sr__st_abort(w);
        return NULL;
    }
    sr__buf_free(&h);
    return w;
fail:
    sr__buf_free(&h);
    free(mpos), free(mlen);
    if (w) {
        if (w->fd >= 0) close(w->fd);
        writer_free(w);
    }
    return NULL;
}

int sr__st_write(sr__st_writer *w, size_t index, uint64_t offset, const void *data, size_t bytes, char *err,
                 size_t errlen) {
    qbuf q;
    if (!w) return sr__fail(err, errlen, "sr__st_write: no writer"), -1;
    if (index >= w->n) {
        sr__fail(err, errlen, "%s: no tensor %zu to write (the file has %zu)", w->path, index, w->n);
        return -1;
    }
    const sr__st_tensor *t = &w->t[index];
    if (offset > t->nbytes || (uint64_t)bytes > t->nbytes - offset) {
        sr__fail(err, errlen, "%s: tensor %s: writing %zu bytes at byte %" PRIu64 " runs past its %" PRIu64 " bytes",
                 w->path, quote(&q, t->name), bytes, offset, t->nbytes);
        return -1;
    }
    if (!bytes) return 0;
    if (!data) return sr__fail(err, errlen, "%s: tensor %s: NULL data", w->path, quote(&q, t->name)), -1;
    if (pwrite_full(w->fd, data, bytes, w->data_start + t->offset + offset)) {
        sr__fail(err, errlen, "%s: writing tensor %s: %s", w->path, quote(&q, t->name), strerror(errno));
        return -1;
    }
    atomic_fetch_add(&w->written[index], (uint64_t)bytes);
    return 0;
}

int sr__st_set_metadata(sr__st_writer *w, const char *key, const char *value, char *err, size_t errlen) {
    qbuf q;
    if (!w || !key) return sr__fail(err, errlen, "sr__st_set_metadata: no writer or key"), -1;
    size_t i = 0;
    while (i < w->nmeta && strcmp(w->mkey[i], key)) i++;
    if (i == w->nmeta) return sr__fail(err, errlen, "%s: no metadata key %s to set", w->path, quote(&q, key)), -1;
    const char *why = bad_string(value);
    if (why) return sr__fail(err, errlen, "%s: metadata %s: value %s", w->path, quote(&q, key), why), -1;
    sr__buf v = {0};
    sr__buf_json_str(&v, value);
    int rc = 0;
    if ((uint64_t)v.n != w->mlen[i]) {
        sr__fail(err, errlen, "%s: metadata %s: the new value takes %zu bytes in the header, the placeholder %" PRIu64,
                 w->path, quote(&q, key), v.n, w->mlen[i]);
        rc = -1;
    } else if (pwrite_full(w->fd, v.s, v.n, w->mpos[i])) {
        sr__fail(err, errlen, "%s: writing metadata %s: %s", w->path, quote(&q, key), strerror(errno));
        rc = -1;
    }
    sr__buf_free(&v);
    return rc;
}

int sr__st_finish(sr__st_writer *w, char *err, size_t errlen) {
    qbuf q;
    if (!w) return sr__fail(err, errlen, "sr__st_finish: no writer"), -1;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < w->n; i++)
        if (atomic_load(&w->written[i]) != w->t[i].nbytes && !bad++) first = i;
    if (bad) {
        uint64_t got = atomic_load(&w->written[first]), want = w->t[first].nbytes;
        char more[64] = "";
        if (bad > 1) snprintf(more, sizeof more, " (and %zu more tensors not fully written)", bad - 1);
        if (got < want)
            sr__fail(err, errlen, "%s: tensor %s: only %" PRIu64 " of its %" PRIu64 " bytes were written%s", w->path,
                     quote(&q, w->t[first].name), got, want, more);
        else
            sr__fail(err, errlen, "%s: tensor %s: %" PRIu64 " bytes written for its %" PRIu64 " (overlapping writes)%s",
                     w->path, quote(&q, w->t[first].name), got, want, more);
        sr__st_abort(w);
        return -1;
    }
    int rc = fsync(w->fd);
    while (rc < 0 && errno == EINTR) rc = fsync(w->fd);
    if (rc < 0) {
        sr__fail(err, errlen, "%s: fsync: %s", w->path, strerror(errno));
        sr__st_abort(w);
        return -1;
    }
    int fd = w->fd;
    w->fd = -1;
    /* After a successful fsync a failing close reports nothing new about the data, except on NFS
       and the like, where it may be the first sign of a write error: treat it as one. EINTR still
       leaves the descriptor closed on Linux, and the data was synced. */
    if (close(fd) < 0 && errno != EINTR) {
        sr__fail(err, errlen, "%s: close: %s", w->path, strerror(errno));
        sr__st_abort(w);
        return -1;
    }
    writer_free(w);
    return 0;
}

void sr__st_abort(sr__st_writer *w) {
    if (!w) return;
    if (w->fd >= 0) close(w->fd);
    unlink(w->path);
    writer_free(w);
}

/* ---- reader ---------------------------------------------------------------------------------- */

struct sr__st_file {
    char *path;
    unsigned char *map;
    size_t maplen;
    const unsigned char *data; /* the data section */
    uint64_t datalen;
    sr__st_tensor *t; /* in the header's order */
    size_t n, cap;
    sr__st_kv *meta;
    size_t nmeta, metacap;
    int have_meta;
    char *arena;   /* decoded strings: names, dtypes, metadata */
    size_t *slots; /* open-addressing hash of names: index + 1, 0 = empty */
    size_t nslots;
};

/* The header's walk: json.h reads the syntax, this the safetensors layout.  A syntax error is
   the reader's (reported by sr__st_open with its offset); a layout error is set here in err. */
typedef struct {
    sr__json j;
    const char *path;
    char *err;
    size_t errlen;
} hp;

/* Sets "PATH: message" and returns -1. */
static int hp_fail(hp *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int hp_fail(hp *p, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sr__fail(p->err, p->errlen, "%s: %s", p->path, msg);
    return -1;
}

/* [n, n, ...] of non-negative integers up to `max` each: the first `cap` land in out[], *count
   says how many there were.  0, 1 when it is not such an array (nothing reported), -1. */
static int uint_array(sr__json *j, uint64_t max, uint64_t *out, int cap, int *count) {
    int more;
    *count = 0;
    if (sr__json_peek(j) != SR__JSON_ARRAY) return 1;
    if (sr__json_array(j)) return -1;
    while ((more = sr__json_element(j)) > 0) {
        sr__json_num v;
        if (sr__json_peek(j) != SR__JSON_NUMBER) return 1;
        if (sr__json_number(j, &v)) return -1;
        if (!v.is_uint || v.uint > max) return 1;
        if (*count < cap) out[*count] = v.uint;
        if (*count < INT32_MAX) ++*count;
    }
    return more;
}

static int add_tensor(sr__st_file *f, const sr__st_tensor *t) {
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 64;
        sr__st_tensor *nt = sr__realloc(f->t, cap * sizeof *nt);
        if (!nt) return -1;
        f->t = nt;
        f->cap = cap;
    }
    f->t[f->n++] = *t;
    return 0;
}

static int parse_tensor(hp *p, sr__st_file *f, const char *name, size_t nlen) {
    qbuf q, qd;
    char sb[256];
    const char *nm = quote(&q, name), *dtype = NULL;
    int have_shape = 0, have_offs = 0, ndim = 0, noffs = 0, more, r;
    uint64_t dims[SR__ST_MAX_DIMS], offs[2] = {0, 0};
    sr__json *j = &p->j;
    if (strlen(name) != nlen) return hp_fail(p, "tensor %s...: names must not contain \\u0000", nm);
    if (sr__json_peek(j) != SR__JSON_OBJECT)
        return hp_fail(p, "tensor %s: expected an object with dtype, shape and data_offsets", nm);
    if (sr__json_object(j)) return -1;
    const char *key;
    size_t klen, dlen;
    while ((more = sr__json_member(j, &key, &klen)) > 0) {
        if (sr__json_key_is(key, klen, "dtype")) {
            if (dtype) return hp_fail(p, "tensor %s: dtype given twice", nm);
            if (sr__json_peek(j) != SR__JSON_STRING) return hp_fail(p, "tensor %s: dtype is not a string", nm);
            if (sr__json_string(j, &dtype, &dlen)) return -1;
        } else if (sr__json_key_is(key, klen, "shape")) {
            if (have_shape++) return hp_fail(p, "tensor %s: shape given twice", nm);
            if ((r = uint_array(j, INT64_MAX, dims, SR__ST_MAX_DIMS, &ndim)) > 0)
                return hp_fail(p, "tensor %s: shape is not an array of non-negative integers", nm);
            if (r) return -1;
        } else if (sr__json_key_is(key, klen, "data_offsets")) {
            if (have_offs++) return hp_fail(p, "tensor %s: data_offsets given twice", nm);
            if ((r = uint_array(j, UINT64_MAX, offs, 2, &noffs)) > 0 || (!r && noffs != 2))
                return hp_fail(p, "tensor %s: data_offsets is not [begin, end] with non-negative integers", nm);
            if (r) return -1;
        } else if (sr__json_skip(j)) { /* other fields: HuggingFace's reader ignores them too */
            return -1;
        }
    }
    if (more < 0) return -1;
    const char *missing = !dtype ? "dtype" : !have_shape ? "shape" : !have_offs ? "data_offsets" : NULL;
    if (missing) return hp_fail(p, "tensor %s: no %s", nm, missing);

    sr__st_tensor t = {.name = name, .ndim = ndim};
    size_t d = 0;
    while (d < NDTYPES && strcmp(dtype, dtypes[d].name)) d++;
    if (d == NDTYPES)
        return hp_fail(p, "tensor %s: dtype %s is not supported by shardrun (it reads F32, F16, BF16, I32 and I64)", nm,
                       quote(&qd, dtype));
    t.dtype = (sr_dtype)d;
    if (ndim > SR__ST_MAX_DIMS)
        return hp_fail(p, "tensor %s: %d dimensions, shardrun supports at most %d", nm, ndim, SR__ST_MAX_DIMS);
    for (int i = 0; i < ndim; i++) t.shape[i] = (int64_t)dims[i];
    sr__st_shape_str(sb, sizeof sb, ndim, t.shape);
    if (offs[1] < offs[0])
        return hp_fail(p, "tensor %s: data_offsets [%" PRIu64 ", %" PRIu64 "] end before they begin", nm, offs[0],
                       offs[1]);
    if (tensor_bytes(t.dtype, ndim, t.shape, &t.nbytes)) return hp_fail(p, "tensor %s: shape %s is too large", nm, sb);
    if (offs[1] - offs[0] != t.nbytes)
        return hp_fail(p,
                       "tensor %s: data_offsets [%" PRIu64 ", %" PRIu64 "] hold %" PRIu64 " bytes but shape %s of %s "
                       "needs %" PRIu64,
                       nm, offs[0], offs[1], offs[1] - offs[0], sb, dtypes[d].name, t.nbytes);
    if (offs[1] > f->datalen)
        return hp_fail(p,
                       "tensor %s: data_offsets [%" PRIu64 ", %" PRIu64 "] run past the end of the data section "
                       "(%" PRIu64 " bytes; is the file truncated?)",
                       nm, offs[0], offs[1], f->datalen);
    t.offset = offs[0];
    if (add_tensor(f, &t)) return hp_fail(p, "out of memory");
    return 0;
}

static int parse_meta(hp *p, sr__st_file *f) {
    qbuf q;
    int more;
    sr__json *j = &p->j;
    if (f->have_meta++) return hp_fail(p, "__metadata__ given twice");
    if (sr__json_peek(j) == SR__JSON_NULL) return sr__json_null(j); /* null: serde reads it as no metadata */
    if (sr__json_peek(j) != SR__JSON_OBJECT) return hp_fail(p, "__metadata__ is not an object of strings");
    if (sr__json_object(j)) return -1;
    sr__st_kv kv;
    size_t klen, vlen;
    while ((more = sr__json_member(j, &kv.key, &klen)) > 0) {
        const char *k = quote(&q, kv.key);
        if (strlen(kv.key) != klen) return hp_fail(p, "__metadata__ %s...: keys must not contain \\u0000", k);
        if (sr__json_peek(j) != SR__JSON_STRING) return hp_fail(p, "__metadata__ %s: the value is not a string", k);
        if (sr__json_string(j, &kv.value, &vlen)) return -1;
        if (strlen(kv.value) != vlen) return hp_fail(p, "__metadata__ %s: the value contains \\u0000", k);
        if (f->nmeta == f->metacap) {
            size_t cap = f->metacap ? 2 * f->metacap : 8;
            sr__st_kv *nm = sr__realloc(f->meta, cap * sizeof *nm);
            if (!nm) return hp_fail(p, "out of memory");
            f->meta = nm;
            f->metacap = cap;
        }
        f->meta[f->nmeta++] = kv;
    }
    return more;
}

/* 0, or -1 with err set: the reader's syntax error with its offset, or a layout error. */
static int parse_header(hp *p, sr__st_file *f) {
    sr__json *j = &p->j;
    const char *key;
    size_t klen, at;
    int more, rc = -1;
    if (sr__json_peek(j) != SR__JSON_OBJECT) sr__json_fail(j, "expected '{' (the header is a JSON object)");
    else if (sr__json_object(j) == 0) {
        while ((more = sr__json_member(j, &key, &klen)) > 0)
            if (sr__json_key_is(key, klen, "__metadata__") ? parse_meta(p, f) : parse_tensor(p, f, key, klen)) break;
        if (more == 0) rc = sr__json_end(j);
    }
    const char *what = sr__json_error(j, &at);
    if (what)
        sr__fail(p->err, p->errlen, "%s: the header is not valid JSON: %s at byte %zu of the header", p->path, what,
                 at);
    return rc;
}

static int cmp_offset(const void *a, const void *b) {
    const sr__st_tensor *x = *(const sr__st_tensor *const *)a, *y = *(const sr__st_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static uint64_t hash_name(const char *s) { return sr__fnv1a64_str(SR__FNV1A64_BASIS, s); }

/* Names unique, no two tensors sharing a byte (empty ones share none), the name index. */
static int check_file(sr__st_file *f, char *err, size_t errlen) {
    qbuf q1, q2;
    size_t m = f->n > f->nmeta ? f->n : f->nmeta;
    void *tmp = sr__malloc((m ? m : 1) * sizeof(void *));
    if (!tmp) return sr__fail(err, errlen, "%s: out of memory", f->path), -1;
    const char **names = tmp, *dup;
    for (size_t i = 0; i < f->nmeta; i++) names[i] = f->meta[i].key;
    if ((dup = find_dup(names, f->nmeta))) {
        sr__fail(err, errlen, "%s: __metadata__ key %s appears twice", f->path, quote(&q1, dup));
        return free(tmp), -1;
    }
    for (size_t i = 0; i < f->n; i++) names[i] = f->t[i].name;
    if ((dup = find_dup(names, f->n))) {
        sr__fail(err, errlen, "%s: tensor %s appears twice in the header", f->path, quote(&q1, dup));
        return free(tmp), -1;
    }
    const sr__st_tensor **byoff = tmp;
    size_t k = 0;
    for (size_t i = 0; i < f->n; i++)
        if (f->t[i].nbytes) byoff[k++] = &f->t[i];
    qsort(byoff, k, sizeof *byoff, cmp_offset);
    for (size_t i = 1; i < k; i++) {
        const sr__st_tensor *a = byoff[i - 1], *b = byoff[i];
        if (b->offset < a->offset + a->nbytes) {
            sr__fail(err, errlen, "%s: tensors %s [%" PRIu64 ", %" PRIu64 "] and %s [%" PRIu64 ", %" PRIu64 "] overlap",
                     f->path, quote(&q1, a->name), a->offset, a->offset + a->nbytes, quote(&q2, b->name), b->offset,
                     b->offset + b->nbytes);
            return free(tmp), -1;
        }
    }
    free(tmp);

    for (f->nslots = 8; f->nslots < 2 * f->n; f->nslots *= 2) {}
    if (!(f->slots = sr__calloc(f->nslots, sizeof *f->slots)))
        return sr__fail(err, errlen, "%s: out of memory", f->path), -1;
    for (size_t i = 0; i < f->n; i++) {
        size_t s = (size_t)hash_name(f->t[i].name) & (f->nslots - 1);
        while (f->slots[s]) s = (s + 1) & (f->nslots - 1);
        f->slots[s] = i + 1;
    }
    return 0;
}

sr__st_file *sr__st_open(const char *path, char *err, size_t errlen) {
    struct stat st;
    if (!path) return sr__fail(err, errlen, "sr__st_open: no path"), NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return sr__fail(err, errlen, "%s: %s", path, strerror(errno)), NULL;
    int bad_stat = fstat(fd, &st) < 0;
    if (bad_stat || !S_ISREG(st.st_mode)) {
        sr__fail(err, errlen, "%s: %s", path, bad_stat ? strerror(errno) : "not a regular file");
        close(fd);
        return NULL;
    }
    uint64_t size = (uint64_t)st.st_size;
    if (size < 8) {
        sr__fail(err, errlen, "%s: the file is %" PRIu64 " bytes, too short for a safetensors file", path, size);
        close(fd);
        return NULL;
    }
    if (size > SIZE_MAX) {
        sr__fail(err, errlen, "%s: the file is too large to map", path);
        close(fd);
        return NULL;
    }
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd); /* the mapping stays valid */
    if (map == MAP_FAILED) return sr__fail(err, errlen, "%s: mmap: %s", path, strerror(map_errno)), NULL;

    const unsigned char *b = map;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | b[i];
    const char *bad = NULL;
    char why[160];
    if (hlen > ST_MAX_HEADER) {
        snprintf(why, sizeof why, "header length %" PRIu64 " is over the %u-byte limit (not a safetensors file?)", hlen,
                 ST_MAX_HEADER);
        bad = why;
    } else if (hlen > size - 8) {
        snprintf(why, sizeof why, "header length %" PRIu64 " runs past the end of the file (%" PRIu64 " bytes)", hlen,
                 size);
        bad = why;
    }
    if (bad) {
        sr__fail(err, errlen, "%s: %s", path, bad);
        munmap(map, (size_t)size);
        return NULL;
    }

    sr__st_file *f = sr__calloc(1, sizeof *f);
    if (f) {
        f->map = map;
        f->maplen = (size_t)size;
        f->path = sr__strdup(path);
        f->arena = sr__malloc((size_t)hlen + 1);
    }
    if (!f || !f->path || !f->arena) {
        sr__fail(err, errlen, "%s: out of memory", path);
        if (f) sr__st_close(f);
        else munmap(map, (size_t)size);
        return NULL;
    }
    f->data = b + 8 + hlen;
    f->datalen = size - 8 - hlen;
    hp p = {.path = path, .err = err, .errlen = errlen};
    sr__json_init(&p.j, b + 8, (size_t)hlen, f->arena);
    int bad_header = parse_header(&p, f) != 0;
    sr__json_free(&p.j); /* the strings stay: they live in f->arena */
    if (bad_header || check_file(f, err, errlen)) {
        sr__st_close(f);
        return NULL;
    }
    uint64_t end = 0; /* where the last tensor's data_offsets end (empty tensors included) */
    for (size_t i = 0; i < f->n; i++)
        if (f->t[i].offset + f->t[i].nbytes > end) end = f->t[i].offset + f->t[i].nbytes;
    if (f->datalen > end) { /* HF's writer never leaves any, and its reader refuses them too */
        sr__fail(err, errlen,
                 "%s: %" PRIu64 " bytes follow the last tensor's data (the data section is %" PRIu64 " bytes, the "
                 "tensors end at %" PRIu64 "): a safetensors file ends with its last tensor; bytes were appended "
                 "or the header is damaged",
                 path, f->datalen - end, f->datalen, end);
        sr__st_close(f);
        return NULL;
    }
    return f;
}

size_t sr__st_count(const sr__st_file *f) { return f ? f->n : 0; }

const sr__st_tensor *sr__st_at(const sr__st_file *f, size_t i) { return f && i < f->n ? &f->t[i] : NULL; }

const sr__st_tensor *sr__st_find(const sr__st_file *f, const char *name, const void **data) {
    if (data) *data = NULL;
    if (!f || !name) return NULL;
    for (size_t s = (size_t)hash_name(name) & (f->nslots - 1); f->slots[s]; s = (s + 1) & (f->nslots - 1)) {
        const sr__st_tensor *t = &f->t[f->slots[s] - 1];
        if (!strcmp(t->name, name)) {
            if (data) *data = f->data + t->offset;
            return t;
        }
    }
    return NULL;
}

const char *sr__st_metadata(const sr__st_file *f, const char *key) {
    if (!f || !key) return NULL;
    for (size_t i = 0; i < f->nmeta; i++)
        if (!strcmp(f->meta[i].key, key)) return f->meta[i].value;
    return NULL;
}

size_t sr__st_metadata_count(const sr__st_file *f) { return f ? f->nmeta : 0; }

const sr__st_kv *sr__st_metadata_at(const sr__st_file *f, size_t i) { return f && i < f->nmeta ? &f->meta[i] : NULL; }

void sr__st_close(sr__st_file *f) {
    if (!f) return;
    if (f->map) munmap(f->map, f->maplen);
    free(f->t);
    free(f->meta);
    free(f->arena);
    free(f->slots);
    free(f->path);
    free(f);
}

int sr__st_to_f32(const sr__st_tensor *t, const void *data, size_t first, size_t n, float *dst) {
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++) { /* memcpy: a foreign file's data need not be aligned */
        size_t j = first + i;
        uint16_t h;
        switch (t->dtype) {
        case SR_FLOAT32: memcpy(&dst[i], b + 4 * j, 4); break;
        case SR_BFLOAT16: memcpy(&h, b + 2 * j, 2), dst[i] = sr_bf16_to_f32(h); break;
        case SR_FLOAT16: memcpy(&h, b + 2 * j, 2), dst[i] = sr_f16_to_f32(h); break;
        default: return -1;
        }
    }
    return 0;
}
