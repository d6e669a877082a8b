/*
 * The tokenizer's pre-tokenizers (see tokenizer.h), written by hand instead of run through a regex
 * engine: GPT-2's pattern and BLOOM's Split.  Both decode UTF-8 the same strict way; a byte that is
 * not part of valid UTF-8 is one character of its own, in no class (not a letter, number or space,
 * and not one of BLOOM's punctuation marks).
 *
 * Lifecycle: none; pure functions of the text.
 */
#include "tokenizer_impl.h"

#include "unicode_classes.h"

/* Unicode White_Space (PropList.txt): U+0009-000D U+0020 U+0085 U+00A0 U+1680 U+2000-200A U+2028
   U+2029 U+202F U+205F U+3000.  GPT-2's \s (Python's `regex` module) is this property; BLOOM's \s
   (Oniguruma's, Unicode case: U+0009-000D, U+0085 and the general categories Zs Zl Zp) is the same
   set of code points. */
static int white_space(uint32_t cp) {
    if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* The code point at s[i] (i < n) and its length in bytes.  UTF-8 is decoded strictly (no overlong
   forms, surrogates or code points past U+10FFFF), as Python does; each byte of a malformed sequence
   is one character, returned as -1. */
static int32_t char_at(const unsigned char *s, size_t n, size_t i, size_t *len) {
    unsigned c = s[i], lo = 0x80, hi = 0xBF;
    size_t need;
    uint32_t cp;
    *len = 1;
    if (c < 0x80) return (int32_t)c;
    if (c >= 0xC2 && c <= 0xDF) need = 1, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) need = 2, cp = c & 0x0F, lo = c == 0xE0 ? 0xA0 : lo, hi = c == 0xED ? 0x9F : hi;
    else if (c >= 0xF0 && c <= 0xF4) need = 3, cp = c & 0x07, lo = c == 0xF0 ? 0x90 : lo, hi = c == 0xF4 ? 0x8F : hi;
    else return -1;
    if (n - i - 1 < need) return -1;
    for (size_t k = 1; k <= need; k++) {
        if (s[i + k] < lo || s[i + k] > hi) return -1;
        cp = cp << 6 | (s[i + k] & 0x3F);
        lo = 0x80, hi = 0xBF;
    }
    *len = need + 1;
    return (int32_t)cp;
}

/* ---- GPT-2 -------------------------------------------------------------------------------------- */

enum { CL_LETTER, CL_NUMBER, CL_SPACE, CL_OTHER };

static int in_ranges(const uint32_t *r, size_t pairs, uint32_t cp) {
    size_t lo = 0, hi = pairs; /* the first range whose end is >= cp is in [lo, hi] */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r[2 * mid + 1] < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < pairs && r[2 * lo] <= cp;
}

static int classify(int32_t c) {
    if (c < 0) return CL_OTHER;
    uint32_t cp = (uint32_t)c;
    if (white_space(cp)) return CL_SPACE;
    if (cp < 0x80) {
        if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return CL_LETTER;
        return cp >= '0' && cp <= '9' ? CL_NUMBER : CL_OTHER;
    }
    if (in_ranges(tf_letter_ranges, sizeof tf_letter_ranges / sizeof *tf_letter_ranges / 2, cp)) return CL_LETTER;
    if (in_ranges(tf_number_ranges, sizeof tf_number_ranges / sizeof *tf_number_ranges / 2, cp)) return CL_NUMBER;
    return CL_OTHER;
}

static int class_at(const unsigned char *s, size_t n, size_t i, size_t *len) { return classify(char_at(s, n, i, len)); }

/* The end of the pre-token starting at s[i] (i < n): GPT-2's pattern, tried alternative by
   alternative as the regex engine does. */
size_t tf_tokenizer_pretoken_end(const char *text, size_t n, size_t i) {
    const unsigned char *s = (const unsigned char *)text;
    if (s[i] == '\'' && i + 1 < n) { /* 's|'t|'re|'ve|'m|'ll|'d */
        unsigned char c = s[i + 1], d = i + 2 < n ? s[i + 2] : 0;
        if (c == 's' || c == 't' || c == 'm' || c == 'd') return i + 2;
        if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l')) return i + 3;
    }
    size_t len, j = i;
    int cl = class_at(s, n, i, &len);
    if (s[i] == ' ' && i + 1 < n) { /* " ?" before a letter, number or other character */
        size_t len1;
        int cl1 = class_at(s, n, i + 1, &len1);
        if (cl1 != CL_SPACE) cl = cl1, j = i + 1, len = len1;
    }
    if (cl != CL_SPACE) { /* \p{L}+ | \p{N}+ | [^\s\p{L}\p{N}]+ */
        for (j += len; j < n && class_at(s, n, j, &len) == cl;) j += len;
        return j;
    }
    /* \s+(?!\S): the whitespace run, less its last character when a non-space follows it;
       \s+ when that would leave nothing (a single whitespace character before a non-space) */
    size_t last = i;
    for (j = i + len; j < n && class_at(s, n, j, &len) == CL_SPACE; j += len) last = j;
    return j == n || last == i ? j : last;
}

/* ---- BLOOM -------------------------------------------------------------------------------------- */

/* BLOOM's pattern  ` ?[^(\s|[.,!?…。，、।۔،])]+`  is, in Oniguruma's syntax, an optional space and a
   run of characters of ONE negated class (the inner [...] is a class nested in it): anything but
   ( ) | whitespace . , ! ? and U+2026 … U+3002 。 U+FF0C ， U+3001 、 U+0964 । U+06D4 ۔ U+060C ،. */
static int bloom_word_char(int32_t c) {
    if (c < 0) return 1; /* a byte outside valid UTF-8: a character like any other */
    uint32_t cp = (uint32_t)c;
    if (white_space(cp)) return 0;
    switch (cp) {
    case '(':
    case ')':
    case '|':
    case '.':
    case ',':
    case '!':
    case '?':
    case 0x2026:
    case 0x3002:
    case 0xFF0C:
    case 0x3001:
    case 0x0964:
    case 0x06D4:
    case 0x060C: return 0;
    default: return 1;
    }
}

/* Whether a match of the pattern starts at s[i]: a word character, or a space before one. */
static int bloom_match_at(const unsigned char *s, size_t n, size_t i, size_t *len) {
    if (bloom_word_char(char_at(s, n, i, len))) return 1;
    size_t len1;
    return s[i] == ' ' && i + 1 < n && bloom_word_char(char_at(s, n, i + 1, &len1));
}

/* Split(pattern, behavior Isolated): the matches, and every stretch of text between two matches (or
   before the first, after the last), are the pieces. */
size_t tf__bloom_piece_end(const char *text, size_t n, size_t i) {
    const unsigned char *s = (const unsigned char *)text;
    size_t len, j;
    if (bloom_match_at(s, n, i, &len)) { /* the match: " ?" then the longest run of word characters */
        for (j = s[i] == ' ' ? i + 1 : i; j < n && bloom_word_char(char_at(s, n, j, &len));) j += len;
        return j;
    }
    for (j = i + len; j < n && !bloom_match_at(s, n, j, &len);) j += len; /* up to the next match */
    return j;
}
