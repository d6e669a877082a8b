/*
 * bloom: BLOOM (HF's BloomForCausalLM) as a shardrun model task -- its sizes, its parameters and
 * its layers; the data, batches, loss and evaluation are the shared decoder task's
 * (models/transformer/lm_task.h), the block is the shared pre-LayerNorm block in BLOOM's style.
 *
 * Lifecycle: shardrun/model.h's, through lm_task: create() reads the size keys (configure) and
 * declares the modules below; forward and backward reach embed_* and block_* per module.
 *
 * Modules, in forward order, with HF's parameter names and layouts (nn.Linear: weight [out, in]):
 *   transformer.word_embeddings  BloomEmbedding  word_embeddings.weight [V,H],
 *                                                word_embeddings_layernorm.weight/bias [H]
 *   transformer.h.{i}            BloomBlock      input_layernorm, self_attention.query_key_value [3H,H]
 *                                                (rows per head: q, k, v), self_attention.dense [H,H],
 *                                                post_attention_layernorm, mlp.dense_h_to_4h [4H,H],
 *                                                mlp.dense_4h_to_h [H,4H]
 *   transformer.ln_f             LayerNorm
 *   lm_head                      Linear          lm_head.weight, tied to word_embeddings.weight
 * Positions enter only through ALiBi: attention adds slope_h * (key position) to head h's scores.
 * GELU is BLOOM's bloom_gelu_forward, the tanh approximation GPT-2 uses too (its constant
 * 0.79788456 is sqrt(2/pi) rounded; the difference is below float's resolution).
 */
#include <stdio.h>
#include <string.h>

#include "block.h"
#include "bloom_sizes.h"
#include "lm_task.h"
#include "lora.h"

/* ALiBi has no position table: max_length is bounded only by memory; this cap keeps T*T in int */
#define BLOOM_MAX_TOKENS 32768

static int configure(sr_ctx *ctx, tf_lm_dims *d, int *vocab_default) {
    const char *size = sr_config(ctx, "size");
    const bloom_size *s = bloom_size_named(size ? size : "tiny");
    if (!s) {
        fprintf(stderr,
                "bloom: error: [task] size = %s is not a BLOOM size; use tiny, bloom-560m, bloom-1b1, bloom-3b "
                "or bloom-7b1 (n_layer, n_head, hidden_size, vocab_size override its figures)\n",
                size);
        return -1;
    }
    if (sr_config(ctx, "n_embd") || sr_config(ctx, "n_positions")) {
        fprintf(stderr,
                "bloom: error: [task] %s is a GPT-2 key; BLOOM's width is hidden_size, and it has no "
                "position table (ALiBi): max_length alone sets the tokens per sample\n",
                sr_config(ctx, "n_embd") ? "n_embd" : "n_positions");
        return -1;
    }
    *vocab_default = s->vocab_size;
    d->P = BLOOM_MAX_TOKENS;
    if (tf_lm_config_int(ctx, "bloom", "n_layer", s->n_layer, 1, 4096, &d->L) ||
        tf_lm_config_int(ctx, "bloom", "n_head", s->n_head, 1, 4096, &d->NH) ||
        tf_lm_config_int(ctx, "bloom", "hidden_size", s->hidden_size, 1, 1 << 16, &d->C))
        return -1;
    return 0;
}

#define P1(name, n, init, flags) tf_param1(model, name, n, init, flags)
#define P2(name, a, b, init) tf_param2(model, name, a, b, init)

static int declare(const tf_lm_dims *dm, sr_model *model) {
    const int C = dm->C;
    const unsigned ND = SR_PARAM_NO_DECAY;
    const sr_init W = SR_NORMAL(0.02f); /* HF's _init_weights: N(0, initializer_range = 0.02) for every weight */
    if (sr_model_module(model, "transformer.word_embeddings", "BloomEmbedding") < 0 ||
        P2("transformer.word_embeddings.weight", dm->V, C, W) ||
        P1("transformer.word_embeddings_layernorm.weight", C, SR_ONES, ND) ||
        P1("transformer.word_embeddings_layernorm.bias", C, SR_ZEROS, ND))
        return -1;
    char mod[64], n[160];
    for (int i = 0; i < dm->L; i++) {
        snprintf(mod, sizeof mod, "transformer.h.%d", i);
        if (sr_model_module(model, mod, "BloomBlock") < 0) return -1;
#define NAME(s) (snprintf(n, sizeof n, "%s.%s", mod, s), n)
        /* in block.h's order */
        if (P1(NAME("input_layernorm.weight"), C, SR_ONES, ND) || P1(NAME("input_layernorm.bias"), C, SR_ZEROS, ND) ||
            P2(NAME("self_attention.query_key_value.weight"), 3 * C, C, W) ||
            P1(NAME("self_attention.query_key_value.bias"), 3 * C, SR_ZEROS, ND) ||
            P2(NAME("self_attention.dense.weight"), C, C, W) ||
            P1(NAME("self_attention.dense.bias"), C, SR_ZEROS, ND) ||
            P1(NAME("post_attention_layernorm.weight"), C, SR_ONES, ND) ||
            P1(NAME("post_attention_layernorm.bias"), C, SR_ZEROS, ND) ||
            P2(NAME("mlp.dense_h_to_4h.weight"), 4 * C, C, W) ||
            P1(NAME("mlp.dense_h_to_4h.bias"), 4 * C, SR_ZEROS, ND) ||
            P2(NAME("mlp.dense_4h_to_h.weight"), C, 4 * C, W) || P1(NAME("mlp.dense_4h_to_h.bias"), C, SR_ZEROS, ND) ||
            tf_lora_declare(dm->lora, model, mod, i))
            return -1;
#undef NAME
    }
    return 0;
}

/* word_embeddings and its LayerNorm */
static double embed_param_count(const tf_lm_dims *d) { return (double)d->V * d->C + 2.0 * d->C; }

/* The embedding keeps the looked-up rows and the LayerNorm's statistics for backward:
   e [N, C] (compute dtype), then mean [N] and rstd [N] (float) */
static size_t embed_acts_bytes(const tf_shape *s) {
    size_t N = (size_t)s->Bcap * s->T;
    return N * (size_t)s->C * s->es + 2 * N * sizeof(float);
}

static float *embed_stats(const tf_shape *s, void *acts) {
    return (float *)TF_AT(s, acts, (size_t)s->Bcap * s->T * s->C);
}

/* out = word_embeddings_layernorm(word_embeddings[ids]) */
static void embed_forward(const tf_shape *s, void *const *p, const int32_t *ids, void *acts, void *out) {
    const int N = s->B * s->T;
    float *mean = embed_stats(s, acts), *rstd = mean + (size_t)s->Bcap * s->T;
    s->k->embed_forward(acts, ids, p[0], NULL, s->B, s->T, s->C, s->dt);
    s->k->layernorm_forward(out, mean, rstd, acts, p[1], p[2], N, s->C, s->dt);
}

static void embed_backward(const tf_shape *s, void *const *p, void *const *d, const int32_t *ids, void *acts,
                           const void *dy, void *scratch) {
    const int N = s->B * s->T;
    float *mean = embed_stats(s, acts), *rstd = mean + (size_t)s->Bcap * s->T;
    s->k->zero(scratch, (size_t)N * s->C * s->es); /* layernorm_backward adds into dx */
    s->k->layernorm_backward(scratch, d[1], d[2], dy, acts, mean, rstd, p[1], N, s->C, s->dt);
    s->k->embed_backward(d[0], NULL, ids, scratch, s->B, s->T, s->C, s->dt);
}

/* block.h's linear layers under their BLOOM paths, for LoRA's target_modules */
static const char *const LORA_LINEARS[TF_LINEARS] = {"self_attention.query_key_value", "self_attention.dense",
                                                     "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"};

/* BloomConfig's members: what the model was built with (no dropout: the task trains without) */
static int hf_config(const tf_lm_dims *d, char *out, size_t len) {
    return snprintf(out, len,
                    "\"architectures\": [\"BloomForCausalLM\"],\n  \"model_type\": \"bloom\",\n  \"n_layer\": %d,\n"
                    "  \"n_head\": %d,\n  \"hidden_size\": %d,\n  \"layer_norm_epsilon\": 1e-05,\n"
                    "  \"apply_residual_connection_post_layernorm\": false,\n  \"hidden_dropout\": 0.0,\n"
                    "  \"attention_dropout\": 0.0,\n  \"pretraining_tp\": 1,\n  \"slow_but_exact\": false,\n"
                    "  \"initializer_range\": 0.02,\n  \"tie_word_embeddings\": true",
                    d->L, d->NH, d->C);
}

static const tf_lm_arch bloom_arch = {
    .name = "bloom",
    .width_key = "hidden_size",
    .token_table = "transformer.word_embeddings.weight",
    .embed_params = 3,
    .block_style = {TF_WEIGHT_OUT_IN, 1, 1}, /* nn.Linear weights, q/k/v per head, ALiBi */
    .configure = configure,
    .hf_config = hf_config,
    .declare = declare,
    .embed_param_count = embed_param_count,
    .embed_acts_bytes = embed_acts_bytes,
    .embed_forward = embed_forward,
    .embed_backward = embed_backward,
    .lora_linears = LORA_LINEARS,
    .lora_default = "query_key_value", /* PEFT's default for bloom */
    .lora_blocks = "transformer.h",
};

static void *bloom_create(sr_ctx *ctx, sr_model *model) { return tf_lm_create(&bloom_arch, ctx, model); }

static const sr_model_ops bloom_ops = TF_LM_OPS(bloom_create);

SR_MODEL_TASK("bloom", bloom_ops);
