/* PEFT's module-name matching on PCRE2 (see merge_match.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "merge_match.h"

#include <pcre2.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"

struct sr__merge_re {
    pcre2_code *code;
    pcre2_match_data *md;
};

sr__merge_re *sr__merge_re_compile(const char *pattern, sr__merge_how how, char *why, size_t len) {
    /* get_pattern_key builds its expression by pasting the key in, as here: a key such as "a)|(b"
       means what it means to PEFT */
    size_t n = strlen(pattern) + 16;
    char *text = sr__malloc(n);
    sr__merge_re *re = sr__calloc(1, sizeof *re);
    if (!text || !re) {
        free(text), free(re);
        snprintf(why, len, "out of memory");
        return NULL;
    }
    uint32_t opts = PCRE2_UTF | PCRE2_UCP; /* Python's str patterns: Unicode \w \d \s */
    if (how == SR__MERGE_FULL) {
        snprintf(text, n, "%s", pattern);
        opts |= PCRE2_ANCHORED | PCRE2_ENDANCHORED; /* fullmatch: from the first character to the last */
    } else {
        snprintf(text, n, "(.*\\.)?(%s)$", pattern);
        opts |= PCRE2_ANCHORED; /* re.match: at the start */
    }
    int code;
    PCRE2_SIZE at;
    re->code = pcre2_compile((PCRE2_SPTR)text, PCRE2_ZERO_TERMINATED, opts, &code, &at, NULL);
    free(text);
    if (re->code) re->md = pcre2_match_data_create_from_pattern(re->code, NULL);
    if (!re->code || !re->md) {
        PCRE2_UCHAR msg[256] = "out of memory";
        if (!re->code) {
            pcre2_get_error_message(code, msg, sizeof msg);
            if (how == SR__MERGE_SUFFIX) at = at >= 6 ? at - 6 : 0; /* an offset in the user's text */
            snprintf(why, len, "%s at character %zu", (const char *)msg, (size_t)at);
        } else {
            snprintf(why, len, "out of memory");
        }
        sr__merge_re_free(re);
        return NULL;
    }
    return re;
}

int sr__merge_re_match(const sr__merge_re *re, const char *path) {
    int rc = pcre2_match(re->code, (PCRE2_SPTR)path, strlen(path), 0, 0, re->md, NULL);
    return rc >= 0 ? 1 : rc == PCRE2_ERROR_NOMATCH ? 0 : -1;
}

void sr__merge_re_free(sr__merge_re *re) {
    if (!re) return;
    pcre2_match_data_free(re->md);
    pcre2_code_free(re->code);
    free(re);
}

int sr__merge_name_in(const char *const *names, size_t n, const char *path) {
    size_t pl = strlen(path);
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(names[i]);
        if (!strcmp(path, names[i]) || (pl > l && path[pl - l - 1] == '.' && !strcmp(path + pl - l, names[i])))
            return 1;
    }
    return 0;
}
