/*
 * gpt2 infer: a GPT-2's forward for generation, with a key/value cache.
 *
 * Lifecycle: gpt2_infer_new(weights, kernels) allocates the cache (per layer, keys and values of
 * every position of the context: 2 * n_layer * n_positions * n_embd floats) -> gpt2_infer_prompt()
 * runs the training forward (models/transformer/block.c, the code the task trains with) over the prompt and keeps
 * each layer's keys and values -> gpt2_infer_next() per new token: its embedding goes through every
 * layer with matrix-vector products (the gemv entry: a one-column GEMM would pack every weight
 * matrix first) and attention_cached against the cache (O(position) attention work, not a forward
 * over the prefix) -> gpt2_infer_free().
 *
 * gpt2_infer_full() is the same model without the cache: the training forward over a whole
 * prefix, for the tests' comparison and --no-kv-cache.
 *
 * The CPU kernel table only: the weights are host memory and used in place.
 */
#ifndef GPT2_INFER_H
#define GPT2_INFER_H

#include <stdint.h>

#include "kernels.h"
#include "gpt2_weights.h"

typedef struct gpt2_infer gpt2_infer;

/* NULL when out of memory */
gpt2_infer *gpt2_infer_new(const gpt2_weights *w, const tf_kernels *k);
/* Forgets the cache, runs ids[0..n) (1 <= n <= n_positions) and fills the cache with them;
   logits [V] (host) of the last position.  0, or -1 when out of memory. */
int gpt2_infer_prompt(gpt2_infer *g, const int32_t *ids, int n, float *logits);
/* Appends token id at the next position (< n_positions): logits [V] of that position.  0 or -1. */
int gpt2_infer_next(gpt2_infer *g, int32_t id, float *logits);
/* No cache: the training forward over ids[0..n); logits [V] of the last position.  0 or -1. */
int gpt2_infer_full(gpt2_infer *g, const int32_t *ids, int n, float *logits);
void gpt2_infer_free(gpt2_infer *g);

#endif
