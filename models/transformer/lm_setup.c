/*
 * transformer lm_task: create and destroy.  create() reads the family's sizes, the data and the
 * compute dtype, picks the kernels, declares the model and says what it built; destroy() reports
 * what the run read and held, and frees everything.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_state.h"

unsigned tf_lm_param_flags;

/* The compute dtype, as the engine will pick it from ACCELERATE_MIXED_PRECISION (the same exact,
   lowercase spellings as core/fsdp/fsdp_config.c; the engine rejects any other).  Known here, at
   create(), so a dtype the device's kernels lack fails before any data moves; every callback
   checks call->dtype against it. */
static sr_dtype compute_dtype(void) {
    const char *mp = getenv("ACCELERATE_MIXED_PRECISION");
    if (mp && !strcmp(mp, "bf16")) return SR_BFLOAT16;
    if (mp && !strcmp(mp, "fp16")) return SR_FLOAT16;
    return SR_FLOAT32;
}

static void free_state(tf_lm *g) {
    tf__lm_free_acts(g);
    tf_buffer_pool_drain(&g->pool);
    free(g->out);
    free(g->inter);
    tf_dataset_free(&g->data);
    tf_dataset_free(&g->eval);
    if (g->tok) tf_tokenizer_free(g->tok);
    free(g->dump_path);
    free(g);
}

void tf_lm_destroy(void *state) {
    tf_lm *g = state;
    if (!g) return;
    if (!strcmp(g->k->name, "cpu")) sr_report_int(g->ctx, "cpu_threads", tf_cpu_threads());
    sr_report_int(g->ctx, "samples_read", g->samples_read);
    sr_report_int(g->ctx, "sample_index_sum", g->sample_index_sum);
    /* activation checkpointing shows here: one block's intermediates at a time instead of n_layer */
    tf_shape sh = tf__lm_shape(g);
    sr_report_int(g->ctx, "block_activation_buffers_peak", g->pool.held_peak);
    sr_report_int(g->ctx, "block_activation_bytes", g->Bcap ? (long long)tf__lm_block_acts_bytes(g, &sh) : 0);
    free_state(g);
}

/* the final LayerNorm and the language-modelling head, the same in every family */
static int declare_head(const tf_lm_dims *d, const tf_lm_arch *arch, sr_model *model) {
    if (sr_model_module(model, "transformer.ln_f", "LayerNorm") < 0 ||
        tf_param1(model, "transformer.ln_f.weight", d->C, SR_ONES, SR_PARAM_NO_DECAY) ||
        tf_param1(model, "transformer.ln_f.bias", d->C, SR_ZEROS, SR_PARAM_NO_DECAY) ||
        sr_model_module(model, "lm_head", "Linear") < 0 ||
        sr_model_tie(model, "lm_head.weight", arch->token_table) != 0)
        return -1;
    return 0;
}

/* rank 0's start-up lines: the model and its kernels, the data, the eval data */
static void log_model(const tf_lm *g, int cuda) {
    const tf_lm_arch *arch = g->arch;
    const tf_lm_layers *ly = arch->layers;
    double params =
        arch->embed_param_count(&g->d) + (ly ? g->d.L * ly->block_param_count(&g->d) + ly->tail_param_count(&g->d)
                                             : g->d.L * tf_block_param_count(g->d.C) + 2.0 * g->d.C);
    char threads[96] = "", from[160];
    if (!cuda) tf__lm_cpu_desc(threads, sizeof threads);
    printf("%s: %d layers, %d heads, n_embd %d, vocab %d, positions %d: %.2fM parameters; %s kernels%s\n", arch->name,
           g->d.L, g->d.NH, g->d.C, g->d.V, g->d.P, params / 1e6, g->k->name, threads);
    if (g->lora.r) {
        double all = tf_lora_total_params(&g->lora); /* r (in + out) per targeted linear, the family's shapes */
        char dropout[64] = "";
        if (g->lora.dropout > 0) snprintf(dropout, sizeof dropout, ", dropout %g in training", g->lora.dropout);
        printf("%s: LoRA r %d, alpha %g (scale %g) on %s%s: %.0f trainable parameters (%.3f%%), the base frozen\n",
               arch->name, g->lora.r, g->lora.alpha, (double)g->lora.scale, g->lora.target_list, dropout, all,
               100.0 * all / (params + all));
    }
    g->source->describe(&g->data, from, sizeof from);
    printf("%s: data: %lld samples of %d tokens (%lld real tokens, %.1f%% padding) %s; %s tokenizer, %d tokens\n",
           arch->name, g->data.n, g->T, g->data.tokens,
           100.0 * (1.0 - (double)g->data.tokens / ((double)g->data.n * g->T)), from, g->tok_desc,
           tf_tokenizer_vocab_size(g->tok));
    if (g->tok_from) { /* the job named none: the checkpoint's (lm_data.c) */
        char what[9000];
        tf_saved_describe(&g->tok_src, what, sizeof what);
        printf("%s: tokenizer: %s, which %s was trained with (the job names none)\n", arch->name, what, g->tok_from);
    }
    if (g->eval.n)
        printf("%s: eval data: %lld samples (%lld real tokens) from %s\n", arch->name, g->eval.n, g->eval.tokens,
               g->eval_from);
    fflush(stdout);
}

void *tf_lm_create(const tf_lm_arch *arch, sr_ctx *ctx, sr_model *model) {
    tf_lm *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->arch = arch;
    g->ctx = ctx;
    int vocab_default;
    if (arch->configure(ctx, &g->d, &vocab_default) != 0) goto fail;
    if (arch->lora_linears) {
        int nlin = arch->lora_nlin ? arch->lora_nlin : TF_LINEARS;
        if (tf_lora_configure(ctx, arch->name, arch->lora_linears, nlin, arch->lora_blocks, g->d.L, arch->lora_default,
                              !arch->layers && arch->block_style.weights == TF_WEIGHT_IN_OUT,
                              arch->layers ? g->d.block_params : TF_BLOCK_PARAMS, &g->lora) != 0)
            goto fail;
        if (arch->lora_dims) {
            arch->lora_dims(&g->d, g->lora.in, g->lora.out);
        } else { /* block.h's: q/k/v C -> 3C, output C -> C, up C -> 4C, down 4C -> C */
            static const int in[] = {1, 1, 1, 4}, out[] = {3, 1, 4, 1};
            for (int k = 0; k < TF_LINEARS; k++) g->lora.in[k] = in[k] * g->d.C, g->lora.out[k] = out[k] * g->d.C;
        }
        g->d.lora = g->lora.r ? &g->lora : NULL;
        if (g->lora.r && g->lora.dropout > 0) { /* the masks' counters start from the trainer's seed (lora.h) */
            long long seed;
            if (sr_config_int(ctx, "seed", 42, &seed) != 0) goto fail;
            g->seed = (uint64_t)seed;
            g->drop.threshold = tf_lora_drop_threshold(g->lora.dropout);
            g->drop.keep_scale = (float)(1.0 / (1.0 - g->lora.dropout));
        }
    } else if (sr_config(ctx, "lora_r")) {
        tf__lm_error(g,
                     "[task] lora_r: LoRA adapters are not supported for the %s family yet (GPT-2 and BLOOM have "
                     "them); remove the lora_* keys\n",
                     arch->name);
        goto fail;
    }
    if (g->d.C % g->d.NH) {
        tf__lm_error(g, "[task] %s = %d is not a multiple of n_head = %d\n", arch->width_key, g->d.C, g->d.NH);
        goto fail;
    }
    if (tf__lm_load_data(g) != 0) goto fail;
    int tv = tf_tokenizer_vocab_size(g->tok);
    if (tf__lm_config_int(g, "vocab_size", vocab_default ? vocab_default : tv, 1, 1 << 24, &g->d.V)) goto fail;
    if (g->d.V < tv) {
        tf__lm_error(g, "[task] vocab_size = %d is smaller than the tokenizer's %d tokens\n", g->d.V, tv);
        goto fail;
    }
    const char *dump = sr_config_path(ctx, "dump");
    if (dump && *dump && !(g->dump_path = strdup(dump))) goto fail;

    sr_pg *world = sr_world(ctx);
    int cuda = world && !strcmp(sr_pg_backend(world), "nccl");
    if (cuda && arch->cpu_only) {
        tf__lm_error(g,
                     "the %s family is not supported on GPU yet (it has CPU kernels only); run it with "
                     "the gloo backend\n",
                     arch->name);
        goto fail;
    }
    if (!(g->k = tf__lm_kernels(g, cuda))) goto fail;
    if (tf__lm_check_vocab(g) != 0) goto fail; /* after the kernels: the ranks agree through their memory */
    tf_buffer_pool_init(&g->pool, g->k->alloc, g->k->free, 0); /* sized by tf__lm_alloc_acts */
    g->dt = compute_dtype();
    g->es = sr_dtype_size(g->dt);
    if (!(g->k->dtypes & (1u << g->dt))) {
        tf__lm_error(g,
                     "the %s kernels compute in fp32 only, but mixed_precision asks for %s; set "
                     "[accelerate] mixed_precision = no on CPUs\n",
                     g->k->name, sr_dtype_name(g->dt));
        goto fail;
    }
    g->nmod = g->d.L + 3;
    if (!(g->out = calloc((size_t)g->nmod, sizeof *g->out)) || !(g->inter = calloc((size_t)g->nmod, sizeof *g->inter)))
        goto fail;
    /* with LoRA every parameter the family declares is frozen; only the adapters train */
    tf_lm_param_flags = g->lora.r ? SR_PARAM_FROZEN : 0;
    int declared = arch->declare(&g->d, model) == 0 &&
                   (arch->layers ? arch->layers->declare_tail(&g->d, model) : declare_head(&g->d, arch, model)) == 0;
    tf_lm_param_flags = 0;
    if (!declared) goto fail;
    if (tf__lm_declare_files(g, model) != 0) goto fail; /* the tokenizer and config.json, in FULL checkpoints */
    if (g->lora.r) {                                    /* FULL checkpoints then hold PEFT's adapter files too */
        const char *base = sr_config(ctx, "base_model_name_or_path");
        char *json = tf_lora_adapter_json(&g->lora, base ? base : sr_config(ctx, "init_weights"));
        int rc = json ? sr_model_adapter(model, "base_model.model.", json) : -1;
        free(json);
        if (rc != 0) goto fail;
    }
    /* held-out samples, or multiple-choice files ([task] eval_files, which the trainer reads): the
       eval callbacks, with what the trainer checks the files against */
    if (g->eval.n || sr_config(ctx, "eval_files")) {
        sr_model_eval ev = tf__lm_eval;
        ev.vocab_size = g->d.V;
        ev.max_tokens = g->T;
        if (sr_model_eval_data(model, &ev) != 0) goto fail;
    }

    if (sr_rank(ctx) == 0 && !cuda) tf__lm_blas_note(g);
    if (sr_rank(ctx) == 0) log_model(g, cuda);
    return g;
fail:
    free_state(g);
    return NULL;
}
