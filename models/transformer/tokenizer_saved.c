/* transformer tokenizer_saved: the tokenizer a model folder records (see tokenizer_saved.h). */
#define _POSIX_C_SOURCE 200809L
#include "tokenizer_saved.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/json.h"
#include "read_file.h"

static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

void tf_saved_dir(const char *path, char *dir, size_t len) {
    struct stat st;
    snprintf(dir, len, "%s", path);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return;
    char *slash = strrchr(dir, '/');
    if (slash) slash[slash == dir] = 0;
    else snprintf(dir, len, ".");
}

/* config.json's shardrun_tokenizer into val: 1 found, 0 not (no config.json, or no such member), -1
   with err */
static int recorded(const char *dir, char *val, size_t vlen, char *err, size_t errlen) {
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (!is_file(path)) return 0;
    size_t n;
    char *text = tf_read_file_max(path, "config.json", 64u << 20, "64 MiB, far above any config.json", &n, err, errlen);
    if (!text) return -1;
    sr__json j;
    const char *key, *s, *what;
    size_t klen, slen, at;
    int more, found = 0;
    sr__json_init(&j, text, n, NULL);
    if (sr__json_object(&j) == 0)
        while ((more = sr__json_member(&j, &key, &klen)) > 0) {
            if (sr__json_key_is(key, klen, TF_SAVED_KEY) && sr__json_peek(&j) == SR__JSON_STRING) {
                if (sr__json_string(&j, &s, &slen) != 0) break;
                snprintf(val, vlen, "%.*s", (int)(slen < vlen ? slen : vlen - 1), s);
                found = 1;
            } else if (sr__json_skip(&j) != 0) break;
        }
    int rc = found;
    if ((what = sr__json_error(&j, &at))) {
        snprintf(err, errlen, "%s: not valid JSON: %s at byte %zu", path, what, at);
        rc = -1;
    }
    sr__json_free(&j);
    free(text);
    return rc;
}

int tf_saved_tokenizer(const char *dir, tf_saved_tok *t, char *err, size_t errlen) {
    char val[64];
    memset(t, 0, sizeof *t);
    snprintf(t->json, sizeof t->json, "%s/tokenizer.json", dir);
    snprintf(t->vocab, sizeof t->vocab, "%s/vocab.json", dir);
    snprintf(t->merges, sizeof t->merges, "%s/merges.txt", dir);
    int r = recorded(dir, val, sizeof val, err, errlen);
    if (r < 0) return -1;
    if (r == 0) { /* an HF folder, or a checkpoint of a shardrun that recorded nothing: the files alone */
        t->kind = is_file(t->vocab) && is_file(t->merges) ? TF_SAVED_GPT2
                  : is_file(t->json)                      ? TF_SAVED_JSON
                                                          : TF_SAVED_NONE;
        return 0;
    }
    t->recorded = 1;
    if (!strcmp(val, TF_SAVED_BYTES_NAME)) t->kind = TF_SAVED_BYTES;
    else if (!strcmp(val, TF_SAVED_JSON_NAME)) t->kind = TF_SAVED_JSON;
    else if (!strcmp(val, TF_SAVED_GPT2_NAME)) t->kind = TF_SAVED_GPT2;
    else {
        snprintf(err, errlen,
                 "%s/config.json: " TF_SAVED_KEY " = \"%s\"; expected \"" TF_SAVED_BYTES_NAME
                 "\", \"" TF_SAVED_JSON_NAME "\" or \"" TF_SAVED_GPT2_NAME "\" (which tokenizer trained the model)",
                 dir, val);
        return -1;
    }
    const char *missing = t->kind == TF_SAVED_JSON && !is_file(t->json)     ? t->json
                          : t->kind == TF_SAVED_GPT2 && !is_file(t->vocab)  ? t->vocab
                          : t->kind == TF_SAVED_GPT2 && !is_file(t->merges) ? t->merges
                                                                            : NULL;
    if (missing) {
        snprintf(err, errlen,
                 "%s is missing: the checkpoint's config.json says the model was trained with %s (" TF_SAVED_KEY
                 "); restore the file from a copy of the checkpoint",
                 missing, val);
        return -1;
    }
    return 0;
}

int tf_same_bytes(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    char x[1 << 14], y[1 << 14];
    while (same) {
        size_t n = fread(x, 1, sizeof x, fa), m = fread(y, 1, sizeof y, fb);
        same = n == m && !memcmp(x, y, n) && !ferror(fa) && !ferror(fb);
        if (n == 0 || n < sizeof x) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

void tf_saved_describe(const tf_saved_tok *t, char *out, size_t len) {
    if (t->kind == TF_SAVED_JSON) snprintf(out, len, "tokenizer.json %s", t->json);
    else if (t->kind == TF_SAVED_GPT2) snprintf(out, len, "vocab.json %s and merges.txt %s", t->vocab, t->merges);
    else snprintf(out, len, "byte-level tokens");
}
