/* GPT-2 task data: the byte-level tokenizer id for id, GPT-2's pre-tokenizer on chosen strings, the
   BPE merge order on a hand-made vocabulary, vocab.json/merges.txt rejected by file and line, and
   the dataset (split modes, trimming, the short-text filter, max_samples, truncation and padding,
   glob order and duplicates, its error messages) on files made in a temporary directory.
   (tests/gpt2/tokenizer.sh compares the BPE tokenizer with a Python reference on real text.) */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "models/transformer/buffer_pool.h"
#include "models/transformer/data_source.h"
#include "models/transformer/dataset.h"
#include "models/transformer/tokenizer.h"

static char dir[256];
static char made[64][512]; /* everything created, removed in reverse order at the end */
static int nmade;

static const char *at(const char *name) {
    static char buf[8][512];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 512, "%s/%s", dir, name);
    return b;
}

static void remember(const char *path) {
    for (int k = 0; k < nmade; k++)
        if (!strcmp(made[k], path)) return;
    if (nmade < 64) snprintf(made[nmade++], sizeof made[0], "%s", path);
}

static const char *write_bytes(const char *name, const void *data, size_t len) {
    const char *path = at(name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f)) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
    remember(path);
    return path;
}
static const char *write_str(const char *name, const char *s) { return write_bytes(name, s, strlen(s)); }

/* ---- tokenizer ---------------------------------------------------------------------------------- */

static void byte_level(void) {
    char err[256] = "";
    tf_tokenizer *t = tf_tokenizer_load(NULL, NULL, err, sizeof err);
    CHECK(t != NULL);
    if (!t) return;
    CHECK(tf_tokenizer_vocab_size(t) == 257 && tf_tokenizer_eos(t) == 256);
    static const char text[] = "A\0\xff\xc3\xa9 's  x\n\t<|endoftext|>";
    size_t len = sizeof text - 1, n = 0, cap = 0;
    int32_t *ids = NULL;
    CHECK(tf_tokenizer_encode(t, text, len, &ids, &n, &cap) == 0 && n == len);
    for (size_t i = 0; i < n && n == len; i++) CHECK(ids[i] == (unsigned char)text[i]);
    CHECK(tf_tokenizer_encode(t, "xy", 2, &ids, &n, &cap) == 0 && n == len + 2); /* appends */
    CHECK(ids[0] == 'A' && ids[len] == 'x' && ids[len + 1] == 'y' && cap >= n);
    CHECK(tf_tokenizer_encode(t, "", 0, &ids, &n, &cap) == 0 && n == len + 2);
    free(ids);
    tf_tokenizer_free(t);

    CHECK(tf_tokenizer_load("vocab.json", NULL, err, sizeof err) == NULL);
    CHECK(strstr(err, "both") != NULL);
    tf_tokenizer_free(NULL);
}

/* text cut into pre-tokens, joined by '|' */
typedef struct {
    char *out;
    size_t o, cap;
} joined;

static int join_piece(void *ctx, const char *piece, size_t n, int32_t id) {
    joined *j = ctx;
    (void)id;
    if (j->o && j->o + 2 < j->cap) j->out[j->o++] = '|';
    for (size_t k = 0; k < n && j->o + 2 < j->cap; k++) j->out[j->o++] = piece[k];
    return 0;
}

static const char *pretokens(const char *text) {
    static char out[256];
    char err[256];
    joined j = {out, 0, sizeof out};
    tf_tokenizer *t = tf_tokenizer_gpt2_pattern(err, sizeof err);
    CHECK(t != NULL);
    if (t) tf_tokenizer_pieces(t, text, strlen(text), join_piece, &j);
    tf_tokenizer_free(t);
    out[j.o] = 0;
    return out;
}

static void pretokenizer(void) {
    /* expectations from bpe_reference.py's regex */
    CHECK_STR(pretokens("Hello world's  end\n\n"), "Hello| world|'s| | end|\n\n");
    CHECK_STR(pretokens("a1 23 ++ x\t\ty"), "a|1| 23| ++| x|\t|\t|y");
    CHECK_STR(pretokens("I'M 'll''"), "I|'|M| '|ll|''");
    CHECK_STR(pretokens("caf\xc3\xa9 \xe2\x80\x94x"), "caf\xc3\xa9| \xe2\x80\x94|x");
    CHECK_STR(pretokens("  a \n b\xc2\xa0\xc2\xa0"
                        "c"),
              " | a| \n| b|\xc2\xa0|\xc2\xa0|c");
    CHECK_STR(pretokens("x\xe0\x81\x81y \xce\xb1\xce\xb2\xc2\xb2 it'll"),
              "x|\xe0\x81\x81|y| \xce\xb1\xce\xb2|\xc2\xb2| it|'ll");
    CHECK_STR(pretokens(" "), " ");
    CHECK_STR(pretokens("'"), "'");
}

/* UTF-8 of OpenAI's bytes_to_unicode symbol of byte b, JSON-escaped: "\uXXXX" above U+00FF, so the
   parser sees both raw UTF-8 and escapes. */
static void json_symbol(int b, char *out) {
    int printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    if (!printable) {
        int k = 0;
        for (int c = 0; c < b; c++) k += !((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE);
        sprintf(out, "\\u%04X", 256 + k);
    } else if (b == '"' || b == '\\') {
        sprintf(out, "\\%c", b);
    } else if (b < 0x80) {
        sprintf(out, "%c", b);
    } else {
        sprintf(out, "%c%c", 0xC0 | b >> 6, 0x80 | (b & 0x3F));
    }
}

/* vocab.json: byte b has id b (but byte `skip`, when >= 0, is left out), one entry per line, then
   `extra` (entries, each starting with ",\n") and "}". */
static const char *write_vocab(const char *name, int skip, const char *extra) {
    static char text[16384];
    size_t o = (size_t)sprintf(text, "{");
    for (int b = 0; b < 256; b++) {
        if (b == skip) continue;
        char sym[16];
        json_symbol(b, sym);
        o += (size_t)sprintf(text + o, "%s\n  \"%s\": %d", o > 1 ? "," : "", sym, b);
    }
    snprintf(text + o, sizeof text - o, "%s\n}\n", extra);
    return write_str(name, text);
}

/* ids 256.. of the hand-made vocabulary */
enum { AA = 256, AAA, AAAA, AB, SP_A, EOS, SMILE, NVOCAB };
#define EXTRA                                                                                                          \
    ",\n  \"aa\": 256, \"aaa\": 257, \"aaaa\": 258,\n  \"ab\": 259, \"\\u0120a\": 260,\n"                              \
    "  \"<|endoftext|>\": 261, \"\\ud83d\\ude00\": 262"

static tf_tokenizer *handmade(void) {
    char err[512] = "";
    const char *v = write_vocab("vocab.json", -1, EXTRA);
    /* ranks: "aa a" 0, "aa aa" 2, "a b" 3, "Ġ a" 4, and "a a" 6: listed twice, the later rank counts */
    const char *m = write_str("merges.txt", "#version: 0.2\r\naa a\r\na a\naa aa\na b\n\xc4\xa0 a\n\na a\n");
    tf_tokenizer *t = tf_tokenizer_load(v, m, err, sizeof err);
    if (!t) fprintf(stderr, "hand-made vocabulary rejected: %s\n", err);
    return t;
}

static void bpe(void) {
    tf_tokenizer *t = handmade();
    CHECK(t != NULL);
    if (!t) return;
    CHECK(tf_tokenizer_vocab_size(t) == NVOCAB && tf_tokenizer_eos(t) == EOS);
    /* OpenAI's loop, by hand:
       "aaaaa": (a,a) is the only ranked pair: all of them, left to right -> aa aa a; then (aa,a)
                (rank 0) before (aa,aa) (rank 2) -> aa aaa.  Merging (aa,a) as soon as it forms, in
                the middle of the (a,a) round, would give aaa aa.
       " aaaa": (Ġ,a) 4 -> Ġa a a a; (a,a) 6 -> Ġa aa a; (aa,a) 0 -> Ġa aaa
       " aab":  (a,b) 3 -> Ġ a ab; (Ġ,a) 4 -> Ġa ab   (with the first rank of (a,a), 1: Ġ aa b)
       "\taaaa": a tab by itself (byte 9), then aa aa -> aaaa */
    static const char text[] = "aaaaa aaaa aab\taaaa";
    const int32_t want[] = {AA, AAA, SP_A, AAA, SP_A, AB, '\t', AAAA};
    size_t n = 0, cap = 0, nw = sizeof want / sizeof want[0];
    int32_t *ids = NULL;
    for (int pass = 0; pass < 2; pass++) { /* the second pass comes from the cache */
        n = 0;
        CHECK(tf_tokenizer_encode(t, text, sizeof text - 1, &ids, &n, &cap) == 0 && n == nw);
        for (size_t i = 0; i < nw && n == nw; i++) CHECK(ids[i] == want[i]);
    }
    /* a text ending inside a UTF-8 sequence, in a buffer of exactly its size */
    char *x = malloc(4);
    memcpy(x, "x \xe0\xa4", 4);
    n = 0;
    CHECK(tf_tokenizer_encode(t, x, 4, &ids, &n, &cap) == 0 && n == 4);
    CHECK(ids[0] == 'x' && ids[1] == ' ' && ids[2] == 0xe0 && ids[3] == 0xa4);
    free(x);
    free(ids);
    tf_tokenizer_free(t);
}

/* Loading (vocab text, merges text) fails with a message starting with the named file's path and
   containing `want`. */
static void bad_files(const char *vocab, const char *merges, int blame_merges, const char *want, int line) {
    char err[512] = "";
    const char *v = vocab[0] == '@' ? write_vocab("bad_vocab.json", atoi(vocab + 1), strchr(vocab, ':') + 1)
                                    : write_str("bad_vocab.json", vocab);
    const char *m = write_str("bad_merges.txt", merges);
    const char *blamed = blame_merges ? m : v;
    tf_tokenizer *t = tf_tokenizer_load(v, m, err, sizeof err);
    check_rejected(t != NULL, err, blamed, want, blamed, __FILE__, line, strlen(dir) + 1);
    tf_tokenizer_free(t);
}
#define BAD_VOCAB(vocab, want) bad_files(vocab, "", 0, want, __LINE__)
#define BAD_MERGES(merges, want) bad_files("@-1:" EXTRA, merges, 1, want, __LINE__)

static void load_errors(void) {
    char err[512] = "";
    CHECK(tf_tokenizer_load(at("none.json"), at("none.txt"), err, sizeof err) == NULL);
    CHECK(strstr(err, "cannot read vocab.json") && strstr(err, at("none.json")) && strstr(err, "No such file"));
    const char *v = write_vocab("vocab.json", -1, EXTRA);
    CHECK(tf_tokenizer_load(v, at("none.txt"), err, sizeof err) == NULL);
    CHECK(strstr(err, "cannot read merges.txt") && strstr(err, at("none.txt")));

    BAD_VOCAB("{\n  \"a\": 1,\n  \"b\" 2\n}", ":3: expected ':' after the key, found '2' (byte offset 18)");
    BAD_VOCAB("[1, 2]", ":1: expected '{'");
    BAD_VOCAB("{\"a\": 1.5}", "expected an integer id");
    BAD_VOCAB("{\"a\": -1}", "expected a non-negative integer id");
    BAD_VOCAB("{\"a\": 99999999999}", "below 2^31");
    BAD_VOCAB("{\"a\": \"1\"}", "expected an integer id, found '\"'");
    BAD_VOCAB("{\"a\\q\": 1}", "expected an escape");
    BAD_VOCAB("{\"\\ud800x\": 1}", "low surrogate");
    BAD_VOCAB("{\"\\udc00\": 1}", "high surrogate");
    BAD_VOCAB("{\"\\u12g4\": 1}", "4 hex digits");
    BAD_VOCAB("{\"a\": 0,\n\"b\": 1,}", ":2: expected a string key, found '}'");
    BAD_VOCAB("{\"a\": 0}\n,", ":2: expected the end of the file");
    BAD_VOCAB("{\"a\": 0 \"b\": 1}", "expected ',' or '}' after an entry");
    BAD_VOCAB("{\"a\n\": 0}", "control characters must be escaped");
    BAD_VOCAB("{\"a\": 0, \"b", "closing the string, found the end of the file");
    BAD_VOCAB("", "expected '{' (vocab.json is one JSON object");
    BAD_VOCAB("{\"a\": 0,\n \"a\": 1}", ":2: the key \"a\" appears twice");
    /* strict JSON, as libshardrun's reader (core/io/json.c) and Python's json read it: a string must
       be UTF-8, a number has no leading zero */
    BAD_VOCAB("{\"a\": 0,\n \"b\xff\": 1}",
              ":2: expected a string character (a string must be UTF-8), found byte 0xFF");
    BAD_VOCAB("{\"a\": 0,\n \"b\": 01}", ":2: expected an integer id, found '0' (byte offset 15)");
    BAD_VOCAB("{\"a\": 0,\n \"b\": 2}", ":2: id 2 is out of range: the file has 2 entries, so ids must be 0..1");
    BAD_VOCAB("{\"a\": 1,\n \"b\": 1}", ":2: id 1 is also the id of the entry at line 1");
    BAD_VOCAB("@-1:", "no \"<|endoftext|>\" entry");
    BAD_VOCAB("@32:,\n\"<|endoftext|>\": 32", "no entry for byte 0x20 (\"\xc4\xa0\")");
    BAD_MERGES("#version: 0.2\na  b\n", ":2: expected two symbols separated by one space");
    BAD_MERGES("a b\nab\n", ":2: expected two symbols separated by one space");
    BAD_MERGES("a b\n a\n", ":2: expected two symbols");
    BAD_MERGES("a b\naa zz\n", ":2: \"zz\" is not in ");
    BAD_MERGES("b b\n", ":1: the merged symbol \"bb\" is not in ");
}

/* ---- dataset ------------------------------------------------------------------------------------ */

/* Sample i of d holds the bytes of `text` (byte-level ids), then eos up to d->T. */
static void expect_row(const tf_dataset *d, long long i, const char *text, int line) {
    size_t len = strlen(text);
    int ok = i < d->n && d->lengths[i] == (int32_t)len && len <= (size_t)d->T;
    for (size_t k = 0; ok && k < (size_t)d->T; k++)
        ok = d->ids[i * d->T + (long long)k] == (k < len ? (unsigned char)text[k] : 256);
    check_count++;
    if (!ok) {
        check_failures++;
        fprintf(stderr, "%s:%d: sample %lld is not \"%s\" + padding:", __FILE__, line, i, text);
        for (int k = 0; i < d->n && k < d->T; k++) fprintf(stderr, " %d", (int)d->ids[i * d->T + k]);
        fprintf(stderr, " (length %d)\n", i < d->n ? (int)d->lengths[i] : -1);
    }
}
#define ROW(d, i, text) expect_row(d, i, text, __LINE__)

static void make_data(void) {
    if (mkdir(at("data"), 0700) || mkdir(at("data/sub"), 0700) || mkdir(at("data2"), 0700)) {
        perror("mkdir");
        exit(2);
    }
    remember(at("data"));
    remember(at("data/sub"));
    remember(at("data2"));
    write_str("data/a.txt", "  Hello world.\n\nSecond para\n  line two\n \t \nthird\n\n\n");
    write_str("data/b.txt", "b-file\r\n\r\nnon-UTF-8 \xff\xfe end");
    write_str("data/c.dat", "");
    write_str("data/sp ace.txt", "spaced out");
    write_str("data/sub/d.txt", "in a directory");
    write_str("data2/blank.txt", " \n\t\n");
    write_str("data2/accents.txt", "\xc3\xa9\xc3\xa9\xc3\xa9 \xc3\xa9\n\nabcde\n\nab cd");
    write_str("data2/aaa.txt", "aaaaa\n");
    if (symlink("a.txt", at("data/link.txt")) || symlink("gone", at("data2/dangling"))) {
        perror("symlink");
        exit(2);
    }
    remember(at("data/link.txt"));
    remember(at("data2/dangling"));
}

/* tf_dataset_load() with these options; its error is printed when the result is not `want` */
static int load(tf_dataset *d, tf_tokenizer *t, const char *patterns, tf_split split, int min_chars, int T,
                long long max_samples, char *err, int want) {
    char pat[2048];
    size_t o = 0;
    /* "@" in `patterns` stands for the directory "data" (so "@2" for "data2") */
    for (const char *p = patterns; *p && o < sizeof pat - 300; p++)
        o += *p == '@' ? (size_t)sprintf(pat + o, "%s/data", dir) : (size_t)(pat[o] = *p, 1);
    pat[o] = 0;
    tf_data_opts opts = {
        .patterns = pat, .split = split, .min_chars = min_chars, .max_length = T, .max_samples = max_samples};
    err[0] = 0;
    int rc = tf_dataset_load(d, &opts, t, err, 512);
    if (rc != want) fprintf(stderr, "  (load \"%s\": %s)\n", patterns, rc ? err : "success");
    return rc;
}

static void dataset(void) {
    char err[512];
    tf_tokenizer *t = tf_tokenizer_load(NULL, NULL, err, sizeof err);
    tf_dataset d;
    make_data();
    /* pattern order, glob's order inside a pattern, each file once (link.txt is a.txt), no
       directories; paragraphs trimmed, inner newlines kept; truncated to 8 */
    CHECK(load(&d, t, "@/*.txt @/a.txt @/*", TF_SPLIT_PARAGRAPH, 0, 8, 0, err, 0) == 0);
    CHECK(d.n == 6 && d.T == 8 && d.files == 4 && d.texts_read == 6 && d.texts_dropped == 0);
    ROW(&d, 0, "Hello wo");
    ROW(&d, 1, "Second p");
    ROW(&d, 2, "third");
    ROW(&d, 3, "b-file");
    ROW(&d, 4, "non-UTF-");
    ROW(&d, 5, "spaced o");
    CHECK(d.tokens == 8 + 8 + 5 + 6 + 8 + 8);
    tf_dataset_free(&d);
    CHECK(d.ids == NULL && d.lengths == NULL && d.n == 0);

    /* the short-text filter counts non-whitespace characters (code points, not bytes) */
    CHECK(load(&d, t, "@/a.txt @/b.txt", TF_SPLIT_PARAGRAPH, 6, 64, 0, err, 0) == 0);
    CHECK(d.n == 4 && d.texts_read == 5 && d.texts_dropped == 1 && d.files == 2);
    ROW(&d, 0, "Hello world.");
    ROW(&d, 1, "Second para\n  line two");
    ROW(&d, 2, "b-file");
    ROW(&d, 3, "non-UTF-8 \xff\xfe end");
    tf_dataset_free(&d);
    CHECK(load(&d, t, "@2/accents.txt", TF_SPLIT_PARAGRAPH, 5, 16, 0, err, 0) == 0);
    CHECK(d.n == 1 && d.texts_dropped == 2);
    ROW(&d, 0, "abcde");
    tf_dataset_free(&d);

    /* max_samples: the first ones after filtering, and no more files read than needed */
    CHECK(load(&d, t, "@/a.txt @/b.txt", TF_SPLIT_PARAGRAPH, 6, 64, 3, err, 0) == 0);
    CHECK(d.n == 3 && d.files == 2 && d.texts_dropped == 1);
    ROW(&d, 2, "b-file");
    tf_dataset_free(&d);
    CHECK(load(&d, t, "@/a.txt @/b.txt", TF_SPLIT_PARAGRAPH, 0, 64, 2, err, 0) == 0);
    CHECK(d.n == 2 && d.files == 1 && d.texts_read == 2);
    tf_dataset_free(&d);

    /* lines: blank lines are no texts; exactly T tokens is no padding */
    CHECK(load(&d, t, "@/a.txt @/b.txt", TF_SPLIT_LINE, 0, 16, 0, err, 0) == 0);
    CHECK(d.n == 6 && d.texts_read == 6);
    ROW(&d, 0, "Hello world.");
    ROW(&d, 1, "Second para");
    ROW(&d, 2, "line two");
    ROW(&d, 3, "third");
    ROW(&d, 4, "b-file");
    ROW(&d, 5, "non-UTF-8 \xff\xfe end");
    tf_dataset_free(&d);

    /* whole files; a backslash keeps a space in a pattern */
    CHECK(load(&d, t, "@/a.txt @/b.txt @/sp\\ ace.txt", TF_SPLIT_FILE, 0, 64, 0, err, 0) == 0);
    CHECK(d.n == 3);
    ROW(&d, 0, "Hello world.\n\nSecond para\n  line two\n \t \nthird");
    ROW(&d, 1, "b-file\r\n\r\nnon-UTF-8 \xff\xfe end");
    ROW(&d, 2, "spaced out");
    tf_dataset_free(&d);

    /* with the BPE tokenizer, padding is its eos */
    tf_tokenizer *bt = handmade();
    tf_data_opts o = {.patterns = at("data2/aaa.txt"), .max_length = 4};
    CHECK(bt && tf_dataset_load(&d, &o, bt, err, sizeof err) == 0 && d.n == 1 && d.lengths[0] == 2);
    CHECK(d.ids && d.ids[0] == AA && d.ids[1] == AAA && d.ids[2] == EOS && d.ids[3] == EOS);
    tf_dataset_free(&d);
    tf_tokenizer_free(bt);

    /* errors: d is left empty */
    CHECK(load(&d, t, "@/a.txt @/nope*", TF_SPLIT_PARAGRAPH, 0, 8, 0, err, -1) == -1);
    CHECK(strstr(err, "data/nope*\" matches no file") && d.ids == NULL && d.n == 0);
    CHECK(load(&d, t, "@/a.txt @/sub", TF_SPLIT_PARAGRAPH, 0, 8, 0, err, -1) == -1);
    CHECK(strstr(err, "data/sub\" matches only directories") && strstr(err, "data/sub/*"));
    CHECK(load(&d, t, "@/a.txt @2/dangl*", TF_SPLIT_PARAGRAPH, 0, 8, 0, err, -1) == -1);
    CHECK(strstr(err, "cannot read data file") && strstr(err, "data2/dangling") && strstr(err, "No such file"));
    CHECK(load(&d, t, "@/a.txt", TF_SPLIT_PARAGRAPH, 1000, 8, 0, err, -1) == -1);
    CHECK(strstr(err, "no sample left: all 3 texts read from 1 files") && strstr(err, "min_chars = 1000"));
    CHECK(load(&d, t, "@/c.dat @2/blank.txt", TF_SPLIT_LINE, 0, 8, 0, err, -1) == -1);
    CHECK(strstr(err, "no text in the data") != NULL);
    CHECK(load(&d, t, " \t\n", TF_SPLIT_LINE, 0, 8, 0, err, -1) == -1);
    CHECK(strstr(err, "no data files given") != NULL);
    CHECK(load(&d, t, "@/a.txt", TF_SPLIT_LINE, 0, 0, 0, err, -1) == -1);
    CHECK(strstr(err, "max_length must be at least 1") != NULL);
    CHECK(load(&d, t, "@/a.txt", TF_SPLIT_LINE, -1, 8, 0, err, -1) == -1 && strstr(err, "min_chars"));
    CHECK(load(&d, t, "@/a.txt", TF_SPLIT_LINE, 0, 8, -1, err, -1) == -1 && strstr(err, "max_samples"));
    CHECK(d.ids == NULL && d.lengths == NULL && d.n == 0);
    tf_tokenizer_free(t);

    tf_split s = TF_SPLIT_FILE;
    CHECK(tf_split_parse("paragraph", &s) == 0 && s == TF_SPLIT_PARAGRAPH);
    CHECK(tf_split_parse("line", &s) == 0 && s == TF_SPLIT_LINE);
    CHECK(tf_split_parse("file", &s) == 0 && s == TF_SPLIT_FILE);
    CHECK(tf_split_parse("lines", &s) == -1 && tf_split_parse("", &s) == -1 && tf_split_parse(NULL, &s) == -1);
}

/* ---- the task's data source seam and its buffer pool ------------------------------------------ */

/* lm_task reads its samples through a tf_data_source (data_source.h): the text source gives what
   tf_dataset_load gives, and describes it for the start-up line */
static void data_source(void) {
    char err[512], from[160];
    tf_tokenizer *t = tf_tokenizer_load(NULL, NULL, err, sizeof err);
    tf_dataset d;
    tf_data_opts o = {.patterns = at("data/a.txt"), .split = TF_SPLIT_PARAGRAPH, .min_chars = 6, .max_length = 8};
    const tf_data_source *src = &tf_data_source_text;
    CHECK(t && src->load(&d, &o, t, err, sizeof err) == 0 && d.n == 2 && d.files == 1);
    ROW(&d, 0, "Hello wo");
    src->describe(&d, from, sizeof from);
    CHECK(!strcmp(from, "from 2 texts of 1 files (1 shorter texts dropped)"));
    tf_dataset_free(&d);
    o.patterns = at("data/nope*");
    CHECK(src->load(&d, &o, t, err, sizeof err) == -1 && strstr(err, "matches no file") && d.n == 0);
    tf_tokenizer_free(t);
}

static int pool_allocs, pool_frees;
static void *counting_alloc(size_t bytes) { return pool_allocs++, malloc(bytes); }
static void counting_free(void *p) { pool_frees += p != NULL, free(p); }

/* the blocks' intermediates: a buffer given back is the next one lent; the peak counts the most
   lent at once (block_activation_buffers_peak); resize frees the idle ones */
static void buffer_pool(void) {
    tf_buffer_pool p;
    tf_buffer_pool_init(&p, counting_alloc, counting_free, 64);
    void *a = tf_buffer_pool_take(&p), *b = tf_buffer_pool_take(&p);
    CHECK(a && b && a != b && p.held == 2 && p.held_peak == 2 && pool_allocs == 2);
    tf_buffer_pool_give(&p, a);
    tf_buffer_pool_give(&p, NULL);
    CHECK(p.held == 1 && tf_buffer_pool_take(&p) == a && pool_allocs == 2 && p.held_peak == 2);
    tf_buffer_pool_give(&p, a);
    tf_buffer_pool_give(&p, b);
    CHECK(p.held == 0 && pool_frees == 0);
    tf_buffer_pool_resize(&p, 128);
    CHECK(pool_frees == 2 && p.bytes == 128 && p.held_peak == 2);
    void *c = tf_buffer_pool_take(&p);
    CHECK(c && pool_allocs == 3 && p.held == 1);
    tf_buffer_pool_give(&p, c);
    tf_buffer_pool_drain(&p);
    CHECK(pool_frees == 3 && pool_allocs == 3);
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/sr_gpt2_data.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 2;
    }
    byte_level();
    pretokenizer();
    bpe();
    load_errors();
    dataset();
    data_source();
    buffer_pool();
    while (nmade) remove(made[--nmade]);
    if (rmdir(dir)) fprintf(stderr, "left behind: %s (%s)\n", dir, strerror(errno));
    return CHECK_DONE();
}
