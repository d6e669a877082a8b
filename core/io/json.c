/* The strict pull reader of json.h. */
#define _POSIX_C_SOURCE 200809L
#include "io/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

enum { FIRST_DONE = 0x80 }; /* or-ed into open[] (an ASCII bracket): the container's first item was read */

void sr__json_init(sr__json *j, const void *text, size_t n, char *arena) {
    memset(j, 0, sizeof *j);
    j->max_depth = SR__JSON_MAX_DEPTH;
    j->s = text;
    j->n = n;
    j->arena = arena;
    j->pending = 1;
}

void sr__json_free(sr__json *j) {
    if (j->own_arena) free(j->arena);
    j->arena = NULL;
    j->own_arena = 0;
}

int sr__json_fail(sr__json *j, const char *what) {
    if (!j->error) {
        while (j->i < j->n && (j->s[j->i] == ' ' || j->s[j->i] == '\t' || j->s[j->i] == '\n' || j->s[j->i] == '\r'))
            j->i++;
        j->error = what;
        j->error_at = j->i;
    }
    return -1;
}

/* The error at the current offset, whitespace not skipped (inside a string or a number). */
static int fail_here(sr__json *j, const char *what) {
    if (!j->error) j->error = what, j->error_at = j->i;
    return -1;
}

const char *sr__json_error(const sr__json *j, size_t *at) {
    if (at) *at = j->error ? j->error_at : 0;
    return j->error;
}

/* The next byte after whitespace, or -1 at the end. */
static int next(sr__json *j) {
    while (j->i < j->n && (j->s[j->i] == ' ' || j->s[j->i] == '\t' || j->s[j->i] == '\n' || j->s[j->i] == '\r')) j->i++;
    return j->i < j->n ? j->s[j->i] : -1;
}

sr__json_type sr__json_peek(sr__json *j) {
    switch (next(j)) {
    case '{': return SR__JSON_OBJECT;
    case '[': return SR__JSON_ARRAY;
    case '"': return SR__JSON_STRING;
    case 't':
    case 'f': return SR__JSON_BOOL;
    case 'n': return SR__JSON_NULL;
    case 'N':
    case 'I': return j->nonfinite ? SR__JSON_NUMBER : SR__JSON_NONE;
    case '-':
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9': return SR__JSON_NUMBER;
    default: return SR__JSON_NONE;
    }
}

/* Every value starts here: one must be due, and within the depth limit.  The next byte, or -1.
   (After an error nothing is read again, so a failed value leaves no state to repair.) */
static int begin_value(sr__json *j) {
    if (j->error) return -1;
    if (!j->pending) return sr__json_fail(j, "no value is due here (read the member or element first)");
    /* (open[] holds SR__JSON_MAX_DEPTH + 1: the containers around a value, and the value itself) */
    if (j->depth > j->max_depth || j->depth > SR__JSON_MAX_DEPTH) return sr__json_fail(j, "nesting too deep");
    int c = next(j);
    if (c == -1) return sr__json_fail(j, "expected a value");
    j->pending = 0;
    if (j->depth == 0) j->top = sr__json_peek(j);
    return c;
}

/* ---- containers ------------------------------------------------------------------------------ */

static int open_container(sr__json *j, int bracket, const char *what) {
    int c = begin_value(j);
    if (c < 0) return -1;
    if (c != bracket) return sr__json_fail(j, what);
    j->open[j->depth++] = (unsigned char)bracket;
    j->i++;
    return 0;
}

int sr__json_object(sr__json *j) { return open_container(j, '{', "expected an object"); }
int sr__json_array(sr__json *j) { return open_container(j, '[', "expected an array"); }

/* Before a member or element of the innermost container (opened by `bracket`, closed by
   `close`): 1 when one follows (after its ',' when not the first), 0 at the close. */
static int next_item(sr__json *j, int bracket, int close, const char *expected_sep) {
    if (j->error) return -1;
    if (j->depth == 0 || (j->open[j->depth - 1] & ~FIRST_DONE) != bracket)
        return sr__json_fail(j, bracket == '{' ? "not inside an object" : "not inside an array");
    if (j->pending) return sr__json_fail(j, "the previous value was not read");
    unsigned char *st = &j->open[j->depth - 1];
    int c = next(j);
    if (c == close) {
        j->i++;
        j->depth--;
        return 0;
    }
    if (*st & FIRST_DONE) {
        if (c != ',') return sr__json_fail(j, expected_sep);
        j->i++;
    }
    *st |= FIRST_DONE;
    j->pending = 1;
    return 1;
}

static int read_string(sr__json *j, const char **out, size_t *outlen);

int sr__json_member(sr__json *j, const char **key, size_t *klen) {
    int r = next_item(j, '{', '}', "expected ',' or '}'");
    if (r <= 0) return r;
    if (next(j) != '"') return sr__json_fail(j, "expected a string");
    if (read_string(j, key, klen) != 0) return -1;
    if (next(j) != ':') return sr__json_fail(j, "expected ':'");
    j->i++;
    return 1;
}

int sr__json_element(sr__json *j) { return next_item(j, '[', ']', "expected ',' or ']'"); }

/* ---- strings --------------------------------------------------------------------------------- */

/* The length of the valid UTF-8 sequence at s (n bytes available), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0], lo = 0x80, hi = 0xBF;
    size_t len;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if (c == 0xED) len = 3, hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF) len = 3;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c == 0xF4) len = 4, hi = 0x8F;
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else return 0;
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return len;
}

int sr__json_utf8_valid(const char *s, size_t n) {
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = utf8_seq((const unsigned char *)s + i, n - i))) return 0;
    return 1;
}

static int hex4(const unsigned char *s, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= c - '0';
        else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
        else return -1;
    }
    *out = v;
    return 0;
}

static size_t utf8_put(char *o, unsigned cp) {
    if (cp < 0x80) return o[0] = (char)cp, 1;
    if (cp < 0x800) return o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | ((cp >> 6) & 0x3F)), o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The string at j->i (its opening quote), decoded into the arena. */
static int read_string(sr__json *j, const char **out, size_t *outlen) {
    if (!j->arena) {
        if (!(j->arena = sr__malloc(j->n + 1))) return sr__json_fail(j, "out of memory");
        j->own_arena = 1;
    }
    j->i++;
    char *o = j->arena + j->an;
    size_t k = 0;
    for (;;) {
        if (j->i >= j->n) return fail_here(j, "unterminated string");
        unsigned c = j->s[j->i];
        if (c == '"') {
            j->i++;
            break;
        }
        if (c < 0x20) return fail_here(j, "control character in a string");
        if (c < 0x80 && c != '\\') { /* ASCII, the common case: no sequence to check */
            o[k++] = (char)c;
            j->i++;
            continue;
        }
        if (c != '\\') {
            size_t len = utf8_seq(j->s + j->i, j->n - j->i);
            if (!len) return fail_here(j, "invalid UTF-8 in a string");
            memcpy(o + k, j->s + j->i, len);
            k += len;
            j->i += len;
            continue;
        }
        if (j->i + 1 >= j->n) return j->i++, fail_here(j, "unterminated string");
        unsigned e = j->s[j->i + 1], cp;
        const char *simple = strchr("\"\\/bfnrt", (int)e), *to = "\"\\/\b\f\n\r\t";
        if (e && simple) {
            o[k++] = to[simple - "\"\\/bfnrt"];
            j->i += 2;
            continue;
        }
        if (e != 'u') return fail_here(j, "unknown escape in a string");
        if (j->i + 6 > j->n || hex4(j->s + j->i + 2, &cp)) return fail_here(j, "bad \\u escape");
        if (cp >= 0xDC00 && cp <= 0xDFFF) return fail_here(j, "unpaired surrogate in a \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) { /* a UTF-16 surrogate pair: \uD83D\uDE00 is one code point */
            unsigned lo;
            if (j->i + 12 > j->n || j->s[j->i + 6] != '\\' || j->s[j->i + 7] != 'u' || hex4(j->s + j->i + 8, &lo) ||
                lo < 0xDC00 || lo > 0xDFFF)
                return fail_here(j, "unpaired surrogate in a \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            j->i += 6;
        }
        j->i += 6;
        k += utf8_put(o + k, cp);
    }
    o[k] = 0;
    j->an += k + 1;
    *out = o;
    if (outlen) *outlen = k;
    return 0;
}

int sr__json_string(sr__json *j, const char **s, size_t *len) {
    int c = begin_value(j);
    if (c < 0) return -1;
    if (c != '"') return sr__json_fail(j, "expected a string");
    return read_string(j, s, len);
}

/* ---- numbers and literals ------------------------------------------------------------------- */

static int digit(const sr__json *j, size_t i) { return i < j->n && j->s[i] >= '0' && j->s[i] <= '9'; }

static int literal(sr__json *j, const char *word) {
    size_t l = strlen(word);
    if (j->n - j->i < l || memcmp(j->s + j->i, word, l)) return sr__json_fail(j, "expected a value");
    j->i += l;
    return 0;
}

int sr__json_number(sr__json *j, sr__json_num *out) {
    int c = begin_value(j);
    if (c < 0) return -1;
    const unsigned char *s = j->s;
    size_t start = j->i;
    int neg = 0, frac = 0;
    uint64_t v = 0;
    if (j->nonfinite) { /* Python's json.dumps: NaN, Infinity, -Infinity */
        size_t at = j->i + (c == '-');
        const char *word = at < j->n && s[at] == 'N' ? "NaN" : at < j->n && s[at] == 'I' ? "Infinity" : NULL;
        if (word && (c != '-' || word[0] == 'I')) {
            j->i = at;
            if (literal(j, word) != 0) return -1;
            *out = (sr__json_num){.value = word[0] == 'N' ? NAN : c == '-' ? -INFINITY : INFINITY};
            return 0;
        }
    }
    if (c != '-' && !digit(j, j->i)) return sr__json_fail(j, "expected a number");
    if (c == '-') neg = 1, j->i++;
    if (!digit(j, j->i)) return fail_here(j, "bad number");
    if (s[j->i] == '0' && digit(j, j->i + 1)) return fail_here(j, "number with a leading zero");
    for (; digit(j, j->i); j->i++) {
        unsigned d = s[j->i] - '0';
        v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
    }
    if (j->i < j->n && s[j->i] == '.') {
        frac = 1;
        if (!digit(j, ++j->i)) return fail_here(j, "bad number");
        while (digit(j, j->i)) j->i++;
    }
    if (j->i < j->n && (s[j->i] == 'e' || s[j->i] == 'E')) {
        frac = 1;
        if (++j->i < j->n && (s[j->i] == '+' || s[j->i] == '-')) j->i++;
        if (!digit(j, j->i)) return fail_here(j, "bad number");
        while (digit(j, j->i)) j->i++;
    }
    out->is_uint = !neg && !frac;
    out->uint = v;
    if (out->is_uint && v != UINT64_MAX) {
        out->value = (double)v; /* exact integer, rounded once: what strtod gives */
        return 0;
    }
    /* strtod needs a NUL: a copy (numbers are short; a long one goes to the heap) */
    size_t len = j->i - start;
    char small[64], *buf = len < sizeof small ? small : sr__malloc(len + 1);
    if (!buf) return fail_here(j, "out of memory");
    memcpy(buf, s + start, len);
    buf[len] = 0;
    out->value = strtod(buf, NULL);
    if (buf != small) free(buf);
    return 0;
}

int sr__json_bool(sr__json *j, int *out) {
    int c = begin_value(j);
    if (c < 0) return -1;
    if (c != 't' && c != 'f') return sr__json_fail(j, "expected true or false");
    *out = c == 't';
    return literal(j, c == 't' ? "true" : "false");
}

int sr__json_null(sr__json *j) {
    if (begin_value(j) < 0) return -1;
    return literal(j, "null");
}

/* ---- skipping, the end ---------------------------------------------------------------------- */

int sr__json_skip(sr__json *j) {
    const char *str;
    sr__json_num num;
    int r, b;
    switch (sr__json_peek(j)) {
    case SR__JSON_OBJECT:
        if (sr__json_object(j)) return -1;
        while ((r = sr__json_member(j, &str, NULL)) > 0)
            if (sr__json_skip(j)) return -1;
        return r;
    case SR__JSON_ARRAY:
        if (sr__json_array(j)) return -1;
        while ((r = sr__json_element(j)) > 0)
            if (sr__json_skip(j)) return -1;
        return r;
    case SR__JSON_STRING: return sr__json_string(j, &str, NULL);
    case SR__JSON_NUMBER: return sr__json_number(j, &num);
    case SR__JSON_BOOL: return sr__json_bool(j, &b);
    case SR__JSON_NULL: return sr__json_null(j);
    default:
        if (begin_value(j) < 0) return -1;
        return sr__json_fail(j, "expected a value");
    }
}

int sr__json_end(sr__json *j) {
    if (j->error) return -1;
    if (j->pending || j->depth) return sr__json_fail(j, "the document ends early");
    if (next(j) == -1) return 0;
    return sr__json_fail(j, j->top == SR__JSON_OBJECT  ? "unexpected data after the JSON object"
                            : j->top == SR__JSON_ARRAY ? "unexpected data after the JSON array"
                                                       : "unexpected data after the JSON value");
}
