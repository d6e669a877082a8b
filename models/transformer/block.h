/*
 * transformer block: the pre-LayerNorm decoder block GPT-2 and BLOOM both use, forward and backward,
 * written once over the kernel table (kernels.h) so the CPU and CUDA runs share every GEMM's
 * arguments.  What differs between the families is a tf_block_style: how the checkpoint stores
 * linear weights, where each head's q/k/v sit in the fused projection, and ALiBi.
 *
 *   x -> LN 1 -> q/k/v projection -> causal attention -> output projection -> + x = res2
 *   res2 -> LN 2 -> up projection (4C) -> GELU (tanh) -> down projection -> + res2 = out
 *
 * Lifecycle: the task allocates, per block, an intermediates buffer of tf_block_acts_bytes() and one
 * shared tf_block_work_bytes() backward scratch -> tf_block_forward() fills the intermediates (and
 * the output) -> tf_block_backward() reads them and adds the parameter gradients.
 */
#ifndef TF_BLOCK_H
#define TF_BLOCK_H

#include <stddef.h>

#include "linear.h"
#include "shape.h"

/* a block's parameters, in the order a family declares them (names: the family's) */
enum {
    TF_BLOCK_LN1_W,
    TF_BLOCK_LN1_B, /* LayerNorm 1 [C], [C] */
    TF_BLOCK_QKV_W,
    TF_BLOCK_QKV_B, /* fused q/k/v projection C -> 3C */
    TF_BLOCK_OUT_W,
    TF_BLOCK_OUT_B, /* attention output projection C -> C */
    TF_BLOCK_LN2_W,
    TF_BLOCK_LN2_B, /* LayerNorm 2 */
    TF_BLOCK_UP_W,
    TF_BLOCK_UP_B, /* MLP C -> 4C */
    TF_BLOCK_DOWN_W,
    TF_BLOCK_DOWN_B, /* MLP 4C -> C */
    TF_BLOCK_PARAMS
};

typedef struct tf_block_style {
    tf_weight_layout weights; /* every linear weight's layout */
    int qkv_per_head;         /* 0: all q, then all k, then all v (GPT-2); 1: per head q, k, v (BLOOM) */
    int alibi;                /* ALiBi position bias on the attention scores (BLOOM) */
} tf_block_style;

/* Views into one block's intermediates buffer (laid out for Bcap samples) */
typedef struct tf_block_acts {
    float *mean1, *rstd1, *mean2, *rstd2; /* LayerNorm statistics, N each */
    char *ln1, *qkv, *att, *atty, *res2, *ln2, *fch, *fchg;
    char *lora_h; /* with LoRA (s->lora): each linear's x A^T (lora.h); NULL without */
} tf_block_acts;

/* the parameters of one block of C channels: 2 LayerNorms (2C each), q/k/v (3C^2 + 3C), the output
   projection (C^2 + C), the MLP (4C^2 + 4C and 4C^2 + C) */
double tf_block_param_count(int C);

size_t tf_block_acts_bytes(const tf_shape *s);
tf_block_acts tf_block_acts_at(const tf_shape *s, void *buf);
size_t tf_block_work_bytes(const tf_shape *s);

/* p: the block's gathered parameters (with LoRA, the adapters after the block's own, lora.h);
   d: their gradients, NULL for a frozen parameter (no gradient is computed for it).  out = the block's output; NULL for a recompute, which
   stops before the MLP's down projection (backward needs the intermediates, not the output). */
void tf_block_forward(const tf_shape *s, const tf_block_style *st, void *const *p, const void *x,
                      const tf_block_acts *a, void *out);
/* dx = d(input) from dy = d(output); parameter gradients added into d.  work: scratch of
   tf_block_work_bytes(). */
void tf_block_backward(const tf_shape *s, const tf_block_style *st, void *const *p, void *const *d, const void *x,
                       const tf_block_acts *a, const void *dy, void *dx, void *work);

#endif
