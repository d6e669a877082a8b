/*
 * tf_tokenizer_load (see tokenizer.h): the byte-level fallback, or GPT-2's BPE from HF's vocab.json
 * (one JSON object of "symbol": id) and merges.txt (one merge per line, "left right", best first).
 *
 * Lifecycle: one call builds the tokenizer's tables from the two files and checks them; the files'
 * texts are freed before it returns.
 */
#define _POSIX_C_SOURCE 200809L
#include "tokenizer_impl.h"

#include "read_file.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTE_EOS 256

static int load_vocab(tf_tokenizer *t, const char *path, char *err, size_t errlen) {
    size_t n;
    char *text =
        tf_read_file_max(path, "vocab.json", TF__TOKENIZER_FILE_MAX, TF__TOKENIZER_FILE_CAP_WHY, &n, err, errlen);
    if (!text) return -1;
    if (n >= INT32_MAX) { /* entries keep 32-bit offsets */
        free(text);
        return sr__fail(err, errlen, "%s: too large for a vocab.json (%zu bytes)", path, n);
    }
    tf__json j;
    int rc = -1;
    if (tf__json_init(&j, text, n, n >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0, /* a UTF-8 byte order mark */
                      path, err, errlen) ||
        tf__vocab_object(t, &j, "vocab.json") || tf__json_end(&j) ||
        tf__vocab_check_ids(t, path, text, "the file has", err, errlen))
        goto out;
    const tf__str_slot *eos = tf__strmap_find(&t->vocab, "<|endoftext|>", 13);
    if (!eos) {
        sr__fail(err, errlen, "%s: no \"<|endoftext|>\" entry; GPT-2's end-of-text token is needed", path);
        goto out;
    }
    t->eos = eos->a;
    snprintf(t->eos_from, sizeof t->eos_from, "\"<|endoftext|>\" of vocab.json");
    rc = tf__vocab_bytes(t, path, err, errlen);
out:
    tf__json_free(&j);
    free(text);
    return rc;
}

static int load_merges(tf_tokenizer *t, const char *path, const char *vocab_path, char *err, size_t errlen) {
    size_t n;
    char *text =
        tf_read_file_max(path, "merges.txt", TF__TOKENIZER_FILE_MAX, TF__TOKENIZER_FILE_CAP_WHY, &n, err, errlen);
    if (!text) return -1;
    int rc = -1, rank = 0;
    char *both = NULL;
    size_t both_cap = 0;
    int line = 0;
    for (char *p = text, *end = text + n; p < end; line++) {
        char *eol = memchr(p, '\n', (size_t)(end - p));
        char *a = p, *e = eol ? eol : end;
        p = eol ? eol + 1 : end;
        if (e > a && e[-1] == '\r') e--;
        if (e == a || (line == 0 && e - a >= 8 && !memcmp(a, "#version", 8))) continue;
        char *sp = memchr(a, ' ', (size_t)(e - a));
        if (!sp || sp == a || sp + 1 == e || memchr(sp + 1, ' ', (size_t)(e - sp - 1))) {
            sr__fail(err, errlen,
                     "%s:%d: expected two symbols separated by one space (like \"\xC4\xA0 t\"), found \"%.*s\"", path,
                     line + 1, (int)(e - a > 60 ? 60 : e - a), a);
            goto out;
        }
        size_t la = (size_t)(sp - a), lb = (size_t)(e - sp - 1);
        int r = tf__merge_add(t, a, la, sp + 1, lb, rank++, &both, &both_cap);
        if (r == 1 || r == 2) {
            sr__fail(err, errlen, "%s:%d: \"%.*s\" is not in %s", path, line + 1, (int)(r == 1 ? la : lb),
                     r == 1 ? a : sp + 1, vocab_path);
            goto out;
        }
        if (r == 3) {
            sr__fail(err, errlen, "%s:%d: the merged symbol \"%.*s\" is not in %s", path, line + 1, (int)(la + lb),
                     both, vocab_path);
            goto out;
        }
        if (r) {
            sr__fail(err, errlen, "%s: out of memory", path);
            goto out;
        }
    }
    rc = 0;
out:
    free(both);
    free(text);
    return rc;
}

tf_tokenizer *tf_tokenizer_load(const char *vocab_json, const char *merges_txt, char *err, size_t errlen) {
    if (!vocab_json != !merges_txt) {
        sr__fail(err, errlen, "give both vocab.json and merges.txt (GPT-2 BPE), or neither (byte-level tokens)");
        return NULL;
    }
    tf_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return sr__fail(err, errlen, "out of memory"), NULL;
    if (!vocab_json) {
        t->pretok = TF_PRETOK_BYTES;
        t->vocab_size = 257;
        t->eos = BYTE_EOS;
        snprintf(t->eos_from, sizeof t->eos_from, "<|endoftext|> of the byte-level tokens");
        for (int b = 0; b < 256; b++) t->byte_id[b] = b;
        return t;
    }
    if (tf__split_add(t, tf__gpt2_pattern, strlen(tf__gpt2_pattern), TF_SPLIT_ISOLATED, "GPT-2's pattern", err,
                      errlen) ||
        load_vocab(t, vocab_json, err, errlen) || load_merges(t, merges_txt, vocab_json, err, errlen)) {
        tf_tokenizer_free(t);
        return NULL;
    }
    return t;
}

/* GPT-2's pre-tokenizer alone (tokenizer.h): a loader like the others, beside them so that
   tokenizer_pretok.c, which tokenizer.c calls, does not call back into tokenizer.c. */
tf_tokenizer *tf_tokenizer_gpt2_pattern(char *err, size_t errlen) {
    tf_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return sr__fail(err, errlen, "out of memory"), NULL;
    if (tf__split_add(t, tf__gpt2_pattern, strlen(tf__gpt2_pattern), TF_SPLIT_ISOLATED, "GPT-2's pattern", err,
                      errlen)) {
        tf_tokenizer_free(t);
        return NULL;
    }
    return t;
}
