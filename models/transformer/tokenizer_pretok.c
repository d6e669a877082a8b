/*
 * How encode cuts a text into pieces (see tokenizer.h), as HF's tokenizers library does: the added
 * tokens first (tokenizer_added.c), then, between them, the normalizer (NFC, through utf8proc), more
 * added tokens (those marked `normalized`), then the Split steps one after the other, each on the
 * pieces of the one before (a Sequence of pre-tokenizers; ByteLevel's use_regex is a Split of GPT-2's
 * pattern), their patterns run by PCRE2 (tokenizer_regex.c).
 *
 * Bytes that are not valid UTF-8 (HF's library never sees any: a Rust string is UTF-8) are each one
 * character in no class for the patterns -- not a letter, number or space -- which PCRE2 reads as
 * U+0001: the patterns run over a copy of the text with each such byte replaced by 0x01, the pieces
 * keep the real bytes.  Text with such bytes is not normalized.
 *
 * Lifecycle: none of its own; scratch buffers in the tokenizer (freed with it).
 */
#define _GNU_SOURCE /* asprintf */
#include "tokenizer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ with its contractions
   factored (the same matches; PCRE2 tries one alternative instead of seven before the others) */
const char tf__gpt2_pattern[] = "'(?:[stmd]|re|ve|ll)| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

int tf__split_add(tf_tokenizer *t, const char *pattern, size_t n, tf__split_behavior behavior, const char *what,
                  char *err, size_t errlen) {
    char why[400];
    if (t->nsplits == TF__SPLITS_MAX)
        return sr__fail(err, errlen, "%s: more than %d Split steps are not supported", what, TF__SPLITS_MAX);
    tf__regex *re = tf__regex_compile(pattern, n, why, sizeof why);
    if (!re) return sr__fail(err, errlen, "%s \"%.*s\": %s", what, (int)(n > 120 ? 120 : n), pattern, why);
    char *where = NULL;
    if (asprintf(&where, "%s \"%.*s%s\"", what, (int)(n > 120 ? 120 : n), pattern, n > 120 ? "..." : "") < 0) {
        tf__regex_free(re);
        return sr__fail(err, errlen, "out of memory");
    }
    t->splits[t->nsplits++] = (tf__split){.re = re, .behavior = behavior, .where = where};
    t->pretok = TF_PRETOK_SPLIT;
    return 0;
}

static int grow(char **buf, size_t *cap, size_t n) {
    if (n <= *cap) return 0;
    size_t c = n > 2 * *cap ? n : 2 * *cap;
    char *p = realloc(*buf, c);
    if (!p) return -1;
    *buf = p;
    *cap = c;
    return 0;
}

/* The length of the valid UTF-8 character at s[i] (strict: no overlong forms, surrogates or code
   points past U+10FFFF), or 0 when the byte does not start one. */
static size_t utf8_len(const unsigned char *s, size_t n, size_t i) {
    unsigned c = s[i], lo = 0x80, hi = 0xBF;
    size_t need;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c >= 0xE0 && c <= 0xEF) need = 2, lo = c == 0xE0 ? 0xA0 : lo, hi = c == 0xED ? 0x9F : hi;
    else if (c >= 0xF0 && c <= 0xF4) need = 3, lo = c == 0xF0 ? 0x90 : lo, hi = c == 0xF4 ? 0x8F : hi;
    else return 0;
    if (n - i - 1 < need) return 0;
    for (size_t k = 1; k <= need; k++, lo = 0x80, hi = 0xBF)
        if (s[i + k] < lo || s[i + k] > hi) return 0;
    return need + 1;
}

/* The offset of the first byte of s[0..n) that is not part of valid UTF-8, or n. */
static size_t first_bad(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        while (i + 8 <= n) { /* ASCII eight bytes at a time */
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ull) break;
            i += 8;
        }
        if (i == n) break;
        size_t k = utf8_len(s, n, i);
        if (!k) return i;
        i += k;
    }
    return n;
}

typedef struct {
    tf_tokenizer *t;
    tf__piece_fn fn;
    void *ctx;
} walk;

/* The message of a pattern that ran past PCRE2's limits on s[0..n), into t->error. */
static int pattern_limit(tf_tokenizer *t, const tf__split *sp, const char *s, size_t n) {
    char head[40];
    size_t k = n < 32 ? n : 32;
    while (k < n && k && ((unsigned char)s[k] & 0xC0) == 0x80) k--; /* whole characters */
    for (size_t i = 0; i < k; i++) head[i] = (unsigned char)s[i] < 0x20 ? '.' : s[i];
    head[k] = 0;
    snprintf(t->error, sizeof t->error,
             "%s: PCRE2 stopped matching this pattern on a piece of %zu bytes (\"%s%s\"): %s. The pattern "
             "backtracks without end on such text (nested quantifiers like (a+)+ do): rewrite it in the "
             "tokenizer.json (e.g. (a+)+$ as a+$)",
             sp->where, n, head, k < n ? "..." : "", tf__regex_why(sp->re));
    return TF_TOKENIZER_PATTERN_LIMIT;
}

/* Split step k on piece (orig: the bytes, clean: the same with bad bytes as 0x01) and down */
static int split(walk *w, int k, const char *orig, const char *clean, size_t n) {
    if (!n) return 0;
    if (k == w->t->nsplits) return w->fn(w->ctx, w->t, orig, n, -1);
    const tf__split *sp = &w->t->splits[k];
    size_t pos = 0, from = 0, ms, me;
    int rc;
    tf__regex_forget(sp->re); /* this text may sit where another one was */
    while (from < n) {
        int f = tf__regex_find(sp->re, clean, n, from, &ms, &me);
        if (f == TF_TOKENIZER_PATTERN_LIMIT) return pattern_limit(w->t, sp, clean + from, n - from);
        if (f < 0) return TF_TOKENIZER_NOMEM;
        if (!f) break;
        if (me == ms) { /* an empty match splits nothing: look again one character on */
            size_t c = utf8_len((const unsigned char *)clean, n, ms);
            from = ms + (c ? c : 1);
            continue;
        }
        if (ms > pos && (rc = split(w, k + 1, orig + pos, clean + pos, ms - pos))) return rc;
        if (sp->behavior == TF_SPLIT_ISOLATED) { /* the last step's pieces go straight to the callback */
            rc = k + 1 == w->t->nsplits ? w->fn(w->ctx, w->t, orig + ms, me - ms, -1)
                                        : split(w, k + 1, orig + ms, clean + ms, me - ms);
            if (rc) return rc;
        }
        pos = from = me;
    }
    return split(w, k + 1, orig + pos, clean + pos, n - pos);
}

/* Whether NFC may change s[0..n): only code points from U+0300 on (lead bytes from 0xCC) compose,
   decompose or reorder. */
static int may_change(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 0xCC) return 1;
    return 0;
}

/* A stretch between two added tokens of the first pass: normalize, the `normalized` added tokens,
   then the Split steps. */
static int segment(walk *w, const char *orig, const char *clean, size_t n) {
    tf_tokenizer *t = w->t;
    if (!n) return 0;
    if (t->nfc && orig == clean && may_change((const unsigned char *)orig, n)) {
        /* valid UTF-8 (orig == clean): NFC into t->norm */
        utf8proc_uint8_t *out = NULL;
        utf8proc_ssize_t m = utf8proc_map((const utf8proc_uint8_t *)orig, (utf8proc_ssize_t)n, &out,
                                          (utf8proc_option_t)(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
        if (m == UTF8PROC_ERROR_NOMEM) return -1;
        if (m >= 0) {
            int bad = grow(&t->norm, &t->norm_cap, (size_t)m + 1);
            if (!bad) memcpy(t->norm, out, (size_t)m);
            free(out);
            if (bad) return -1;
            orig = clean = t->norm;
            n = (size_t)m;
        }
    }
    if (t->added_normalized) {
        size_t pos = 0, at;
        const tf__added *a;
        int rc;
        while ((a = tf__added_find(t, clean, n, pos, 1, &at))) {
            if ((rc = split(w, 0, orig + pos, clean + pos, at - pos))) return rc;
            if ((rc = w->fn(w->ctx, t, t->added_text + a->off, a->len, a->id))) return rc;
            pos = at + a->len;
        }
        return split(w, 0, orig + pos, clean + pos, n - pos);
    }
    return split(w, 0, orig, clean, n);
}

int tf__pieces(tf_tokenizer *t, const char *text, size_t len, tf__piece_fn fn, void *ctx) {
    walk w = {.t = t, .fn = fn, .ctx = ctx};
    const char *clean = text;
    t->error[0] = 0;
    size_t bad = first_bad((const unsigned char *)text, len);
    if (bad < len) { /* the copy the patterns read: each byte outside valid UTF-8 as 0x01 */
        if (grow(&t->clean, &t->clean_cap, len)) return -1;
        memcpy(t->clean, text, bad);
        for (size_t i = bad; i < len;) { /* a bad byte, then the valid run after it */
            t->clean[i++] = 0x01;
            size_t run = first_bad((const unsigned char *)text + i, len - i);
            memcpy(t->clean + i, text + i, run);
            i += run;
        }
        clean = t->clean;
    }
    if (!t->nadded) return segment(&w, text, clean, len);
    size_t pos = 0, at;
    const tf__added *a;
    int rc;
    while ((a = tf__added_find(t, text, len, pos, 0, &at))) {
        if ((rc = segment(&w, text + pos, clean + pos, at - pos))) return rc;
        if ((rc = fn(ctx, t, t->added_text + a->off, a->len, a->id))) return rc;
        pos = at + a->len;
    }
    return segment(&w, text + pos, clean + pos, len - pos);
}
