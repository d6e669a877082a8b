/* GPT-2's sizes as `[task] size` names them (HF's configurations; `tiny` is ours, for tests and the
   demo), shared by the task (gpt2_model.c) and the generator (gpt2_weights.c). */
#ifndef GPT2_SIZES_H
#define GPT2_SIZES_H

#include <string.h>

typedef struct gpt2_size {
    const char *name;
    int n_layer, n_head, n_embd, n_positions, vocab_size; /* vocab_size 0: the tokenizer's */
} gpt2_size;

static const gpt2_size GPT2_SIZES[] = {
    {"tiny", 4, 4, 128, 256, 0},
    {"gpt2", 12, 12, 768, 1024, 50257},
    {"gpt2-medium", 24, 16, 1024, 1024, 50257},
    {"gpt2-large", 36, 20, 1280, 1024, 50257},
    {"gpt2-xl", 48, 25, 1600, 1024, 50257},
};
#define GPT2_NSIZES ((int)(sizeof GPT2_SIZES / sizeof GPT2_SIZES[0]))

/* The size called `name`, or NULL. */
static inline const gpt2_size *gpt2_size_named(const char *name) {
    for (int i = 0; i < GPT2_NSIZES; i++)
        if (!strcmp(name, GPT2_SIZES[i].name)) return &GPT2_SIZES[i];
    return NULL;
}

#endif
