/*
 * gpt2: GPT-2 as a shardrun model task -- its sizes, its parameters and its layers; the data,
 * batches, loss and evaluation are the shared decoder task's (models/transformer/lm_task.h).
 *
 * Lifecycle: shardrun/model.h's, through lm_task: create() reads the size keys (configure) and
 * declares the modules below; forward and backward reach embed_* and block_* per module.
 *
 * Modules, in forward order, with HuggingFace GPT2LMHeadModel's parameter names and layouts:
 *   transformer.embeddings  GPT2Embeddings  transformer.wte.weight [V,C], transformer.wpe.weight [P,C]
 *   transformer.h.{i}       GPT2Block       ln_1, attn.c_attn (Conv1D: weight [C,3C]), attn.c_proj,
 *                                           ln_2, mlp.c_fc [C,4C], mlp.c_proj [4C,C]
 *   transformer.ln_f        LayerNorm
 *   lm_head                 Linear          lm_head.weight, tied to transformer.wte.weight
 * so a FULL_STATE_DICT checkpoint is a GPT-2 model.safetensors, and one loads as init_weights.
 */
#include <math.h>
#include <stdio.h>

#include "gpt2_block.h"
#include "gpt2_sizes.h"
#include "lm_task.h"
#include "lora.h"

static int configure(sr_ctx *ctx, tf_lm_dims *d, int *vocab_default) {
    const char *size = sr_config(ctx, "size");
    const gpt2_size *s = gpt2_size_named(size ? size : "tiny");
    if (!s) {
        fprintf(stderr,
                "gpt2: error: [task] size = %s is not a GPT-2 size; use tiny, gpt2, gpt2-medium, gpt2-large "
                "or gpt2-xl (n_layer, n_head, n_embd, n_positions, vocab_size override its figures)\n",
                size);
        return -1;
    }
    *vocab_default = s->vocab_size;
    if (tf_lm_config_int(ctx, "gpt2", "n_layer", s->n_layer, 1, 4096, &d->L) ||
        tf_lm_config_int(ctx, "gpt2", "n_head", s->n_head, 1, 4096, &d->NH) ||
        tf_lm_config_int(ctx, "gpt2", "n_embd", s->n_embd, 1, 1 << 16, &d->C) ||
        tf_lm_config_int(ctx, "gpt2", "n_positions", s->n_positions, 1, 1 << 20, &d->P))
        return -1;
    return 0;
}

#define P1(name, n, init, flags) tf_param1(model, name, n, init, flags)
#define P2(name, a, b, init) tf_param2(model, name, a, b, init)

static int declare(const tf_lm_dims *dm, sr_model *model) {
    const int C = dm->C;
    const unsigned ND = SR_PARAM_NO_DECAY;
    /* HF's _init_weights: N(0, 0.02), residual projections N(0, 0.02 / sqrt(2 n_layer)) */
    const sr_init W = SR_NORMAL(0.02f), WP = SR_NORMAL(0.02f / sqrtf(2.0f * (float)dm->L));
    if (sr_model_module(model, "transformer.embeddings", "GPT2Embeddings") < 0 ||
        P2("transformer.wte.weight", dm->V, C, W) || P2("transformer.wpe.weight", dm->P, C, W))
        return -1;
    char mod[64], n[128];
    for (int i = 0; i < dm->L; i++) {
        snprintf(mod, sizeof mod, "transformer.h.%d", i);
        if (sr_model_module(model, mod, "GPT2Block") < 0) return -1;
#define NAME(s) (snprintf(n, sizeof n, "%s.%s", mod, s), n)
        if (P1(NAME("ln_1.weight"), C, SR_ONES, ND) || P1(NAME("ln_1.bias"), C, SR_ZEROS, ND) ||
            P2(NAME("attn.c_attn.weight"), C, 3 * C, W) || P1(NAME("attn.c_attn.bias"), 3 * C, SR_ZEROS, ND) ||
            P2(NAME("attn.c_proj.weight"), C, C, WP) || P1(NAME("attn.c_proj.bias"), C, SR_ZEROS, ND) ||
            P1(NAME("ln_2.weight"), C, SR_ONES, ND) || P1(NAME("ln_2.bias"), C, SR_ZEROS, ND) ||
            P2(NAME("mlp.c_fc.weight"), C, 4 * C, W) || P1(NAME("mlp.c_fc.bias"), 4 * C, SR_ZEROS, ND) ||
            P2(NAME("mlp.c_proj.weight"), 4 * C, C, WP) || P1(NAME("mlp.c_proj.bias"), C, SR_ZEROS, ND) ||
            tf_lora_declare(dm->lora, model, mod, i))
            return -1;
#undef NAME
    }
    return 0;
}

/* wte and wpe */
static double embed_param_count(const tf_lm_dims *d) { return (double)d->V * d->C + (double)d->P * d->C; }

/* out[b,t,:] = wte[id] + wpe[t]: nothing to keep for backward */
static void embed_forward(const tf_shape *s, void *const *p, const int32_t *ids, void *acts, void *out) {
    (void)acts;
    s->k->embed_forward(out, ids, p[0], p[1], s->B, s->T, s->C, s->dt);
}

static void embed_backward(const tf_shape *s, void *const *p, void *const *d, const int32_t *ids, void *acts,
                           const void *dy, void *scratch) {
    (void)p, (void)acts, (void)scratch;
    s->k->embed_backward(d[0], d[1], ids, dy, s->B, s->T, s->C, s->dt);
}

/* block.h's linear layers under their GPT-2 paths, for LoRA's target_modules ("c_proj" names both
   projections, as in PEFT) */
static const char *const LORA_LINEARS[TF_LINEARS] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};

/* GPT2Config's members: what the model was built with (no dropout: the task trains without) */
static int hf_config(const tf_lm_dims *d, char *out, size_t len) {
    return snprintf(out, len,
                    "\"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n  \"n_layer\": %d,\n"
                    "  \"n_head\": %d,\n  \"n_embd\": %d,\n  \"n_positions\": %d,\n  \"n_ctx\": %d,\n"
                    "  \"n_inner\": null,\n  \"activation_function\": \"gelu_new\",\n  \"layer_norm_epsilon\": 1e-05,\n"
                    "  \"resid_pdrop\": 0.0,\n  \"embd_pdrop\": 0.0,\n  \"attn_pdrop\": 0.0,\n"
                    "  \"initializer_range\": 0.02,\n  \"tie_word_embeddings\": true",
                    d->L, d->NH, d->C, d->P, d->P);
}

static const tf_lm_arch gpt2_arch = {
    .name = "gpt2",
    .width_key = "n_embd",
    .token_table = "transformer.wte.weight",
    .embed_params = 2,
    .block_style = GPT2_BLOCK_STYLE_INIT,
    .configure = configure,
    .hf_config = hf_config,
    .declare = declare,
    .embed_param_count = embed_param_count,
    .embed_forward = embed_forward,
    .embed_backward = embed_backward,
    .lora_linears = LORA_LINEARS,
    .lora_default = "c_attn", /* PEFT's default for gpt2 */
    .lora_blocks = "transformer.h",
};

static void *gpt2_create(sr_ctx *ctx, sr_model *model) { return tf_lm_create(&gpt2_arch, ctx, model); }

static const sr_model_ops gpt2_ops = TF_LM_OPS(gpt2_create);

SR_MODEL_TASK("gpt2", gpt2_ops);
