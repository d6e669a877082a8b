/* The strict pull JSON reader (core/io/json.h): walks of valid documents, every rejection with
   its message and byte offset, escapes, numbers, nesting limits, the string arena's bound. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io/json.h"

/* Reads text[0 .. n) as one value (skipped) and the end: NULL when valid, else "what at byte N". */
static const char *verdict_n(const char *text, size_t n, int max_depth) {
    static char msg[256];
    sr__json j;
    size_t at;
    sr__json_init(&j, text, n, NULL);
    if (max_depth >= 0) j.max_depth = max_depth;
    int rc = sr__json_skip(&j);
    if (rc == 0) rc = sr__json_end(&j);
    const char *what = sr__json_error(&j, &at);
    if (what) snprintf(msg, sizeof msg, "%s at byte %zu", what, at);
    sr__json_free(&j);
    if ((rc == 0) != (what == NULL)) return "return code and error disagree";
    return what ? msg : NULL;
}
static const char *verdict(const char *text) { return verdict_n(text, strlen(text), -1); }

#define VALID(text) CHECK_STR(verdict(text) ? verdict(text) : "valid", "valid")
#define INVALID(text, want) CHECK_STR(verdict(text), want)

static void valid_documents(void) {
    VALID("{}");
    VALID("[]");
    VALID(" \t\r\n{ \"a\" : [ 1 , -2.5e3 , true , false , null , \"s\" , { } , [ ] ] } \n");
    VALID("\"just a string\"");
    VALID("0");
    VALID("-0");
    VALID("true");
    VALID("null");
    VALID("{\"a\":{\"b\":{\"c\":[[[]]]}},\"d\":\"\"}");
    VALID("[\"\xc3\xa9\", \"\xe2\x82\xac\", \"\xf0\x9f\x98\x80\", \"\xf4\x8f\xbf\xbf\"]"); /* 2, 3, 4 bytes; U+10FFFF */
    /* text need not be NUL-terminated: only n bytes are read */
    CHECK(verdict_n("[1]xyz", 3, -1) == NULL);
    CHECK_STR(verdict_n("[1]xyz", 4, -1), "unexpected data after the JSON array at byte 3");
}

static void syntax_errors(void) {
    INVALID("", "expected a value at byte 0");
    INVALID("   ", "expected a value at byte 3");
    INVALID("{", "expected a string at byte 1");
    INVALID("{\"a\":1", "expected ',' or '}' at byte 6");
    INVALID("{\"a\":1 \"b\":2}", "expected ',' or '}' at byte 7");
    INVALID("{\"a\":1,}", "expected a string at byte 7");
    INVALID("{,}", "expected a string at byte 1");
    INVALID("{'a':1}", "expected a string at byte 1");
    INVALID("{1:2}", "expected a string at byte 1");
    INVALID("{\"a\" 1}", "expected ':' at byte 5");
    INVALID("{\"a\":}", "expected a value at byte 5");
    INVALID("[1,]", "expected a value at byte 3");
    INVALID("[,1]", "expected a value at byte 1");
    INVALID("[1 2]", "expected ',' or ']' at byte 3");
    INVALID("[1", "expected ',' or ']' at byte 2");
    INVALID("[}", "expected a value at byte 1");
    INVALID("{]", "expected a string at byte 1");
    INVALID("tru", "expected a value at byte 0");
    INVALID("nul", "expected a value at byte 0");
    INVALID("True", "expected a value at byte 0");
    INVALID("NaN", "expected a value at byte 0");
    INVALID("Infinity", "expected a value at byte 0");
    INVALID("/* c */ 1", "expected a value at byte 0");
    INVALID("\f[]", "expected a value at byte 0"); /* form feed is not JSON whitespace */
    INVALID("{} x", "unexpected data after the JSON object at byte 3");
    INVALID("[] ]", "unexpected data after the JSON array at byte 3");
    INVALID("1 2", "unexpected data after the JSON value at byte 2");
    CHECK_STR(verdict_n("{}\0", 3, -1), "unexpected data after the JSON object at byte 2");
}

/* The decoded value of the one string `text`, or its error. */
static const char *decode(const char *text, size_t *len) {
    static char out[256];
    sr__json j;
    const char *s;
    size_t at;
    sr__json_init(&j, text, strlen(text), NULL);
    if (sr__json_string(&j, &s, len) == 0 && sr__json_end(&j) == 0) {
        memcpy(out, s, *len + 1);
    } else {
        const char *what = sr__json_error(&j, &at);
        snprintf(out, sizeof out, "error: %s at byte %zu", what ? what : "?", at);
    }
    sr__json_free(&j);
    return out;
}

static void strings(void) {
    size_t len;
    CHECK_STR(decode("\"plain\"", &len), "plain");
    CHECK(len == 5);
    CHECK_STR(decode("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"", &len), "\" \\ / \b \f \n \r \t");
    CHECK_STR(decode("\"\\u0041\\u00e9\\u20AC\\ud83d\\ude00\"", &len), "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    CHECK(len == 1 + 2 + 3 + 4);
    CHECK_STR(decode("\"\\udbff\\udfff\"", &len), "\xf4\x8f\xbf\xbf"); /* U+10FFFF */
    CHECK_STR(decode("\"\"", &len), "");
    CHECK(len == 0);
    /* \u0000: the length says where the string really ends */
    const char *s = decode("\"a\\u0000b\"", &len);
    CHECK(len == 3 && s[0] == 'a' && s[1] == 0 && s[2] == 'b');

    CHECK_STR(decode("\"abc", &len), "error: unterminated string at byte 4");
    CHECK_STR(decode("\"abc\\", &len), "error: unterminated string at byte 5");
    CHECK_STR(decode("\"a\tb\"", &len), "error: control character in a string at byte 2");
    CHECK_STR(decode("\"a\nb\"", &len), "error: control character in a string at byte 2");
    CHECK_STR(decode("\"\\q\"", &len), "error: unknown escape in a string at byte 1");
    CHECK_STR(decode("\"\\x41\"", &len), "error: unknown escape in a string at byte 1");
    CHECK_STR(decode("\"\\u12\"", &len), "error: bad \\u escape at byte 1");
    CHECK_STR(decode("\"\\u12g4\"", &len), "error: bad \\u escape at byte 1");
    CHECK_STR(decode("\"\\ud800\"", &len), "error: unpaired surrogate in a \\u escape at byte 1");
    CHECK_STR(decode("\"\\ud800\\u0041\"", &len), "error: unpaired surrogate in a \\u escape at byte 1");
    CHECK_STR(decode("\"\\ud800\\ud800\"", &len), "error: unpaired surrogate in a \\u escape at byte 1");
    CHECK_STR(decode("\"x\\udc00\"", &len), "error: unpaired surrogate in a \\u escape at byte 2");
    CHECK_STR(decode("\"\xff\"", &len), "error: invalid UTF-8 in a string at byte 1");
    CHECK_STR(decode("\"\xc0\xae\"", &len), "error: invalid UTF-8 in a string at byte 1");         /* overlong '.' */
    CHECK_STR(decode("\"\xe0\x80\xaf\"", &len), "error: invalid UTF-8 in a string at byte 1");     /* overlong '/' */
    CHECK_STR(decode("\"\xed\xa0\x80\"", &len), "error: invalid UTF-8 in a string at byte 1");     /* a surrogate */
    CHECK_STR(decode("\"\xf4\x90\x80\x80\"", &len), "error: invalid UTF-8 in a string at byte 1"); /* > U+10FFFF */
    CHECK_STR(decode("\"ab\xe2\x82\"", &len), "error: invalid UTF-8 in a string at byte 3");       /* cut short */
    CHECK_STR(decode("\"\x80\"", &len), "error: invalid UTF-8 in a string at byte 1"); /* a lone continuation */
    CHECK_STR(decode("1", &len), "error: expected a string at byte 0");

    CHECK(sr__json_utf8_valid("", 0));
    CHECK(sr__json_utf8_valid("a\xc3\xa9\xf0\x9f\x98\x80", 7));
    CHECK(!sr__json_utf8_valid("\xc3", 1));
    CHECK(!sr__json_utf8_valid("\xed\xbf\xbf", 3));
    CHECK(!sr__json_utf8_valid("\xf8\x88\x80\x80\x80", 5));
}

/* The one number `text`: 0 with *out, or -1 with the error in msg. */
static int number(const char *text, sr__json_num *out, char *msg, size_t len) {
    sr__json j;
    size_t at;
    sr__json_init(&j, text, strlen(text), NULL);
    int rc = sr__json_number(&j, out);
    if (rc == 0) rc = sr__json_end(&j);
    const char *what = sr__json_error(&j, &at);
    snprintf(msg, len, "%s at byte %zu", what ? what : "", at);
    sr__json_free(&j);
    return rc;
}

static void numbers(void) {
    sr__json_num v;
    char msg[128];
    CHECK(number("0", &v, msg, sizeof msg) == 0 && v.is_uint && v.uint == 0 && v.value == 0);
    CHECK(number("-0", &v, msg, sizeof msg) == 0 && !v.is_uint && v.value == 0 && signbit(v.value));
    CHECK(number("42", &v, msg, sizeof msg) == 0 && v.is_uint && v.uint == 42 && v.value == 42);
    CHECK(number("-17", &v, msg, sizeof msg) == 0 && !v.is_uint && v.value == -17);
    CHECK(number("1.5", &v, msg, sizeof msg) == 0 && !v.is_uint && v.value == 1.5);
    CHECK(number("1e3", &v, msg, sizeof msg) == 0 && !v.is_uint && v.value == 1000);
    CHECK(number("1E+3", &v, msg, sizeof msg) == 0 && v.value == 1000);
    CHECK(number("-2.5e-3", &v, msg, sizeof msg) == 0 && v.value == -2.5e-3);
    CHECK(number("0.1", &v, msg, sizeof msg) == 0 && v.value == 0.1);
    /* what the checkpoint writer writes (%.17g) comes back bit for bit */
    CHECK(number("0.10000000000000001", &v, msg, sizeof msg) == 0 && v.value == 0.1);
    CHECK(number("65536", &v, msg, sizeof msg) == 0 && v.value == 65536.0);
    CHECK(number("18446744073709551615", &v, msg, sizeof msg) == 0 && v.is_uint && v.uint == UINT64_MAX &&
          v.value == 18446744073709551615.0);
    CHECK(number("18446744073709551616", &v, msg, sizeof msg) == 0 && v.is_uint && v.uint == UINT64_MAX &&
          v.value == 18446744073709551616.0); /* saturated, but the value is right */
    CHECK(number("9007199254740993", &v, msg, sizeof msg) == 0 && v.uint == 9007199254740993u &&
          v.value == 9007199254740992.0); /* 2^53 + 1, rounded to even as strtod rounds */
    CHECK(number("1e400", &v, msg, sizeof msg) == 0 && isinf(v.value) && v.value > 0);
    CHECK(number("-1e400", &v, msg, sizeof msg) == 0 && isinf(v.value) && v.value < 0);
    CHECK(number("1e-400", &v, msg, sizeof msg) == 0 && v.value == 0);
    char longnum[200] = "1.";
    for (int i = 0; i < 150; i++) strcat(longnum, "0");
    strcat(longnum, "1");
    CHECK(number(longnum, &v, msg, sizeof msg) == 0 && v.value == 1.0); /* longer than the stack copy */

    CHECK(number("01", &v, msg, sizeof msg) == -1);
    CHECK_STR(msg, "number with a leading zero at byte 0");
    CHECK(number("-01", &v, msg, sizeof msg) == -1);
    CHECK_STR(msg, "number with a leading zero at byte 1");
    CHECK(number("-", &v, msg, sizeof msg) == -1);
    CHECK_STR(msg, "bad number at byte 1");
    CHECK(number("-a", &v, msg, sizeof msg) == -1);
    CHECK_STR(msg, "bad number at byte 1");
    CHECK(number("1.", &v, msg, sizeof msg) == -1);
    CHECK_STR(msg, "bad number at byte 2");
    CHECK(number("1.e5", &v, msg, sizeof msg) == -1);
    CHECK_STR(msg, "bad number at byte 2");
    CHECK(number("1e", &v, msg, sizeof msg) == -1);
    CHECK_STR(msg, "bad number at byte 2");
    CHECK(number("1e+", &v, msg, sizeof msg) == -1);
    CHECK_STR(msg, "bad number at byte 3");
    CHECK(number(".5", &v, msg, sizeof msg) == -1);
    CHECK_STR(msg, "expected a number at byte 0");
    CHECK(number("+1", &v, msg, sizeof msg) == -1);
    CHECK_STR(msg, "expected a number at byte 0");
    CHECK(number("\"1\"", &v, msg, sizeof msg) == -1);
    CHECK_STR(msg, "expected a number at byte 0");
    CHECK(number("0x10", &v, msg, sizeof msg) == -1);
    CHECK_STR(msg, "unexpected data after the JSON value at byte 1");
    CHECK(number("1.5.5", &v, msg, sizeof msg) == -1);
    CHECK_STR(msg, "unexpected data after the JSON value at byte 3");
}

static void nesting(void) {
    char doc[400];
    /* a value may sit inside max_depth containers (64 by default) */
    for (int depth = 63; depth <= 66; depth++) {
        size_t n = 0;
        for (int i = 0; i < depth; i++) doc[n++] = '[';
        doc[n++] = '1';
        for (int i = 0; i < depth; i++) doc[n++] = ']';
        doc[n] = 0;
        if (depth <= 64) CHECK(verdict(doc) == NULL);
        else CHECK_STR(verdict(doc), "nesting too deep at byte 65"); /* the first value inside 65 */
    }
    /* an empty container inside 64 is fine: it holds nothing deeper */
    size_t n = 0;
    for (int i = 0; i < 65; i++) doc[n++] = '[';
    for (int i = 0; i < 65; i++) doc[n++] = ']';
    doc[n] = 0;
    CHECK(verdict(doc) == NULL);
    /* objects count too, and the limit can be lowered */
    CHECK(verdict_n("{\"a\":[1]}", 9, 2) == NULL);
    CHECK_STR(verdict_n("{\"a\":[[1]]}", 11, 2), "nesting too deep at byte 7");
    CHECK_STR(verdict_n("[[]]", 4, 0), "nesting too deep at byte 1");
    CHECK(verdict_n("[]", 2, 0) == NULL);
    /* deep but unterminated: the limit is met before the end */
    n = 0;
    for (int i = 0; i < 200; i++) doc[n++] = '[';
    doc[n] = 0;
    CHECK_STR(verdict(doc), "nesting too deep at byte 65");
}

/* A walk of a document with every kind of value, as a caller would read it. */
static void walk(void) {
    const char *doc = "{\"name\": \"gpt2\", \"shape\": [768, 3072], \"lr\": 6.25e-5, \"ok\": true, \"none\": null, "
                      "\"skip\": {\"x\": [1, {\"y\": \"z\"}]}, \"k\\u00e9y\": false}";
    sr__json j;
    const char *key, *s = NULL;
    size_t klen, slen;
    sr__json_num num;
    long long shape[4];
    int nshape = 0, ok = -1, no = -1, seen_null = 0, r, e;
    double lr = 0;
    sr__json_init(&j, doc, strlen(doc), NULL);
    CHECK(sr__json_peek(&j) == SR__JSON_OBJECT);
    CHECK(sr__json_object(&j) == 0);
    while ((r = sr__json_member(&j, &key, &klen)) > 0) {
        if (sr__json_key_is(key, klen, "name")) {
            CHECK(sr__json_peek(&j) == SR__JSON_STRING);
            CHECK(sr__json_string(&j, &s, &slen) == 0);
        } else if (sr__json_key_is(key, klen, "shape")) {
            CHECK(sr__json_peek(&j) == SR__JSON_ARRAY && sr__json_array(&j) == 0);
            while ((e = sr__json_element(&j)) > 0) {
                CHECK(sr__json_peek(&j) == SR__JSON_NUMBER && sr__json_number(&j, &num) == 0 && num.is_uint);
                if (nshape < 4) shape[nshape++] = (long long)num.uint;
            }
            CHECK(e == 0);
        } else if (sr__json_key_is(key, klen, "lr")) {
            CHECK(sr__json_number(&j, &num) == 0 && !num.is_uint);
            lr = num.value;
        } else if (sr__json_key_is(key, klen, "ok")) {
            CHECK(sr__json_peek(&j) == SR__JSON_BOOL && sr__json_bool(&j, &ok) == 0);
        } else if (sr__json_key_is(key, klen, "none")) {
            CHECK(sr__json_peek(&j) == SR__JSON_NULL && sr__json_null(&j) == 0);
            seen_null = 1;
        } else if (sr__json_key_is(key, klen, "k\xc3\xa9y")) {
            CHECK(sr__json_bool(&j, &no) == 0);
        } else {
            CHECK(sr__json_key_is(key, klen, "skip"));
            CHECK(sr__json_skip(&j) == 0);
        }
    }
    CHECK(r == 0);
    CHECK(sr__json_peek(&j) == SR__JSON_NONE);
    CHECK(sr__json_end(&j) == 0 && sr__json_error(&j, NULL) == NULL);
    CHECK_STR(s, "gpt2"); /* strings live until sr__json_free */
    CHECK(nshape == 2 && shape[0] == 768 && shape[1] == 3072);
    CHECK(lr == 6.25e-5 && ok == 1 && no == 0 && seen_null);
    sr__json_free(&j);
}

/* Calls out of order fail cleanly, and an error sticks. */
static void misuse(void) {
    sr__json j;
    const char *key;
    size_t klen, at;
    int b;
    sr__json_init(&j, "[1, 2]", 6, NULL);
    CHECK(sr__json_member(&j, &key, &klen) == -1); /* nothing is open */
    CHECK_STR(sr__json_error(&j, &at), "not inside an object");
    CHECK(sr__json_array(&j) == -1); /* the error sticks */
    sr__json_free(&j);

    sr__json_init(&j, "[1, 2]", 6, NULL);
    CHECK(sr__json_array(&j) == 0);
    CHECK(sr__json_member(&j, &key, &klen) == -1);
    CHECK_STR(sr__json_error(&j, NULL), "not inside an object");
    sr__json_free(&j);

    sr__json_init(&j, "[1, 2]", 6, NULL);
    CHECK(sr__json_array(&j) == 0 && sr__json_element(&j) == 1);
    CHECK(sr__json_element(&j) == -1); /* the first element was never read */
    CHECK_STR(sr__json_error(&j, NULL), "the previous value was not read");
    sr__json_free(&j);

    sr__json_init(&j, "[1, 2]", 6, NULL);
    CHECK(sr__json_array(&j) == 0);
    CHECK(sr__json_bool(&j, &b) == -1); /* no element was asked for */
    CHECK(sr__json_error(&j, NULL) != NULL);
    sr__json_free(&j);

    sr__json_init(&j, "{\"a\": 1}", 8, NULL);
    CHECK(sr__json_object(&j) == 0 && sr__json_member(&j, &key, &klen) == 1);
    CHECK(sr__json_end(&j) == -1);
    CHECK_STR(sr__json_error(&j, NULL), "the document ends early");
    sr__json_free(&j);

    sr__json_init(&j, "null", 4, NULL);
    CHECK(sr__json_bool(&j, &b) == -1);
    CHECK_STR(sr__json_error(&j, &at), "expected true or false");
    CHECK(at == 0);
    sr__json_free(&j);

    /* a caller's own complaint, at the current offset */
    sr__json_init(&j, "  [1]", 5, NULL);
    CHECK(sr__json_fail(&j, "expected '{' (a header)") == -1);
    CHECK_STR(sr__json_error(&j, &at), "expected '{' (a header)");
    CHECK(at == 2);
    CHECK(sr__json_fail(&j, "later") == -1);
    CHECK_STR(sr__json_error(&j, NULL), "expected '{' (a header)"); /* the first one is kept */
    sr__json_free(&j);
}

/* A caller's arena of n + 1 bytes holds every decoded string, even when nearly all of the text
   is empty strings and keys (the tightest case). */
static void arena_bound(void) {
    char doc[2048];
    size_t n = 0;
    n += (size_t)snprintf(doc + n, sizeof doc - n, "{");
    for (int i = 0; i < 100; i++)
        n += (size_t)snprintf(doc + n, sizeof doc - n, "%s\"\":[\"\",\"\\u0000\"]", i ? "," : "");
    n += (size_t)snprintf(doc + n, sizeof doc - n, "}");
    char *arena = malloc(n + 1 + 16);
    memset(arena, 0x5a, n + 1 + 16);
    sr__json j;
    sr__json_init(&j, doc, n, arena);
    CHECK(sr__json_skip(&j) == 0 && sr__json_end(&j) == 0);
    int intact = 1;
    for (size_t i = n + 1; i < n + 1 + 16; i++) intact &= arena[i] == 0x5a;
    CHECK(intact);
    sr__json_free(&j); /* not the reader's: left alone */
    free(arena);
    /* "" alone: 3 bytes of text, 1 of arena */
    char small[4];
    memset(small, 0x5a, sizeof small);
    sr__json_init(&j, "\"\"", 2, small);
    const char *s;
    CHECK(sr__json_string(&j, &s, NULL) == 0 && s == small && small[0] == 0 && small[1] == 0x5a);
    sr__json_free(&j);
}

/* nonfinite (opt-in): NaN, Infinity and -Infinity as Python's json writes them, nothing looser */
static double nonfinite_number(const char *text, const char **err) {
    sr__json j;
    sr__json_num num = {0};
    size_t at;
    sr__json_init(&j, text, strlen(text), NULL);
    j.nonfinite = 1;
    int rc = sr__json_array(&j) == 0 && sr__json_element(&j) == 1 && sr__json_number(&j, &num) == 0 &&
                     sr__json_element(&j) == 0 && sr__json_end(&j) == 0
                 ? 0
                 : -1;
    *err = sr__json_error(&j, &at);
    sr__json_free(&j);
    return rc == 0 ? num.value : -12345;
}

static void nonfinite(void) {
    const char *err;
    CHECK(isnan(nonfinite_number("[NaN]", &err)) && !err);
    CHECK(nonfinite_number("[Infinity]", &err) == INFINITY && !err);
    CHECK(nonfinite_number("[ -Infinity ]", &err) == -INFINITY && !err);
    CHECK(nonfinite_number("[-2.5]", &err) == -2.5 && !err);
    static const char *const bad[] = {"[-NaN]", "[nan]", "[Nan]",       "[NaNa]",
                                      "[Inf]",  "[inf]", "[+Infinity]", "[Infinit]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        nonfinite_number(bad[i], &err);
        CHECK(err != NULL);
    }
    /* skipped as numbers too; a strict reader (the default) still refuses them */
    sr__json j;
    const char *doc = "{\"a\": [NaN, -Infinity], \"b\": Infinity}";
    sr__json_init(&j, doc, strlen(doc), NULL);
    j.nonfinite = 1;
    CHECK(sr__json_skip(&j) == 0 && sr__json_end(&j) == 0);
    sr__json_free(&j);
    CHECK(verdict("[NaN]") != NULL);
    CHECK(verdict("[-Infinity]") != NULL);
    CHECK(verdict("Infinity") != NULL);
}

int main(void) {
    nonfinite();
    valid_documents();
    syntax_errors();
    strings();
    numbers();
    nesting();
    walk();
    misuse();
    arena_bound();
    return CHECK_DONE();
}
