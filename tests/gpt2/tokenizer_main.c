/* gpt2_tokenize: prints the token ids of files, one per line, for tests/gpt2/tokenizer.sh.
     gpt2_tokenize VOCAB MERGES FILE...       (VOCAB MERGES = "- -": byte-level tokens)
     gpt2_tokenize -t VOCAB MERGES FILE...    only a summary line: tokens, bytes, load and encode seconds
     gpt2_tokenize -p FILE                    the pre-tokens of FILE, one per line, in hex
   Each file is encoded as one text.  Lifecycle: load, encode every file, print, free, exit. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "examples/transformer/read_file.h"
#include "examples/transformer/tokenizer.h"

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

static int pretokens(const char *path) {
    size_t len;
    char *text = slurp(path, &len);
    if (!text) return 1;
    for (size_t i = 0, j; i < len; i = j) {
        j = tf_tokenizer_pretoken_end(text, len, i);
        for (size_t k = i; k < j; k++) printf("%02x", (unsigned char)text[k]);
        putchar('\n');
    }
    free(text);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "-p")) return pretokens(argv[2]);
    int summary = argc > 1 && !strcmp(argv[1], "-t");
    argv += summary, argc -= summary;
    if (argc < 4) {
        fprintf(stderr, "usage: gpt2_tokenize [-t] VOCAB.json MERGES.txt FILE...   (\"- -\": byte-level)\n"
                        "       gpt2_tokenize -p FILE\n");
        return 2;
    }
    int byte_level = !strcmp(argv[1], "-") && !strcmp(argv[2], "-");
    char err[512];
    double t0 = now();
    tf_tokenizer *t = tf_tokenizer_load(byte_level ? NULL : argv[1], byte_level ? NULL : argv[2], err, sizeof err);
    if (!t) {
        fprintf(stderr, "gpt2_tokenize: %s\n", err);
        return 1;
    }
    double t1 = now(), encode_s = 0;
    int32_t *ids = NULL;
    size_t n = 0, cap = 0, bytes = 0;
    for (int k = 3; k < argc; k++) {
        size_t len;
        char *text = slurp(argv[k], &len);
        if (!text) return 1;
        double e0 = now();
        if (tf_tokenizer_encode(t, text, len, &ids, &n, &cap)) {
            fprintf(stderr, "gpt2_tokenize: out of memory\n");
            return 1;
        }
        encode_s += now() - e0;
        bytes += len;
        free(text);
    }
    if (summary)
        printf("%zu tokens from %zu bytes in %d files; vocab %d; load %.3f s, encode %.3f s\n", n, bytes, argc - 3,
               tf_tokenizer_vocab_size(t), t1 - t0, encode_s);
    else
        for (size_t i = 0; i < n; i++) printf("%d\n", (int)ids[i]);
    free(ids);
    tf_tokenizer_free(t);
    return 0;
}
