/*
 * transformer lm_task: a decoder-only causal language model as a shardrun model task -- the data,
 * the micro-batches, the activation buffers, the loss and evaluation -- written once for every
 * model family.  A family (models/gpt2, models/bloom) describes only its own layers in a
 * tf_lm_arch: its sizes and [task] keys, its parameter declarations, the forward and backward of its
 * embedding, and the style of its transformer blocks (block.h).
 *
 * Lifecycle (shardrun/model.h): the family's create() calls tf_lm_create() with its arch, which reads
 * [task] (arch->configure for the sizes), loads the tokenizer and the data, picks the kernel table
 * (CPU, or CUDA in transformer_cuda.so when the run uses NCCL) and calls arch->declare -> per
 * micro-batch: batch(), forward() per module, loss(), backward() per module in reverse -> destroy().
 * TF_LM_OPS() fills the rest of the family's sr_model_ops with this file's callbacks.  Its files
 * (lm_state.h lists them): setup, data, kernel choice, activation buffers and the parity dump each
 * in a file of their own, the callbacks alone in lm_task.c.
 *
 * Modules, in forward order, the same in every family: 0 the embedding (arch->embed_*), 1 .. L the
 * transformer blocks (block.h's, in arch->block_style), L + 1 the final LayerNorm (weight, bias), L + 2 the language
 * modelling head, whose one parameter is tied to the token embedding ([V, C], nn.Linear).  A family
 * whose blocks are not block.h's (Llama: RMSNorm, RoPE, grouped-query attention, SwiGLU) gives its
 * own blocks, final norm and head in arch->layers; the head's one parameter is still [V, C], tied
 * or its own.
 *
 * The loss is HF's with labels = input_ids: position t predicts token t+1, padding ignored, mean
 * over the micro-batch's predicted tokens.
 */
#ifndef TF_LM_TASK_H
#define TF_LM_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "block.h"
#include "shape.h"
#include "shardrun/model.h"

/* The sizes the family's configure() sets (the rest is lm_task's) */
typedef struct tf_lm_dims {
    int L, NH, C;     /* layers, heads, channels */
    int P;            /* the most tokens per sample (max_length's upper bound) */
    int V;            /* vocabulary (set by lm_task from vocab_size or the tokenizer) */
    int block_params; /* parameters each block declares: set by a family with arch->layers */
    /* LoRA adapters ([task] lora_r, lora.h) on block.h's blocks, NULL: none.  A family's declare()
       adds each block's adapters after its own parameters with tf_lora_declare(). */
    const struct tf_lora *lora;
} tf_lm_dims;

/* A family's own blocks, final norm and head (tf_lm_arch.layers; NULL: block.h's blocks in
   block_style, transformer.ln_f and the tied lm_head).  Each block has a buffer of block_acts_bytes
   kept from its forward to its backward and shares one of block_work_bytes for backward; p, d: the
   module's gathered parameters and their gradients, in declaration order. */
typedef struct tf_lm_layers {
    double (*block_param_count)(const tf_lm_dims *d);
    size_t (*block_acts_bytes)(const tf_shape *s);
    size_t (*block_work_bytes)(const tf_shape *s);
    /* out: the block's output; NULL for a recompute (only the intermediates are needed) */
    void (*block_forward)(const tf_shape *s, void *const *p, const void *x, void *acts, void *out);
    /* dx (overwritten) from dy; parameter gradients added into d */
    void (*block_backward)(const tf_shape *s, void *const *p, void *const *d, const void *x, void *acts, const void *dy,
                           void *dx, void *work);
    /* Declares the final norm's module and the head's after the blocks; the head's parameter
       lm_head.weight [V, C] (nn.Linear), tied to arch->token_table or not.  The parameters of both
       and how many the norm declares (norm_params). */
    int (*declare_tail)(const tf_lm_dims *d, sr_model *model);
    double (*tail_param_count)(const tf_lm_dims *d);
    int norm_params;
    /* the final norm: stats holds 2N floats kept from forward to backward; backward overwrites dx */
    void (*norm_forward)(const tf_shape *s, void *const *p, const void *x, float *stats, void *out);
    void (*norm_backward)(const tf_shape *s, void *const *p, void *const *d, const void *x, const float *stats,
                          const void *dy, void *dx);
} tf_lm_layers;

typedef struct tf_lm_arch {
    const char *name;           /* the task's name: log prefix and messages ("gpt2") */
    const char *width_key;      /* the [task] key of the channels, for messages ("n_embd", "hidden_size") */
    const char *token_table;    /* the token embedding's parameter, which lm_head.weight is tied to */
    int embed_params;           /* parameters the embedding module declares */
    tf_block_style block_style; /* the blocks' conventions; each declares TF_BLOCK_PARAMS parameters */
    const tf_lm_layers *layers; /* NULL: block.h's blocks in block_style (above) */
    /* 1: no CUDA kernels for this family yet; a run under NCCL is refused at create() */
    int cpu_only;
    /* LoRA (lora.h): the path of each linear layer inside a block, in forward order ("attn.c_attn",
       ...; block.h's four, or lora_nlin of a family's own blocks), and PEFT's default target_modules
       for the family.  NULL: the family takes no adapters ([task] lora_r is refused). */
    const char *const *lora_linears;
    const char *lora_default;
    const char *lora_blocks; /* the blocks' module path without the index ("transformer.h") */
    int lora_nlin;           /* 0: block.h's four */
    /* in and out features of each of them (NULL: block.h's, from the width) */
    void (*lora_dims)(const tf_lm_dims *d, int *in, int *out);

    /* Reads the family's size keys from [task] into d (all but V), and *vocab_default: the size's
       vocabulary (0: the tokenizer's).  0, or -1 after printing an error naming the key. */
    int (*configure)(sr_ctx *ctx, tf_lm_dims *d, int *vocab_default);
    /* Declares the embedding module and the blocks with their parameters, HF's names, in forward
       order; lm_task then declares transformer.ln_f and the tied lm_head */
    int (*declare)(const tf_lm_dims *d, sr_model *model);
    /* the embedding module's parameters (lm_task adds the blocks', ln_f's and nothing for the tied head) */
    double (*embed_param_count)(const tf_lm_dims *d);

    /* The embedding: ids (device, N) -> out [N, C].  acts: embed_acts_bytes() of buffer kept from
       forward to backward (0: none); backward adds the parameter gradients into d from dy [N, C];
       dx: scratch of N*C elements. */
    size_t (*embed_acts_bytes)(const tf_shape *s);
    void (*embed_forward)(const tf_shape *s, void *const *p, const int32_t *ids, void *acts, void *out);
    void (*embed_backward)(const tf_shape *s, void *const *p, void *const *d, const int32_t *ids, void *acts,
                           const void *dy, void *scratch);
    /* The family's members of HF's config.json for this model (model_type, architectures, its sizes and
       settings, as "\"model_type\": \"gpt2\", ..."), without vocab_size and the token ids, which lm_task
       adds (lm_files.c); snprintf's result.  NULL: FULL checkpoints hold no config.json. */
    int (*hf_config)(const tf_lm_dims *d, char *out, size_t len);
} tf_lm_arch;

/* Flags every tf_param1/tf_param2 declaration gets besides its own: SR_PARAM_FROZEN while lm_task
   declares a model whose base LoRA freezes (lora.h), else 0 */
extern unsigned tf_lm_param_flags;

/* A parameter of 1 or 2 dimensions (sr_model_param): 0, or -1 */
static inline int tf_param1(sr_model *m, const char *name, int64_t n, sr_init init, unsigned flags) {
    return sr_model_param(m, name, 1, (int64_t[]){n}, init, flags | tf_lm_param_flags) != 0 ? -1 : 0;
}
static inline int tf_param2(sr_model *m, const char *name, int64_t rows, int64_t cols, sr_init init) {
    return sr_model_param(m, name, 2, (int64_t[]){rows, cols}, init, tf_lm_param_flags) != 0 ? -1 : 0;
}

/* `[task] name = value` as an int in [lo, hi] (default def): 0, or -1 after an error naming it */
int tf_lm_config_int(sr_ctx *ctx, const char *prefix, const char *key, long long def, long long lo, long long hi,
                     int *out);

void *tf_lm_create(const tf_lm_arch *arch, sr_ctx *ctx, sr_model *model);
void tf_lm_destroy(void *state);
int64_t tf_lm_num_samples(void *state);
int tf_lm_batch(void *state, const int64_t *samples, int n, long long *tokens);
int tf_lm_forward(void *state, const sr_module_call *call);
int tf_lm_loss(void *state, const sr_module_call *call, double *loss);
int tf_lm_backward(void *state, const sr_module_call *call);

/* A family's sr_model_ops: every dtype and device the kernel tables have, lm_task's callbacks */
#define TF_LM_OPS(create_fn)                                                                                           \
    {                                                                                                                  \
        .dtypes = (1u << SR_FLOAT32) | (1u << SR_BFLOAT16) | (1u << SR_FLOAT16),                                       \
        .devices = (1u << SR_DEVICE_CPU) | (1u << SR_DEVICE_CUDA), .create = (create_fn), .destroy = tf_lm_destroy,    \
        .num_samples = tf_lm_num_samples, .batch = tf_lm_batch, .forward = tf_lm_forward, .loss = tf_lm_loss,          \
        .backward = tf_lm_backward,                                                                                    \
    }

#endif
