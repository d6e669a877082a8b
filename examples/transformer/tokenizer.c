/*
 * gpt2 tokenizer (see tokenizer.h): the vocab.json and merges.txt readers, GPT-2's pre-tokenizer
 * written by hand, and the merge loop.
 *
 * Lifecycle: load builds three tables -- vocab string -> id, (left id, right id) -> merge rank and
 * result id, byte -> id -- and checks that every symbol a merge can produce has an id, so encoding
 * cannot fail but for memory; encode grows a cache (pre-token bytes -> ids) and scratch buffers
 * that live until free.
 */
#define _POSIX_C_SOURCE 200809L
#include "tokenizer.h"

#include "read_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unicode_classes.h"

#define BYTE_EOS 256
#define CACHE_MAX_KEY 64          /* longer pre-tokens are rare and not worth the memory */
#define CACHE_MAX_ENTRIES 1000000 /* bounds the cache when a long corpus is tokenized */

/* ---- hash tables ---------------------------------------------------------------------------- */

/* byte string -> (a, b); keys live in one growing buffer */
typedef struct {
    uint32_t off, len; /* key = keys[off, off+len); off == SLOT_FREE: unused slot */
    int32_t a, b;
} str_slot;
typedef struct {
    str_slot *slots;
    size_t cap, n; /* cap: 0 or a power of two, at least twice n */
    char *keys;
    size_t klen, kcap;
} strmap;
#define SLOT_FREE UINT32_MAX

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h ^ h >> 29;
}

static str_slot *strmap_find(const strmap *m, const char *k, size_t n) {
    if (!m->cap) return NULL;
    for (size_t i = hash_bytes(k, n) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        str_slot *s = &m->slots[i];
        if (s->off == SLOT_FREE) return NULL;
        if (s->len == n && !memcmp(m->keys + s->off, k, n)) return s;
    }
}

static int strmap_grow(strmap *m) {
    size_t cap = m->cap ? m->cap * 2 : 1024;
    str_slot *s = malloc(cap * sizeof *s);
    if (!s) return -1;
    for (size_t i = 0; i < cap; i++) s[i].off = SLOT_FREE;
    for (size_t j = 0; j < m->cap; j++) {
        if (m->slots[j].off == SLOT_FREE) continue;
        size_t i = hash_bytes(m->keys + m->slots[j].off, m->slots[j].len) & (cap - 1);
        while (s[i].off != SLOT_FREE) i = (i + 1) & (cap - 1);
        s[i] = m->slots[j];
    }
    free(m->slots);
    m->slots = s;
    m->cap = cap;
    return 0;
}

/* Adds key k, which must be absent: its slot, or NULL when out of memory. */
static str_slot *strmap_add(strmap *m, const char *k, size_t n) {
    if ((m->n + 1) * 2 > m->cap && strmap_grow(m)) return NULL;
    if (n >= SLOT_FREE - m->klen) return NULL; /* offsets are 32-bit */
    if (m->klen + n > m->kcap) {
        size_t cap = m->kcap * 2 > m->klen + n ? m->kcap * 2 : m->klen + n + 4096;
        char *keys = realloc(m->keys, cap);
        if (!keys) return NULL;
        m->keys = keys;
        m->kcap = cap;
    }
    if (n) memcpy(m->keys + m->klen, k, n);
    size_t i = hash_bytes(k, n) & (m->cap - 1);
    while (m->slots[i].off != SLOT_FREE) i = (i + 1) & (m->cap - 1);
    m->slots[i] = (str_slot){.off = (uint32_t)m->klen, .len = (uint32_t)n};
    m->klen += n;
    m->n++;
    return &m->slots[i];
}

static void strmap_free(strmap *m) {
    free(m->slots);
    free(m->keys);
}

/* (left id, right id) of a merge -> its rank and the id of the merged symbol */
typedef struct {
    uint64_t key; /* left << 32 | right; PAIR_FREE: unused slot */
    int32_t rank, id;
} pair_slot;
typedef struct {
    pair_slot *slots;
    size_t cap, n;
} pairmap;
#define PAIR_FREE UINT64_MAX /* ids are below 2^31, so no real key has all bits set */

static size_t pair_hash(uint64_t x) {
    x ^= x >> 33; /* murmur3's finalizer */
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

static const pair_slot *pairmap_find(const pairmap *m, int32_t a, int32_t b) {
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    if (!m->cap) return NULL;
    for (size_t i = pair_hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].key == key) return &m->slots[i];
        if (m->slots[i].key == PAIR_FREE) return NULL;
    }
}

/* Sets the pair's rank and result; a pair listed twice keeps its later rank, as the reference's
   dict does.  0, or -1 when out of memory. */
static int pairmap_put(pairmap *m, int32_t a, int32_t b, int32_t rank, int32_t id) {
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        pair_slot *s = malloc(cap * sizeof *s);
        if (!s) return -1;
        for (size_t i = 0; i < cap; i++) s[i].key = PAIR_FREE;
        for (size_t j = 0; j < m->cap; j++) {
            if (m->slots[j].key == PAIR_FREE) continue;
            size_t i = pair_hash(m->slots[j].key) & (cap - 1);
            while (s[i].key != PAIR_FREE) i = (i + 1) & (cap - 1);
            s[i] = m->slots[j];
        }
        free(m->slots);
        m->slots = s;
        m->cap = cap;
    }
    size_t i = pair_hash(key) & (m->cap - 1);
    while (m->slots[i].key != PAIR_FREE && m->slots[i].key != key) i = (i + 1) & (m->cap - 1);
    if (m->slots[i].key == PAIR_FREE) m->n++;
    m->slots[i] = (pair_slot){.key = key, .rank = rank, .id = id};
    return 0;
}

/* ---- the tokenizer ---------------------------------------------------------------------------- */

struct tf_tokenizer {
    int vocab_size, eos;
    int bpe; /* 0: byte-level fallback */
    int32_t byte_id[256];
    strmap vocab;   /* key as vocab.json spells it (UTF-8 of byte symbols) -> a = id, b = its byte offset */
    pairmap merges;
    strmap cache;   /* pre-token bytes -> a = offset in cache_ids, b = count */
    int32_t *cache_ids;
    size_t cache_n, cache_cap;
    /* scratch of the merge loop, for pre-tokens of up to scratch_cap bytes */
    int32_t *sym, *next, *prev;
    uint64_t *heap, *pending;
    size_t scratch_cap;
    const str_slot **by_id; /* decode: id -> its vocab entry, built on first use */
};

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* OpenAI's bytes_to_unicode: the printable bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for
   themselves; the 68 others, in increasing order, for U+0100, U+0101, ...  Writes the UTF-8 of
   byte b's symbol to out (2 bytes at most): its length. */
static size_t byte_symbol(int b, char *out) {
    unsigned cp = (unsigned)b;
    if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)) {
        cp = 256;
        for (int c = 0; c < b; c++) cp += !((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE);
    }
    if (cp < 0x80) return out[0] = (char)cp, 1;
    out[0] = (char)(0xC0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

/* ---- vocab.json: one JSON object of "symbol": id --------------------------------------------- */

typedef struct {
    const char *s, *path;
    size_t n, i;
    int line;
    char *err;
    size_t errlen;
    char *str; /* the last string read, decoded to UTF-8 */
    size_t slen, scap;
} json;

/* "<path>:<line>: expected <what>, found <what is at the cursor> (byte offset <i>)" */
static int json_fail(json *j, const char *expected) {
    char found[32];
    if (j->i >= j->n) snprintf(found, sizeof found, "the end of the file");
    else if (j->s[j->i] > 0x20 && j->s[j->i] < 0x7F) snprintf(found, sizeof found, "'%c'", j->s[j->i]);
    else snprintf(found, sizeof found, "byte 0x%02X", (unsigned char)j->s[j->i]);
    return fail(j->err, j->errlen, "%s:%d: expected %s, found %s (byte offset %zu)", j->path, j->line, expected,
                found, j->i);
}

static void json_space(json *j) {
    for (char c; j->i < j->n && ((c = j->s[j->i]) == ' ' || c == '\t' || c == '\r' || c == '\n'); j->i++)
        j->line += c == '\n';
}

static int json_put(json *j, const char *b, size_t k) {
    if (j->slen + k > j->scap) {
        size_t cap = j->scap * 2 + k + 64;
        char *s = realloc(j->str, cap);
        if (!s) return fail(j->err, j->errlen, "%s: out of memory", j->path);
        j->str = s;
        j->scap = cap;
    }
    memcpy(j->str + j->slen, b, k);
    j->slen += k;
    return 0;
}

/* 4 hex digits after "\u": the value, or -1 */
static long json_hex4(json *j) {
    long v = 0;
    for (int k = 0; k < 4; k++, j->i++) {
        char c = j->i < j->n ? j->s[j->i] : 0;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* A string at the cursor (which is at '"') into j->str. */
static int json_string(json *j) {
    j->slen = 0;
    j->i++;
    for (;;) {
        if (j->i >= j->n) return json_fail(j, "'\"' closing the string");
        unsigned char c = (unsigned char)j->s[j->i];
        if (c == '"') break;
        if (c < 0x20) return json_fail(j, "a string character (control characters must be escaped)");
        if (c != '\\') {
            if (json_put(j, (const char *)&c, 1)) return -1;
            j->i++;
            continue;
        }
        j->i++;
        char e = j->i < j->n ? j->s[j->i] : 0;
        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
        const char *p = e ? strchr(from, e) : NULL;
        if (p) {
            if (json_put(j, to + (p - from), 1)) return -1;
            j->i++;
            continue;
        }
        if (e != 'u') return json_fail(j, "an escape: one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX");
        j->i++;
        long cp = json_hex4(j);
        if (cp < 0) return json_fail(j, "4 hex digits after \\u");
        if (cp >= 0xDC00 && cp <= 0xDFFF) return json_fail(j, "a high surrogate (\\uD800-\\uDBFF) before a low one");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (j->i + 1 >= j->n || j->s[j->i] != '\\' || j->s[j->i + 1] != 'u')
                return json_fail(j, "a low surrogate \\uDC00-\\uDFFF after a high one");
            j->i += 2;
            long lo = json_hex4(j);
            if (lo < 0xDC00 || lo > 0xDFFF) return json_fail(j, "a low surrogate \\uDC00-\\uDFFF after a high one");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        char u[4];
        size_t k = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        static const unsigned char lead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
        u[0] = (char)(k == 1 ? cp : lead[k] | cp >> (6 * (k - 1)));
        for (size_t b = 1; b < k; b++) u[b] = (char)(0x80 | ((cp >> (6 * (k - 1 - b))) & 0x3F));
        if (json_put(j, u, k)) return -1;
    }
    j->i++;
    return 0;
}

/* A non-negative integer id at the cursor. */
static int json_id(json *j, int32_t *out) {
    size_t start = j->i;
    long long v = 0;
    if (j->i < j->n && j->s[j->i] == '-') return json_fail(j, "a non-negative integer id");
    while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9') {
        v = v * 10 + (j->s[j->i++] - '0');
        if (v > INT32_MAX) return j->i = start, json_fail(j, "an integer id below 2^31");
    }
    char next = j->i < j->n ? j->s[j->i] : 0;
    if (j->i == start || next == '.' || next == 'e' || next == 'E') {
        j->i = start;
        return json_fail(j, "an integer id");
    }
    *out = (int32_t)v;
    return 0;
}

static int line_at(const char *text, size_t off) {
    int line = 1;
    for (size_t i = 0; i < off; i++) line += text[i] == '\n';
    return line;
}

static int load_vocab(tf_tokenizer *t, const char *path, char *err, size_t errlen) {
    size_t n;
    char *text = tf_read_file(path, "vocab.json", &n, err, errlen);
    if (!text) return -1;
    json j = {.s = text, .path = path, .n = n, .line = 1, .err = err, .errlen = errlen};
    int rc = -1;
    if (n >= INT32_MAX) { /* entries keep 32-bit offsets */
        free(text);
        return fail(err, errlen, "%s: too large for a vocab.json (%zu bytes)", path, n);
    }
    int32_t *first = NULL; /* per id: 1 + the byte offset of its first entry, 0 if none */
    if (n >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) j.i = 3; /* a UTF-8 byte order mark */
    json_space(&j);
    if (j.i >= n || text[j.i] != '{') {
        json_fail(&j, "'{' (vocab.json is one JSON object of \"symbol\": id)");
        goto out;
    }
    j.i++;
    json_space(&j);
    if (j.i < n && text[j.i] == '}') j.i++;
    else
        for (;;) {
            json_space(&j);
            if (j.i >= n || text[j.i] != '"') {
                json_fail(&j, "a string key");
                goto out;
            }
            int line = j.line;
            size_t at = j.i;
            int32_t id = 0;
            if (json_string(&j)) goto out;
            json_space(&j);
            if (j.i >= n || text[j.i] != ':') {
                json_fail(&j, "':' after the key");
                goto out;
            }
            j.i++;
            json_space(&j);
            if (json_id(&j, &id)) goto out;
            if (strmap_find(&t->vocab, j.str, j.slen)) {
                fail(err, errlen, "%s:%d: the key \"%.*s\" appears twice", path, line, (int)(j.slen > 60 ? 60 : j.slen),
                     j.str);
                goto out;
            }
            str_slot *s = strmap_add(&t->vocab, j.str, j.slen);
            if (!s) {
                fail(err, errlen, "%s: out of memory", path);
                goto out;
            }
            s->a = id;
            s->b = (int32_t)at;
            json_space(&j);
            if (j.i < n && text[j.i] == ',') {
                j.i++;
                continue;
            }
            if (j.i < n && text[j.i] == '}') {
                j.i++;
                break;
            }
            json_fail(&j, "',' or '}' after an entry");
            goto out;
        }
    json_space(&j);
    if (j.i < n) {
        json_fail(&j, "the end of the file after the object");
        goto out;
    }
    /* ids must be 0..size-1, each once: the model's embedding has exactly size rows.  Entries are
       told apart by their key's byte offset (HF's vocab.json is a single line). */
    t->vocab_size = (int)t->vocab.n;
    first = calloc(t->vocab.n + 1, sizeof *first);
    if (!first) {
        fail(err, errlen, "%s: out of memory", path);
        goto out;
    }
    const str_slot *bad = NULL; /* the offending entry nearest the top of the file */
    for (size_t k = 0; k < t->vocab.cap; k++) {
        const str_slot *s = &t->vocab.slots[k];
        if (s->off == SLOT_FREE) continue;
        if (s->a >= t->vocab_size) {
            if (!bad || s->b < bad->b) bad = s;
        } else if (!first[s->a] || s->b + 1 < first[s->a]) {
            first[s->a] = s->b + 1;
        }
    }
    for (size_t k = 0; k < t->vocab.cap; k++) { /* a second entry with an id already used */
        const str_slot *s = &t->vocab.slots[k];
        if (s->off != SLOT_FREE && s->a < t->vocab_size && first[s->a] != s->b + 1 && (!bad || s->b < bad->b)) bad = s;
    }
    if (bad && bad->a >= t->vocab_size) {
        fail(err, errlen, "%s:%d: id %d is out of range: the file has %d entries, so ids must be 0..%d (byte offset %d)",
             path, line_at(text, (size_t)bad->b), bad->a, t->vocab_size, t->vocab_size - 1, bad->b);
        goto out;
    }
    if (bad) {
        fail(err, errlen, "%s:%d: id %d is also the id of the entry at line %d; ids must be distinct (byte offset %d)",
             path, line_at(text, (size_t)bad->b), bad->a, line_at(text, (size_t)first[bad->a] - 1), bad->b);
        goto out;
    }
    const str_slot *eos = strmap_find(&t->vocab, "<|endoftext|>", 13);
    if (!eos) {
        fail(err, errlen, "%s: no \"<|endoftext|>\" entry; GPT-2's end-of-text token is needed", path);
        goto out;
    }
    t->eos = eos->a;
    for (int b = 0; b < 256; b++) {
        char sym[2];
        size_t k = byte_symbol(b, sym);
        const str_slot *s = strmap_find(&t->vocab, sym, k);
        if (!s) {
            fail(err, errlen, "%s: no entry for byte 0x%02X (\"%.*s\"); a GPT-2 byte-level vocabulary has all 256 bytes",
                 path, b, (int)k, sym);
            goto out;
        }
        t->byte_id[b] = s->a;
    }
    rc = 0;
out:
    free(first);
    free(j.str);
    free(text);
    return rc;
}

/* ---- merges.txt: one merge per line, "left right", best first --------------------------------- */

static int load_merges(tf_tokenizer *t, const char *path, const char *vocab_path, char *err, size_t errlen) {
    size_t n;
    char *text = tf_read_file(path, "merges.txt", &n, err, errlen);
    if (!text) return -1;
    int rc = -1, rank = 0;
    char *both = NULL;
    size_t both_cap = 0;
    int line = 0;
    for (char *p = text, *end = text + n; p < end; line++) {
        char *eol = memchr(p, '\n', (size_t)(end - p));
        char *a = p, *e = eol ? eol : end;
        p = eol ? eol + 1 : end;
        if (e > a && e[-1] == '\r') e--;
        if (e == a || (line == 0 && e - a >= 8 && !memcmp(a, "#version", 8))) continue;
        char *sp = memchr(a, ' ', (size_t)(e - a));
        if (!sp || sp == a || sp + 1 == e || memchr(sp + 1, ' ', (size_t)(e - sp - 1))) {
            fail(err, errlen, "%s:%d: expected two symbols separated by one space (like \"\xC4\xA0 t\"), found \"%.*s\"",
                 path, line + 1, (int)(e - a > 60 ? 60 : e - a), a);
            goto out;
        }
        size_t la = (size_t)(sp - a), lb = (size_t)(e - sp - 1);
        const str_slot *sa = strmap_find(&t->vocab, a, la), *sb = strmap_find(&t->vocab, sp + 1, lb);
        if (!sa || !sb) {
            const char *miss = sa ? sp + 1 : a;
            fail(err, errlen, "%s:%d: \"%.*s\" is not in %s", path, line + 1, (int)(sa ? lb : la), miss, vocab_path);
            goto out;
        }
        if (la + lb > both_cap) {
            both_cap = 2 * (la + lb);
            free(both);
            if (!(both = malloc(both_cap))) {
                fail(err, errlen, "%s: out of memory", path);
                goto out;
            }
        }
        memcpy(both, a, la);
        memcpy(both + la, sp + 1, lb);
        const str_slot *sab = strmap_find(&t->vocab, both, la + lb);
        if (!sab) {
            fail(err, errlen, "%s:%d: the merged symbol \"%.*s\" is not in %s", path, line + 1, (int)(la + lb), both,
                 vocab_path);
            goto out;
        }
        if (pairmap_put(&t->merges, sa->a, sb->a, rank++, sab->a)) {
            fail(err, errlen, "%s: out of memory", path);
            goto out;
        }
    }
    rc = 0;
out:
    free(both);
    free(text);
    return rc;
}

tf_tokenizer *tf_tokenizer_load(const char *vocab_json, const char *merges_txt, char *err, size_t errlen) {
    if (!vocab_json != !merges_txt) {
        fail(err, errlen, "give both vocab.json and merges.txt (GPT-2 BPE), or neither (byte-level tokens)");
        return NULL;
    }
    tf_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return fail(err, errlen, "out of memory"), NULL;
    if (!vocab_json) {
        t->vocab_size = 257;
        t->eos = BYTE_EOS;
        for (int b = 0; b < 256; b++) t->byte_id[b] = b;
        return t;
    }
    t->bpe = 1;
    if (load_vocab(t, vocab_json, err, errlen) || load_merges(t, merges_txt, vocab_json, err, errlen)) {
        tf_tokenizer_free(t);
        return NULL;
    }
    return t;
}

int tf_tokenizer_vocab_size(const tf_tokenizer *t) { return t->vocab_size; }
int tf_tokenizer_eos(const tf_tokenizer *t) { return t->eos; }

/* ---- decoding (generation) -------------------------------------------------------------------- */

/* The byte a byte symbol's code point stands for (byte_symbol's inverse), or -1. */
static int symbol_byte(unsigned cp) {
    if (cp < 256) return (cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || cp >= 0xAE ? (int)cp : -1;
    unsigned k = cp - 256; /* the k-th byte (from 0) that has no printable symbol of its own */
    for (int b = 0; b < 256; b++)
        if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE) && k-- == 0) return b;
    return -1;
}

int tf_tokenizer_decode(tf_tokenizer *t, int32_t id, char *out, size_t cap) {
    if (id < 0 || id >= t->vocab_size) return -1;
    if (!t->bpe) {
        const char *eos = "<|endoftext|>";
        if (id == BYTE_EOS) {
            size_t n = strlen(eos);
            memcpy(out, eos, n < cap ? n : cap);
            return (int)n;
        }
        if (cap) out[0] = (char)id;
        return 1;
    }
    if (!t->by_id) {
        if (!(t->by_id = calloc((size_t)t->vocab_size, sizeof *t->by_id))) return -1;
        for (size_t k = 0; k < t->vocab.cap; k++)
            if (t->vocab.slots[k].off != SLOT_FREE) t->by_id[t->vocab.slots[k].a] = &t->vocab.slots[k];
    }
    const str_slot *s = t->by_id[id];
    const unsigned char *p = (const unsigned char *)t->vocab.keys + s->off, *end = p + s->len;
    size_t n = 0;
    while (p < end) {
        size_t len = 1;
        unsigned cp = *p;
        if (cp >= 0xC0 && cp < 0xE0 && p + 1 < end) cp = (cp & 0x1F) << 6 | (p[1] & 0x3F), len = 2;
        int b = len == 2 || cp < 0x80 ? symbol_byte(cp) : -1;
        if (b >= 0) {
            if (n < cap) out[n] = (char)b;
            n++;
        } else { /* not a byte symbol: its UTF-8 as it is */
            if (len == 1 && *p >= 0xC0) len = *p >= 0xF0 ? 4 : *p >= 0xE0 ? 3 : 2;
            if (len > (size_t)(end - p)) len = (size_t)(end - p);
            for (size_t i = 0; i < len; i++, n++)
                if (n < cap) out[n] = (char)p[i];
        }
        p += len;
    }
    return (int)n;
}

void tf_tokenizer_free(tf_tokenizer *t) {
    if (!t) return;
    free(t->by_id);
    strmap_free(&t->vocab);
    strmap_free(&t->cache);
    free(t->merges.slots);
    free(t->cache_ids);
    free(t->sym);
    free(t->next);
    free(t->prev);
    free(t->heap);
    free(t->pending);
    free(t);
}

/* ---- pre-tokenizer ------------------------------------------------------------------------------ */

enum { CL_LETTER, CL_NUMBER, CL_SPACE, CL_OTHER };

static int in_ranges(const uint32_t *r, size_t pairs, uint32_t cp) {
    size_t lo = 0, hi = pairs; /* the first range whose end is >= cp is in [lo, hi] */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r[2 * mid + 1] < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < pairs && r[2 * lo] <= cp;
}

static int classify(uint32_t cp) {
    if (cp < 0x80) {
        if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return CL_LETTER;
        if (cp >= '0' && cp <= '9') return CL_NUMBER;
        return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) ? CL_SPACE : CL_OTHER;
    }
    /* Unicode White_Space above ASCII: U+0085 U+00A0 U+1680 U+2000-200A U+2028 U+2029 U+202F U+205F U+3000 */
    if (cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
        cp == 0x202F || cp == 0x205F || cp == 0x3000)
        return CL_SPACE;
    if (in_ranges(tf_letter_ranges, sizeof tf_letter_ranges / sizeof *tf_letter_ranges / 2, cp)) return CL_LETTER;
    if (in_ranges(tf_number_ranges, sizeof tf_number_ranges / sizeof *tf_number_ranges / 2, cp)) return CL_NUMBER;
    return CL_OTHER;
}

/* The class of the character at s[i] (i < n) and its length in bytes.  UTF-8 is decoded strictly
   (no overlong forms, surrogates or code points past U+10FFFF), as Python does; each byte of a
   malformed sequence is one character of class CL_OTHER. */
static int char_at(const unsigned char *s, size_t n, size_t i, size_t *len) {
    unsigned c = s[i], lo = 0x80, hi = 0xBF;
    size_t need;
    uint32_t cp;
    *len = 1;
    if (c < 0x80) return classify(c);
    if (c >= 0xC2 && c <= 0xDF) need = 1, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) need = 2, cp = c & 0x0F, lo = c == 0xE0 ? 0xA0 : lo, hi = c == 0xED ? 0x9F : hi;
    else if (c >= 0xF0 && c <= 0xF4) need = 3, cp = c & 0x07, lo = c == 0xF0 ? 0x90 : lo, hi = c == 0xF4 ? 0x8F : hi;
    else return CL_OTHER;
    if (n - i - 1 < need) return CL_OTHER;
    for (size_t k = 1; k <= need; k++) {
        if (s[i + k] < lo || s[i + k] > hi) return CL_OTHER;
        cp = cp << 6 | (s[i + k] & 0x3F);
        lo = 0x80, hi = 0xBF;
    }
    *len = need + 1;
    return classify(cp);
}

/* The end of the pre-token starting at s[i] (i < n): GPT-2's pattern, tried alternative by
   alternative as the regex engine does. */
size_t tf_tokenizer_pretoken_end(const char *text, size_t n, size_t i) {
    const unsigned char *s = (const unsigned char *)text;
    if (s[i] == '\'' && i + 1 < n) { /* 's|'t|'re|'ve|'m|'ll|'d */
        unsigned char c = s[i + 1], d = i + 2 < n ? s[i + 2] : 0;
        if (c == 's' || c == 't' || c == 'm' || c == 'd') return i + 2;
        if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l')) return i + 3;
    }
    size_t len, j = i;
    int cl = char_at(s, n, i, &len);
    if (s[i] == ' ' && i + 1 < n) { /* " ?" before a letter, number or other character */
        size_t len1;
        int cl1 = char_at(s, n, i + 1, &len1);
        if (cl1 != CL_SPACE) cl = cl1, j = i + 1, len = len1;
    }
    if (cl != CL_SPACE) { /* \p{L}+ | \p{N}+ | [^\s\p{L}\p{N}]+ */
        for (j += len; j < n && char_at(s, n, j, &len) == cl;) j += len;
        return j;
    }
    /* \s+(?!\S): the whitespace run, less its last character when a non-space follows it;
       \s+ when that would leave nothing (a single whitespace character before a non-space) */
    size_t last = i;
    for (j = i + len; j < n && char_at(s, n, j, &len) == CL_SPACE; j += len) last = j;
    return j == n || last == i ? j : last;
}

/* ---- merges ------------------------------------------------------------------------------------- */

static int rank_of(const tf_tokenizer *t, int32_t a, int32_t b, int32_t *id) {
    const pair_slot *p = pairmap_find(&t->merges, a, b);
    if (!p) return -1;
    if (id) *id = p->id;
    return p->rank;
}

static void heap_push(uint64_t *h, size_t *n, uint64_t v) {
    size_t i = (*n)++;
    for (; i && h[(i - 1) / 2] > v; i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
    h[i] = v;
}

static uint64_t heap_pop(uint64_t *h, size_t *n) {
    uint64_t top = h[0], v = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (h[c] >= v) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
    return top;
}

static int scratch(tf_tokenizer *t, size_t n) {
    if (n <= t->scratch_cap) return 0;
    size_t cap = n > 2 * t->scratch_cap ? n : 2 * t->scratch_cap;
    int32_t *a = realloc(t->sym, cap * 4), *b = a ? realloc(t->next, cap * 4) : NULL, *c = b ? realloc(t->prev, cap * 4) : NULL;
    t->sym = a ? a : t->sym;
    t->next = b ? b : t->next;
    t->prev = c ? c : t->prev;
    uint64_t *h = c ? realloc(t->heap, cap * 3 * 8) : NULL, *p = h ? realloc(t->pending, cap * 2 * 8) : NULL;
    t->heap = h ? h : t->heap;
    t->pending = p ? p : t->pending;
    if (!p) return -1;
    t->scratch_cap = cap;
    return 0;
}

/* Merges the n bytes of one pre-token; the ids are left in t->sym[0..count): the count, or -1 when
   out of memory.
   This is OpenAI's loop -- take the lowest-ranked adjacent pair, merge all its occurrences left to
   right, repeat -- in O(n log n) instead of a rescan per merge: a min-heap holds (rank, position)
   of pairs as they form, and an entry whose pair has changed since is skipped when popped.  A
   round pops every entry of its rank in position order; the pairs its merges create wait in
   `pending` until the round ends, since one of lower rank must not run before the round is done. */
static long bpe_word(tf_tokenizer *t, const unsigned char *w, size_t n) {
    if (n > INT32_MAX || scratch(t, n)) return -1;
    int32_t *sym = t->sym, *next = t->next, *prev = t->prev, id;
    uint64_t *heap = t->heap, *pending = t->pending;
    size_t hn = 0;
    for (size_t i = 0; i < n; i++) {
        sym[i] = t->byte_id[w[i]];
        next[i] = i + 1 < n ? (int32_t)(i + 1) : -1;
        prev[i] = (int32_t)i - 1;
    }
    for (size_t i = 0; i + 1 < n; i++) {
        int r = rank_of(t, sym[i], sym[i + 1], NULL);
        if (r >= 0) heap_push(heap, &hn, (uint64_t)r << 32 | i);
    }
    while (hn) {
        uint64_t round = heap[0] >> 32;
        size_t np = 0;
        while (hn && heap[0] >> 32 == round) {
            int32_t p = (int32_t)(heap_pop(heap, &hn) & 0xFFFFFFFF), q = next[p];
            if (sym[p] < 0 || q < 0 || (uint64_t)rank_of(t, sym[p], sym[q], &id) != round) continue; /* stale */
            sym[p] = id; /* q joins p */
            sym[q] = -1;
            next[p] = next[q];
            if (next[q] >= 0) prev[next[q]] = p;
            int r;
            if (prev[p] >= 0 && (r = rank_of(t, sym[prev[p]], sym[p], NULL)) >= 0)
                pending[np++] = (uint64_t)r << 32 | (uint32_t)prev[p];
            if (next[p] >= 0 && (r = rank_of(t, sym[p], sym[next[p]], NULL)) >= 0)
                pending[np++] = (uint64_t)r << 32 | (uint32_t)p;
        }
        for (size_t k = 0; k < np; k++) heap_push(heap, &hn, pending[k]);
    }
    long count = 0;
    for (int32_t p = 0; p >= 0; p = next[p]) sym[count++] = sym[p]; /* count <= p: in place */
    return count;
}

/* room for k more ids after the first n */
static int reserve(int32_t **ids, size_t n, size_t *cap, size_t k) {
    if (n + k <= *cap) return 0;
    size_t c = *cap * 2 > n + k ? *cap * 2 : n + k + 256;
    int32_t *p = realloc(*ids, c * sizeof *p);
    if (!p) return -1;
    *ids = p;
    *cap = c;
    return 0;
}

static int append(int32_t **ids, size_t *n, size_t *cap, const int32_t *src, size_t k) {
    if (reserve(ids, *n, cap, k)) return -1;
    memcpy(*ids + *n, src, k * sizeof *src);
    *n += k;
    return 0;
}

int tf_tokenizer_encode(tf_tokenizer *t, const char *text, size_t len, int32_t **ids, size_t *n, size_t *cap) {
    const unsigned char *s = (const unsigned char *)text;
    if (!t->bpe) {
        if (reserve(ids, *n, cap, len)) return -1;
        for (size_t i = 0; i < len; i++) (*ids)[(*n)++] = s[i];
        return 0;
    }
    for (size_t i = 0, j; i < len; i = j) {
        j = tf_tokenizer_pretoken_end(text, len, i);
        size_t k = j - i;
        if (k == 1) {
            if (append(ids, n, cap, &t->byte_id[s[i]], 1)) return -1;
            continue;
        }
        const str_slot *hit = k <= CACHE_MAX_KEY ? strmap_find(&t->cache, text + i, k) : NULL;
        if (hit) {
            if (append(ids, n, cap, t->cache_ids + hit->a, (size_t)hit->b)) return -1;
            continue;
        }
        long m = bpe_word(t, s + i, k);
        if (m < 0 || append(ids, n, cap, t->sym, (size_t)m)) return -1;
        if (k <= CACHE_MAX_KEY && t->cache.n < CACHE_MAX_ENTRIES) {
            size_t off = t->cache_n;
            if (append(&t->cache_ids, &t->cache_n, &t->cache_cap, t->sym, (size_t)m)) return -1;
            str_slot *slot = strmap_add(&t->cache, text + i, k);
            if (!slot) return t->cache_n = off, -1;
            slot->a = (int32_t)off;
            slot->b = (int32_t)m;
        }
    }
    return 0;
}
