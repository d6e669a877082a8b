/*
 * llama infer: the Llama family's forward for generation (tools/generate/gen_model.h), with a
 * key/value cache.
 *
 * Lifecycle: llama_gen_load() reads the configuration (HF's config.json: --config, or the one next
 * to the model; else --size, else the named size whose widths the shapes have) and takes every
 * tensor with HF's LlamaForCausalLM names (biases where the file has them, lm_head tied when the
 * file has none) -> start() gives llama_block.c the config and RoPE tables for the positions, and
 * allocates the cache (per layer and key/value head, [positions, hd] keys and values) ->
 * prompt(): the training forward (llama_block_forward) over the prompt, whose rotated keys and
 * values fill the cache -> next() per new token: the same block for one row with matrix-vector
 * products (gemv), RoPE at its position, and the shared attention_cached once per query head
 * against its key/value head's cache (grouped-query attention: query head h reads key/value head
 * h / (NH / KV), as HF's repeat_kv) -> free.
 *
 * full() is the training forward over a whole prefix, for --no-kv-cache and the tests' comparison.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fail.h"
#include "gen_model.h"
#include "kernels.h"
#include "llama_block.h"
#include "llama_config.h"
#include "llama_kernels.h"

#define FAMILY "Llama-family model (HF's LlamaForCausalLM names)"
#define LLAMA_MAX_TOKENS 32768 /* the task's cap on positions (llama_model.c) */

typedef struct llama_gen {
    llama_config c;
    char config_from[4200];
    int L, C, NH, KV, hd, KVd, F, V, W; /* W: a row of q | k | v */
    const float *embed, *norm, *head;
    const float **slot; /* L * LB_SLOTS; NULL where the file has no such bias */
    void **params;      /* L * np: the declared slots in order, as llama_block_forward takes them */
    int np;
    int cap, len;   /* positions in the cache: room, filled */
    float *kc, *vc; /* [L][KV][cap][hd] */
    float *x, *ln, *qkv, *att, *res2, *gate, *up, *h, *rstd, *scratch;
    const tf_kernels *k;
} llama_gen;

#define F(n) ((size_t)(n) * sizeof(float))

static int file_there(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* the configuration: config.json (--config or next to the model), --size, or a size of these widths;
   then the shapes and the heads flags */
static int configure(llama_gen *g, gen_model *m, const gen_opts *o, char *err, size_t errlen) {
    char path[4200];
    const char *names;
    int64_t e[4], q[4], kp[4], gp[4];
    if (gen_file_shape(&m->f, "model.embed_tokens.weight", e) != 2 ||
        gen_file_shape(&m->f, "model.layers.0.self_attn.k_proj.weight", kp) != 2 ||
        gen_file_shape(&m->f, "model.layers.0.self_attn.q_proj.weight", q) != 2 ||
        gen_file_shape(&m->f, "model.layers.0.mlp.gate_proj.weight", gp) != 2)
        return snprintf(err, errlen,
                        "%s has no model.embed_tokens.weight, model.layers.0.self_attn.q_proj.weight, k_proj.weight "
                        "and mlp.gate_proj.weight of two dimensions: not a %s",
                        m->f.file, FAMILY),
               -1;
    g->V = (int)e[0], g->C = (int)e[1], g->KVd = (int)kp[0], g->F = (int)gp[0];
    for (size_t i = 0; gen_file_name(&m->f, i); i++) {
        const char *n = gen_file_name(&m->f, i);
        if (!strncmp(n, "model.layers.", 13)) {
            int l = atoi(n + 13);
            if (l + 1 > g->L && l < 100000) g->L = l + 1;
        }
    }
    snprintf(path, sizeof path, "%s/config.json", m->f.dir);
    const char *cfg = o->config ? o->config : file_there(path) ? path : NULL;
    if (o->size) {
        const llama_config *s = llama_size(o->size, &names);
        if (!s) return snprintf(err, errlen, "--size %s is not a Llama-family size; use %s", o->size, names), -1;
        g->c = *s;
        snprintf(g->config_from, sizeof g->config_from, "--size %s", o->size);
    } else if (!cfg) { /* a size with these widths, as the task's sizes are named */
        static const char *const sizes[] = {"tiny", "smollm2-135m", "smollm2-360m", "qwen2.5-0.5b", "llama-3.2-1b"};
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            const llama_config *s = llama_size(sizes[i], &names);
            if (s->hidden == g->C && s->intermediate == g->F && s->hidden / s->n_head * s->n_kv_head == g->KVd) {
                g->c = *s;
                snprintf(g->config_from, sizeof g->config_from, "the %s size's, as its widths", sizes[i]);
                break;
            }
        }
        if (!g->c.n_head && !o->n_head)
            return snprintf(err, errlen,
                            "%s: nothing says how many attention heads this Llama-family model has, nor its RoPE and "
                            "norm settings (no config.json next to it, and hidden_size %d with intermediate_size %d "
                            "is no named size's); give --config CONFIG.json (the one it was trained with), or --size",
                            m->f.file, g->C, g->F),
                   -1;
        if (!g->c.n_head) { /* --n-head alone: HF's defaults for the rest */
            g->c = *llama_size("tiny", &names);
            snprintf(g->config_from, sizeof g->config_from, "--n-head; RoPE and norm as the tiny size's");
        }
    }
    if (cfg) {
        if (llama_config_read(cfg, &g->c) != 0)
            return snprintf(err, errlen, "%s cannot be used (the message above says why); fix it or give --config",
                            cfg),
                   -1;
        snprintf(g->config_from, sizeof g->config_from, "%s", cfg);
    }
    llama_config *c = &g->c;
    if (o->n_head) c->n_head = o->n_head;
    if (o->n_kv_head) c->n_kv_head = o->n_kv_head;
    else if (o->n_head) c->n_kv_head = 0; /* from the shapes, for these heads */
    if (c->n_head <= 0 || g->C % c->n_head || (g->C / c->n_head) % 2)
        return snprintf(err, errlen,
                        "%s: hidden_size %d does not split into %d heads of an even size (from %s); give the heads "
                        "the model was trained with (--config or --n-head)",
                        m->f.file, g->C, c->n_head, g->config_from),
               -1;
    g->NH = c->n_head, g->hd = g->C / g->NH;
    if (!c->n_kv_head) c->n_kv_head = g->KVd / g->hd;
    g->KV = c->n_kv_head;
    if (g->KV <= 0 || g->KV * g->hd != g->KVd || g->NH % g->KV)
        return snprintf(err, errlen,
                        "%s: k_proj has %d rows, which are not %d key/value heads of %d (hidden_size %d / %d heads, "
                        "from %s) dividing the heads evenly; give the figures the model was trained with (--config, "
                        "--n-head, --n-kv-head)",
                        m->f.file, g->KVd, g->KV, g->hd, g->C, g->NH, g->config_from),
               -1;
    if ((cfg || o->size) &&
        (c->hidden != g->C || c->intermediate != g->F || c->n_layer != g->L || (c->vocab && c->vocab != g->V)))
        return snprintf(err, errlen,
                        "%s is not the model %s describes: hidden_size %d, intermediate_size %d, %d layers, vocab %d "
                        "there; %d, %d, %d, %d in the file. Give the config.json it was trained with",
                        m->f.file, g->config_from, c->hidden, c->intermediate, c->n_layer, c->vocab, g->C, g->F, g->L,
                        g->V),
               -1;
    c->hidden = g->C, c->intermediate = g->F, c->n_layer = g->L, c->vocab = g->V;
    g->W = g->C + 2 * g->KVd;
    /* what the file holds decides the biases and the head */
    int64_t s[4];
    c->qkv_bias = gen_file_shape(&m->f, "model.layers.0.self_attn.q_proj.bias", s) > 0;
    c->o_bias = gen_file_shape(&m->f, "model.layers.0.self_attn.o_proj.bias", s) > 0;
    c->mlp_bias = gen_file_shape(&m->f, "model.layers.0.mlp.gate_proj.bias", s) > 0;
    c->tie = gen_file_shape(&m->f, "lm_head.weight", s) == 0;
    return 0;
}

static const char *const SLOT_NAMES[LB_SLOTS] = {
    "input_layernorm.weight", "self_attn.q_proj.weight",
    "self_attn.q_proj.bias",  "self_attn.k_proj.weight",
    "self_attn.k_proj.bias",  "self_attn.v_proj.weight",
    "self_attn.v_proj.bias",  "self_attn.o_proj.weight",
    "self_attn.o_proj.bias",  "post_attention_layernorm.weight",
    "mlp.gate_proj.weight",   "mlp.gate_proj.bias",
    "mlp.up_proj.weight",     "mlp.up_proj.bias",
    "mlp.down_proj.weight",   "mlp.down_proj.bias",
};

static int take_all(llama_gen *g, gen_model *m, char *err, size_t errlen) {
    const llama_config *c = &g->c;
    const int C = g->C, KVd = g->KVd, Fd = g->F;
    /* [slot] = rows, cols (0: a vector), whether the file has it */
    const int dims[LB_SLOTS][3] = {{C, 0, 1},
                                   {C, C, 1},
                                   {C, 0, c->qkv_bias},
                                   {KVd, C, 1},
                                   {KVd, 0, c->qkv_bias},
                                   {KVd, C, 1},
                                   {KVd, 0, c->qkv_bias},
                                   {C, C, 1},
                                   {C, 0, c->o_bias},
                                   {C, 0, 1},
                                   {Fd, C, 1},
                                   {Fd, 0, c->mlp_bias},
                                   {Fd, C, 1},
                                   {Fd, 0, c->mlp_bias},
                                   {C, Fd, 1},
                                   {C, 0, c->mlp_bias}};
    char model[200], name[200];
    snprintf(model, sizeof model,
             "a Llama-family model with hidden_size %d, %d key/value heads of %d, "
             "intermediate_size %d, vocab %d",
             C, g->KV, g->hd, Fd, g->V);
#define TAKE(n, d0, d1, dst) gen_file_take(&m->f, n, d0, d1, dst, model, FAMILY, err, errlen)
    int r = TAKE("model.embed_tokens.weight", g->V, C, &g->embed);
    if (!(g->slot = calloc((size_t)g->L * LB_SLOTS, sizeof *g->slot)))
        return sr__fail(err, errlen, "out of memory"), -2;
    for (int l = 0; !r && l < g->L; l++)
        for (int i = 0; !r && i < LB_SLOTS; i++)
            if (dims[i][2]) {
                snprintf(name, sizeof name, "model.layers.%d.%s", l, SLOT_NAMES[i]);
                r = TAKE(name, dims[i][0], dims[i][1], &g->slot[(size_t)l * LB_SLOTS + i]);
            }
    if (!r) r = TAKE("model.norm.weight", C, 0, &g->norm);
    g->head = g->embed;
    if (!r && !c->tie) r = TAKE("lm_head.weight", g->V, C, &g->head);
#undef TAKE
    if (r) return r;
    return gen_file_check_used(&m->f, NULL, "the Llama family", FAMILY, err, errlen);
}

/* ---- the forward ------------------------------------------------------------------------------ */

static void gen_free(gen_model *m) {
    llama_gen *g = m->impl;
    if (!g) return;
    void *bufs[] = {g->kc, g->vc, g->x, g->ln, g->qkv, g->att, g->res2, g->gate, g->up, g->h, g->rstd, g->scratch};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(g->slot);
    free(g->params);
    free(g);
}

static int gen_start(gen_model *m, int positions) {
    llama_gen *g = m->impl;
    if (positions < 1) positions = 1;
    int np = llama_block_use(&g->c, positions);
    if (np < 0) return -1;
    g->np = np, g->cap = positions;
    if (!(g->params = malloc((size_t)g->L * np * sizeof *g->params))) return -1;
    for (int l = 0; l < g->L; l++)
        for (int i = 0, j = 0; i < LB_SLOTS; i++)
            if (llama_block_has(i)) g->params[(size_t)l * np + j++] = (void *)g->slot[(size_t)l * LB_SLOTS + i];
    const size_t cache = (size_t)g->L * g->KV * positions * g->hd;
    return (g->kc = malloc(F(cache))) && (g->vc = malloc(F(cache))) && (g->x = malloc(F(g->C))) &&
                   (g->ln = malloc(F(g->C))) && (g->qkv = malloc(F(g->W))) && (g->att = malloc(F(g->C))) &&
                   (g->res2 = malloc(F(g->C))) && (g->gate = malloc(F(g->F))) && (g->up = malloc(F(g->F))) &&
                   (g->h = malloc(F(g->F))) && (g->rstd = malloc(F(1))) && (g->scratch = malloc(F(positions)))
               ? 0
               : -1;
}

/* this layer's cache of key/value head kv */
static float *cache(const llama_gen *g, float *base, int l, int kv) {
    return base + ((size_t)l * g->KV + kv) * g->cap * g->hd;
}

/* model.norm and lm_head on one row h [C]: logits [V] */
static void head(llama_gen *g, const float *h, float *logits) {
    llama_rmsnorm_forward(g->ln, g->rstd, h, g->norm, 1, g->C, (float)g->c.rms_eps);
    g->k->gemv(1, g->V, g->C, 1.0f, g->head, g->C, g->ln, 0.0f, logits, SR_FLOAT32);
}

/* The training forward (llama_block_forward) over ids[0..n); with fill, the rotated keys and the
   values go to the cache. */
static int forward(llama_gen *g, const int32_t *ids, int n, float *logits, int fill) {
    const tf_kernels *k = g->k;
    const int C = g->C;
    tf_shape s = {k, SR_FLOAT32, sizeof(float), 1, 1, n, C, g->NH, NULL, NULL, 0};
    void *acts = malloc(llama_block_acts_bytes(&s));
    float *x = malloc(F((size_t)n * C)), *y = malloc(F((size_t)n * C));
    int rc = -1;
    if (!acts || !x || !y) goto out;
    k->embed_forward(x, ids, g->embed, NULL, 1, n, C, SR_FLOAT32);
    for (int l = 0; l < g->L; l++) {
        llama_block_forward(&s, g->params + (size_t)l * g->np, x, acts, y);
        if (fill) {
            const float *qkv = llama_block_qkv(&s, acts);
            for (int kv = 0; kv < g->KV; kv++)
                for (int t = 0; t < n; t++) {
                    const float *row = qkv + (size_t)t * g->W + C + (size_t)kv * g->hd;
                    memcpy(cache(g, g->kc, l, kv) + (size_t)t * g->hd, row, F(g->hd));
                    memcpy(cache(g, g->vc, l, kv) + (size_t)t * g->hd, row + g->KVd, F(g->hd));
                }
        }
        float *t = x;
        x = y, y = t;
    }
    head(g, x + (size_t)(n - 1) * C, logits);
    if (fill) g->len = n;
    rc = 0;
out:
    free(acts), free(x), free(y);
    return rc;
}

static int gen_prompt(gen_model *m, const int32_t *ids, int n, float *logits) {
    llama_gen *g = m->impl;
    g->len = 0;
    return n < 1 || n > g->cap ? -1 : forward(g, ids, n, logits, 1);
}

static int gen_full(gen_model *m, const int32_t *ids, int n, float *logits) {
    llama_gen *g = m->impl;
    return n < 1 || n > g->cap ? -1 : forward(g, ids, n, logits, 0); /* the RoPE tables: cap positions */
}

/* out[O] = W x (+ b), W an nn.Linear weight [O, I] */
static void linear(const tf_kernels *k, float *out, const float *x, const float *W, const float *b, int I, int O) {
    if (b) memcpy(out, b, F(O));
    k->gemv(1, O, I, 1.0f, W, I, x, b ? 1.0f : 0.0f, out, SR_FLOAT32);
}

static int gen_next(gen_model *m, int32_t id, float *logits) {
    llama_gen *g = m->impl;
    const tf_kernels *k = g->k;
    const int C = g->C, hd = g->hd, pos = g->len, rep = g->NH / g->KV;
    const float eps = (float)g->c.rms_eps, scale = 1.0f / sqrtf((float)hd);
    if (pos >= g->cap || id < 0 || id >= g->V) return -1;
    memcpy(g->x, g->embed + (size_t)id * C, F(C));
    for (int l = 0; l < g->L; l++) {
        const float *const *p = g->slot + (size_t)l * LB_SLOTS;
        llama_rmsnorm_forward(g->ln, g->rstd, g->x, p[LB_LN1], 1, C, eps);
        linear(k, g->qkv, g->ln, p[LB_Q_W], p[LB_Q_B], C, C);
        linear(k, g->qkv + C, g->ln, p[LB_K_W], p[LB_K_B], C, g->KVd);
        linear(k, g->qkv + C + g->KVd, g->ln, p[LB_V_W], p[LB_V_B], C, g->KVd);
        llama_block_rope_at(g->qkv, g->NH + g->KV, pos); /* q's heads, then k's: contiguous */
        for (int kv = 0; kv < g->KV; kv++) {
            memcpy(cache(g, g->kc, l, kv) + (size_t)pos * hd, g->qkv + C + (size_t)kv * hd, F(hd));
            memcpy(cache(g, g->vc, l, kv) + (size_t)pos * hd, g->qkv + C + g->KVd + (size_t)kv * hd, F(hd));
        }
        for (int h = 0; h < g->NH; h++) /* one head of hd channels against its key/value head's cache */
            k->attention_cached(g->att + (size_t)h * hd, g->qkv + (size_t)h * hd, hd, cache(g, g->kc, l, h / rep),
                                cache(g, g->vc, l, h / rep), pos, 1, hd, 1, scale, g->scratch, SR_FLOAT32);
        linear(k, g->res2, g->att, p[LB_O_W], p[LB_O_B], C, C);
        k->add(g->res2, g->res2, g->x, (size_t)C, SR_FLOAT32);
        llama_rmsnorm_forward(g->ln, g->rstd, g->res2, p[LB_LN2], 1, C, eps);
        linear(k, g->gate, g->ln, p[LB_GATE_W], p[LB_GATE_B], C, g->F);
        linear(k, g->up, g->ln, p[LB_UP_W], p[LB_UP_B], C, g->F);
        llama_swiglu_forward(g->h, g->gate, g->up, (size_t)g->F);
        linear(k, g->x, g->h, p[LB_DOWN_W], p[LB_DOWN_B], g->F, C);
        k->add(g->x, g->x, g->res2, (size_t)C, SR_FLOAT32);
    }
    g->len = pos + 1;
    head(g, g->x, logits);
    return 0;
}

int llama_gen_load(gen_model *m, const gen_opts *o, char *err, size_t errlen) {
    llama_gen *g = calloc(1, sizeof *g);
    if (!g) return sr__fail(err, errlen, "out of memory"), -2;
    g->k = tf_kernels_cpu();
    m->impl = g, m->free_impl = gen_free;
    int rc = configure(g, m, o, err, errlen);
    if (!rc) rc = take_all(g, m, err, errlen);
    if (rc) return rc;
    const llama_config *c = &g->c;
    m->start = gen_start, m->prompt = gen_prompt, m->next = gen_next, m->full = gen_full;
    m->V = g->V;
    m->P = c->max_positions > 0 && c->max_positions < LLAMA_MAX_TOKENS ? c->max_positions : LLAMA_MAX_TOKENS;
    snprintf(m->what, sizeof m->what,
             "%d layers, %d heads on %d key/value heads (%s), hidden_size %d, intermediate_size %d, rope_theta %g%s, "
             "rms_norm_eps %g, context %d, vocab %d, %s lm_head%s%s%s",
             g->L, g->NH, g->KV, g->config_from, g->C, g->F, c->rope_theta, c->llama3 ? " (llama3 scaling)" : "",
             c->rms_eps, m->P, g->V, c->tie ? "tied" : "untied", c->qkv_bias ? ", q/k/v biases" : "",
             c->o_bias ? ", o_proj bias" : "", c->mlp_bias ? ", MLP biases" : "");
    return 0;
}
