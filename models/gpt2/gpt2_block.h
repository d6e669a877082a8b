/*
 * gpt2 block: GPT2Block is the shared pre-LayerNorm block (models/transformer/block.h) with
 * GPT-2's conventions: Conv1D weights stored [in, out], c_attn's output as all queries, then all
 * keys, then all values, and no position bias in attention (GPT-2 adds learnt positions at the
 * embedding instead).
 *
 * Lifecycle: block.h's.
 *
 *   x -> ln_1 -> attn.c_attn -> causal attention -> attn.c_proj -> + x = res2
 *   res2 -> ln_2 -> mlp.c_fc -> GELU -> mlp.c_proj -> + res2 = out
 */
#ifndef GPT2_BLOCK_H
#define GPT2_BLOCK_H

#include "block.h"

/* a block's parameters, in declaration order (HF's names under transformer.h.{i}.) */
enum {
    GPT2_LN1_W = TF_BLOCK_LN1_W,
    GPT2_LN1_B = TF_BLOCK_LN1_B, /* ln_1.weight [C], ln_1.bias [C] */
    GPT2_ATTN_W = TF_BLOCK_QKV_W,
    GPT2_ATTN_B = TF_BLOCK_QKV_B, /* attn.c_attn.weight [C, 3C], bias [3C] */
    GPT2_APROJ_W = TF_BLOCK_OUT_W,
    GPT2_APROJ_B = TF_BLOCK_OUT_B, /* attn.c_proj.weight [C, C], bias [C] */
    GPT2_LN2_W = TF_BLOCK_LN2_W,
    GPT2_LN2_B = TF_BLOCK_LN2_B, /* ln_2 */
    GPT2_FC_W = TF_BLOCK_UP_W,
    GPT2_FC_B = TF_BLOCK_UP_B, /* mlp.c_fc.weight [C, 4C], bias [4C] */
    GPT2_MPROJ_W = TF_BLOCK_DOWN_W,
    GPT2_MPROJ_B = TF_BLOCK_DOWN_B, /* mlp.c_proj.weight [4C, C], bias [C] */
    GPT2_BLOCK_PARAMS = TF_BLOCK_PARAMS
};

/* Conv1D weights [in, out], q/k/v as three blocks of C columns, no ALiBi */
#define GPT2_BLOCK_STYLE_INIT                                                                                          \
    { TF_WEIGHT_IN_OUT, 0, 0 }
static const tf_block_style GPT2_BLOCK_STYLE = GPT2_BLOCK_STYLE_INIT;

#endif
