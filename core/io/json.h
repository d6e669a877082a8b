/*
 * A small strict JSON reader (RFC 8259), pull style: the caller walks the document asking for the
 * value it expects next, and nothing is built but the strings it reads.  It reads the safetensors
 * header (up to 100 MB), a checkpoint's trainer_state.json and the lines of train_log.jsonl.
 *
 * Lifecycle: sr__json_init(text) -> the caller's walk -> sr__json_end (only whitespace may follow
 * the value) -> sr__json_free.  A walk, e.g. for {"step": 3, "loss": 1.5}:
 *
 *     if (sr__json_object(&j) != 0) ...;
 *     while ((r = sr__json_member(&j, &key, &klen)) > 0)      // 1: a key, its value comes next
 *         if (sr__json_key_is(key, klen, "step")) sr__json_number(&j, &num);
 *         else sr__json_skip(&j);                             // every value is read or skipped
 *     if (r < 0 || sr__json_end(&j) != 0) ...;                // 0: the object closed
 *
 * Strict: no comments, trailing commas, single quotes, leading zeros, NaN or Infinity (unless the
 * caller sets nonfinite); strings must be valid UTF-8 (no overlong forms or surrogates) without raw
 * control characters; \u escapes must pair their surrogates.  Bounded: a value may sit inside at
 * most max_depth containers, and strings are decoded into one arena the size of the text plus one byte, which
 * always suffices (a decoded string plus its NUL is shorter than its quoted form).  Strings stay
 * valid until sr__json_free, or as long as the caller's arena when it gave one.
 *
 * Errors: a call that fails returns -1, and so does every call after it; sr__json_error() says
 * what was wrong ("expected ':'", "unpaired surrogate in a \u escape", ...) and the byte offset
 * in the text.  Never prints.  A caller that finds the document well-formed but not what it
 * expects may record its own complaint at the current offset with sr__json_fail().
 */
#ifndef SR__IO_JSON_H
#define SR__IO_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SR__JSON_MAX_DEPTH 64

typedef enum sr__json_type {
    SR__JSON_NONE = 0, /* the end of the text, or a byte no value starts with */
    SR__JSON_OBJECT,
    SR__JSON_ARRAY,
    SR__JSON_STRING,
    SR__JSON_NUMBER,
    SR__JSON_BOOL,
    SR__JSON_NULL
} sr__json_type;

typedef struct sr__json_num {
    double value;  /* the number, correctly rounded (+-HUGE_VAL beyond the double range) */
    int is_uint;   /* written without sign, fraction or exponent; then: */
    uint64_t uint; /* its value, saturated at UINT64_MAX */
} sr__json_num;

typedef struct sr__json {
    int max_depth; /* containers a value may sit inside: SR__JSON_MAX_DEPTH unless lowered after init */
    int nonfinite; /* set after init to read NaN, Infinity and -Infinity as numbers (what Python's json
                      writes, e.g. in HF's trainer_state.json); off: strict */
    /* the rest is the reader's own */
    const unsigned char *s;
    size_t n, i;
    char *arena;
    size_t an;
    int own_arena;
    int depth;                                  /* containers open */
    unsigned char open[SR__JSON_MAX_DEPTH + 1]; /* per open container: '{' or '[', | 0x80 after its first item */
    int pending;                                /* a value is due (the top one, a member's, an element) */
    sr__json_type top;                          /* what the top-level value was */
    const char *error;
    size_t error_at;
} sr__json;

/* Reads text[0 .. n) (no NUL needed).  arena: n + 1 bytes for the decoded strings, or NULL to have
   the reader allocate them (freed by sr__json_free). */
void sr__json_init(sr__json *j, const void *text, size_t n, char *arena);
void sr__json_free(sr__json *j);

/* What the next value is, without reading it (whitespace is skipped). */
sr__json_type sr__json_peek(sr__json *j);

/* Objects: sr__json_object reads the '{'; then each sr__json_member returns 1 with the next key
   (decoded; klen differs from strlen(key) when it holds \u0000) and the ':' read, the value
   being next, or 0 when the object closed.  -1 on an error. */
int sr__json_object(sr__json *j);
int sr__json_member(sr__json *j, const char **key, size_t *klen);
/* Arrays: sr__json_array reads the '['; sr__json_element returns 1 when an element is next, 0
   when the array closed, -1 on an error. */
int sr__json_array(sr__json *j);
int sr__json_element(sr__json *j);

/* Scalars: 0, or -1 when the next value is not one (or is malformed). */
int sr__json_string(sr__json *j, const char **s, size_t *len);
int sr__json_number(sr__json *j, sr__json_num *out);
int sr__json_bool(sr__json *j, int *out);
int sr__json_null(sr__json *j);
/* Any value, checked and discarded. */
int sr__json_skip(sr__json *j);
/* After the top-level value: 0 when only whitespace remains. */
int sr__json_end(sr__json *j);

/* The byte offset in the text the reader has reached: just past the last token read, or at the
   next value after sr__json_peek.  For callers that note where values are (to seek back with a
   reader of their own, or to name a line in a message). */
static inline size_t sr__json_offset(const sr__json *j) { return j->i; }

/* Records `what` (a string that outlives the reader) as the error at the current offset; -1. */
int sr__json_fail(sr__json *j, const char *what);
/* The first error and its byte offset, or NULL. */
const char *sr__json_error(const sr__json *j, size_t *at);

static inline int sr__json_key_is(const char *key, size_t klen, const char *want) {
    return klen == strlen(want) && !memcmp(key, want, klen);
}

/* s[0 .. n) is UTF-8 as a strict reader accepts it in a string (no overlong forms, surrogates or
   code points past U+10FFFF): for writers that must produce what readers take. */
int sr__json_utf8_valid(const char *s, size_t n);

#endif
