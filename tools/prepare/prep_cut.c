/* Safe cut points in a text (prep_cut.h). */
#include "prep_cut.h"

static int is_cut(const char *t, size_t p) {
    unsigned char before = (unsigned char)t[p - 2], c = (unsigned char)t[p];
    return t[p - 1] == '\n' && before > 0x20 && before < 0x7f && ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

size_t prep_cut_point(const char *text, size_t len, size_t from, size_t want) {
    if (want < from + 2) want = from + 2;
    if (want >= len) return len;
    size_t far = len - want > ((size_t)1 << 20) ? want + ((size_t)1 << 20) : len; /* bounded: a text with no cut */
    for (size_t p = want; p < far; p++)
        if (is_cut(text, p)) return p;
    for (size_t p = want < len ? want : len; p > from + 2; p--)
        if (p < len && is_cut(text, p)) return p;
    return len;
}
