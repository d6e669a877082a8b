/*
 * Added and special tokens inside a text (tokenizer.json's added_tokens, "<|endoftext|>",
 * "<|im_start|>", "<|begin_of_text|>"): found before the pre-tokenizer runs and given their own id,
 * as HF's AddedVocabulary does -- at the leftmost place where any of them starts, the longest one
 * that starts there.
 *
 * Lifecycle: the loader calls tf__added_add for each, then tf__added_index once; encode calls
 * tf__added_find (read only).  tf_tokenizer_free frees the table.
 */
#include "tokenizer_impl.h"

#include <stdlib.h>
#include <string.h>

int tf__added_add(tf_tokenizer *t, const char *content, size_t n, int32_t id, int normalized, int special) {
    if (n > UINT32_MAX - t->added_len) return -1;
    char *text = realloc(t->added_text, t->added_len + n + 1);
    if (!text) return -1;
    t->added_text = text;
    tf__added *a = realloc(t->added, (t->nadded + 1) * sizeof *a);
    if (!a) return -1;
    t->added = a;
    memcpy(t->added_text + t->added_len, content, n);
    t->added[t->nadded++] = (tf__added){.off = (uint32_t)t->added_len,
                                        .len = (uint32_t)n,
                                        .id = id,
                                        .normalized = normalized,
                                        .special = special,
                                        .first = n ? (unsigned char)content[0] : 0};
    t->added_len += n;
    t->added_normalized |= normalized;
    return 0;
}

/* by first byte, then longest first */
static int by_first_byte(const void *pa, const void *pb) {
    const tf__added *a = pa, *b = pb;
    if (a->first != b->first) return a->first < b->first ? -1 : 1;
    return a->len != b->len ? (a->len > b->len ? -1 : 1) : (a->id > b->id) - (a->id < b->id);
}

int tf__added_index(tf_tokenizer *t) {
    size_t k = 0;
    for (size_t i = 0; i < t->nadded; i++) /* an empty content matches nothing */
        if (t->added[i].len) t->added[k++] = t->added[i];
    t->nadded = k;
    if (t->nadded) qsort(t->added, t->nadded, sizeof *t->added, by_first_byte);
    size_t i = 0;
    for (unsigned b = 0; b < 256; b++) {
        t->added_at[b] = (uint32_t)i;
        while (i < t->nadded && t->added[i].first == b) i++;
    }
    t->added_at[256] = (uint32_t)t->nadded;
    return 0;
}

const tf__added *tf__added_find(const tf_tokenizer *t, const char *s, size_t n, size_t from, int normalized,
                                size_t *at) {
    for (size_t i = from; i < n; i++) {
        unsigned b = (unsigned char)s[i];
        for (uint32_t k = t->added_at[b]; k < t->added_at[b + 1]; k++) { /* longest first */
            const tf__added *a = &t->added[k];
            if (a->normalized == normalized && a->len <= n - i && !memcmp(s + i, t->added_text + a->off, a->len)) {
                *at = i;
                return a;
            }
        }
    }
    return NULL;
}
