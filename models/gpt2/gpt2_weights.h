/*
 * gpt2 weights: a GPT-2 model's parameters read for generation from an opened model file
 * (tools/generate/gen_file.h: a HuggingFace model.safetensors or a shardrun FULL_STATE_DICT
 * checkpoint), with the model's configuration taken from the tensors' shapes.
 *
 * Lifecycle: gpt2_weights_read() checks every tensor (names with or without HF's "transformer."
 * prefix; F32 used in place, F16/BF16 converted to fp32) -> the pointers stay valid while the file
 * is open -> gpt2_weights_free().
 *
 * What the shapes do not say, n_head, comes from (first that applies) the caller's n_head, the
 * caller's size name, the file's "n_head" metadata, the folder's HF config.json, else GPT-2's own
 * heads for that n_embd (tiny 128 -> 4, 768 -> 12, 1024 -> 16, 1280 -> 20, 1600 -> 25).
 */
#ifndef GPT2_WEIGHTS_H
#define GPT2_WEIGHTS_H

#include <stddef.h>

#include "gen_model.h"
#include "gpt2_block.h" /* GPT2_BLOCK_PARAMS and their order */

typedef struct gpt2_weights {
    int L, NH, C, P, V;     /* layers, heads, n_embd, positions (context), vocabulary rows */
    const float *wte, *wpe; /* [V, C], [P, C] */
    const float *lnf_w, *lnf_b;
    const float *head;   /* lm_head.weight [V, C]: wte unless the file has its own */
    const float **block; /* L * GPT2_BLOCK_PARAMS pointers, layer-major, gpt2_block.h's order */
    char heads_from[96]; /* where NH came from, for the banner */
} gpt2_weights;

/* 0; -1 with a message in err naming the file and what to do (a size that differs from the shapes,
   a tensor missing or of the wrong shape); -2 when out of memory.  o->size, o->n_head: see above. */
int gpt2_weights_read(gen_file *f, const gen_opts *o, gpt2_weights *w, char *err, size_t errlen);
void gpt2_weights_free(gpt2_weights *w);

#endif
