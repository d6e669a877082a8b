/*
 * llama block: HF's LlamaDecoderLayer over the shared kernel table plus llama_kernels.h, forward
 * and backward, and the final RMSNorm -- the tf_lm_layers of the llama task (lm_task.h).
 *
 *   x -> RMSNorm (input_layernorm) -> q/k/v projections -> RoPE on q and k -> causal attention,
 *        key/value head h / (NH / KV) for query head h -> o_proj -> + x = res2
 *   res2 -> RMSNorm (post_attention_layernorm) -> silu(gate_proj) * up_proj -> down_proj -> + res2
 *
 * Lifecycle: llama_block_use(config) once, at configure(), before any block runs; the config must
 * outlive the run.  One model per process (a task .so's, or the generator's), so the config and the
 * RoPE tables are this file's statics (the tables live as long as the process).  The task reaches
 * the blocks through llama_layers (llama_layers.c, with the final norm and lm_head it declares);
 * the generator (llama_infer.c) calls llama_block_forward for a prompt and llama_block_rope_at for
 * one new token.
 */
#ifndef LLAMA_BLOCK_H
#define LLAMA_BLOCK_H

#include "llama_config.h"
#include "lm_task.h"

/* a block's parameters, in declaration order; the biases only when the config has them */
enum {
    LB_LN1,
    LB_Q_W,
    LB_Q_B,
    LB_K_W,
    LB_K_B,
    LB_V_W,
    LB_V_B,
    LB_O_W,
    LB_O_B,
    LB_LN2,
    LB_GATE_W,
    LB_GATE_B,
    LB_UP_W,
    LB_UP_B,
    LB_DOWN_W,
    LB_DOWN_B,
    LB_SLOTS
};

/* the block's linear layers for LoRA (lora.h), in forward order */
enum { LL_Q, LL_K, LL_V, LL_O, LL_GATE, LL_UP, LL_DOWN, LL_LINEARS };

/* the config the layers compute with, for samples of up to `positions` tokens; returns the
   parameters a block declares, or -1 when out of memory for the RoPE tables */
int llama_block_use(const llama_config *c, int positions);
/* 1 when the block declares slot i (its bias is on) */
int llama_block_has(int slot);

/* the config llama_block_use was given */
const llama_config *llama_block_config(void);

/* the tf_lm_layers callbacks of a block (lm_task.h); p: the declared parameters, in slot order */
double llama_block_param_count(const tf_lm_dims *d);
size_t llama_block_acts_bytes(const tf_shape *s);
size_t llama_block_work_bytes(const tf_shape *s);
void llama_block_forward(const tf_shape *s, void *const *p, const void *x, void *buf, void *out);
void llama_block_backward(const tf_shape *s, void *const *p, void *const *d, const void *x, void *buf, const void *dy,
                          void *dx, void *work);
/* after llama_block_forward: its rows of [q (C) | k (KV * hd) | v (KV * hd)], q and k rotated */
float *llama_block_qkv(const tf_shape *s, void *buf);
/* RoPE of position pos (< llama_block_use's positions) on `heads` heads of one row x */
void llama_block_rope_at(float *x, int heads, int pos);

extern const tf_lm_layers llama_layers; /* llama_layers.c */

#endif
