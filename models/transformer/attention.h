/*
 * transformer attention: causal multi-head self-attention from a fused q/k/v activation, over the
 * kernel table, shared by the decoder models.  Where each head's query, key and value sit in a row
 * of the fused activation differs between checkpoints (tf_qkv_layout); BLOOM adds ALiBi's position
 * bias to the scores (alibi = 1).
 *
 * Lifecycle: none.  A block's forward calls tf_attention_forward() after its q/k/v projection and
 * keeps `att` (the probabilities) for tf_attention_backward(), which its backward calls before the
 * projection's own backward.
 *
 * Shapes, per micro-batch of B samples of T tokens, C channels in NH heads of hs = C / NH:
 *   qkv [N, l->row] (N = B*T; 3C without GQA), att [B, NH, T, T], y [N, C] with head h in columns h*hs .. (h+1)*hs.
 */
#ifndef TF_ATTENTION_H
#define TF_ATTENTION_H

#include "shape.h"

typedef struct tf_qkv_layout {
    int q, k, v;     /* the column of head 0's query, key and value in a row of qkv */
    int head_stride; /* columns from one head's to the next head's */
    int row;         /* columns in a row of qkv (3C without GQA) */
    int kv_heads;    /* key/value heads: NH, or fewer (grouped-query attention: query head h uses key/value
                        head h / (NH / kv_heads), as HF's repeat_kv) */
} tf_qkv_layout;

/* GPT-2: all queries, then all keys, then all values (c_attn's [C, 3C] output) */
static inline tf_qkv_layout tf_qkv_blocks(int C, int NH) { return (tf_qkv_layout){0, C, 2 * C, C / NH, 3 * C, NH}; }
/* BLOOM: per head, its query, key and value next to each other ([NH, 3, hs]) */
static inline tf_qkv_layout tf_qkv_per_head(int C, int NH) {
    int hs = C / NH;
    return (tf_qkv_layout){0, hs, 2 * hs, 3 * hs, 3 * C, NH};
}
/* Llama: NH queries, then KV keys, then KV values, each head hs = C / NH wide (q_proj, k_proj and
   v_proj written side by side) */
static inline tf_qkv_layout tf_qkv_grouped(int C, int NH, int KV) {
    int hs = C / NH;
    return (tf_qkv_layout){0, C, C + KV * hs, hs, C + 2 * KV * hs, KV};
}

/* att = softmax_causal(q k^T / sqrt(hs) (+ ALiBi)), y = att v, per sample and head */
void tf_attention_forward(const tf_shape *s, const tf_qkv_layout *l, int alibi, const void *qkv, void *att, void *y);
/* dqkv (every column overwritten) from dy [N, C] and the forward's att; datt: scratch of one sample's
   NH * T * T elements */
void tf_attention_backward(const tf_shape *s, const tf_qkv_layout *l, const void *qkv, const void *att, const void *dy,
                           void *dqkv, void *datt);

#endif
