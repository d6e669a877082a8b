/*
 * The tokenizer's regular expressions (tokenizer_impl.h, tf__regex_*): the `Split` patterns of an HF
 * tokenizer.json, and GPT-2's pattern (ByteLevel's use_regex), run by PCRE2 (Debian's libpcre2-8,
 * compiled with UTF, UCP and its JIT).
 *
 * HF's tokenizers library runs these patterns with Oniguruma; the few places where the two dialects
 * read the same text differently are rewritten before PCRE2 compiles the pattern:
 *  - \s and \S: Oniguruma's Unicode \s is U+0009-000D, U+0085 and the categories Zs Zl Zp (the
 *    White_Space property); PCRE2's depends on its version and options, so both are spelled out.
 *    (\p{L} and \p{N} are spelled out too, for speed: see WHITE_SPACE_BODY.)
 *  - a class inside a class (BLOOM's `[^(\s|[.,!?])]`): Oniguruma takes the union, PCRE2 a literal
 *    '[': the inner brackets are dropped.  A negated inner class, `&&` (intersection) and Oniguruma's
 *    \h (a hexadecimal digit there, horizontal space in PCRE2) are refused.
 * Speed: a call to PCRE2 costs about as much as matching a short piece, so the pattern P is also
 * compiled as up to REPEAT consecutive matches, (P)(?:(P)(?:(P)...)?)?: one call finds the next
 * match and those that follow it without a gap, which the next calls return from a queue.  Each
 * group matches where the one before ended, the alternative PCRE2 would pick for P there, and an
 * optional group that fails makes nothing before it backtrack: the same matches as P alone, one
 * call after another.  Patterns that number or name groups, or use \G, are matched alone.
 * Texts are valid UTF-8 when they get here (tokenizer_pretok.c replaces the bytes that are not), so
 * matching skips PCRE2's own UTF check, which would otherwise read the whole text at every match.
 *
 * Lifecycle: tf__regex_compile -> tf__regex_find any number of times (one thread at a time: the
 * match data is the regex's own; tf__regex_clone gives another thread its own match data over the
 * same compiled code, which PCRE2 lets threads share) -> tf__regex_free (the clones first).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer_impl.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPEAT 8

struct tf__regex {
    pcre2_code *code, *rep; /* P, and REPEAT consecutive P (NULL when P cannot be repeated) */
    pcre2_match_data *rmd;
    uint32_t group_step; /* the groups of one P in rep, its own included */
    const char *q_text;  /* the queue: matches found by rep not returned yet */
    size_t q_len, q_start[REPEAT], q_end[REPEAT];
    int q_n, q_i;
    pcre2_match_data *md;
    pcre2_match_context *mc; /* with js: a JIT stack from the heap, larger than the default 32 KiB */
    pcre2_jit_stack *js;
    int jit;       /* pcre2_jit_compile succeeded: pcre2_jit_match */
    char why[160]; /* the limit the last match ran past (tf__regex_why) */
    int borrowed;  /* code and rep are another regex's (tf__regex_clone): not freed here */
};

/* Unicode White_Space, as a class body.  The ASCII space (in \p{Z} already) is also named, and so
   are the ASCII letters and digits in \p{L} and \p{N} below: PCRE2 tests a class's code points
   below 256 in a bitmap before it looks properties up, so most characters are decided there. */
#define WHITE_SPACE_BODY "\\t-\\r \\x{85}\\p{Z}"
#define LETTER_BODY "a-zA-Z\\p{L}"
#define NUMBER_BODY "0-9\\p{N}"

/* the pattern rewritten for PCRE2 into *out (malloc'ed, NUL-terminated): 0, or -1 with a message */
static int translate(const char *p, size_t n, char **out, char *err, size_t errlen) {
    size_t cap = 4 * n + 64, o = 0;
    char *s = malloc(cap);
    if (!s) return sr__fail(err, errlen, "out of memory");
    int depth = 0; /* class nesting */
    for (size_t i = 0; i < n; i++) {
        if (o + 32 > cap) {
            char *g = realloc(s, cap *= 2);
            if (!g) return free(s), sr__fail(err, errlen, "out of memory");
            s = g;
        }
        char c = p[i];
        if (c == '\\' && i + 1 < n) {
            char e = p[++i];
            if (e == 's' || e == 'S') {
                if (depth && e == 'S') {
                    free(s);
                    return sr__fail(err, errlen, "\\S inside a class (at pattern byte %zu) is not supported", i - 1);
                }
                const char *w = depth      ? WHITE_SPACE_BODY
                                : e == 's' ? "[" WHITE_SPACE_BODY "]"
                                           : "[^" WHITE_SPACE_BODY "]";
                memcpy(s + o, w, strlen(w));
                o += strlen(w);
                continue;
            }
            if ((e == 'p') && i + 3 < n && p[i + 1] == '{' && (p[i + 2] == 'L' || p[i + 2] == 'N') && p[i + 3] == '}') {
                const char *body = p[i + 2] == 'L' ? LETTER_BODY : NUMBER_BODY;
                if (!depth) s[o++] = '[';
                memcpy(s + o, body, strlen(body));
                o += strlen(body);
                if (!depth) s[o++] = ']';
                i += 3;
                continue;
            }
            if (e == 'h' || e == 'H') {
                free(s);
                return sr__fail(err, errlen,
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
                return sr__fail(err, errlen, "a negated class inside a class (at pattern byte %zu) is not supported",
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
            return sr__fail(err, errlen, "a class intersection && (at pattern byte %zu) is not supported", i);
        }
        s[o++] = c;
    }
    s[o] = 0;
    *out = s;
    return 0;
}

/* Whether P can be repeated as groups: no back references, named or numbered-by-reset groups,
   conditionals, \G or verbs (their numbers or meanings would change). */
static int repeatable(const char *p) {
    for (const char *c = p; *c; c++) {
        if (c[0] == '\\' && c[1]) {
            if ((c[1] >= '0' && c[1] <= '9') || strchr("gkG", c[1])) return 0;
            c++;
        } else if (c[0] == '(' && (c[1] == '*' || (c[1] == '?' && strchr("P'|(", c[2])))) return 0;
        else if (c[0] == '(' && c[1] == '?' && c[2] == '<' && c[3] != '=' && c[3] != '!') return 0;
    }
    return 1;
}

/* rep: REPEAT consecutive matches of p */
static void compile_repeat(tf__regex *r, const char *p) {
    uint32_t groups = 0;
    if (!r->jit || !repeatable(p) || pcre2_pattern_info(r->code, PCRE2_INFO_CAPTURECOUNT, &groups)) return;
    size_t lp = strlen(p);
    char *q = malloc(REPEAT * (lp + 8) + 1), *o = q;
    if (!q) return; /* P alone, slower */
    for (int k = 0; k < REPEAT; k++) {
        *o++ = '(';
        memcpy(o, p, lp), o += lp;
        *o++ = ')';
        if (k + 1 < REPEAT) memcpy(o, "(?:", 3), o += 3;
    }
    for (int k = 1; k < REPEAT; k++) memcpy(o, ")?", 2), o += 2;
    *o = 0;
    int code;
    PCRE2_SIZE at;
    r->rep = pcre2_compile((PCRE2_SPTR)q, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code, &at, NULL);
    free(q);
    if (r->rep && (pcre2_jit_compile(r->rep, PCRE2_JIT_COMPLETE) ||
                   !(r->rmd = pcre2_match_data_create_from_pattern(r->rep, NULL)))) {
        pcre2_code_free(r->rep);
        r->rep = NULL;
    }
    r->group_step = groups + 1;
}

tf__regex *tf__regex_compile(const char *pattern, size_t n, char *err, size_t errlen) {
    char *p = NULL;
    if (translate(pattern, n, &p, err, errlen)) return NULL;
    tf__regex *r = calloc(1, sizeof *r);
    if (!r) return free(p), sr__fail(err, errlen, "out of memory"), NULL;
    int code;
    PCRE2_SIZE at;
    r->code = pcre2_compile((PCRE2_SPTR)p, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code, &at, NULL);
    if (!r->code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        sr__fail(err, errlen, "PCRE2 cannot compile it: %s (at byte %zu of its PCRE2 form \"%.200s\")", (char *)msg,
                 (size_t)at, p);
        free(p);
        free(r);
        return NULL;
    }
    r->jit = pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE) == 0;
    if (r->jit && (r->mc = pcre2_match_context_create(NULL)) &&
        (r->js = pcre2_jit_stack_create(32 << 10, 1 << 20, NULL)))
        pcre2_jit_stack_assign(r->mc, NULL, r->js);
    if (!(r->md = pcre2_match_data_create_from_pattern(r->code, NULL))) {
        free(p);
        tf__regex_free(r);
        return sr__fail(err, errlen, "out of memory"), NULL;
    }
    compile_repeat(r, p);
    free(p);
    return r;
}

/* A failed match (the interpreter's code rc): TF_TOKENIZER_PATTERN_LIMIT with r->why for PCRE2's
   limits, which a pattern that backtracks without end runs into (its steps grow exponentially with
   the text: PCRE2 stops it rather than run for ever), else TF_TOKENIZER_NOMEM. */
static int limit(tf__regex *r, int rc) {
    uint32_t v = 0;
    if (rc == PCRE2_ERROR_MATCHLIMIT && pcre2_config(PCRE2_CONFIG_MATCHLIMIT, &v) >= 0)
        snprintf(r->why, sizeof r->why, "PCRE2's match limit (%u backtracking steps, libpcre2's default) ran out", v);
    else if (rc == PCRE2_ERROR_DEPTHLIMIT && pcre2_config(PCRE2_CONFIG_DEPTHLIMIT, &v) >= 0)
        snprintf(r->why, sizeof r->why,
                 "PCRE2's depth limit (%u nested backtracking points, libpcre2's default) ran out", v);
    else if (rc == PCRE2_ERROR_HEAPLIMIT && pcre2_config(PCRE2_CONFIG_HEAPLIMIT, &v) >= 0)
        snprintf(r->why, sizeof r->why,
                 "PCRE2's heap limit (%u KiB of backtracking memory, libpcre2's default) ran out", v);
    else return TF_TOKENIZER_NOMEM;
    return TF_TOKENIZER_PATTERN_LIMIT;
}

const char *tf__regex_why(const tf__regex *r) { return r->why; }

int tf__regex_find(tf__regex *r, const char *text, size_t len, size_t start, size_t *ms, size_t *me) {
    if (r->q_i < r->q_n && r->q_text == text && r->q_len == len && r->q_start[r->q_i] == start) {
        *ms = r->q_start[r->q_i], *me = r->q_end[r->q_i]; /* the match that follows the last one */
        r->q_i++;
        return 1;
    }
    r->q_n = r->q_i = 0;
    int rc = r->rep ? pcre2_jit_match(r->rep, (PCRE2_SPTR)text, len, start, 0, r->rmd, r->js ? r->mc : NULL)
                    : PCRE2_ERROR_JIT_STACKLIMIT; /* (not NOMATCH: P alone below) */
    if (r->rep && rc == PCRE2_ERROR_NOMATCH) return 0;
    if (rc >= 0) {
        PCRE2_SIZE *v = pcre2_get_ovector_pointer(r->rmd);
        for (int k = 0; k < REPEAT; k++) {
            uint32_t g = 1 + (uint32_t)k * r->group_step;
            if ((int)g >= rc || v[2 * g] == PCRE2_UNSET || (k && v[2 * g] == v[2 * g + 1])) break;
            r->q_start[r->q_n] = v[2 * g], r->q_end[r->q_n] = v[2 * g + 1];
            r->q_n++;
            if (v[2 * g] == v[2 * g + 1]) break; /* an empty match: the caller moves on by itself */
        }
        r->q_text = text, r->q_len = len, r->q_i = 1;
        *ms = r->q_start[0], *me = r->q_end[0];
        return 1;
    }
    rc = PCRE2_ERROR_JIT_STACKLIMIT;
    if (r->jit) rc = pcre2_jit_match(r->code, (PCRE2_SPTR)text, len, start, 0, r->md, r->js ? r->mc : NULL);
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) /* no JIT, or its stack ran out: the interpreter, on the heap */
        rc = pcre2_match(r->code, (PCRE2_SPTR)text, len, start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, r->md, NULL);
    if (rc == PCRE2_ERROR_NOMATCH) return 0;
    if (rc < 0) return limit(r, rc);
    PCRE2_SIZE *v = pcre2_get_ovector_pointer(r->md);
    *ms = v[0], *me = v[1];
    return 1;
}

tf__regex *tf__regex_clone(const tf__regex *r) {
    tf__regex *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->code = r->code, c->rep = r->rep, c->group_step = r->group_step, c->jit = r->jit;
    c->borrowed = 1;
    if (c->jit && (c->mc = pcre2_match_context_create(NULL)) &&
        (c->js = pcre2_jit_stack_create(32 << 10, 1 << 20, NULL)))
        pcre2_jit_stack_assign(c->mc, NULL, c->js);
    c->md = pcre2_match_data_create_from_pattern(c->code, NULL);
    if (c->rep && !(c->rmd = pcre2_match_data_create_from_pattern(c->rep, NULL))) c->rep = NULL; /* P alone */
    if (!c->md) {
        tf__regex_free(c);
        return NULL;
    }
    return c;
}

void tf__regex_forget(tf__regex *r) { r->q_n = r->q_i = 0; }

void tf__regex_free(tf__regex *r) {
    if (!r) return;
    pcre2_match_data_free(r->md);
    pcre2_match_data_free(r->rmd);
    pcre2_jit_stack_free(r->js);
    pcre2_match_context_free(r->mc);
    if (!r->borrowed) pcre2_code_free(r->rep), pcre2_code_free(r->code);
    free(r);
}
