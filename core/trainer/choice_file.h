/*
 * Multiple-choice eval files ([task] eval_files) in llm.c's eval format, the one its
 * dev/data/data_common.py write_evalfile() writes for HellaSwag and MMLU and llmc/dataloader.h's
 * EvalLoader reads:
 *
 *   a header of 256 little-endian int32: [0] magic 20240522, [1] version 1, [2] the number of
 *   examples, [3] the longest example in bytes; then the examples, each a run of uint16:
 *     65535 (the start of an example), its size in bytes (these six fields included), its index
 *     (0, 1, ... in the file), the label (the right completion), the number of completions, the
 *     number of context tokens and the context tokens, then per completion its number of tokens
 *     and its tokens.
 *
 * Every file is read whole and checked before step 0 (sr__choice_load): anything that does not
 * follow the format, a token id the model does not have, a context + completion longer than the
 * model takes, more than SR__CHOICE_MAX completions, is refused with the file and the byte offset.
 */
#ifndef SR__TRAINER_CHOICE_FILE_H
#define SR__TRAINER_CHOICE_FILE_H

#include <stddef.h>
#include <stdint.h>

#define SR__CHOICE_MAGIC 20240522
#define SR__CHOICE_VERSION 1
#define SR__CHOICE_HEADER_BYTES 1024
/* Completions per example: llm.c's reader takes exactly 4 (ASSUMED_NUM_COMPLETIONS); 2 to 4 here. */
#define SR__CHOICE_MAX 4

typedef struct sr__choice_example {
    const uint8_t *ctx;                  /* ctx_len little-endian uint16 tokens, inside the file's bytes */
    const uint8_t *comp[SR__CHOICE_MAX]; /* likewise, comp_len[c] tokens each */
    int ctx_len, comp_len[SR__CHOICE_MAX], ncomp, label;
} sr__choice_example;

typedef struct sr__choice_set {
    uint8_t **bytes; /* each file's contents (the examples point into them) */
    int nfiles;
    sr__choice_example *ex;
    int64_t n, cap;
    int longest; /* the most tokens of one context + completion */
} sr__choice_set;

/* Reads the files `patterns` names (whitespace-separated glob(3) patterns, relative ones under
   base_dir), in order, each file once, into s: token ids below vocab, context + completion at most
   max_tokens.  0, or -1 with err[] naming the file and the byte offset (s is then freed). */
int sr__choice_load(sr__choice_set *s, const char *patterns, const char *base_dir, int64_t vocab, int64_t max_tokens,
                    char *err, size_t errlen);
void sr__choice_free(sr__choice_set *s);
/* Token k of a run of little-endian uint16 tokens */
static inline int32_t sr__choice_token(const uint8_t *p, int k) {
    return (int32_t)p[2 * k] | (int32_t)p[2 * k + 1] << 8;
}

#endif
