/*
 * The end-of-text token of a tokenizer.json (tf_tokenizer_eos): prepare writes it between documents,
 * the tasks pad and pack with it, generate starts an empty prompt with it and stops at it.  So it
 * must be the model's own end-of-text token, a special one that no text produces, never an
 * ordinary vocabulary entry that merely looks like one: Qwen's vocabulary has "</s>" as an ordinary
 * entry (id 128247), while its end of text is the special "<|endoftext|>" (151643).
 *
 * The rule (docs/gpt2.md, "Tokenizers"):
 *  1. config.json beside the tokenizer.json (HF's model folders hold both), when it has an
 *     eos_token_id (a list: its first): that id, which must be an added token marked special;
 *  2. else the first of "</s>" (BLOOM), "<|endoftext|>" (GPT-2, Qwen, SmolLM2) and
 *     "<|end_of_text|>" (Llama 3) that the file's added_tokens has with "special": true;
 *  3. else the file is refused (exit 2 from the tools), saying what to add.
 *
 * Lifecycle: tf__eos_choose, once, after the added tokens are read (tokenizer_json.c).
 */
#define _POSIX_C_SOURCE 200809L
#include "tokenizer_impl.h"

#include "read_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* the names that end a text, in the order they are looked for */
static const char *const END_OF_TEXT[] = {"</s>", "<|endoftext|>", "<|end_of_text|>", NULL};

/* The added token with this content (n bytes) or id (content NULL), or NULL. */
static const tf__added *added_token(const tf_tokenizer *t, const char *content, size_t n, int32_t id) {
    for (size_t k = 0; k < t->nadded; k++) {
        const tf__added *a = &t->added[k];
        if (content ? a->len == n && !memcmp(t->added_text + a->off, content, n) : a->id == id) return a;
    }
    return NULL;
}

/* config.json's eos_token_id: 1 with *id (and *line, where it is), 0 when the file (*exists 0) or
   the key is absent (or null), -1 with a message when the file cannot be read or its eos_token_id
   is not an id or a list of ids. */
static int config_eos(const char *config, int32_t *id, int *line, int *exists, char *err, size_t errlen) {
    struct stat st;
    *exists = !(stat(config, &st) != 0 && (errno == ENOENT || errno == ENOTDIR));
    if (!*exists) return 0;
    size_t n;
    char *text =
        tf_read_file_max(config, "config.json", TF__TOKENIZER_FILE_MAX, TF__TOKENIZER_FILE_CAP_WHY, &n, err, errlen);
    if (!text) return -1;
    tf__json j;
    int count = 0, r, found = 0;
    if (tf__json_init(&j, text, n, n >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0, config, err, errlen)) {
        free(text);
        return -1;
    }
    r = tf__json_open(&j, '{', "'{' (config.json is a JSON object)");
    while (!r && (r = tf__json_more(&j, '}', &count)) > 0) {
        if (!tf__json_str_is(&j, "eos_token_id")) {
            r = tf__json_skip(&j);
            continue;
        }
        tf__json_space(&j);
        *line = tf__json_line(&j, tf__json_offset(&j));
        int c = tf__json_peek(&j), v, k = 0;
        if (c == 'n') r = tf__json_literal(&j, &v, "an id, a list of ids or null (eos_token_id)");
        else if (c != '[') r = tf__json_id(&j, id), found = !r;
        else if (!(r = tf__json_open(&j, '[', "")) && (r = tf__json_more(&j, ']', &k)) > 0) {
            if (!(r = tf__json_id(&j, id))) found = 1;
            while (!r && (r = tf__json_more(&j, ']', &k)) > 0) r = tf__json_id(&j, &(int32_t){0});
        }
        if (r > 0) r = 0;
    }
    if (!r) r = tf__json_end(&j);
    tf__json_free(&j);
    free(text);
    return r < 0 ? -1 : found;
}

/* "\"</s>\" (id 2)", the special end-of-text tokens the file has, for a message */
static void specials(const tf_tokenizer *t, char *buf, size_t cap) {
    buf[0] = 0;
    for (int k = 0; END_OF_TEXT[k]; k++) {
        const tf__added *a = added_token(t, END_OF_TEXT[k], strlen(END_OF_TEXT[k]), 0);
        if (a && a->special)
            snprintf(buf + strlen(buf), cap - strlen(buf), "%s\"%s\" (id %d)", buf[0] ? ", " : "", END_OF_TEXT[k],
                     (int)a->id);
    }
    if (!buf[0]) snprintf(buf, cap, "none");
}

int tf__eos_choose(tf_tokenizer *t, const char *path, char *err, size_t errlen) {
    /* config.json in the tokenizer.json's folder */
    char config[4200], have[240];
    const char *slash = strrchr(path, '/');
    snprintf(config, sizeof config, "%.*sconfig.json", slash ? (int)(slash - path + 1) : 0, path);
    int32_t id = -1;
    int line = 0, exists, rc = config_eos(config, &id, &line, &exists, err, errlen);
    if (rc < 0) return -1;
    if (rc) {
        const tf__added *a = added_token(t, NULL, 0, id);
        if (a && a->special) {
            t->eos = id;
            snprintf(t->eos_from, sizeof t->eos_from,
                     "\"%.*s\", eos_token_id of the config.json beside the tokenizer.json",
                     a->len > 40 ? 40 : (int)a->len, t->added_text + a->off);
            return 0;
        }
        char what[160];
        if (a)
            snprintf(what, sizeof what, "the added token \"%.*s\", which is not marked \"special\": true",
                     a->len > 60 ? 60 : (int)a->len, t->added_text + a->off);
        else if (id < t->vocab_size)
            snprintf(what, sizeof what, "an ordinary entry of model.vocab, not a special token");
        else snprintf(what, sizeof what, "not an id of it (the vocabulary has %d)", t->vocab_size);
        specials(t, have, sizeof have);
        return sr__fail(err, errlen,
                        "%s:%d: eos_token_id %d is, in %s, %s; the tasks end every text with eos, so it must be a "
                        "special added token (the file's special end-of-text tokens: %s). Correct eos_token_id, or "
                        "move config.json away to use the file's own",
                        config, line, (int)id, path, what, have);
    }
    for (int k = 0; END_OF_TEXT[k]; k++) {
        const tf__added *a = added_token(t, END_OF_TEXT[k], strlen(END_OF_TEXT[k]), 0);
        if (a && a->special) {
            t->eos = a->id;
            snprintf(t->eos_from, sizeof t->eos_from, "\"%s\", a special token of the tokenizer.json", END_OF_TEXT[k]);
            return 0;
        }
    }
    /* none: say which look-alikes were passed over, and why */
    char seen[400] = "";
    for (int k = 0; END_OF_TEXT[k]; k++) {
        size_t n = strlen(END_OF_TEXT[k]);
        const tf__added *a = added_token(t, END_OF_TEXT[k], n, 0);
        const tf__str_slot *s = tf__strmap_find(&t->vocab, END_OF_TEXT[k], n);
        if (a || s)
            snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "%s\"%s\" (%d) is %s", seen[0] ? "; " : " (",
                     END_OF_TEXT[k], a ? (int)a->id : (int)s->a,
                     a ? "an added token without \"special\": true" : "an ordinary model.vocab entry");
    }
    if (seen[0]) snprintf(seen + strlen(seen), sizeof seen - strlen(seen), ")");
    return sr__fail(err, errlen,
                    "%s: no special end-of-text token: none of \"</s>\", \"<|endoftext|>\", \"<|end_of_text|>\" is "
                    "in added_tokens with \"special\": true%s, and %s %s. Mark the model's end-of-text token "
                    "special in added_tokens, or give its id as eos_token_id in a config.json beside the "
                    "tokenizer.json",
                    path, seen, config, exists ? "has no eos_token_id" : "does not exist");
}
