/*
 * llama: the Llama family (HF's LlamaForCausalLM, and the Qwen2 and Mistral configs that compute
 * the same block) as a shardrun model task -- its sizes, its parameters and its embedding; the
 * blocks and the final norm are llama_block.c's, the data, batches, loss and evaluation the shared
 * decoder task's (models/transformer/lm_task.h).
 *
 * Lifecycle: shardrun/model.h's, through lm_task: create() reads the size (`size`, `config` = an HF
 * config.json, then single keys) in configure() and declares the modules below.
 *
 * Modules, in forward order, with HF's parameter names and layouts (nn.Linear: weight [out, in];
 * hd = hidden / heads, KVd = kv_heads * hd, F = intermediate_size):
 *   model.embed_tokens  Embedding          model.embed_tokens.weight [V, C]
 *   model.layers.{i}    LlamaDecoderLayer  input_layernorm.weight [C], self_attn.q_proj [C, C],
 *                                          k_proj [KVd, C], v_proj [KVd, C], o_proj [C, C],
 *                                          post_attention_layernorm.weight [C], mlp.gate_proj [F, C],
 *                                          mlp.up_proj [F, C], mlp.down_proj [C, F]; biases only
 *                                          where the config has them (attention_bias: q/k/v/o;
 *                                          Qwen2: q/k/v; mlp_bias: the MLP's)
 *   model.norm          LlamaRMSNorm       model.norm.weight [C]
 *   lm_head             Linear             lm_head.weight [V, C], or tied to model.embed_tokens.weight
 *                                          (tie_word_embeddings; then not saved, as in HF's files)
 */
#include <stdio.h>
#include <string.h>

#include "llama_block.h"
#include "llama_config.h"
#include "lm_task.h"
#include "lora.h"

static llama_config config; /* the run's (one model per process) */

/* The positions a sample may hold: the config's, capped so T * T stays an int */
#define LLAMA_MAX_TOKENS 32768

static int configure(sr_ctx *ctx, tf_lm_dims *d, int *vocab_default) {
    const char *size = sr_config(ctx, "size"), *names;
    const llama_config *s = llama_size(size ? size : "tiny", &names);
    if (!s) {
        fprintf(stderr,
                "llama: error: [task] size = %s is not a llama size; use %s, or config = path/to/config.json "
                "(an HF Llama, Qwen2 or Mistral config)\n",
                size, names);
        return -1;
    }
    config = *s;
    const char *path = sr_config_path(ctx, "config");
    if (path && *path && llama_config_read(path, &config) != 0) return -1;
    if (path && *path && config.defaulted[0] && sr_rank(ctx) == 0)
        printf("llama: %s lacks fields, which take HF's %s\n", path, config.defaulted);
    for (const char *const *k = (const char *const[]){"n_layer", "n_head", "n_embd", "n_positions", NULL}; *k; k++)
        if (sr_config(ctx, *k)) {
            fprintf(stderr,
                    "llama: error: [task] %s is a GPT-2 key; the llama task takes HF's names: "
                    "num_hidden_layers, num_attention_heads, num_key_value_heads, hidden_size, "
                    "intermediate_size, vocab_size (or config = config.json)\n",
                    *k);
            return -1;
        }
    llama_config *c = &config;
    if (tf_lm_config_int(ctx, "llama", "num_hidden_layers", c->n_layer, 1, 4096, &c->n_layer) ||
        tf_lm_config_int(ctx, "llama", "num_attention_heads", c->n_head, 1, 4096, &c->n_head) ||
        tf_lm_config_int(ctx, "llama", "num_key_value_heads", c->n_kv_head, 1, 4096, &c->n_kv_head) ||
        tf_lm_config_int(ctx, "llama", "hidden_size", c->hidden, 1, 1 << 16, &c->hidden) ||
        tf_lm_config_int(ctx, "llama", "intermediate_size", c->intermediate, 1, 1 << 20, &c->intermediate))
        return -1;
    const char *from = path && *path ? path : "the size";
    if (c->n_head % c->n_kv_head) {
        /* a head count the file lacks is the config class's (Qwen2Config: 32 key/value heads): say so */
        int defaulted = strstr(c->defaulted, "_heads ") != NULL;
        fprintf(stderr,
                "llama: error: num_attention_heads = %d is not a multiple of num_key_value_heads = %d (%s%s%s)\n",
                c->n_head, c->n_kv_head, from, defaulted ? "; it lacks fields, which take HF's " : "",
                defaulted ? c->defaulted : "");
        return -1;
    }
    if (c->hidden % c->n_head == 0 && (c->hidden / c->n_head) % 2) {
        fprintf(stderr,
                "llama: error: the head size hidden_size / num_attention_heads = %d / %d is odd; rotary "
                "embeddings rotate pairs of channels (%s)\n",
                c->hidden, c->n_head, from);
        return -1;
    }
    if (!(c->rms_eps > 0) || !(c->rope_theta > 1) || !(c->init_range >= 0)) {
        fprintf(stderr,
                "llama: error: rms_norm_eps = %g, rope_theta = %g, initializer_range = %g: want eps > 0, "
                "theta > 1, range >= 0 (%s)\n",
                c->rms_eps, c->rope_theta, c->init_range, from);
        return -1;
    }
    *vocab_default = c->vocab;
    d->L = c->n_layer, d->NH = c->n_head, d->C = c->hidden;
    d->P = c->max_positions < LLAMA_MAX_TOKENS ? c->max_positions : LLAMA_MAX_TOKENS;
    if (c->hidden % c->n_head) return 0; /* lm_task says so */
    if (sr_rank(ctx) == 0)
        printf("llama: %s: %d heads on %d key/value heads, intermediate_size %d, rope_theta %g%s, rms_norm_eps %g, "
               "%s lm_head%s%s\n",
               path && *path ? path
               : size        ? size
                             : "tiny",
               c->n_head, c->n_kv_head, c->intermediate, c->rope_theta, c->llama3 ? " (llama3 scaling)" : "",
               c->rms_eps, c->tie ? "tied" : "untied", c->qkv_bias ? ", q/k/v biases" : "",
               c->mlp_bias ? ", MLP biases" : "");
    if ((d->block_params = llama_block_use(c, d->P)) < 0) {
        fprintf(stderr, "llama: error: out of memory for the rotary tables of %d positions\n", d->P);
        return -1;
    }
    return 0;
}

#define P1(name, n, init, flags) tf_param1(model, name, n, init, flags)
#define P2(name, a, b, init) tf_param2(model, name, a, b, init)

static int declare(const tf_lm_dims *dm, sr_model *model) {
    const int C = dm->C, KVd = config.n_kv_head * (C / dm->NH), F = config.intermediate;
    const unsigned ND = SR_PARAM_NO_DECAY;
    const sr_init W = SR_NORMAL((float)config.init_range); /* HF's _init_weights: N(0, initializer_range) */
    if (sr_model_module(model, "model.embed_tokens", "Embedding") < 0 || P2("model.embed_tokens.weight", dm->V, C, W))
        return -1;
    char mod[64], n[160];
    for (int i = 0; i < dm->L; i++) {
        snprintf(mod, sizeof mod, "model.layers.%d", i);
        if (sr_model_module(model, mod, "LlamaDecoderLayer") < 0) return -1;
#define NAME(s) (snprintf(n, sizeof n, "%s.%s", mod, s), n)
#define BIAS(slot, s, len) (llama_block_has(slot) && P1(NAME(s), len, SR_ZEROS, ND))
        /* in llama_block.h's slot order */
        if (P1(NAME("input_layernorm.weight"), C, SR_ONES, ND) || P2(NAME("self_attn.q_proj.weight"), C, C, W) ||
            BIAS(LB_Q_B, "self_attn.q_proj.bias", C) || P2(NAME("self_attn.k_proj.weight"), KVd, C, W) ||
            BIAS(LB_K_B, "self_attn.k_proj.bias", KVd) || P2(NAME("self_attn.v_proj.weight"), KVd, C, W) ||
            BIAS(LB_V_B, "self_attn.v_proj.bias", KVd) || P2(NAME("self_attn.o_proj.weight"), C, C, W) ||
            BIAS(LB_O_B, "self_attn.o_proj.bias", C) || P1(NAME("post_attention_layernorm.weight"), C, SR_ONES, ND) ||
            P2(NAME("mlp.gate_proj.weight"), F, C, W) || BIAS(LB_GATE_B, "mlp.gate_proj.bias", F) ||
            P2(NAME("mlp.up_proj.weight"), F, C, W) || BIAS(LB_UP_B, "mlp.up_proj.bias", F) ||
            P2(NAME("mlp.down_proj.weight"), C, F, W) || BIAS(LB_DOWN_B, "mlp.down_proj.bias", C) ||
            tf_lora_declare(dm->lora, model, mod, i))
            return -1;
#undef BIAS
#undef NAME
    }
    return 0;
}

static double embed_param_count(const tf_lm_dims *d) { return (double)d->V * d->C; }

static void embed_forward(const tf_shape *s, void *const *p, const int32_t *ids, void *acts, void *out) {
    (void)acts;
    s->k->embed_forward(out, ids, p[0], NULL, s->B, s->T, s->C, s->dt);
}

static void embed_backward(const tf_shape *s, void *const *p, void *const *d, const int32_t *ids, void *acts,
                           const void *dy, void *scratch) {
    (void)p, (void)acts, (void)scratch;
    s->k->embed_backward(d[0], NULL, ids, dy, s->B, s->T, s->C, s->dt);
}

/* the block's linear layers under HF's paths, for LoRA's target_modules (llama_block.h's LL_*) */
static const char *const LORA_LINEARS[LL_LINEARS] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                                     "self_attn.o_proj", "mlp.gate_proj",    "mlp.up_proj",
                                                     "mlp.down_proj"};

static void lora_dims(const tf_lm_dims *d, int *in, int *out) {
    const int C = d->C, KVd = config.n_kv_head * (C / d->NH), F = config.intermediate;
    const int I[LL_LINEARS] = {C, C, C, C, C, C, F}, O[LL_LINEARS] = {C, KVd, KVd, C, F, F, C};
    for (int k = 0; k < LL_LINEARS; k++) in[k] = I[k], out[k] = O[k];
}

/* LlamaConfig's (Qwen2Config's: q/k/v biases without o's) members, from the run's config */
static int hf_config(const tf_lm_dims *d, char *out, size_t len) {
    const llama_config *c = &config;
    int qwen2 = c->qkv_bias && !c->o_bias && !c->mlp_bias;
    char scaling[320] = "null";
    if (c->llama3)
        snprintf(scaling, sizeof scaling,
                 "{\"rope_type\": \"llama3\", \"factor\": %.17g, \"low_freq_factor\": %.17g, "
                 "\"high_freq_factor\": %.17g, \"original_max_position_embeddings\": %d}",
                 c->rope_factor, c->low_freq_factor, c->high_freq_factor, c->original_max_positions);
    int n = snprintf(out, len,
                     "\"architectures\": [\"%s\"],\n  \"model_type\": \"%s\",\n  \"num_hidden_layers\": %d,\n"
                     "  \"num_attention_heads\": %d,\n  \"num_key_value_heads\": %d,\n  \"hidden_size\": %d,\n"
                     "  \"intermediate_size\": %d,\n  \"max_position_embeddings\": %d,\n  \"hidden_act\": \"silu\",\n"
                     "  \"rms_norm_eps\": %.17g,\n  \"rope_theta\": %.17g,\n  \"rope_scaling\": %s,\n"
                     "  \"initializer_range\": %.17g,\n  \"tie_word_embeddings\": %s",
                     qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM", qwen2 ? "qwen2" : "llama", d->L, d->NH,
                     c->n_kv_head, d->C, c->intermediate, c->max_positions, c->rms_eps, c->rope_theta, scaling,
                     c->init_range, c->tie ? "true" : "false");
    if (!qwen2 && n >= 0 && (size_t)n < len)
        n += snprintf(out + n, len - (size_t)n, ",\n  \"attention_bias\": %s,\n  \"mlp_bias\": %s",
                      c->qkv_bias ? "true" : "false", c->mlp_bias ? "true" : "false");
    return n;
}

static const tf_lm_arch llama_arch = {
    .name = "llama",
    .width_key = "hidden_size",
    .token_table = "model.embed_tokens.weight",
    .embed_params = 1,
    .layers = &llama_layers,
    .cpu_only = 1, /* llama_kernels.c has no CUDA version yet */
    .configure = configure,
    .hf_config = hf_config,
    .declare = declare,
    .embed_param_count = embed_param_count,
    .embed_forward = embed_forward,
    .embed_backward = embed_backward,
    .lora_linears = LORA_LINEARS,
    .lora_default = "q_proj,v_proj", /* PEFT's default for llama (and qwen2) */
    .lora_blocks = "model.layers",
    .lora_nlin = LL_LINEARS,
    .lora_dims = lora_dims,
};

static void *llama_create(sr_ctx *ctx, sr_model *model) { return tf_lm_create(&llama_arch, ctx, model); }

static const sr_model_ops llama_ops = TF_LM_OPS(llama_create);

SR_MODEL_TASK("llama", llama_ops);
