/*
 * transformer lora: LoRA adapters (HF PEFT's LoraConfig, "Linear" layers) on the linear layers of
 * block.h's decoder blocks.  A targeted linear y = x W + b becomes
 *
 *   y = x W + b + scale * (x A^T) B^T,   scale = lora_alpha / lora_r,
 *
 * with A [r, in] (PEFT's lora_A.weight, nn.Linear(in, r): kaiming-uniform with a = sqrt(5), i.e.
 * uniform in +-1/sqrt(in)) and B [out, r] (lora_B.weight, zeros), declared as two more parameters of
 * the block's module, named "<module>.<linear>.lora_A.weight" / "lora_B.weight" (PEFT's names
 * without its "base_model.model." prefix and adapter name).  Every other parameter is frozen
 * (SR_PARAM_FROZEN): only the adapters get gradients and optimizer state.
 *
 * [task] keys: lora_r (0: off), lora_alpha (PEFT's default 8), lora_dropout (0 only, for now),
 * lora_target_modules (PEFT's names, comma separated; a name targets a linear whose path in the
 * block is that name or ends with "." + it, as PEFT matches; default: the family's, as PEFT's
 * mapping has it).
 *
 * Lifecycle: tf_lora_configure() at create() -> tf_lora_declare() after each block's own parameters
 * -> per targeted linear, tf_lora_forward() after the base linear's output and tf_lora_backward()
 * after its input gradient (block.c) -> tf_lora_adapter_json() for the FULL checkpoint's
 * adapter_config.json.
 */
#ifndef TF_LORA_H
#define TF_LORA_H

#include <stddef.h>

#include "shape.h"
#include "shardrun/model.h"
#include "shardrun/task.h"

/* block.h's four linear layers, in forward order (a family with its own blocks numbers its own,
   up to TF_LORA_MAX_LINEARS) */
enum { TF_LIN_QKV, TF_LIN_OUT, TF_LIN_UP, TF_LIN_DOWN, TF_LINEARS };
#define TF_LORA_MAX_LINEARS 8

typedef struct tf_lora {
    int r;                                                 /* rank; 0: LoRA off */
    double alpha;                                          /* lora_alpha */
    double dropout;                                        /* lora_dropout (0) */
    float scale;                                           /* alpha / r */
    unsigned targets;                                      /* bit k: linear k carries an adapter */
    int fan_in_fan_out;                                    /* the family's weights are [in, out] (GPT-2's Conv1D) */
    int first;                                             /* the block's parameter index of the first adapter */
    int nlin;                                              /* the block's linear layers */
    int in[TF_LORA_MAX_LINEARS], out[TF_LORA_MAX_LINEARS]; /* their features (the family sets them) */
    char target_list[256];    /* what PEFT's config lists: the names given, comma separated */
    const char *const *names; /* the family's path of each linear in a block ("attn.c_attn") */
} tf_lora;

/* Reads the [task] keys (prefix: the task's name, for messages).  names: the family's nlin linear
   paths in a block; def: PEFT's default target_modules for the family; fan_in_fan_out: 1 for
   [in, out] weights; first: the block's parameter index of the first adapter.  *l is zeroed when
   lora_r is 0.  The caller then sets l->in[] and l->out[].  0, or -1 after an error naming the key. */
int tf_lora_configure(sr_ctx *ctx, const char *prefix, const char *const *names, int nlin, const char *def,
                      int fan_in_fan_out, int first, tf_lora *l);

/* Adapters of the block in `module` ("transformer.h.3"): lora_A [r, in] then lora_B [out, r] of each
   targeted linear, in forward order.  0, or -1. */
int tf_lora_declare(const tf_lora *l, sr_model *m, const char *module);
/* the adapters' parameters per block */
double tf_lora_block_params(const tf_lora *l);

/* parameters an adapted block declares beyond its own */
static inline int tf_lora_params(const tf_lora *l) { return l && l->r ? 2 * __builtin_popcount(l->targets) : 0; }
/* the block's parameter index of linear `lin`'s lora_A (lora_B follows), or -1 */
int tf_lora_index(const tf_lora *l, int lin);

/* x A^T, kept per targeted linear from forward to backward: elements of a block's intermediates
   (laid out for s->Bcap samples), and its backward's scratch (d(x A^T)) */
size_t tf_lora_acts_elems(const tf_shape *s);
size_t tf_lora_work_elems(const tf_shape *s);
/* where linear `lin`'s x A^T lives in the intermediates that start at `base` */
void *tf_lora_h(const tf_shape *s, void *base, int lin);

/* h = x A^T [N, r]; out (when not NULL; rows ldo apart) += scale * h B^T.  A [r, I], B [O, r]. */
void tf_lora_forward(const tf_shape *s, void *out, int ldo, void *h, const void *x, const void *A, const void *B, int N,
                     int I, int O);
/* dB += scale * dout^T h, dh = scale * dout B, dA += dh^T x, dx += dh A (dx NULL: not wanted; dout's
   rows ldo apart).  dA / dB NULL: that gradient is not wanted. */
void tf_lora_backward(const tf_shape *s, void *dx, void *dA, void *dB, void *dh, const void *dout, int ldo,
                      const void *x, const void *h, const void *A, const void *B, int N, int I, int O);

/* PEFT's adapter_config.json for these adapters (base: base_model_name_or_path, may be NULL):
   a malloc'ed string, or NULL */
char *tf_lora_adapter_json(const tf_lora *l, const char *base);

#endif
