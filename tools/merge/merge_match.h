/*
 * How PEFT matches an adapter_config.json's names against a module's path (its name in the model,
 * "transformer.h.0.attn.c_attn"), for shardrun merge:
 *   - target_modules / exclude_modules as a list: the path equals a name or ends with "." + name
 *     (peft/tuners/tuners_utils.py, check_target_module_exists);
 *   - as a string: a regular expression the whole path must match (Python's re.fullmatch);
 *   - a key of rank_pattern / alpha_pattern: a regular expression KEY the path matches as
 *     re.match(r"(.*\.)?(KEY)$", path) (peft/utils/other.py, get_pattern_key; the first key that
 *     matches, in the file's order, wins).
 * The expressions run on PCRE2 (Debian's libpcre2-8, UTF), whose syntax is Python's for what such
 * patterns use (classes, groups, alternation, repetition, \d \w \s \., anchors).
 */
#ifndef SR__MERGE_MATCH_H
#define SR__MERGE_MATCH_H

#include <stddef.h>

typedef enum sr__merge_how {
    SR__MERGE_FULL,  /* re.fullmatch(pattern, path) */
    SR__MERGE_SUFFIX /* re.match(r"(.*\.)?(" + pattern + ")$", path) */
} sr__merge_how;

typedef struct sr__merge_re sr__merge_re;

/* Compiles `pattern` to be matched as `how` says.  NULL with why[] (PCRE2's message and the
   offset) when it is no valid expression, or memory ran out. */
sr__merge_re *sr__merge_re_compile(const char *pattern, sr__merge_how how, char *why, size_t len);
/* 1 when `path` matches, 0 when not, -1 when PCRE2 gave up (its match limit). */
int sr__merge_re_match(const sr__merge_re *re, const char *path);
void sr__merge_re_free(sr__merge_re *re);

/* 1 when `path` is one of names[0 .. n) or ends with "." + one of them. */
int sr__merge_name_in(const char *const *names, size_t n, const char *path);

#endif
