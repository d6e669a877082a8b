/*
 * gpt2 block: one GPT2Block's forward and backward, written once over the shared transformer
 * kernel table (examples/transformer: kernels.h, linear.h, attention.h), so the CPU and CUDA runs
 * share every GEMM's arguments.
 *
 * Lifecycle: gpt2_model.c allocates, per block, an intermediates buffer of gpt2_block_acts_bytes()
 * and one shared gpt2_block_work_bytes() backward scratch -> gpt2_block_forward() fills the
 * intermediates (and the output) -> gpt2_block_backward() reads them and adds the parameter
 * gradients.
 *
 *   x -> ln_1 -> attn.c_attn -> causal attention -> attn.c_proj -> + x = res2
 *   res2 -> ln_2 -> mlp.c_fc -> GELU -> mlp.c_proj -> + res2 = out
 */
#ifndef GPT2_BLOCK_H
#define GPT2_BLOCK_H

#include <stddef.h>

#include "shape.h"

/* a block's parameters, in declaration order (HF's names under transformer.h.{i}.) */
enum {
    GPT2_LN1_W, GPT2_LN1_B,     /* ln_1.weight [C], ln_1.bias [C] */
    GPT2_ATTN_W, GPT2_ATTN_B,   /* attn.c_attn.weight [C, 3C], bias [3C] */
    GPT2_APROJ_W, GPT2_APROJ_B, /* attn.c_proj.weight [C, C], bias [C] */
    GPT2_LN2_W, GPT2_LN2_B,     /* ln_2 */
    GPT2_FC_W, GPT2_FC_B,       /* mlp.c_fc.weight [C, 4C], bias [4C] */
    GPT2_MPROJ_W, GPT2_MPROJ_B, /* mlp.c_proj.weight [4C, C], bias [C] */
    GPT2_BLOCK_PARAMS
};

/* Views into one block's intermediates buffer (laid out for Bcap samples) */
typedef struct gpt2_block_acts {
    float *mean1, *rstd1, *mean2, *rstd2; /* LayerNorm statistics, N each */
    char *ln1, *qkv, *att, *atty, *res2, *ln2, *fch, *fchg;
} gpt2_block_acts;

size_t gpt2_block_acts_bytes(const tf_shape *s);
gpt2_block_acts gpt2_block_acts_at(const tf_shape *s, void *buf);
size_t gpt2_block_work_bytes(const tf_shape *s);

/* p: the block's gathered parameters.  out = the block's output; NULL for a recompute, which
   stops before the MLP's output projection (backward needs the intermediates, not the output). */
void gpt2_block_forward(const tf_shape *s, void *const *p, const void *x, const gpt2_block_acts *a, void *out);
/* dx = d(input) from dy = d(output); parameter gradients added into d.  work: scratch of
   gpt2_block_work_bytes(). */
void gpt2_block_backward(const tf_shape *s, void *const *p, void *const *d, const void *x,
                         const gpt2_block_acts *a, const void *dy, void *dx, void *work);

#endif
