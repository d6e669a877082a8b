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
 * [task] keys: lora_r (0: off), lora_alpha (PEFT's default 8), lora_dropout (in [0, 1), PEFT's
 * default 0; "Dropout" below), lora_target_modules (PEFT's names, comma separated; a name targets
 * a linear whose path in the block is that name or ends with "." + it, as PEFT matches; default:
 * the family's, as PEFT's mapping has it).
 *
 * Lifecycle: tf_lora_configure() at create() -> tf_lora_declare() after each block's own parameters
 * -> per targeted linear, tf_lora_forward() after the base linear's output and tf_lora_backward()
 * after its input gradient (block.c, llama_block.c) -> tf_lora_adapter_json() for the FULL checkpoint's
 * adapter_config.json.
 *
 * Dropout (lora_dropout = p > 0), PEFT's nn.Dropout(p) on the adapter's input, in training only:
 *
 *   y = x W + b + scale * (drop(x) A^T) B^T,   drop(x) = mask * x / (1 - p)   (evaluation: drop(x) = x)
 *
 * Each mask element comes from a counter-based hash, so that it depends on nothing but what it
 * names -- not on how the global batch is split over ranks and micro-batches, nor on what ran
 * before -- and 1, 2 or 4 ranks, with or without gradient accumulation or activation
 * checkpointing, train the same.  THE DEFINITION (tests/lora/lora_torch.py implements it too):
 *
 *   m(z)  = splitmix64's output for state z, in 64-bit unsigned arithmetic:
 *           z += 0x9e3779b97f4a7c15; z = (z ^ z >> 30) * 0xbf58476d1ce4e5b9;
 *           z = (z ^ z >> 27) * 0x94d049bb133111eb; m = z ^ z >> 31
 *   u     = m(m(m(m(m(m(seed) ^ step) ^ sample) ^ position) ^ site) ^ feature)
 *           seed: [task] seed (the trainer's, default 42); step: the optimizer step from 0
 *           (call->step); sample: the sample's index in the training data (the index the trainer
 *           hands batch(), which names the sample whichever rank and micro-batch gets it); position:
 *           the token's position in the sample, 0..T-1; site = block * 256 + linear (the block's
 *           index from 0, the linear's in the family's forward order: TF_LIN_*, llama's LL_*);
 *           feature: the input feature, 0..in-1
 *   the element is dropped when (u >> 11) < floor(p * 2^53) (a uniform 53-bit fraction below p),
 *   else kept and multiplied by 1 / (1 - p) (float)
 *
 * The mask is not stored: forward draws drop(x) into a scratch buffer shared by every block
 * (tf_lora_drop.work), and backward draws the same elements again from the same counters, for
 * dA (which needs drop(x)) and for dx (which gets mask / (1 - p) * (dh A)).  Keeping drop(x) per
 * targeted linear until backward would cost as much as another copy of each adapted layer's input
 * activations; drawing it again costs one elementwise pass.
 */
#ifndef TF_LORA_H
#define TF_LORA_H

#include <stddef.h>
#include <stdint.h>

#include "shape.h"
#include "shardrun/model.h"
#include "shardrun/task.h"

/* block.h's four linear layers, in forward order (a family with its own blocks numbers its own,
   up to TF_LORA_MAX_LINEARS) */
enum { TF_LIN_QKV, TF_LIN_OUT, TF_LIN_UP, TF_LIN_DOWN, TF_LINEARS };
#define TF_LORA_MAX_LINEARS 8
#define TF_LORA_MAX_BLOCKS 1024

typedef struct tf_lora {
    int r;                                                 /* rank; 0: LoRA off */
    double alpha;                                          /* lora_alpha */
    double dropout;                                        /* lora_dropout, in [0, 1) */
    float scale;                                           /* alpha / r */
    unsigned targets;                                      /* bit k: linear k carries an adapter in some block */
    unsigned char block_targets[TF_LORA_MAX_BLOCKS];       /* per block: bit k, its linear k carries one */
    int L;                                                 /* the blocks */
    int fan_in_fan_out;                                    /* the family's weights are [in, out] (GPT-2's Conv1D) */
    int first;                                             /* the block's parameter index of the first adapter */
    int nlin;                                              /* the block's linear layers */
    int in[TF_LORA_MAX_LINEARS], out[TF_LORA_MAX_LINEARS]; /* their features (the family sets them) */
    char target_list[256];    /* what PEFT's config lists: the names given, comma separated */
    const char *const *names; /* the family's path of each linear in a block ("attn.c_attn") */
} tf_lora;

/* LoRA dropout's state for one training call of a block (tf_shape.drop; NULL: no dropout -- p = 0,
   evaluation, generation) */
typedef struct tf_lora_drop {
    const uint32_t *keys; /* device: per sample of the micro-batch, m(m(m(seed) ^ step) ^ sample) as
                             two words, low then high (tf_lora_sample_key) */
    uint64_t threshold;   /* floor(p * 2^53): u >> 11 below it drops the element */
    float keep_scale;     /* 1 / (1 - p) */
    int block;            /* the block's index from 0 */
    void *work;           /* device scratch of [B*T, the largest targeted in] elements */
} tf_lora_drop;

/* a sample's key, m(m(m(seed) ^ step) ^ sample) (see "Dropout" above; m is kernel_math.h's tf_mix64) */
uint64_t tf_lora_sample_key(uint64_t seed, uint64_t step, uint64_t sample);
/* the dropout's threshold, floor(p * 2^53), and the largest input of a targeted linear */
uint64_t tf_lora_drop_threshold(double p);
int tf_lora_max_in(const tf_lora *l);

/* Reads the [task] keys (prefix: the task's name, for messages).  names: the family's nlin linear
   paths in a block; blocks: the blocks' module path without the index ("transformer.h": block i is
   "transformer.h.<i>"); L: the blocks; def: PEFT's default target_modules for the family;
   fan_in_fan_out: 1 for [in, out] weights; first: the block's parameter index of the first adapter.
   A target names the linears whose full path ("transformer.h.0.attn.c_attn") is it or ends with "."
   + it, as PEFT's list target_modules matches: "c_attn" every block's, "h.0.attn.c_attn" block 0's.
   *l is zeroed when lora_r is 0.  The caller then sets l->in[] and l->out[].  0, or -1 after an
   error naming the key. */
int tf_lora_configure(sr_ctx *ctx, const char *prefix, const char *const *names, int nlin, const char *blocks, int L,
                      const char *def, int fan_in_fan_out, int first, tf_lora *l);

/* Adapters of block `block`, the module `module` ("transformer.h.3"): lora_A [r, in] then lora_B
   [out, r] of each linear it targets, in forward order.  0, or -1. */
int tf_lora_declare(const tf_lora *l, sr_model *m, const char *module, int block);
/* the adapters' parameters over all blocks */
double tf_lora_total_params(const tf_lora *l);

/* parameters block `block` declares beyond its own */
static inline int tf_lora_params(const tf_lora *l, int block) {
    return l && l->r && block >= 0 && block < l->L ? 2 * __builtin_popcount(l->block_targets[block]) : 0;
}
/* block `block`'s parameter index of linear `lin`'s lora_A (lora_B follows), or -1 */
int tf_lora_index(const tf_lora *l, int block, int lin);

/* x A^T, kept per targeted linear from forward to backward: elements of a block's intermediates
   (laid out for s->Bcap samples), and its backward's scratch (d(x A^T)) */
size_t tf_lora_acts_elems(const tf_shape *s);
size_t tf_lora_work_elems(const tf_shape *s);
/* where linear `lin`'s x A^T lives in the intermediates that start at `base` */
void *tf_lora_h(const tf_shape *s, void *base, int lin);

/* Linear `lin` (the family's forward-order index, for the dropout's site): h = drop(x) A^T [N, r];
   out (when not NULL; rows ldo apart) += scale * h B^T.  A [r, I], B [O, r].  drop(x) = x unless
   s->drop. */
void tf_lora_forward(const tf_shape *s, int lin, void *out, int ldo, void *h, const void *x, const void *A,
                     const void *B, int N, int I, int O);
/* dB += scale * dout^T h, dh = scale * dout B, dA += dh^T drop(x), dx += drop'(dh A) (dx NULL: not
   wanted; dout's rows ldo apart).  dA / dB NULL: that gradient is not wanted.  With s->drop the
   dropout's mask is drawn again from its counters (same lin as forward). */
void tf_lora_backward(const tf_shape *s, int lin, void *dx, void *dA, void *dB, void *dh, const void *dout, int ldo,
                      const void *x, const void *h, const void *A, const void *B, int N, int I, int O);

/* [task] init_adapters = dir, a PEFT adapter folder the adapters start from: its adapter_config.json
   (read by shardrun merge's reader, tools/merge/merge_config.h) must adapt exactly the modules
   this run does (blocks: as tf_lora_configure's), with this run's r and lora_alpha for each (after
   rank_pattern, alpha_pattern), without use_rslora.  0, or -1 after naming what differs and the key
   to set.  (The trainer reads the tensors and checks their names and shapes.) */
int tf_lora_check_peft(const tf_lora *l, const char *prefix, const char *dir, const char *blocks);

/* PEFT's adapter_config.json for these adapters (base: base_model_name_or_path, may be NULL):
   a malloc'ed string, or NULL */
char *tf_lora_adapter_json(const tf_lora *l, const char *base);

#endif
