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

/* BLOOM's Split pattern, as the JSON string decodes */
static const char bloom_regex[] =
    " ?[^(\\s|[.,!?\xE2\x80\xA6\xE3\x80\x82\xEF\xBC\x8C\xE3\x80\x81\xE0\xA5\xA4\xDB\x94\xD8\x8C])]+";

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
    return tf__fail(l->err, l->errlen, "%s:%d: %s is %s: not supported yet (supported: %s)", l->path, line, jpath,
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
            return tf__fail(l->err, l->errlen, "%s:%d: %s has a member \"%.*s\": not supported yet (known: %s)",
                            l->path, tf__json_line(&l->j, l->j.key_at), jpath, (int)(l->j.slen > 60 ? 60 : l->j.slen),
                            l->j.str, list);
        }
        if (m[k].set)
            return tf__fail(l->err, l->errlen, "%s:%d: %s has \"%s\" twice", l->path, tf__json_line(&l->j, l->j.key_at),
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
    if (!tm->set) return tf__fail(l->err, l->errlen, "%s:%d: %s has no \"type\"", l->path, m->line, jpath);
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
    "ByteLevel with add_prefix_space false and use_regex true (GPT-2), or BLOOM's Sequence of Split(its pattern, "     \
    "Isolated, invert false) and ByteLevel(add_prefix_space false, use_regex false)"

/* BLOOM's Split at m (its type already checked) */
static int bloom_split(loader *l, const mark *m, const char *jpath) {
    static const char *const keys[] = {"type", "pattern", "behavior", "invert", NULL};
    static const char *const pattern_keys[] = {"Regex", "String", NULL};
    enum { TYPE, PATTERN, BEHAVIOR, INVERT, N };
    char p[160], s[256], q[96];
    mark f[N] = {{0}}, pat[2] = {{0}};
    seek(l, m);
    if (members(l, jpath, keys, f)) return -1;
    snprintf(p, sizeof p, "%.100s.pattern", jpath);
    if (!f[PATTERN].set) return tf__fail(l->err, l->errlen, "%s:%d: %s has no \"pattern\"", l->path, m->line, jpath);
    seek(l, &f[PATTERN]);
    if (members(l, p, pattern_keys, pat)) return -1;
    if (!pat[0].set) {
        seek(l, &f[PATTERN]);
        return unsupported(l, f[PATTERN].line, p, found_value(l, q, sizeof q), "{\"Regex\": BLOOM's pattern}");
    }
    snprintf(p, sizeof p, "%.100s.pattern.Regex", jpath);
    if (string_at(l, &pat[0], p, s, sizeof s)) return -1;
    if (strcmp(s, bloom_regex)) {
        seek(l, &pat[0]);
        return unsupported(l, pat[0].line, p, found_value(l, q, sizeof q), "BLOOM's pattern only");
    }
    snprintf(p, sizeof p, "%.100s.behavior", jpath);
    if (!f[BEHAVIOR].set) return tf__fail(l->err, l->errlen, "%s:%d: %s has no \"behavior\"", l->path, m->line, jpath);
    if (string_at(l, &f[BEHAVIOR], p, s, sizeof s)) return -1;
    if (strcmp(s, "Isolated")) {
        seek(l, &f[BEHAVIOR]);
        return unsupported(l, f[BEHAVIOR].line, p, found_value(l, q, sizeof q), "\"Isolated\"");
    }
    snprintf(p, sizeof p, "%.100s.invert", jpath);
    return must_be(l, &f[INVERT], p, 0, 0, "false");
}

static int pre_tokenizer(loader *l, const mark *m) {
    static const char *const keys[] = {"type", "pretokenizers", NULL};
    const char *jp = "pre_tokenizer";
    char type[64], found[64];
    mark tm, f[2] = {{0}}, item[2] = {{0}};
    if (!m->set)
        return tf__fail(l->err, l->errlen, "%s: no \"pre_tokenizer\" (supported: %s)", l->path, PRETOK_SUPPORTED);
    if (type_of(l, m, jp, PRETOK_SUPPORTED, type, sizeof type, &tm)) return -1;
    if (!strcmp(type, "ByteLevel")) {
        if (bytelevel(l, m, jp, 0, 1, PRETOK_SUPPORTED)) return -1;
        l->t->pretok = TF_PRETOK_GPT2;
        return 0;
    }
    if (strcmp(type, "Sequence")) return unsupported_type(l, &tm, jp, PRETOK_SUPPORTED);
    seek(l, m);
    if (members(l, jp, keys, f)) return -1;
    if (!f[1].set) return tf__fail(l->err, l->errlen, "%s:%d: %s has no \"pretokenizers\"", l->path, m->line, jp);
    seek(l, &f[1]);
    if (tf__json_open(&l->j, '[', "'[' (pre_tokenizer.pretokenizers is an array)")) return -1;
    int n = 0, count = 0, r;
    while ((r = tf__json_more(&l->j, ']', &count)) > 0) {
        if (n < 2) item[n] = here(l);
        n++;
        if (tf__json_skip(&l->j)) return -1;
    }
    if (r < 0) return -1;
    if (n != 2) {
        snprintf(found, sizeof found, "a list of %d", n);
        return unsupported(l, f[1].line, "pre_tokenizer.pretokenizers", found, PRETOK_SUPPORTED);
    }
    const char *p0 = "pre_tokenizer.pretokenizers[0]", *p1 = "pre_tokenizer.pretokenizers[1]";
    if (type_of(l, &item[0], p0, PRETOK_SUPPORTED, type, sizeof type, &tm)) return -1;
    if (strcmp(type, "Split")) return unsupported_type(l, &tm, p0, PRETOK_SUPPORTED);
    if (bloom_split(l, &item[0], p0)) return -1;
    if (type_of(l, &item[1], p1, PRETOK_SUPPORTED, type, sizeof type, &tm)) return -1;
    if (strcmp(type, "ByteLevel")) return unsupported_type(l, &tm, p1, PRETOK_SUPPORTED);
    if (bytelevel(l, &item[1], p1, 0, 0, PRETOK_SUPPORTED)) return -1;
    l->t->pretok = TF_PRETOK_BLOOM;
    return 0;
}

/* post_processor (null or ByteLevel: offsets only) and decoder (ByteLevel) */
static int byte_level_or_null(loader *l, const mark *m, const char *jpath, int null_ok) {
    char type[64];
    mark tm;
    const char *supported = null_ok ? "null or ByteLevel" : "ByteLevel";
    if (!m->set) {
        if (null_ok) return 0;
        return tf__fail(l->err, l->errlen, "%s: no \"%s\" (supported: %s)", l->path, jpath, supported);
    }
    seek(l, m);
    if (null_ok && tf__json_peek(&l->j) == 'n') return must_be_null(l, m, jpath, supported);
    if (type_of(l, m, jpath, supported, type, sizeof type, &tm)) return -1;
    if (strcmp(type, "ByteLevel")) return unsupported_type(l, &tm, jpath, supported);
    /* add_prefix_space and use_regex of a post-processor or decoder change no id or byte */
    return bytelevel(l, m, jpath, -1, -1, supported);
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
    if (!m->set) return tf__fail(l->err, l->errlen, "%s: no \"model\" (a BPE model is expected)", l->path);
    seek(l, m);
    if (members(l, "model", model_keys, f)) return -1;
    if (!f[M_TYPE].set)
        return tf__fail(l->err, l->errlen, "%s:%d: model has no \"type\" (\"BPE\" is expected)", l->path, m->line);
    if (string_at(l, &f[M_TYPE], "model.type", type, sizeof type)) return -1;
    if (strcmp(type, "BPE")) return unsupported_type(l, &f[M_TYPE], "model", "\"BPE\"");
    if (must_be_null(l, &f[M_DROPOUT], "model.dropout", "null") ||
        null_or_empty(l, &f[M_PREFIX], "model.continuing_subword_prefix") ||
        null_or_empty(l, &f[M_SUFFIX], "model.end_of_word_suffix") ||
        literal_at(l, &f[M_FUSE], "model.fuse_unk", 0, &v) ||
        must_be(l, &f[M_BYTE_FALLBACK], "model.byte_fallback", 0, 0, "false") ||
        must_be(l, &f[M_IGNORE_MERGES], "model.ignore_merges", 0, 0, "false"))
        return -1;
    if (f[M_UNK].set) { /* null, or a string: checked against the vocabulary once it is read */
        seek(l, &f[M_UNK]);
        if (tf__json_peek(&l->j) == 'n') f[M_UNK].set = 0;
        else if (tf__json_peek(&l->j) != '"') return tf__json_fail(&l->j, "null or a string (model.unk_token)");
    }
    if (!f[M_VOCAB].set) return tf__fail(l->err, l->errlen, "%s:%d: model has no \"vocab\"", l->path, m->line);
    if (!f[M_MERGES].set) return tf__fail(l->err, l->errlen, "%s:%d: model has no \"merges\"", l->path, m->line);
    return 0;
}

/* added_tokens[k] at item: {id, content, ...}; a content model.vocab has must have the same id
   there, the others join the vocabulary (b: the offset of the content, for messages). */
static int added_token(loader *l, const mark *item, int k) {
    static const char *const keys[] = {"id",     "content",    "single_word", "lstrip",
                                       "rstrip", "normalized", "special",     NULL};
    enum { ID, CONTENT };
    char jp[48];
    mark f[sizeof keys / sizeof *keys - 1] = {{0}};
    snprintf(jp, sizeof jp, "added_tokens[%d]", k);
    seek(l, item);
    if (members(l, jp, keys, f)) return -1;
    if (!f[ID].set || !f[CONTENT].set)
        return tf__fail(l->err, l->errlen, "%s:%d: %s has no \"%s\"", l->path, item->line, jp,
                        f[ID].set ? "content" : "id");
    int32_t id;
    seek(l, &f[ID]);
    if (tf__json_id(&l->j, &id)) return -1;
    seek(l, &f[CONTENT]);
    if (tf__json_string(&l->j)) return -1;
    tf__str_slot *s = tf__strmap_find(&l->t->vocab, l->j.str, l->j.slen);
    if (s && s->a != id)
        return tf__fail(l->err, l->errlen, "%s:%d: %s: \"%.*s\" has id %d here but %d in model.vocab; ids must agree",
                        l->path, f[CONTENT].line, jp, (int)(l->j.slen > 60 ? 60 : l->j.slen), l->j.str, (int)id,
                        (int)s->a);
    if (!s) {
        if (!(s = tf__strmap_add(&l->t->vocab, l->j.str, l->j.slen)))
            return tf__fail(l->err, l->errlen, "%s: out of memory", l->path);
        s->a = id;
        s->b = (int32_t)f[CONTENT].at;
    }
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
                r = tf__fail(l->err, l->errlen, "%s: out of memory", l->path);
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
                tf__fail(l->err, l->errlen,
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
                    tf__fail(l->err, l->errlen, "%s: out of memory", l->path);
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
            tf__fail(l->err, l->errlen, "%s:%d: model.merges[%d]: \"%.*s\" is not in model.vocab", l->path, line,
                     count - 1, (int)(e == 1 ? la : lb), e == 1 ? a : b);
            goto out;
        }
        if (e == 3) {
            tf__fail(l->err, l->errlen, "%s:%d: model.merges[%d]: the merged symbol \"%.*s\" is not in model.vocab",
                     l->path, line, count - 1, (int)(la + lb), both);
            goto out;
        }
        if (e) {
            tf__fail(l->err, l->errlen, "%s: out of memory", l->path);
            goto out;
        }
        continue;
    not_pair:
        tf__fail(l->err, l->errlen, "%s:%d: model.merges[%d]: expected a pair of two strings [\"left\", \"right\"]",
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

static int load(loader *l, const char *text) {
    mark top[T_N] = {{0}}, model[M_N] = {{0}};
    /* the whole file's syntax first, then the small parts that decide how text is cut */
    if (members(l, "the file", top_keys, top) || tf__json_end(&l->j) ||
        must_be_null(l, &top[T_NORMALIZER], "normalizer", "null") || pre_tokenizer(l, &top[T_PRE]) ||
        byte_level_or_null(l, &top[T_POST], "post_processor", 1) ||
        byte_level_or_null(l, &top[T_DECODER], "decoder", 0) || model_options(l, &top[T_MODEL], model))
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
            return tf__fail(l->err, l->errlen, "%s:%d: model.unk_token \"%.*s\" is not in model.vocab or added_tokens",
                            l->path, model[M_UNK].line, (int)(l->j.slen > 60 ? 60 : l->j.slen), l->j.str);
    }
    const tf__str_slot *eos = tf__strmap_find(&l->t->vocab, "</s>", 4);
    if (!eos) eos = tf__strmap_find(&l->t->vocab, "<|endoftext|>", 13);
    if (!eos)
        return tf__fail(
            l->err, l->errlen,
            "%s: neither \"</s>\" (BLOOM's end of text) nor \"<|endoftext|>\" (GPT-2's) is in model.vocab or "
            "added_tokens; the tasks need one to end each text",
            l->path);
    l->t->eos = eos->a;
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
    if (!t) tf__fail(err, errlen, "%s: out of memory", path);
    else if (n >= INT32_MAX) /* entries keep 32-bit offsets */
        tf__fail(err, errlen, "%s: too large for a tokenizer.json (%zu bytes)", path, n);
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
