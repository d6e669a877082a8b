/*
 * The tokenizer object (see tokenizer.h and tokenizer_impl.h): its tables, the checks every loader
 * runs on them, the merge loop, encoding, decoding.
 *
 * Lifecycle: a loader builds three tables -- vocab string -> id, (left id, right id) -> merge rank
 * and result id, byte -> id -- and checks that every symbol a merge can produce has an id, so
 * encoding cannot fail but for memory; encode grows a cache (piece bytes -> ids) and scratch
 * buffers that live until free.
 */
#define _POSIX_C_SOURCE 200809L
#include "tokenizer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTE_EOS 256
#define CACHE_MAX_KEY 64                    /* longer pieces are rare and not worth the memory */
#define CACHE_MAX_ENTRIES 1000000           /* bounds the cache when a long corpus is tokenized */
#define CACHE_FIRST_SLOTS ((size_t)1 << 18) /* the shared cache's first table: 2 MiB, one huge page */
#define PAIR_FREE UINT64_MAX                /* ids are below 2^31, so no real pair key has all bits set */

/* ---- hash tables ---------------------------------------------------------------------------- */

tf__str_slot *tf__strmap_find(const tf__strmap *m, const char *k, size_t n) {
    if (!m->cap) return NULL;
    for (size_t i = tf__hash_bytes(k, n) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        tf__str_slot *s = &m->slots[i];
        if (s->off == TF__SLOT_FREE) return NULL;
        if (s->len == n && !memcmp(m->keys + s->off, k, n)) return s;
    }
}

static int strmap_grow(tf__strmap *m) {
    size_t cap = m->cap ? m->cap * 2 : 1024;
    tf__str_slot *s = malloc(cap * sizeof *s);
    if (!s) return -1;
    for (size_t i = 0; i < cap; i++) s[i].off = TF__SLOT_FREE;
    for (size_t j = 0; j < m->cap; j++) {
        if (m->slots[j].off == TF__SLOT_FREE) continue;
        size_t i = tf__hash_bytes(m->keys + m->slots[j].off, m->slots[j].len) & (cap - 1);
        while (s[i].off != TF__SLOT_FREE) i = (i + 1) & (cap - 1);
        s[i] = m->slots[j];
    }
    free(m->slots);
    m->slots = s;
    m->cap = cap;
    return 0;
}

tf__str_slot *tf__strmap_add(tf__strmap *m, const char *k, size_t n) {
    if ((m->n + 1) * 2 > m->cap && strmap_grow(m)) return NULL;
    if (n >= TF__SLOT_FREE - m->klen) return NULL; /* offsets are 32-bit */
    if (m->klen + n > m->kcap) {
        size_t cap = m->kcap * 2 > m->klen + n ? m->kcap * 2 : m->klen + n + 4096;
        char *keys = realloc(m->keys, cap);
        if (!keys) return NULL;
        m->keys = keys;
        m->kcap = cap;
    }
    if (n) memcpy(m->keys + m->klen, k, n);
    size_t i = tf__hash_bytes(k, n) & (m->cap - 1);
    while (m->slots[i].off != TF__SLOT_FREE) i = (i + 1) & (m->cap - 1);
    m->slots[i] = (tf__str_slot){.off = (uint32_t)m->klen, .len = (uint32_t)n};
    m->klen += n;
    m->n++;
    return &m->slots[i];
}

static void strmap_free(tf__strmap *m) {
    free(m->slots);
    free(m->keys);
}

static size_t pair_hash(uint64_t x) {
    x ^= x >> 33; /* murmur3's finalizer */
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

static const tf__pair_slot *pairmap_find(const tf__pairmap *m, int32_t a, int32_t b) {
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    if (!m->cap) return NULL;
    for (size_t i = pair_hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].key == key) return &m->slots[i];
        if (m->slots[i].key == PAIR_FREE) return NULL;
    }
}

/* Sets the pair's rank and result; a pair listed twice keeps its later rank, as the reference's
   dict does.  0, or -1 when out of memory. */
static int pairmap_put(tf__pairmap *m, int32_t a, int32_t b, int32_t rank, int32_t id) {
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        tf__pair_slot *s = malloc(cap * sizeof *s);
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
    m->slots[i] = (tf__pair_slot){.key = key, .rank = rank, .id = id};
    return 0;
}

/* ---- what every loader shares ------------------------------------------------------------------- */

int tf_tokenizer_vocab_size(const tf_tokenizer *t) { return t->vocab_size; }
int tf_tokenizer_eos(const tf_tokenizer *t) { return t->eos; }
const char *tf_tokenizer_eos_from(const tf_tokenizer *t) { return t->eos_from; }
const char *tf_tokenizer_error(const tf_tokenizer *t) { return t->error[0] ? t->error : "out of memory"; }

/* OpenAI's bytes_to_unicode: the printable bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for
   themselves; the 68 others, in increasing order, for U+0100, U+0101, ...  Writes the UTF-8 of
   byte b's symbol to out (2 bytes at most): its length. */
size_t tf__byte_symbol(int b, char *out) {
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

int tf__line_at(const char *text, size_t off) {
    int line = 1;
    for (size_t i = 0; i < off; i++) line += text[i] == '\n';
    return line;
}

int tf__vocab_check_ids(tf_tokenizer *t, const char *path, const char *text, const char *have, char *err,
                        size_t errlen) {
    /* ids must be 0..size-1, each once: the model's embedding has exactly size rows.  Entries are
       told apart by their byte offset in the file (HF's vocab.json is a single line). */
    t->vocab_size = (int)t->vocab.n;
    int32_t *first = calloc(t->vocab.n + 1, sizeof *first); /* per id: 1 + the offset of its first entry */
    if (!first) return sr__fail(err, errlen, "%s: out of memory", path);
    const tf__str_slot *bad = NULL; /* the offending entry nearest the top of the file */
    for (size_t k = 0; k < t->vocab.cap; k++) {
        const tf__str_slot *s = &t->vocab.slots[k];
        if (s->off == TF__SLOT_FREE) continue;
        if (s->a >= t->vocab_size) {
            if (!bad || s->b < bad->b) bad = s;
        } else if (!first[s->a] || s->b + 1 < first[s->a]) {
            first[s->a] = s->b + 1;
        }
    }
    for (size_t k = 0; k < t->vocab.cap; k++) { /* a second entry with an id already used */
        const tf__str_slot *s = &t->vocab.slots[k];
        if (s->off != TF__SLOT_FREE && s->a < t->vocab_size && first[s->a] != s->b + 1 && (!bad || s->b < bad->b))
            bad = s;
    }
    int rc = 0;
    if (bad && bad->a >= t->vocab_size)
        rc = sr__fail(err, errlen, "%s:%d: id %d is out of range: %s %d entries, so ids must be 0..%d (byte offset %d)",
                      path, tf__line_at(text, (size_t)bad->b), bad->a, have, t->vocab_size, t->vocab_size - 1, bad->b);
    else if (bad)
        rc = sr__fail(
            err, errlen, "%s:%d: id %d is also the id of the entry at line %d; ids must be distinct (byte offset %d)",
            path, tf__line_at(text, (size_t)bad->b), bad->a, tf__line_at(text, (size_t)first[bad->a] - 1), bad->b);
    free(first);
    return rc;
}

int tf__vocab_bytes(tf_tokenizer *t, const char *path, char *err, size_t errlen) {
    for (int b = 0; b < 256; b++) {
        char sym[2];
        size_t k = tf__byte_symbol(b, sym);
        const tf__str_slot *s = tf__strmap_find(&t->vocab, sym, k);
        if (!s)
            return sr__fail(err, errlen,
                            "%s: no entry for byte 0x%02X (\"%.*s\"); a byte-level BPE vocabulary has a symbol for "
                            "each of the 256 bytes",
                            path, b, (int)k, sym);
        t->byte_id[b] = s->a;
    }
    return 0;
}

int tf__merge_add(tf_tokenizer *t, const char *left, size_t ll, const char *right, size_t rl, int32_t rank, char **buf,
                  size_t *cap) {
    const tf__str_slot *a = tf__strmap_find(&t->vocab, left, ll), *b = tf__strmap_find(&t->vocab, right, rl);
    if (!a) return 1;
    if (!b) return 2;
    if (ll + rl > *cap) {
        free(*buf);
        *cap = 2 * (ll + rl);
        if (!(*buf = malloc(*cap))) return *cap = 0, -1;
    }
    memcpy(*buf, left, ll);
    memcpy(*buf + ll, right, rl);
    const tf__str_slot *ab = tf__strmap_find(&t->vocab, *buf, ll + rl);
    if (!ab) return 3;
    return pairmap_put(&t->merges, a->a, b->a, rank, ab->a);
}

/* ---- decoding (generation) -------------------------------------------------------------------- */

/* The byte a byte symbol's code point stands for (tf__byte_symbol's inverse), or -1. */
static int symbol_byte(unsigned cp) {
    if (cp < 256) return (cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || cp >= 0xAE ? (int)cp : -1;
    unsigned k = cp - 256; /* the k-th byte (from 0) that has no printable symbol of its own */
    for (int b = 0; b < 256; b++)
        if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE) && k-- == 0) return b;
    return -1;
}

int tf_tokenizer_decode(tf_tokenizer *t, int32_t id, char *out, size_t cap) {
    if (id < 0 || id >= t->vocab_size) return -1;
    if (t->pretok == TF_PRETOK_BYTES) {
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
            if (t->vocab.slots[k].off != TF__SLOT_FREE) t->by_id[t->vocab.slots[k].a] = &t->vocab.slots[k];
    }
    const tf__str_slot *s = t->by_id[id];
    const unsigned char *sym = (const unsigned char *)t->vocab.keys + s->off, *end = sym + s->len;
    /* HF's ByteLevel decoder: a symbol made of byte symbols only stands for those bytes; any other
       (an added token with a space or a CJK character in it, say) for its own UTF-8, as it is */
    size_t n = 0;
    int bytes = 1;
    for (const unsigned char *p = sym; p < end && bytes; n++) {
        unsigned c = *p++;
        int b = -1; /* byte symbols are all below U+0800: one or two bytes of UTF-8 */
        if (c < 0x80) b = symbol_byte(c);
        else if (c >= 0xC2 && c < 0xE0 && p < end && (*p & 0xC0) == 0x80)
            b = symbol_byte((c & 0x1F) << 6 | (*p++ & 0x3F));
        if (b < 0) bytes = 0;
        else if (n < cap) out[n] = (char)b;
    }
    if (!bytes) {
        memcpy(out, sym, s->len < cap ? s->len : cap);
        return (int)s->len;
    }
    return (int)n;
}

void tf_tokenizer_free(tf_tokenizer *t) {
    if (!t) return;
    for (int k = 0; k < t->nsplits; k++) tf__regex_free(t->splits[k].re);
    if (!t->base) { /* the tables: a clone's are its base's */
        for (int k = 0; k < t->nsplits; k++) free(t->splits[k].where);
        free(t->added);
        free(t->added_text);
        strmap_free(&t->vocab);
        free(t->merges.slots);
        tf__shared_cache_free(t->shared);
    }
    free(t->clean);
    free(t->norm);
    free(t->symbols);
    free(t->by_id);
    strmap_free(&t->cache);
    free(t->cache_ids);
    free(t->sym);
    free(t->next);
    free(t->prev);
    free(t->heap);
    free(t->pending);
    free(t);
}

tf_tokenizer *tf_tokenizer_clone(tf_tokenizer *t, char *err, size_t errlen) {
    if (t->base) t = (tf_tokenizer *)t->base; /* a clone of a clone is one of the base's */
    if (t->pretok != TF_PRETOK_BYTES && !t->shared &&
        !(t->shared = tf__shared_cache_new(CACHE_FIRST_SLOTS, CACHE_MAX_ENTRIES, CACHE_MAX_KEY)))
        return sr__fail(err, errlen, "out of memory for the tokenizer's shared cache"), NULL;
    tf_tokenizer *c = malloc(sizeof *c);
    if (!c) return sr__fail(err, errlen, "out of memory"), NULL;
    *c = *t; /* the tables and options by value: c reads t's memory, never writes or frees it */
    c->base = t;
    memset(&c->cache, 0, sizeof c->cache);
    c->cache_ids = NULL, c->cache_n = c->cache_cap = 0;
    c->sym = c->next = c->prev = NULL;
    c->heap = c->pending = NULL;
    c->scratch_cap = 0;
    c->by_id = NULL;
    c->clean = c->norm = c->symbols = NULL;
    c->clean_cap = c->norm_cap = c->symbols_cap = 0;
    c->error[0] = 0;
    for (int k = 0; k < c->nsplits; k++) c->splits[k].re = NULL;
    for (int k = 0; k < t->nsplits; k++)
        if (!(c->splits[k].re = tf__regex_clone(t->splits[k].re))) {
            tf_tokenizer_free(c);
            return sr__fail(err, errlen, "out of memory"), NULL;
        }
    return c;
}

/* ---- merges ------------------------------------------------------------------------------------- */

static int rank_of(const tf_tokenizer *t, int32_t a, int32_t b, int32_t *id) {
    const tf__pair_slot *p = pairmap_find(&t->merges, a, b);
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
    int32_t *a = realloc(t->sym, cap * 4), *b = a ? realloc(t->next, cap * 4) : NULL,
            *c = b ? realloc(t->prev, cap * 4) : NULL;
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

/* Merges the n bytes of one piece; the ids are left in t->sym[0..count): the count, or -1 when
   out of memory.
   This is OpenAI's loop -- take the lowest-ranked adjacent pair, merge all its occurrences left to
   right, repeat -- in O(n log n) instead of a rescan per merge: a min-heap holds (rank, position)
   of pairs as they form, and an entry whose pair has changed since is skipped when popped.  A
   round pops every entry of its rank in position order; the pairs its merges create wait in
   `pending` until the round ends, since one of lower rank must not run before the round is done.
   (HF tokenizers' BPE runs such a pair at once instead: the two differ only when a merge's result
   takes part in a merge ranked before it, which no trained merge list has.) */
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
            sym[p] = id;                                                                             /* q joins p */
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

typedef struct {
    int32_t **ids;
    size_t *n, *cap;
} sink;

/* The ids of one piece: an added token's id, a cached piece's ids, the whole piece as one symbol
   (ignore_merges), or the merges of its bytes. */
static int encode_piece(void *ctx, tf_tokenizer *t, const char *text, size_t k, int32_t id) {
    sink *o = ctx;
    const unsigned char *s = (const unsigned char *)text;
    if (id >= 0) return append(o->ids, o->n, o->cap, &id, 1);
    if (k == 1) return append(o->ids, o->n, o->cap, &t->byte_id[s[0]], 1);
    if (t->shared) {
        uint32_t count;
        const int32_t *ids = k <= CACHE_MAX_KEY ? tf__shared_cache_find(t->shared, text, k, &count) : NULL;
        if (ids) return append(o->ids, o->n, o->cap, ids, count);
    } else {
        const tf__str_slot *hit = k <= CACHE_MAX_KEY ? tf__strmap_find(&t->cache, text, k) : NULL;
        if (hit) return append(o->ids, o->n, o->cap, t->cache_ids + hit->a, (size_t)hit->b);
    }
    long m = -1;
    if (t->ignore_merges) { /* the piece's byte symbols (2 bytes each at most), as the vocabulary spells them */
        if (2 * k > t->symbols_cap) {
            char *p = realloc(t->symbols, 2 * k);
            if (!p) return -1;
            t->symbols = p;
            t->symbols_cap = 2 * k;
        }
        size_t sl = 0;
        for (size_t i = 0; i < k; i++) sl += tf__byte_symbol(s[i], t->symbols + sl);
        const tf__str_slot *whole = tf__strmap_find(&t->vocab, t->symbols, sl);
        if (whole) {
            if (scratch(t, 1)) return -1;
            t->sym[0] = whole->a, m = 1;
        }
    }
    if (m < 0 && (m = bpe_word(t, s, k)) < 0) return -1;
    if (append(o->ids, o->n, o->cap, t->sym, (size_t)m)) return -1;
    if (t->shared) {
        tf__shared_cache_add(t->shared, text, k, t->sym, (uint32_t)m);
    } else if (k <= CACHE_MAX_KEY && t->cache.n < CACHE_MAX_ENTRIES) {
        size_t off = t->cache_n;
        if (append(&t->cache_ids, &t->cache_n, &t->cache_cap, t->sym, (size_t)m)) return -1;
        tf__str_slot *slot = tf__strmap_add(&t->cache, text, k);
        if (!slot) return t->cache_n = off, -1;
        slot->a = (int32_t)off;
        slot->b = (int32_t)m;
    }
    return 0;
}

int tf_tokenizer_encode(tf_tokenizer *t, const char *text, size_t len, int32_t **ids, size_t *n, size_t *cap) {
    const unsigned char *s = (const unsigned char *)text;
    t->error[0] = 0;
    if (t->pretok == TF_PRETOK_BYTES) {
        if (reserve(ids, *n, cap, len)) return -1;
        for (size_t i = 0; i < len; i++) (*ids)[(*n)++] = s[i];
        return 0;
    }
    sink o = {ids, n, cap};
    int rc = tf__pieces(t, text, len, encode_piece, &o);
    return rc == TF_TOKENIZER_PATTERN_LIMIT ? rc : rc ? TF_TOKENIZER_NOMEM : 0;
}

typedef struct {
    tf_tokenizer_piece_fn fn;
    void *ctx;
} piece_cb;

static int report_piece(void *ctx, tf_tokenizer *t, const char *piece, size_t n, int32_t id) {
    (void)t;
    piece_cb *c = ctx;
    return c->fn(c->ctx, piece, n, id);
}

int tf_tokenizer_pieces(tf_tokenizer *t, const char *text, size_t len, tf_tokenizer_piece_fn fn, void *ctx) {
    if (t->pretok == TF_PRETOK_BYTES) {
        for (size_t i = 0; i < len; i++) {
            int rc = fn(ctx, text + i, 1, -1);
            if (rc) return rc;
        }
        return 0;
    }
    piece_cb c = {fn, ctx};
    return tf__pieces(t, text, len, report_piece, &c);
}
