/*
 * The tokenizer's JSON reader (tokenizer_impl.h): a cursor the loaders walk vocab.json and
 * tokenizer.json with, asking for what they expect next, so that each error names the file, the line
 * and what was expected.  (libshardrun has a JSON reader of its own, core/io/json.c, but it is
 * internal to the runtime and not compiled into tasks; this one also counts lines as it goes.)
 *
 * Lifecycle: the caller fills a tf__json over the file's text, walks it, and frees j->str.
 */
#define _POSIX_C_SOURCE 200809L
#include "tokenizer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

/* "<path>:<line>: expected <what>, found <what is at the cursor> (byte offset <i>)" */
int tf__json_fail(tf__json *j, const char *expected) {
    char found[32];
    if (j->i >= j->n) snprintf(found, sizeof found, "the end of the file");
    else if (j->s[j->i] > 0x20 && j->s[j->i] < 0x7F) snprintf(found, sizeof found, "'%c'", j->s[j->i]);
    else snprintf(found, sizeof found, "byte 0x%02X", (unsigned char)j->s[j->i]);
    return tf__fail(j->err, j->errlen, "%s:%d: expected %s, found %s (byte offset %zu)", j->path, j->line, expected,
                    found, j->i);
}

void tf__json_space(tf__json *j) {
    for (char c; j->i < j->n && ((c = j->s[j->i]) == ' ' || c == '\t' || c == '\r' || c == '\n'); j->i++)
        j->line += c == '\n';
}

int tf__json_peek(tf__json *j) {
    tf__json_space(j);
    return j->i < j->n ? (unsigned char)j->s[j->i] : -1;
}

static int put(tf__json *j, const char *b, size_t k) {
    if (j->slen + k > j->scap) {
        size_t cap = j->scap * 2 + k + 64;
        char *s = realloc(j->str, cap);
        if (!s) return tf__fail(j->err, j->errlen, "%s: out of memory", j->path);
        j->str = s;
        j->scap = cap;
    }
    memcpy(j->str + j->slen, b, k);
    j->slen += k;
    return 0;
}

/* 4 hex digits after "\u": the value, or -1 */
static long hex4(tf__json *j) {
    long v = 0;
    for (int k = 0; k < 4; k++, j->i++) {
        char c = j->i < j->n ? j->s[j->i] : 0;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

int tf__json_string(tf__json *j) {
    if (tf__json_peek(j) != '"') return tf__json_fail(j, "a string");
    j->slen = 0;
    j->i++;
    for (;;) {
        if (j->i >= j->n) return tf__json_fail(j, "'\"' closing the string");
        unsigned char c = (unsigned char)j->s[j->i];
        if (c == '"') break;
        if (c < 0x20) return tf__json_fail(j, "a string character (control characters must be escaped)");
        if (c != '\\') {
            size_t k = 1; /* copy runs of plain bytes at once */
            while (j->i + k < j->n && j->s[j->i + k] != '"' && j->s[j->i + k] != '\\' &&
                   (unsigned char)j->s[j->i + k] >= 0x20)
                k++;
            if (put(j, j->s + j->i, k)) return -1;
            j->i += k;
            continue;
        }
        j->i++;
        char e = j->i < j->n ? j->s[j->i] : 0;
        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
        const char *p = e ? strchr(from, e) : NULL;
        if (p) {
            if (put(j, to + (p - from), 1)) return -1;
            j->i++;
            continue;
        }
        if (e != 'u') return tf__json_fail(j, "an escape: one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX");
        j->i++;
        long cp = hex4(j);
        if (cp < 0) return tf__json_fail(j, "4 hex digits after \\u");
        if (cp >= 0xDC00 && cp <= 0xDFFF) return tf__json_fail(j, "a high surrogate (\\uD800-\\uDBFF) before a low one");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (j->i + 1 >= j->n || j->s[j->i] != '\\' || j->s[j->i + 1] != 'u')
                return tf__json_fail(j, "a low surrogate \\uDC00-\\uDFFF after a high one");
            j->i += 2;
            long lo = hex4(j);
            if (lo < 0xDC00 || lo > 0xDFFF) return tf__json_fail(j, "a low surrogate \\uDC00-\\uDFFF after a high one");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        char u[4];
        size_t k = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        static const unsigned char lead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
        u[0] = (char)(k == 1 ? cp : lead[k] | cp >> (6 * (k - 1)));
        for (size_t b = 1; b < k; b++) u[b] = (char)(0x80 | ((cp >> (6 * (k - 1 - b))) & 0x3F));
        if (put(j, u, k)) return -1;
    }
    j->i++;
    return 0;
}

int tf__json_id(tf__json *j, int32_t *out) {
    tf__json_space(j);
    size_t start = j->i;
    long long v = 0;
    if (j->i < j->n && j->s[j->i] == '-') return tf__json_fail(j, "a non-negative integer id");
    while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9') {
        v = v * 10 + (j->s[j->i++] - '0');
        if (v > INT32_MAX) return j->i = start, tf__json_fail(j, "an integer id below 2^31");
    }
    char next = j->i < j->n ? j->s[j->i] : 0;
    if (j->i == start || next == '.' || next == 'e' || next == 'E') {
        j->i = start;
        return tf__json_fail(j, "an integer id");
    }
    *out = (int32_t)v;
    return 0;
}

static int word(tf__json *j, const char *w) {
    size_t k = strlen(w);
    if (j->n - j->i < k || memcmp(j->s + j->i, w, k)) return 0;
    j->i += k;
    return 1;
}

int tf__json_literal(tf__json *j, int *out, const char *what) {
    tf__json_space(j);
    if (word(j, "true")) *out = 1;
    else if (word(j, "false")) *out = 0;
    else if (word(j, "null")) *out = -1;
    else return tf__json_fail(j, what);
    return 0;
}

/* A number as RFC 8259 writes it. */
static int number(tf__json *j) {
    size_t d;
    if (j->i < j->n && j->s[j->i] == '-') j->i++;
    for (d = 0; j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9'; d++) j->i++;
    if (!d || (d > 1 && j->s[j->i - d] == '0')) return tf__json_fail(j, "a number");
    if (j->i < j->n && j->s[j->i] == '.') {
        j->i++;
        for (d = 0; j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9'; d++) j->i++;
        if (!d) return tf__json_fail(j, "a digit after '.'");
    }
    if (j->i < j->n && (j->s[j->i] == 'e' || j->s[j->i] == 'E')) {
        j->i++;
        if (j->i < j->n && (j->s[j->i] == '+' || j->s[j->i] == '-')) j->i++;
        for (d = 0; j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9'; d++) j->i++;
        if (!d) return tf__json_fail(j, "a digit in the exponent");
    }
    return 0;
}

static int skip(tf__json *j, int depth) {
    int c = tf__json_peek(j), count = 0, r, lit;
    if (c == '"') return tf__json_string(j);
    if (c == '-' || (c >= '0' && c <= '9')) return number(j);
    if (c != '{' && c != '[') return tf__json_literal(j, &lit, "a value");
    if (depth >= MAX_DEPTH) return tf__json_fail(j, "at most 64 nested arrays and objects");
    tf__json_open(j, (char)c, "");
    while ((r = tf__json_more(j, c == '{' ? '}' : ']', &count)) > 0)
        if (skip(j, depth + 1)) return -1;
    return r;
}

int tf__json_skip(tf__json *j) { return skip(j, 0); }

int tf__json_open(tf__json *j, char open, const char *what) {
    if (tf__json_peek(j) != open) return tf__json_fail(j, what);
    j->i++;
    return 0;
}

int tf__json_more(tf__json *j, char close, int *count) {
    int c = tf__json_peek(j);
    if (*count == 0 && c == close) {
        j->i++;
        return 0;
    }
    if (*count > 0) {
        if (c == close) {
            j->i++;
            return 0;
        }
        if (c != ',') return tf__json_fail(j, close == '}' ? "',' or '}' after an entry" : "',' or ']' after an element");
        j->i++;
    }
    ++*count;
    if (close == ']') return 1;
    if (tf__json_peek(j) != '"') return tf__json_fail(j, "a string key");
    j->key_at = j->i;
    j->key_line = j->line;
    if (tf__json_string(j)) return -1;
    if (tf__json_peek(j) != ':') return tf__json_fail(j, "':' after the key");
    j->i++;
    return 1;
}

int tf__json_end(tf__json *j) {
    return tf__json_peek(j) < 0 ? 0 : tf__json_fail(j, "the end of the file after the object");
}

int tf__json_str_is(const tf__json *j, const char *want) {
    return j->slen == strlen(want) && !memcmp(j->str, want, j->slen);
}

int tf__vocab_object(tf_tokenizer *t, tf__json *j, const char *what) {
    char expect[96];
    snprintf(expect, sizeof expect, "'{' (%s is one JSON object of \"symbol\": id)", what);
    if (tf__json_open(j, '{', expect)) return -1;
    int count = 0, r;
    while ((r = tf__json_more(j, '}', &count)) > 0) {
        int32_t id;
        if (tf__json_id(j, &id)) return -1;
        if (tf__strmap_find(&t->vocab, j->str, j->slen))
            return tf__fail(j->err, j->errlen, "%s:%d: the key \"%.*s\" appears twice", j->path, j->key_line,
                            (int)(j->slen > 60 ? 60 : j->slen), j->str);
        tf__str_slot *s = tf__strmap_add(&t->vocab, j->str, j->slen);
        if (!s) return tf__fail(j->err, j->errlen, "%s: out of memory", j->path);
        s->a = id;
        s->b = (int32_t)j->key_at;
    }
    return r;
}
