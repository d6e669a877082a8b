/*
 * pack_tool: the transformer tasks' dataset loader (models/transformer/dataset.c) on files, for
 * tests/data/packing.sh: prints each sample's ids, one sample per line, then a line
 * "tokens_left N".  The byte-level tokenizer, or GPT-2 BPE from VOCAB and MERGES when given.
 *   pack_tool text|jsonl paragraph|line|file PACKING(0|1) MAX_LENGTH FILES [VOCAB MERGES]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/transformer/dataset.h"
#include "models/transformer/tokenizer.h"

int main(int argc, char **argv) {
    char err[2048];
    if (argc < 6) {
        fprintf(stderr, "usage: pack_tool text|jsonl paragraph|line|file PACKING MAX_LENGTH FILES [VOCAB MERGES]\n");
        return 2;
    }
    tf_tokenizer *tok = tf_tokenizer_load(argc > 7 ? argv[6] : NULL, argc > 7 ? argv[7] : NULL, err, sizeof err);
    if (!tok) return fprintf(stderr, "pack_tool: %s\n", err), 2;
    tf_data_opts o = {0};
    o.patterns = argv[5];
    o.format = !strcmp(argv[1], "jsonl") ? TF_FORMAT_JSONL : TF_FORMAT_TEXT;
    o.text_field = "text";
    if (tf_split_parse(argv[2], &o.split) != 0) return fprintf(stderr, "pack_tool: split %s\n", argv[2]), 2;
    o.packing = atoi(argv[3]);
    o.max_length = atoi(argv[4]);
    tf_dataset d;
    if (tf_dataset_load(&d, &o, tok, err, sizeof err) != 0) return fprintf(stderr, "pack_tool: %s\n", err), 2;
    for (long long i = 0; i < d.n; i++) {
        for (int t = 0; t < d.lengths[i]; t++) printf("%s%d", t ? " " : "", d.ids[(size_t)i * d.T + t]);
        printf("\n");
    }
    printf("tokens_left %lld\n", d.tokens_left);
    tf_dataset_free(&d);
    tf_tokenizer_free(tok);
    return 0;
}
