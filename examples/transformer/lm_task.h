/*
 * transformer lm_task: a decoder-only causal language model as a shardrun model task -- the data,
 * the micro-batches, the activation buffers, the loss and evaluation -- written once for every
 * model family.  A family (examples/gpt2, examples/bloom) describes only its own layers in a
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
 * modelling head, whose one parameter is tied to the token embedding ([V, C], nn.Linear).
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
    int L, NH, C; /* layers, heads, channels */
    int P;        /* the most tokens per sample (max_length's upper bound) */
    int V;        /* vocabulary (set by lm_task from vocab_size or the tokenizer) */
} tf_lm_dims;

typedef struct tf_lm_arch {
    const char *name;        /* the task's name: log prefix and messages ("gpt2") */
    const char *width_key;   /* the [task] key of the channels, for messages ("n_embd", "hidden_size") */
    const char *token_table; /* the token embedding's parameter, which lm_head.weight is tied to */
    int embed_params; /* parameters the embedding module declares */
    tf_block_style block_style; /* the blocks' conventions; each declares TF_BLOCK_PARAMS parameters */

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
} tf_lm_arch;

/* A parameter of 1 or 2 dimensions (sr_model_param): 0, or -1 */
static inline int tf_param1(sr_model *m, const char *name, int64_t n, sr_init init, unsigned flags) {
    return sr_model_param(m, name, 1, (int64_t[]){n}, init, flags) != 0 ? -1 : 0;
}
static inline int tf_param2(sr_model *m, const char *name, int64_t rows, int64_t cols, sr_init init) {
    return sr_model_param(m, name, 2, (int64_t[]){rows, cols}, init, 0) != 0 ? -1 : 0;
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
#define TF_LM_OPS(create_fn)                                                                             \
    {                                                                                                    \
        .dtypes = (1u << SR_FLOAT32) | (1u << SR_BFLOAT16) | (1u << SR_FLOAT16),                         \
        .devices = (1u << SR_DEVICE_CPU) | (1u << SR_DEVICE_CUDA), .create = (create_fn),                \
        .destroy = tf_lm_destroy, .num_samples = tf_lm_num_samples, .batch = tf_lm_batch,                 \
        .forward = tf_lm_forward, .loss = tf_lm_loss, .backward = tf_lm_backward,                        \
    }

#endif
