/* BLOOM's sizes as `[task] size` names them (HF's configurations, bigscience/bloom-*; `tiny` is ours,
   for tests and the demo), shared by the task (bloom_model.c) and the generator (bloom_infer.c). */
#ifndef BLOOM_SIZES_H
#define BLOOM_SIZES_H

#include <string.h>

typedef struct bloom_size {
    const char *name;
    int n_layer, n_head, hidden_size, vocab_size; /* vocab_size 0: the tokenizer's */
} bloom_size;

static const bloom_size BLOOM_SIZES[] = {
    {"tiny", 4, 4, 128, 0},
    {"bloom-560m", 24, 16, 1024, 250880},
    {"bloom-1b1", 24, 16, 1536, 250880},
    {"bloom-3b", 30, 32, 2560, 250880},
    {"bloom-7b1", 30, 32, 4096, 250880},
};
#define BLOOM_NSIZES ((int)(sizeof BLOOM_SIZES / sizeof BLOOM_SIZES[0]))
#define BLOOM_SIZE_NAMES "tiny, bloom-560m, bloom-1b1, bloom-3b or bloom-7b1"

/* The size called `name`, or NULL. */
static inline const bloom_size *bloom_size_named(const char *name) {
    for (int i = 0; i < BLOOM_NSIZES; i++)
        if (!strcmp(name, BLOOM_SIZES[i].name)) return &BLOOM_SIZES[i];
    return NULL;
}

#endif
