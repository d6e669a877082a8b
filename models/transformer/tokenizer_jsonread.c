/*
 * The tokenizer's JSON cursor (tokenizer_impl.h): the loaders walk vocab.json and tokenizer.json
 * with it, asking for what they expect next.  The grammar is core/io/json.c's (libshardrun's one
 * JSON reader, linked from shardrun_common: libshardrun does not export it, and a task
 * sees only include/shardrun/); this file adds what the tokenizer's messages need -- the file and
 * the line, counted from the byte offset, "expected X, found Y" in the loaders' words -- integer ids,
 * and seeking back to a value noted before.
 *
 * Lifecycle: tf__json_init -> the walk -> tf__json_free.
 */
#define _POSIX_C_SOURCE 200809L
#include "tokenizer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tf__json_init(tf__json *j, const char *text, size_t n, size_t start, const char *path, char *err, size_t errlen) {
    *j = (tf__json){.s = text, .path = path, .n = n, .err = err, .errlen = errlen, .line = 1};
    if (!(j->arena = malloc(n + 1))) return sr__fail(err, errlen, "%s: out of memory", path);
    tf__json_seek(j, start);
    return 0;
}

void tf__json_free(tf__json *j) {
    sr__json_free(&j->r);
    free(j->arena);
    j->arena = NULL;
}

void tf__json_seek(tf__json *j, size_t at) {
    sr__json_init(&j->r, j->s + at, j->n - at, j->arena);
    j->base = at;
}

size_t tf__json_offset(const tf__json *j) { return j->base + sr__json_offset(&j->r); }

/* Counted from the offset asked last (the loaders mostly move forward), in either direction. */
int tf__json_line(tf__json *j, size_t at) {
    if (at > j->n) at = j->n;
    for (; j->line_at < at; j->line_at++) j->line += j->s[j->line_at] == '\n';
    for (; j->line_at > at; j->line_at--) j->line -= j->s[j->line_at - 1] == '\n';
    return j->line;
}

/* "<path>:<line>: expected <what>, found <what is at byte `at`> (byte offset <at>)" */
static int fail_at(tf__json *j, size_t at, const char *expected) {
    char found[32];
    if (at >= j->n) snprintf(found, sizeof found, "the end of the file");
    else if (j->s[at] > 0x20 && j->s[at] < 0x7F) snprintf(found, sizeof found, "'%c'", j->s[at]);
    else snprintf(found, sizeof found, "byte 0x%02X", (unsigned char)j->s[at]);
    /* the reader stops too: every later call fails */
    sr__json_fail(&j->r, "the tokenizer's walk failed");
    return sr__fail(j->err, j->errlen, "%s:%d: expected %s, found %s (byte offset %zu)", j->path, tf__json_line(j, at),
                    expected, found, at);
}

int tf__json_fail(tf__json *j, const char *expected) {
    tf__json_space(j);
    return fail_at(j, tf__json_offset(j), expected);
}

static int hex_digit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

/* The reader's error, said as the loaders' messages say it: what was expected, and where. */
static int reader_failed(tf__json *j, const char *key_or_value) {
    size_t at;
    const char *e = sr__json_error(&j->r, &at);
    if (!e) return -1; /* failed before: already said */
    at += j->base;
    if (!strcmp(e, "out of memory")) return sr__fail(j->err, j->errlen, "%s: out of memory", j->path);
    static const struct {
        const char *reader, *tokenizer;
    } words[] = {
        {"expected ',' or '}'", "',' or '}' after an entry"},
        {"expected ',' or ']'", "',' or ']' after an element"},
        {"expected ':'", "':' after the key"},
        {"unterminated string", "'\"' closing the string"},
        {"control character in a string", "a string character (control characters must be escaped)"},
        {"invalid UTF-8 in a string", "a string character (a string must be UTF-8)"},
        {"expected a value", "a value"},
        {"bad number", "a number"},
        {"number with a leading zero", "a number"},
        {"nesting too deep", "at most 64 nested arrays and objects"},
        {"unexpected data after the JSON object", "the end of the file after the object"},
        {"unexpected data after the JSON array", "the end of the file after the array"},
        {"unexpected data after the JSON value", "the end of the file after the value"},
    };
    const char *expected = NULL;
    if (!strcmp(e, "expected a string")) expected = key_or_value;
    else if (!strcmp(e, "unknown escape in a string")) {
        expected = "an escape: one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX";
        at++; /* the letter after the backslash */
    } else if (!strcmp(e, "bad \\u escape")) {
        expected = "4 hex digits after \\u";
        for (at += 2; at < j->n && hex_digit(j->s[at]); at++) {} /* the first digit that is not one */
    } else if (!strcmp(e, "unpaired surrogate in a \\u escape")) {
        int low_first = at + 2 < j->n && (j->s[at + 2] == 'd' || j->s[at + 2] == 'D') && at + 3 < j->n &&
                        strchr("cdefCDEF", j->s[at + 3]);
        expected = low_first ? "a high surrogate (\\uD800-\\uDBFF) before a low one"
                             : "a low surrogate \\uDC00-\\uDFFF after a high one";
        at += 6;
    }
    for (size_t w = 0; !expected && w < sizeof words / sizeof *words; w++)
        if (!strcmp(e, words[w].reader)) expected = words[w].tokenizer;
    if (!expected) expected = !strncmp(e, "expected ", 9) ? e + 9 : e;
    return fail_at(j, at, expected);
}

void tf__json_space(tf__json *j) { (void)sr__json_peek(&j->r); }

int tf__json_peek(tf__json *j) {
    tf__json_space(j);
    size_t at = tf__json_offset(j);
    return at < j->n ? (unsigned char)j->s[at] : -1;
}

int tf__json_string(tf__json *j) {
    if (tf__json_peek(j) != '"') return tf__json_fail(j, "a string");
    return sr__json_string(&j->r, &j->str, &j->slen) ? reader_failed(j, "a string") : 0;
}

int tf__json_id(tf__json *j, int32_t *out) {
    int c = tf__json_peek(j);
    size_t start = tf__json_offset(j);
    sr__json_num v;
    if (c == '-') return tf__json_fail(j, "a non-negative integer id");
    if (c < '0' || c > '9' || sr__json_number(&j->r, &v) != 0 || !v.is_uint) return fail_at(j, start, "an integer id");
    if (v.uint > INT32_MAX) return fail_at(j, start, "an integer id below 2^31");
    *out = (int32_t)v.uint;
    return 0;
}

int tf__json_literal(tf__json *j, int *out, const char *what) {
    sr__json_type t = sr__json_peek(&j->r);
    size_t start = tf__json_offset(j);
    if (t == SR__JSON_BOOL && sr__json_bool(&j->r, out) == 0) return 0;
    if (t == SR__JSON_NULL && sr__json_null(&j->r) == 0) return *out = -1, 0;
    return fail_at(j, start, what);
}

/* (a string is expected only as a key here: a value that starts with '"' is one) */
int tf__json_skip(tf__json *j) { return sr__json_skip(&j->r) ? reader_failed(j, "a string key") : 0; }

int tf__json_open(tf__json *j, char open, const char *what) {
    if (tf__json_peek(j) != open) return tf__json_fail(j, what);
    int r = open == '{' ? sr__json_object(&j->r) : sr__json_array(&j->r);
    return r ? reader_failed(j, what) : 0;
}

int tf__json_more(tf__json *j, char close, int *count) {
    size_t before = tf__json_offset(j);
    int r;
    if (close == ']') r = sr__json_element(&j->r);
    else {
        r = sr__json_member(&j->r, &j->str, &j->slen);
        if (r > 0) { /* the key's '"': after whitespace, the ',' and whitespace */
            size_t at = before;
            while (at < j->n && j->s[at] != '"') at++;
            j->key_at = at;
        }
    }
    if (r < 0) return reader_failed(j, "a string key");
    *count += r;
    return r;
}

int tf__json_end(tf__json *j) { return sr__json_end(&j->r) ? reader_failed(j, "the end of the file") : 0; }

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
            return sr__fail(j->err, j->errlen, "%s:%d: the key \"%.*s\" appears twice", j->path,
                            tf__json_line(j, j->key_at), (int)(j->slen > 60 ? 60 : j->slen), j->str);
        tf__str_slot *s = tf__strmap_add(&t->vocab, j->str, j->slen);
        if (!s) return sr__fail(j->err, j->errlen, "%s: out of memory", j->path);
        s->a = id;
        s->b = (int32_t)j->key_at;
    }
    return r;
}
