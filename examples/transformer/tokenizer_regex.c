/*
 * The tokenizer's regular expressions (tokenizer_impl.h, tf__regex_*): the `Split` patterns of an HF
 * tokenizer.json, and GPT-2's pattern (ByteLevel's use_regex), run by PCRE2 (Debian's libpcre2-8,
 * compiled with UTF, UCP and its JIT).
 *
 * HF's tokenizers library runs these patterns with Oniguruma; the few places where the two dialects
 * read the same text differently are rewritten before PCRE2 compiles the pattern:
 *  - \s and \S: Oniguruma's Unicode \s is U+0009-000D, U+0085 and the categories Zs Zl Zp (the
 *    White_Space property); PCRE2's depends on its version and options, so both are spelled out.
 *  - a class inside a class (BLOOM's `[^(\s|[.,!?])]`): Oniguruma takes the union, PCRE2 a literal
 *    '[': the inner brackets are dropped.  A negated inner class, `&&` (intersection) and Oniguruma's
 *    \h (a hexadecimal digit there, horizontal space in PCRE2) are refused.
 * Texts are valid UTF-8 when they get here (tokenizer_pretok.c replaces the bytes that are not), so
 * matching skips PCRE2's own UTF check, which would otherwise read the whole text at every match.
 *
 * Lifecycle: tf__regex_compile -> tf__regex_find any number of times (one thread at a time: the
 * match data is the regex's own) -> tf__regex_free.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer_impl.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tf__regex {
    pcre2_code *code;
    pcre2_match_data *md;
    int jit; /* pcre2_jit_compile succeeded: pcre2_jit_match */
};

/* Unicode White_Space, as a class body */
#define WHITE_SPACE_BODY "\\t-\\r\\x{85}\\p{Z}"

/* the pattern rewritten for PCRE2 into *out (malloc'ed, NUL-terminated): 0, or -1 with a message */
static int translate(const char *p, size_t n, char **out, char *err, size_t errlen) {
    size_t cap = 4 * n + 64, o = 0;
    char *s = malloc(cap);
    if (!s) return tf__fail(err, errlen, "out of memory");
    int depth = 0; /* class nesting */
    for (size_t i = 0; i < n; i++) {
        if (o + 32 > cap) {
            char *g = realloc(s, cap *= 2);
            if (!g) return free(s), tf__fail(err, errlen, "out of memory");
            s = g;
        }
        char c = p[i];
        if (c == '\\' && i + 1 < n) {
            char e = p[++i];
            if (e == 's' || e == 'S') {
                if (depth && e == 'S') {
                    free(s);
                    return tf__fail(err, errlen, "\\S inside a class (at pattern byte %zu) is not supported", i - 1);
                }
                const char *w = depth      ? WHITE_SPACE_BODY
                                : e == 's' ? "[" WHITE_SPACE_BODY "]"
                                           : "[^" WHITE_SPACE_BODY "]";
                memcpy(s + o, w, strlen(w));
                o += strlen(w);
                continue;
            }
            if (e == 'h' || e == 'H') {
                free(s);
                return tf__fail(err, errlen,
                                "\\%c (at pattern byte %zu) means a hexadecimal digit to HF's regex engine and "
                                "horizontal space to PCRE2: not supported; write [0-9a-fA-F]",
                                e, i - 1);
            }
            s[o++] = '\\';
            s[o++] = e;
            continue;
        }
        if (c == '[') {
            size_t j = i + 1;
            int negated = j < n && p[j] == '^';
            if (depth && j < n && p[j] == ':') { /* a POSIX class [:alpha:]: both read it alike */
                const char *close = NULL;
                for (size_t k = j + 1; k + 1 < n; k++)
                    if (p[k] == ':' && p[k + 1] == ']') {
                        close = p + k + 2;
                        break;
                    }
                if (close) {
                    size_t k = (size_t)(close - (p + i));
                    memcpy(s + o, p + i, k);
                    o += k;
                    i += k - 1;
                    continue;
                }
            }
            if (depth && negated) {
                free(s);
                return tf__fail(err, errlen, "a negated class inside a class (at pattern byte %zu) is not supported",
                                i);
            }
            if (!depth) {
                s[o++] = '[';
                if (negated) s[o++] = '^', j++;
                if (j < n && p[j] == ']') s[o++] = '\\', s[o++] = ']', j++; /* a leading ']' is literal */
                i = j - 1;
            }
            depth++; /* an inner class: its brackets go, its members join the outer class */
            continue;
        }
        if (c == ']' && depth) {
            if (--depth == 0) s[o++] = ']';
            continue;
        }
        if (c == '&' && depth && i + 1 < n && p[i + 1] == '&') {
            free(s);
            return tf__fail(err, errlen, "a class intersection && (at pattern byte %zu) is not supported", i);
        }
        s[o++] = c;
    }
    s[o] = 0;
    *out = s;
    return 0;
}

tf__regex *tf__regex_compile(const char *pattern, size_t n, char *err, size_t errlen) {
    char *p;
    if (translate(pattern, n, &p, err, errlen)) return NULL;
    tf__regex *r = calloc(1, sizeof *r);
    if (!r) return free(p), tf__fail(err, errlen, "out of memory"), NULL;
    int code;
    PCRE2_SIZE at;
    r->code = pcre2_compile((PCRE2_SPTR)p, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code, &at, NULL);
    if (!r->code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        tf__fail(err, errlen, "PCRE2 cannot compile it: %s (at byte %zu of its PCRE2 form \"%.200s\")", (char *)msg,
                 (size_t)at, p);
        free(p);
        free(r);
        return NULL;
    }
    free(p);
    r->jit = pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE) == 0;
    if (!(r->md = pcre2_match_data_create_from_pattern(r->code, NULL))) {
        tf__regex_free(r);
        return tf__fail(err, errlen, "out of memory"), NULL;
    }
    return r;
}

int tf__regex_find(tf__regex *r, const char *text, size_t len, size_t start, size_t *ms, size_t *me) {
    int rc = r->jit ? pcre2_jit_match(r->code, (PCRE2_SPTR)text, len, start, 0, r->md, NULL)
                    : pcre2_match(r->code, (PCRE2_SPTR)text, len, start, PCRE2_NO_UTF_CHECK, r->md, NULL);
    if (rc < 0) return rc == PCRE2_ERROR_NOMATCH ? 0 : -1;
    PCRE2_SIZE *v = pcre2_get_ovector_pointer(r->md);
    *ms = v[0], *me = v[1];
    return 1;
}

void tf__regex_free(tf__regex *r) {
    if (!r) return;
    pcre2_match_data_free(r->md);
    pcre2_code_free(r->code);
    free(r);
}
