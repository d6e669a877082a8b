/* gpt2_tokenize: prints the token ids of files, one per line, for tests/gpt2/tokenizer.sh and
   tests/bloom/tokenizer.sh.
     gpt2_tokenize VOCAB MERGES FILE...       (VOCAB MERGES = "- -": byte-level tokens)
     gpt2_tokenize -t VOCAB MERGES FILE...    only a summary line: tokens, bytes, load and encode seconds
     gpt2_tokenize -p FILE                    the pre-tokens of FILE (GPT-2's pattern), one per line, in hex
     gpt2_tokenize --tokenizer-json PATH [-t | -p] FILE...
                                              the same with an HF tokenizer.json (-p: the pieces of its
                                              pre-tokenizer); a load error goes to stderr, exit 1;
                                              a Split pattern past PCRE2's match limit, exit 2
     gpt2_tokenize --tokenizer-json PATH --info
                                              "vocab N eos E" and, per id, its decoded bytes in hex
     gpt2_tokenize --tokenizer-json PATH --eos
                                              "eos E: " and where eos came from
   Each file is encoded as one text.  Lifecycle: load, encode every file, print, free, exit. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "models/transformer/read_file.h"
#include "models/transformer/tokenizer.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* the file's text, or NULL after saying why */
static char *slurp(const char *path, size_t *len) {
    char err[512];
    char *text = tf_read_file(path, "text file", len, err, sizeof err);
    if (!text) fprintf(stderr, "gpt2_tokenize: %s\n", err);
    return text;
}

static int print_piece(void *ctx, const char *piece, size_t n, int32_t id) {
    (void)ctx, (void)id;
    for (size_t k = 0; k < n; k++) printf("%02x", (unsigned char)piece[k]);
    putchar('\n');
    return 0;
}

/* the pieces of FILE under t's pre-tokenizer (added tokens too), one per line, in hex */
static int pieces(tf_tokenizer *t, const char *path) {
    size_t len;
    char *text = slurp(path, &len);
    if (!text) return 1;
    int rc = tf_tokenizer_pieces(t, text, len, print_piece, NULL);
    free(text);
    if (rc) fprintf(stderr, "gpt2_tokenize: out of memory\n");
    return rc ? 1 : 0;
}

/* the pre-tokens of FILE under GPT-2's pattern alone */
static int pretokens(const char *path) {
    char err[512];
    tf_tokenizer *t = tf_tokenizer_gpt2_pattern(err, sizeof err);
    if (!t) return fprintf(stderr, "gpt2_tokenize: %s\n", err), 1;
    int rc = pieces(t, path);
    tf_tokenizer_free(t);
    return rc;
}

static int info(tf_tokenizer *t) {
    printf("vocab %d eos %d\n", tf_tokenizer_vocab_size(t), tf_tokenizer_eos(t));
    char buf[4096];
    for (int id = 0; id < tf_tokenizer_vocab_size(t); id++) {
        int n = tf_tokenizer_decode(t, id, buf, sizeof buf);
        if (n < 0 || n > (int)sizeof buf) return fprintf(stderr, "gpt2_tokenize: cannot decode id %d\n", id), 1;
        for (int k = 0; k < n; k++) printf("%02x", (unsigned char)buf[k]);
        putchar('\n');
    }
    return 0;
}

static void usage(void) {
    fprintf(stderr, "usage: gpt2_tokenize [-t] VOCAB.json MERGES.txt FILE...   (\"- -\": byte-level)\n"
                    "       gpt2_tokenize -p FILE\n"
                    "       gpt2_tokenize --tokenizer-json PATH [-t | -p] FILE...\n"
                    "       gpt2_tokenize --tokenizer-json PATH --info | --eos\n");
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "-p")) return pretokens(argv[2]);
    const char *json = NULL, *vocab = NULL, *merges = NULL;
    int a = 1;
    if (argc > 2 && !strcmp(argv[1], "--tokenizer-json")) json = argv[2], a = 3;
    int summary = a < argc && !strcmp(argv[a], "-t"), split = json && a < argc && !strcmp(argv[a], "-p");
    int show = json && a + 1 == argc && !strcmp(argv[a], "--info");
    int eos = json && a + 1 == argc && !strcmp(argv[a], "--eos");
    a += summary + split + show + eos;
    if (!json && a + 2 <= argc) vocab = argv[a], merges = argv[a + 1], a += 2;
    if ((!json && !vocab) || (a >= argc && !show && !eos)) {
        usage();
        return 2;
    }
    int byte_level = vocab && !strcmp(vocab, "-") && !strcmp(merges, "-");
    char err[1024];
    double t0 = now();
    tf_tokenizer *t = json ? tf_tokenizer_load_json(json, err, sizeof err)
                           : tf_tokenizer_load(byte_level ? NULL : vocab, byte_level ? NULL : merges, err, sizeof err);
    if (!t) {
        fprintf(stderr, "gpt2_tokenize: %s\n", err);
        return 1;
    }
    if (eos) {
        printf("eos %d: %s\n", tf_tokenizer_eos(t), tf_tokenizer_eos_from(t));
        tf_tokenizer_free(t);
        return 0;
    }
    if (show || split) {
        int rc = show ? info(t) : 0;
        for (int k = a; split && k < argc && !rc; k++) rc = pieces(t, argv[k]);
        tf_tokenizer_free(t);
        return rc;
    }
    double t1 = now(), encode_s = 0;
    int32_t *ids = NULL;
    size_t n = 0, cap = 0, bytes = 0;
    for (int k = a; k < argc; k++) {
        size_t len;
        char *text = slurp(argv[k], &len);
        if (!text) {
            free(ids);
            tf_tokenizer_free(t);
            return 1;
        }
        double e0 = now();
        int rc = tf_tokenizer_encode(t, text, len, &ids, &n, &cap);
        free(text);
        if (rc) { /* a pattern PCRE2 gave up on is the tokenizer file's fault: 2, as the tools */
            fprintf(stderr, "gpt2_tokenize: %s: %s\n", argv[k], tf_tokenizer_error(t));
            free(ids);
            tf_tokenizer_free(t);
            return rc == TF_TOKENIZER_PATTERN_LIMIT ? 2 : 1;
        }
        encode_s += now() - e0;
        bytes += len;
    }
    if (summary)
        printf("%zu tokens from %zu bytes in %d files; vocab %d; load %.3f s, encode %.3f s\n", n, bytes, argc - a,
               tf_tokenizer_vocab_size(t), t1 - t0, encode_s);
    else
        for (size_t i = 0; i < n; i++) printf("%d\n", (int)ids[i]);
    free(ids);
    tf_tokenizer_free(t);
    return 0;
}
