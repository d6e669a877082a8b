/*
 * tf_tokenizer_load_json (see tokenizer.h for what it accepts): HF tokenizers' tokenizer.json.
 *
 * Lifecycle: one call reads the file, notes where each top-level member's value starts (the file's
 * members may come in any order, and added_tokens comes before model in HF's), checks the parts
 * that decide how text is cut (normalizer, pre_tokenizer, post_processor, decoder, model's options)
 * before the large ones, then reads model.vocab, added_tokens and model.merges into the tables
 * tokenizer.c shares with tf_tokenizer_load.  The text is freed before it returns.
 */
#define _POSIX_C_SOURCE 200809L
#include "tokenizer_impl.h"

#include "read_file.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* where a member's value starts */
typedef struct {
    size_t at;
    int line, set;
} mark;

typedef struct {
    tf_tokenizer *t;
    tf__json j;
    const char *path;
    char *err;
    size_t errlen;
} loader;

static void seek(loader *l, const mark *m) { tf__json_seek(&l->j, m->at); }

/* where the next value starts */
static mark here(loader *l) {
    tf__json_space(&l->j);
    size_t at = tf__json_offset(&l->j);
    return (mark){.at = at, .line = tf__json_line(&l->j, at), .set = 1};
}

/* "<file>:<line>: <jpath> is <what was found>: not supported yet (<supported>)" */
static int unsupported(loader *l, int line, const char *jpath, const char *found, const char *supported) {
    return sr__fail(l->err, l->errlen, "%s:%d: %s is %s: not supported yet (supported: %s)", l->path, line, jpath,
                    found, supported);
}

/* The value at the cursor, for a message: a string quoted (cut at 60 bytes), an object by its type
   ({"type": "NFC", ...}), else its first bytes.  The cursor is back at the value after (a message
   follows: the containers around it are not reopened). */
static const char *found_value(loader *l, char *buf, size_t cap) {
    int c = tf__json_peek(&l->j), count = 0;
    size_t i = tf__json_offset(&l->j);
    if (c == '"' && !tf__json_string(&l->j))
        snprintf(buf, cap, "\"%.*s\"%s", (int)(l->j.slen > 60 ? 60 : l->j.slen), l->j.str, l->j.slen > 60 ? "..." : "");
    else if (c == '{') {
        snprintf(buf, cap, "an object without a \"type\"");
        tf__json_open(&l->j, '{', "");
        while (tf__json_more(&l->j, '}', &count) > 0) {
            if (tf__json_str_is(&l->j, "type") && tf__json_peek(&l->j) == '"' && !tf__json_string(&l->j)) {
                snprintf(buf, cap, "{\"type\": \"%.*s\", ...}", (int)(l->j.slen > 40 ? 40 : l->j.slen), l->j.str);
                break;
            }
            if (tf__json_skip(&l->j)) break;
        }
    } else {
        size_t k = 0;
        for (size_t p = i; p < l->j.n && k < 24 && !strchr(",]}\r\n", l->j.s[p]); p++) k++;
        snprintf(buf, cap, "%.*s%s", (int)k, l->j.s + i, k == 24 ? "..." : "");
    }
    tf__json_seek(&l->j, i);
    return buf;
}

/* The members of the object at the cursor: names[k]'s value position into m[k]; a name not in
   names, or one given twice, is refused. */
static int members(loader *l, const char *jpath, const char *const *names, mark *m) {
    char what[160];
    snprintf(what, sizeof what, "'{' (%.100s is a JSON object)", jpath);
    if (tf__json_open(&l->j, '{', what)) return -1;
    int count = 0, r;
    while ((r = tf__json_more(&l->j, '}', &count)) > 0) {
        int k = 0;
        while (names[k] && !tf__json_str_is(&l->j, names[k])) k++;
        if (!names[k]) {
            char list[400] = "";
            for (int q = 0; names[q]; q++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", q ? ", " : "", names[q]);
            return sr__fail(l->err, l->errlen, "%s:%d: %s has a member \"%.*s\": not supported yet (known: %s)",
                            l->path, tf__json_line(&l->j, l->j.key_at), jpath, (int)(l->j.slen > 60 ? 60 : l->j.slen),
                            l->j.str, list);
        }
        if (m[k].set)
            return sr__fail(l->err, l->errlen, "%s:%d: %s has \"%s\" twice", l->path, tf__json_line(&l->j, l->j.key_at),
                            jpath, names[k]);
        m[k] = here(l);
        if (tf__json_skip(&l->j)) return -1;
    }
    return r;
}

/* The string value at m into buf (NUL-terminated; longer values are cut, which no caller's
   comparison then matches): 0, or -1 when it is not a string. */
static int string_at(loader *l, const mark *m, const char *jpath, char *buf, size_t cap) {
    char what[160];
    seek(l, m);
    snprintf(what, sizeof what, "a string (%.100s)", jpath);
    if (tf__json_peek(&l->j) != '"') return tf__json_fail(&l->j, what);
    if (tf__json_string(&l->j)) return -1;
    size_t k = l->j.slen < cap - 1 ? l->j.slen : cap - 1;
    memcpy(buf, l->j.str, k);
    buf[k] = 0;
    return 0;
}

/* true/false/null at m (absent: dflt) into *v (1, 0, -1 for null) */
static int literal_at(loader *l, const mark *m, const char *jpath, int dflt, int *v) {
    char what[160];
    if (!m->set) return *v = dflt, 0;
    seek(l, m);
    snprintf(what, sizeof what, "true, false or null (%.100s)", jpath);
    return tf__json_literal(&l->j, v, what);
}

/* The member at m must be null (or absent). */
static int must_be_null(loader *l, const mark *m, const char *jpath, const char *supported) {
    char buf[96];
    if (!m->set) return 0;
    seek(l, m);
    if (tf__json_peek(&l->j) == 'n') {
        int v;
        return tf__json_literal(&l->j, &v, "null");
    }
    return unsupported(l, m->line, jpath, found_value(l, buf, sizeof buf), supported);
}

/* The member at m must be null, "" or absent (GPT-2's tokenizer.json has "" where BLOOM's has null). */
static int null_or_empty(loader *l, const mark *m, const char *jpath) {
    if (m->set) {
        seek(l, m);
        if (tf__json_peek(&l->j) == '"') {
            if (tf__json_string(&l->j)) return -1;
            if (!l->j.slen) return 0;
        }
    }
    return must_be_null(l, m, jpath, "null or \"\"");
}

/* A boolean member must have the value `want` (absent: dflt). */
static int must_be(loader *l, const mark *m, const char *jpath, int dflt, int want, const char *supported) {
    int v;
    if (literal_at(l, m, jpath, dflt, &v)) return -1;
    if (v == want) return 0;
    return unsupported(l, m->line, jpath, v < 0 ? "null" : v ? "true" : "false", supported);
}

/* The "type" of the object at m (not an object, or without a type: refused, naming `supported`)
   into buf, and where it is into *tm. */
static int type_of(loader *l, const mark *m, const char *jpath, const char *supported, char *buf, size_t cap,
                   mark *tm) {
    char q[96], p[160];
    int count = 0, r;
    *tm = (mark){0};
    seek(l, m);
    if (tf__json_peek(&l->j) != '{') return unsupported(l, m->line, jpath, found_value(l, q, sizeof q), supported);
    tf__json_open(&l->j, '{', "");
    while ((r = tf__json_more(&l->j, '}', &count)) > 0) {
        if (tf__json_str_is(&l->j, "type") && !tm->set) { *tm = here(l); }
        if (tf__json_skip(&l->j)) return -1;
    }
    if (r < 0) return -1;
    if (!tm->set) return sr__fail(l->err, l->errlen, "%s:%d: %s has no \"type\"", l->path, m->line, jpath);
    snprintf(p, sizeof p, "%.100s.type", jpath);
    return string_at(l, tm, p, buf, cap);
}

/* Refuses the type at tm. */
static int unsupported_type(loader *l, const mark *tm, const char *jpath, const char *supported) {
    char q[96], p[160];
    snprintf(p, sizeof p, "%.100s.type", jpath);
    seek(l, tm);
    return unsupported(l, tm->line, p, found_value(l, q, sizeof q), supported);
}

/* ---- normalizer, pre_tokenizer, post_processor, decoder --------------------------------------- */

/* The ByteLevel object at m: add_prefix_space must be `prefix` (absent means true, as in HF) and
   use_regex `regex` (absent: true), each unless < 0; trim_offsets only moves offsets. */
static int bytelevel(loader *l, const mark *m, const char *jpath, int prefix, int regex, const char *supported) {
    static const char *const keys[] = {"type", "add_prefix_space", "trim_offsets", "use_regex", NULL};
    enum { TYPE, PREFIX, TRIM, REGEX, N };
    char p[160];
    int v;
    mark f[N] = {{0}};
    seek(l, m);
    if (members(l, jpath, keys, f)) return -1;
    snprintf(p, sizeof p, "%.100s.add_prefix_space", jpath);
    if (prefix >= 0 ? must_be(l, &f[PREFIX], p, 1, prefix, supported) : literal_at(l, &f[PREFIX], p, 1, &v)) return -1;
    snprintf(p, sizeof p, "%.100s.trim_offsets", jpath);
    if (literal_at(l, &f[TRIM], p, 1, &v)) return -1;
    snprintf(p, sizeof p, "%.100s.use_regex", jpath);
    if (regex >= 0) return must_be(l, &f[REGEX], p, 1, regex, supported);
    return literal_at(l, &f[REGEX], p, 1, &v);
}

#define PRETOK_SUPPORTED                                                                                               \
    "ByteLevel (add_prefix_space false), or a Sequence of Split steps (a Regex or String pattern, behavior Isolated "  \
    "or Removed, invert false) ending with ByteLevel"

/* The Split at m (its type already checked): a step of the pre-tokenizer */
static int split_step(loader *l, const mark *m, const char *jpath) {
    static const char *const keys[] = {"type", "pattern", "behavior", "invert", NULL};
    static const char *const pattern_keys[] = {"Regex", "String", NULL};
    enum { TYPE, PATTERN, BEHAVIOR, INVERT, N };
    char p[160], s[64], q[96];
    mark f[N] = {{0}}, pat[2] = {{0}};
    seek(l, m);
    if (members(l, jpath, keys, f)) return -1;
    snprintf(p, sizeof p, "%.100s.pattern", jpath);
    if (!f[PATTERN].set) return sr__fail(l->err, l->errlen, "%s:%d: %s has no \"pattern\"", l->path, m->line, jpath);
    seek(l, &f[PATTERN]);
    if (members(l, p, pattern_keys, pat)) return -1;
    if (!pat[0].set == !pat[1].set) {
        seek(l, &f[PATTERN]);
        return unsupported(l, f[PATTERN].line, p, found_value(l, q, sizeof q), "{\"Regex\": ...} or {\"String\": ...}");
    }
    snprintf(p, sizeof p, "%.100s.behavior", jpath);
    if (!f[BEHAVIOR].set) return sr__fail(l->err, l->errlen, "%s:%d: %s has no \"behavior\"", l->path, m->line, jpath);
    if (string_at(l, &f[BEHAVIOR], p, s, sizeof s)) return -1;
    tf__split_behavior behavior = TF_SPLIT_ISOLATED;
    if (!strcmp(s, "Removed")) behavior = TF_SPLIT_REMOVED;
    else if (strcmp(s, "Isolated")) {
        seek(l, &f[BEHAVIOR]);
        return unsupported(l, f[BEHAVIOR].line, p, found_value(l, q, sizeof q), "\"Isolated\" or \"Removed\"");
    }
    snprintf(p, sizeof p, "%.100s.invert", jpath);
    if (must_be(l, &f[INVERT], p, 0, 0, "false")) return -1;
    const mark *pm = pat[0].set ? &pat[0] : &pat[1];
    snprintf(p, sizeof p, "%.100s.pattern.%s", jpath, pat[0].set ? "Regex" : "String");
    seek(l, pm);
    if (tf__json_peek(&l->j) != '"') return tf__json_fail(&l->j, "a string (the pattern)");
    if (tf__json_string(&l->j)) return -1;
    char *re = malloc(2 * l->j.slen + 1), where[240], why[600];
    if (!re) return sr__fail(l->err, l->errlen, "%s: out of memory", l->path);
    size_t n = 0;
    for (size_t i = 0; i < l->j.slen; i++) { /* a String pattern: its punctuation escaped */
        char c = l->j.str[i];
        if (pat[1].set && (unsigned char)c < 0x80 && !(c >= '0' && c <= '9') &&
            !((c | 0x20) >= 'a' && (c | 0x20) <= 'z'))
            re[n++] = '\\';
        re[n++] = c;
    }
    snprintf(where, sizeof where, "%s:%d: %s", l->path, pm->line, p);
    int rc = tf__split_add(l->t, re, n, behavior, where, why, sizeof why);
    free(re);
    if (rc) return sr__fail(l->err, l->errlen, "%s (the patterns run on PCRE2)", why);
    return 0;
}

/* The Digits at m (its type already checked): numbers (Rust's char::is_numeric: \p{N}) apart from the
   rest, each alone (individual_digits) or in runs, as a Split step */
static int digits_step(loader *l, const mark *m, const char *jpath) {
    static const char *const keys[] = {"type", "individual_digits", NULL};
    char p[160];
    int v;
    mark f[2] = {{0}};
    seek(l, m);
    if (members(l, jpath, keys, f)) return -1;
    snprintf(p, sizeof p, "%.100s.individual_digits", jpath);
    if (literal_at(l, &f[1], p, 0, &v)) return -1;
    const char *re = v == 1 ? "\\p{N}" : "\\p{N}+";
    return tf__split_add(l->t, re, strlen(re), TF_SPLIT_ISOLATED, jpath, l->err, l->errlen);
}

/* The ByteLevel that ends the pre-tokenizer (at m, `jpath`): use_regex true adds GPT-2's pattern. */
static int bytelevel_step(loader *l, const mark *m, const char *jpath) {
    static const char *const keys[] = {"type", "add_prefix_space", "trim_offsets", "use_regex", NULL};
    enum { TYPE, PREFIX, TRIM, REGEX, N };
    char p[160];
    int v;
    mark f[N] = {{0}};
    if (bytelevel(l, m, jpath, 0, -1, PRETOK_SUPPORTED)) return -1;
    seek(l, m);
    if (members(l, jpath, keys, f)) return -1;
    snprintf(p, sizeof p, "%.100s.use_regex", jpath);
    if (literal_at(l, &f[REGEX], p, 1, &v)) return -1;
    if (v == 1 && tf__split_add(l->t, tf__gpt2_pattern, strlen(tf__gpt2_pattern), TF_SPLIT_ISOLATED, "GPT-2's pattern",
                                l->err, l->errlen))
        return -1;
    l->t->pretok = TF_PRETOK_SPLIT; /* use_regex false: the whole text is one piece unless a Split cut it */
    return 0;
}

static int pre_tokenizer(loader *l, const mark *m) {
    static const char *const keys[] = {"type", "pretokenizers", NULL};
    const char *jp = "pre_tokenizer";
    char type[64], found[64], ip[64];
    mark tm, f[2] = {{0}}, item[TF__SPLITS_MAX + 1] = {{0}};
    if (!m->set)
        return sr__fail(l->err, l->errlen, "%s: no \"pre_tokenizer\" (supported: %s)", l->path, PRETOK_SUPPORTED);
    if (type_of(l, m, jp, PRETOK_SUPPORTED, type, sizeof type, &tm)) return -1;
    if (!strcmp(type, "ByteLevel")) return bytelevel_step(l, m, jp);
    if (strcmp(type, "Sequence")) return unsupported_type(l, &tm, jp, PRETOK_SUPPORTED);
    seek(l, m);
    if (members(l, jp, keys, f)) return -1;
    if (!f[1].set) return sr__fail(l->err, l->errlen, "%s:%d: %s has no \"pretokenizers\"", l->path, m->line, jp);
    seek(l, &f[1]);
    if (tf__json_open(&l->j, '[', "'[' (pre_tokenizer.pretokenizers is an array)")) return -1;
    int n = 0, count = 0, r;
    while ((r = tf__json_more(&l->j, ']', &count)) > 0) {
        if (n <= TF__SPLITS_MAX) item[n] = here(l);
        n++;
        if (tf__json_skip(&l->j)) return -1;
    }
    if (r < 0) return -1;
    if (n < 1 || n > TF__SPLITS_MAX) {
        snprintf(found, sizeof found, "a list of %d", n);
        return unsupported(l, f[1].line, "pre_tokenizer.pretokenizers", found, PRETOK_SUPPORTED);
    }
    for (int k = 0; k < n; k++) {
        snprintf(ip, sizeof ip, "pre_tokenizer.pretokenizers[%d]", k);
        if (type_of(l, &item[k], ip, PRETOK_SUPPORTED, type, sizeof type, &tm)) return -1;
        if (k == n - 1 && !strcmp(type, "ByteLevel")) return bytelevel_step(l, &item[k], ip);
        if (!strcmp(type, "Digits")) {
            if (digits_step(l, &item[k], ip)) return -1;
            continue;
        }
        if (strcmp(type, "Split"))
            return unsupported_type(l, &tm, ip,
                                    k == n - 1 ? "Split and Digits steps, then ByteLevel last (a byte-level BPE's "
                                                 "pieces are bytes)"
                                               : "Split or Digits (before the last step, ByteLevel)");
        if (split_step(l, &item[k], ip)) return -1;
    }
    return unsupported_type(l, &tm, ip, "ByteLevel as the last step (a byte-level BPE's pieces are bytes)");
}

/* normalizer: null or NFC */
static int normalizer(loader *l, const mark *m) {
    static const char *const keys[] = {"type", NULL};
    char type[64];
    mark tm, f[1] = {{0}};
    if (!m->set) return 0;
    seek(l, m);
    if (tf__json_peek(&l->j) == 'n') return must_be_null(l, m, "normalizer", "null or NFC");
    if (type_of(l, m, "normalizer", "null or NFC", type, sizeof type, &tm)) return -1;
    if (strcmp(type, "NFC")) return unsupported_type(l, &tm, "normalizer", "null or NFC");
    seek(l, m);
    if (members(l, "normalizer", keys, f)) return -1;
    l->t->nfc = 1;
    return 0;
}

/* post_processor: null, ByteLevel (offsets only), TemplateProcessing (the special tokens
   add_special_tokens=True adds: the tasks add eos themselves), or a Sequence of them */
static int post_processor(loader *l, const mark *m, const char *jpath, int depth) {
    static const char *const keys[] = {"type", "processors", NULL};
    const char *supported = "null, ByteLevel, TemplateProcessing or a Sequence of them";
    char type[64], ip[96];
    mark tm, f[2] = {{0}};
    if (!m->set) return 0;
    seek(l, m);
    if (!depth && tf__json_peek(&l->j) == 'n') return must_be_null(l, m, jpath, supported);
    if (type_of(l, m, jpath, supported, type, sizeof type, &tm)) return -1;
    if (!strcmp(type, "ByteLevel")) return bytelevel(l, m, jpath, -1, -1, supported);
    if (!strcmp(type, "TemplateProcessing")) return 0; /* its content adds tokens only around a text */
    if (strcmp(type, "Sequence") || depth) return unsupported_type(l, &tm, jpath, supported);
    seek(l, m);
    if (members(l, jpath, keys, f)) return -1;
    if (!f[1].set) return 0;
    seek(l, &f[1]);
    if (tf__json_open(&l->j, '[', "'[' (post_processor.processors is an array)")) return -1;
    mark item[16];
    int n = 0, count = 0, r;
    while ((r = tf__json_more(&l->j, ']', &count)) > 0) {
        if (n == 16) return sr__fail(l->err, l->errlen, "%s: post_processor.processors: more than 16", l->path);
        item[n++] = here(l);
        if (tf__json_skip(&l->j)) return -1;
    }
    if (r < 0) return -1;
    for (int k = 0; k < n; k++) {
        snprintf(ip, sizeof ip, "post_processor.processors[%d]", k);
        if (post_processor(l, &item[k], ip, 1)) return -1;
    }
    return 0;
}

/* decoder: ByteLevel */
static int decoder(loader *l, const mark *m) {
    char type[64];
    mark tm;
    if (!m->set) return sr__fail(l->err, l->errlen, "%s: no \"decoder\" (supported: ByteLevel)", l->path);
    if (type_of(l, m, "decoder", "ByteLevel", type, sizeof type, &tm)) return -1;
    if (strcmp(type, "ByteLevel")) return unsupported_type(l, &tm, "decoder", "ByteLevel");
    /* add_prefix_space and use_regex of a decoder change no byte */
    return bytelevel(l, m, "decoder", -1, -1, "ByteLevel");
}

/* ---- model -------------------------------------------------------------------------------------- */

static const char *const model_keys[] = {"type",
                                         "dropout",
                                         "unk_token",
                                         "continuing_subword_prefix",
                                         "end_of_word_suffix",
                                         "fuse_unk",
                                         "byte_fallback",
                                         "ignore_merges",
                                         "vocab",
                                         "merges",
                                         NULL};
enum { M_TYPE, M_DROPOUT, M_UNK, M_PREFIX, M_SUFFIX, M_FUSE, M_BYTE_FALLBACK, M_IGNORE_MERGES, M_VOCAB, M_MERGES, M_N };

/* model's members and options; its vocab and merges are read later */
static int model_options(loader *l, const mark *m, mark *f) {
    char type[64];
    int v;
    if (!m->set) return sr__fail(l->err, l->errlen, "%s: no \"model\" (a BPE model is expected)", l->path);
    seek(l, m);
    if (members(l, "model", model_keys, f)) return -1;
    if (!f[M_TYPE].set)
        return sr__fail(l->err, l->errlen, "%s:%d: model has no \"type\" (\"BPE\" is expected)", l->path, m->line);
    if (string_at(l, &f[M_TYPE], "model.type", type, sizeof type)) return -1;
    if (strcmp(type, "BPE")) return unsupported_type(l, &f[M_TYPE], "model", "\"BPE\"");
    if (must_be_null(l, &f[M_DROPOUT], "model.dropout", "null") ||
        null_or_empty(l, &f[M_PREFIX], "model.continuing_subword_prefix") ||
        null_or_empty(l, &f[M_SUFFIX], "model.end_of_word_suffix") ||
        literal_at(l, &f[M_FUSE], "model.fuse_unk", 0, &v) ||
        must_be(l, &f[M_BYTE_FALLBACK], "model.byte_fallback", 0, 0, "false") ||
        literal_at(l, &f[M_IGNORE_MERGES], "model.ignore_merges", 0, &v))
        return -1;
    l->t->ignore_merges = v == 1;
    if (f[M_UNK].set) { /* null, or a string: checked against the vocabulary once it is read */
        seek(l, &f[M_UNK]);
        if (tf__json_peek(&l->j) == 'n') f[M_UNK].set = 0;
        else if (tf__json_peek(&l->j) != '"') return tf__json_fail(&l->j, "null or a string (model.unk_token)");
    }
    if (!f[M_VOCAB].set) return sr__fail(l->err, l->errlen, "%s:%d: model has no \"vocab\"", l->path, m->line);
    if (!f[M_MERGES].set) return sr__fail(l->err, l->errlen, "%s:%d: model has no \"merges\"", l->path, m->line);
    return 0;
}

/* added_tokens[k] at item: {id, content, ...}; a content model.vocab has must have the same id
   there, the others join the vocabulary (b: the offset of the content, for messages). */
static int added_token(loader *l, const mark *item, int k) {
    static const char *const keys[] = {"id",     "content",    "single_word", "lstrip",
                                       "rstrip", "normalized", "special",     NULL};
    enum { ID, CONTENT, SINGLE_WORD, LSTRIP, RSTRIP, NORMALIZED, SPECIAL };
    char jp[48], p[80];
    int normalized, special;
    mark f[sizeof keys / sizeof *keys - 1] = {{0}};
    snprintf(jp, sizeof jp, "added_tokens[%d]", k);
    seek(l, item);
    if (members(l, jp, keys, f)) return -1;
    if (!f[ID].set || !f[CONTENT].set)
        return sr__fail(l->err, l->errlen, "%s:%d: %s has no \"%s\"", l->path, item->line, jp,
                        f[ID].set ? "content" : "id");
    for (int o = SINGLE_WORD; o <= RSTRIP; o++) { /* these change where a token matches: not implemented */
        snprintf(p, sizeof p, "%s.%s", jp, keys[o]);
        if (must_be(l, &f[o], p, 0, 0, "false")) return -1;
    }
    snprintf(p, sizeof p, "%s.special", jp);
    if (literal_at(l, &f[SPECIAL], p, 0, &special)) return -1;
    snprintf(p, sizeof p, "%s.normalized", jp);
    if (literal_at(l, &f[NORMALIZED], p, 0, &normalized)) return -1;
    int32_t id;
    seek(l, &f[ID]);
    if (tf__json_id(&l->j, &id)) return -1;
    seek(l, &f[CONTENT]);
    if (tf__json_string(&l->j)) return -1;
    tf__str_slot *s = tf__strmap_find(&l->t->vocab, l->j.str, l->j.slen);
    if (s && s->a != id)
        return sr__fail(l->err, l->errlen, "%s:%d: %s: \"%.*s\" has id %d here but %d in model.vocab; ids must agree",
                        l->path, f[CONTENT].line, jp, (int)(l->j.slen > 60 ? 60 : l->j.slen), l->j.str, (int)id,
                        (int)s->a);
    if (!s) {
        if (!(s = tf__strmap_add(&l->t->vocab, l->j.str, l->j.slen)))
            return sr__fail(l->err, l->errlen, "%s: out of memory", l->path);
        s->a = id;
        s->b = (int32_t)f[CONTENT].at;
    }
    /* normalized only matters after a normalizer: without one both are found in the text as given */
    if (tf__added_add(l->t, l->j.str, l->j.slen, id, normalized == 1 && l->t->nfc, special == 1))
        return sr__fail(l->err, l->errlen, "%s: out of memory", l->path);
    return 0;
}

/* added_tokens: an array of added_token()s.  Where each item starts is noted first, then each is
   read from there (the cursor reads one value from where it is moved to). */
static int added_tokens(loader *l, const mark *m) {
    if (!m->set) return 0;
    seek(l, m);
    if (tf__json_peek(&l->j) == 'n') return must_be_null(l, m, "added_tokens", "an array");
    if (tf__json_open(&l->j, '[', "'[' (added_tokens is an array)")) return -1;
    mark *items = NULL;
    int count = 0, cap = 0, r;
    while ((r = tf__json_more(&l->j, ']', &count)) > 0) {
        if (count > cap) {
            mark *grown = realloc(items, (size_t)(cap = 2 * cap + 16) * sizeof *items);
            if (!grown) {
                r = sr__fail(l->err, l->errlen, "%s: out of memory", l->path);
                break;
            }
            items = grown;
        }
        items[count - 1] = here(l);
        if (tf__json_skip(&l->j)) {
            r = -1;
            break;
        }
    }
    for (int k = 0; r == 0 && k < count; k++) r = added_token(l, &items[k], k);
    free(items);
    if (!r && tf__added_index(l->t)) r = sr__fail(l->err, l->errlen, "%s: out of memory", l->path);
    return r;
}

/* model.merges: "left right" strings or ["left", "right"] pairs, best first */
static int merges(loader *l, const mark *m) {
    char *left = NULL, *both = NULL;
    size_t lcap = 0, bcap = 0;
    int count = 0, r, rc = -1;
    seek(l, m);
    if (tf__json_open(&l->j, '[', "'[' (model.merges is an array)")) return -1;
    while ((r = tf__json_more(&l->j, ']', &count)) > 0) {
        const char *a, *b;
        size_t la, lb;
        int line = here(l).line, c = tf__json_peek(&l->j);
        if (c == '"') { /* "left right" */
            if (tf__json_string(&l->j)) goto out;
            char *sp = memchr(l->j.str, ' ', l->j.slen);
            if (!sp || sp == l->j.str || sp + 1 == l->j.str + l->j.slen ||
                memchr(sp + 1, ' ', l->j.slen - (size_t)(sp - l->j.str) - 1)) {
                sr__fail(l->err, l->errlen,
                         "%s:%d: model.merges[%d]: expected two symbols separated by one space (like \"\xC4\xA0 t\"), "
                         "found \"%.*s\"",
                         l->path, line, count - 1, (int)(l->j.slen > 60 ? 60 : l->j.slen), l->j.str);
                goto out;
            }
            a = l->j.str, la = (size_t)(sp - l->j.str);
            b = sp + 1, lb = l->j.slen - la - 1;
        } else if (c == '[') { /* ["left", "right"] */
            int k = 0;
            tf__json_open(&l->j, '[', "");
            if ((r = tf__json_more(&l->j, ']', &k)) < 0 || (r > 0 && tf__json_string(&l->j))) goto out;
            if (!r) goto not_pair;
            if (l->j.slen > lcap) {
                free(left);
                if (!(left = malloc(lcap = l->j.slen * 2))) {
                    sr__fail(l->err, l->errlen, "%s: out of memory", l->path);
                    goto out;
                }
            }
            memcpy(left, l->j.str, la = l->j.slen);
            if ((r = tf__json_more(&l->j, ']', &k)) < 0 || (r > 0 && tf__json_string(&l->j))) goto out;
            if (!r) goto not_pair;
            if ((r = tf__json_more(&l->j, ']', &k)) < 0) goto out;
            if (r) goto not_pair;
            a = left, b = l->j.str, lb = l->j.slen;
        } else {
            tf__json_fail(&l->j, "a merge: \"left right\" or [\"left\", \"right\"] (model.merges)");
            goto out;
        }
        int e = tf__merge_add(l->t, a, la, b, lb, count - 1, &both, &bcap);
        if (e == 1 || e == 2) {
            sr__fail(l->err, l->errlen, "%s:%d: model.merges[%d]: \"%.*s\" is not in model.vocab", l->path, line,
                     count - 1, (int)(e == 1 ? la : lb), e == 1 ? a : b);
            goto out;
        }
        if (e == 3) {
            sr__fail(l->err, l->errlen, "%s:%d: model.merges[%d]: the merged symbol \"%.*s\" is not in model.vocab",
                     l->path, line, count - 1, (int)(la + lb), both);
            goto out;
        }
        if (e) {
            sr__fail(l->err, l->errlen, "%s: out of memory", l->path);
            goto out;
        }
        continue;
    not_pair:
        sr__fail(l->err, l->errlen, "%s:%d: model.merges[%d]: expected a pair of two strings [\"left\", \"right\"]",
                 l->path, line, count - 1);
        goto out;
    }
    rc = r;
out:
    free(left);
    free(both);
    return rc;
}

/* ---- the file ----------------------------------------------------------------------------------- */

static const char *const top_keys[] = {"version",       "truncation",     "padding", "added_tokens", "normalizer",
                                       "pre_tokenizer", "post_processor", "decoder", "model",        NULL};
enum { T_VERSION, T_TRUNCATION, T_PADDING, T_ADDED, T_NORMALIZER, T_PRE, T_POST, T_DECODER, T_MODEL, T_N };

/* Another of a model's tokenizer files given for its tokenizer.json: HF's tokenizer_config.json
   (settings, no vocabulary) or GPT-2's vocab.json (ids only), named with the file to give instead.
   A file whose first member is a tokenizer.json's is not looked at further.  0 (the reader back at
   the start), or -1 with the message. */
static int other_file(loader *l) {
    static const char *const config_keys[] = {"tokenizer_class", "model_max_length", "added_tokens_decoder", NULL};
    size_t start = tf__json_offset(&l->j);
    int count = 0, n = 0, ints = 0, config = 0, ours = 0, r = -1;
    if (tf__json_peek(&l->j) == '{' && !tf__json_open(&l->j, '{', "'{'"))
        while (!ours && !config && (r = tf__json_more(&l->j, '}', &count)) > 0) {
            for (int k = 0; top_keys[k]; k++) ours |= tf__json_str_is(&l->j, top_keys[k]);
            for (int k = 0; config_keys[k]; k++) config |= tf__json_str_is(&l->j, config_keys[k]);
            int c = tf__json_peek(&l->j);
            n++, ints += c >= '0' && c <= '9';
            if (tf__json_skip(&l->j)) r = -1, ours = 1; /* a broken file: load() names the fault */
        }
    tf__json_seek(&l->j, start); /* whatever failed above, load() reads the file again and says so */
    if (l->err && l->errlen) l->err[0] = 0;
    if (!ours && config)
        return sr__fail(l->err, l->errlen,
                        "%s is a tokenizer_config.json (the tokenizer's settings, without its vocabulary): give the "
                        "tokenizer.json beside it (HF's tokenizer file: vocabulary, merges and rules)",
                        l->path);
    if (!ours && r == 0 && n && ints == n) /* the whole object read: names and ids */
        return sr__fail(l->err, l->errlen,
                        "%s is a vocab.json (token ids only, without the merges): give the model's tokenizer.json, or "
                        "this file with the merges.txt beside it (vocab_json and merges_txt)",
                        l->path);
    return 0;
}

static int load(loader *l, const char *text) {
    mark top[T_N] = {{0}}, model[M_N] = {{0}};
    /* the whole file's syntax first, then the small parts that decide how text is cut */
    if (other_file(l) || members(l, "the file", top_keys, top) || tf__json_end(&l->j) ||
        normalizer(l, &top[T_NORMALIZER]) || pre_tokenizer(l, &top[T_PRE]) ||
        post_processor(l, &top[T_POST], "post_processor", 0) || decoder(l, &top[T_DECODER]) ||
        model_options(l, &top[T_MODEL], model))
        return -1;
    seek(l, &model[M_VOCAB]);
    if (tf__vocab_object(l->t, &l->j, "model.vocab") || added_tokens(l, &top[T_ADDED]) ||
        tf__vocab_check_ids(l->t, l->path, text, "model.vocab and added_tokens have", l->err, l->errlen) ||
        tf__vocab_bytes(l->t, l->path, l->err, l->errlen))
        return -1;
    if (model[M_UNK].set) {
        seek(l, &model[M_UNK]);
        if (tf__json_string(&l->j)) return -1;
        if (!tf__strmap_find(&l->t->vocab, l->j.str, l->j.slen))
            return sr__fail(l->err, l->errlen, "%s:%d: model.unk_token \"%.*s\" is not in model.vocab or added_tokens",
                            l->path, model[M_UNK].line, (int)(l->j.slen > 60 ? 60 : l->j.slen), l->j.str);
    }
    if (tf__eos_choose(l->t, l->path, l->err, l->errlen)) return -1;
    return merges(l, &model[M_MERGES]);
}

tf_tokenizer *tf_tokenizer_load_json(const char *path, char *err, size_t errlen) {
    size_t n;
    if (err && errlen) err[0] = 0;
    char *text =
        tf_read_file_max(path, "tokenizer.json", TF__TOKENIZER_FILE_MAX, TF__TOKENIZER_FILE_CAP_WHY, &n, err, errlen);
    if (!text) return NULL;
    tf_tokenizer *t = calloc(1, sizeof *t);
    int rc = -1;
    loader l = {.t = t, .path = path, .err = err, .errlen = errlen};
    if (!t) sr__fail(err, errlen, "%s: out of memory", path);
    else if (n >= INT32_MAX) /* entries keep 32-bit offsets */
        sr__fail(err, errlen, "%s: too large for a tokenizer.json (%zu bytes)", path, n);
    else if (tf__json_init(&l.j, text, n,
                           n >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0, /* a UTF-8 byte order mark */
                           path, err, errlen) == 0)
        rc = load(&l, text);
    tf__json_free(&l.j);
    free(text);
    if (rc) {
        tf_tokenizer_free(t);
        return NULL;
    }
    return t;
}
