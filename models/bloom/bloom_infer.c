/*
 * bloom infer: BLOOM's forward for generation (tools/generate/gen_model.h), with a key/value
 * cache.  The block is the shared pre-LayerNorm block in BLOOM's style (block.h: nn.Linear weights,
 * q/k/v per head, ALiBi), the same the bloom task trains with.
 *
 * Lifecycle: bloom_gen_load() takes every tensor with HF's BloomForCausalLM names (with or without
 * "transformer."; lm_head tied unless the file has its own) and the heads (--n-head, --size, the
 * file's n_head metadata, config.json's n_head, else BLOOM's own heads for that hidden_size) ->
 * start() allocates the cache -> prompt(): the training forward (tf_block_forward) over the prompt,
 * whose keys and values fill the cache -> next() per new token: the block for one row with
 * matrix-vector products and the shared attention_cached per head -> free.
 *
 * ALiBi in the cache: attention_cached computes softmax(scale * q . k_j); BLOOM's scores are
 * scale * q . k_j + m_h * j.  Each cached key carries its position j as one more column and the
 * query m_h / scale there (the value a 0), so the same kernel computes BLOOM's scores -- the
 * training kernel's formula, the bias added inside the product instead of after it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block.h"
#include "bloom_sizes.h"
#include "gen_model.h"
#include "kernel_math.h"
#include "kernels.h"

#define FAMILY "BLOOM model (HF's BloomForCausalLM names)"

static const char *const BLOCK_NAMES[TF_BLOCK_PARAMS] = {
    "input_layernorm.weight",
    "input_layernorm.bias",
    "self_attention.query_key_value.weight",
    "self_attention.query_key_value.bias",
    "self_attention.dense.weight",
    "self_attention.dense.bias",
    "post_attention_layernorm.weight",
    "post_attention_layernorm.bias",
    "mlp.dense_h_to_4h.weight",
    "mlp.dense_h_to_4h.bias",
    "mlp.dense_4h_to_h.weight",
    "mlp.dense_4h_to_h.bias",
};
static const tf_block_style BLOOM_STYLE = {TF_WEIGHT_OUT_IN, 1, 1};

typedef struct bloom_gen {
    int L, NH, C, hs, V;
    char heads_from[96];
    const float *wte, *eln_w, *eln_b, *lnf_w, *lnf_b, *head;
    const float **block; /* L * TF_BLOCK_PARAMS */
    int cap, len;
    float *kc, *vc; /* [L][NH][cap][hs + 1]: keys with their position, values with a 0 */
    float *x, *ln, *qkv, *att, *res2, *fch, *stats, *qa, *ya, *scratch;
    const tf_kernels *k;
} bloom_gen;

#define F(n) ((size_t)(n) * sizeof(float))

static int heads(bloom_gen *g, gen_model *m, const gen_opts *o, char *err, size_t errlen) {
    const char *recorded_from = NULL;
    int recorded = gen_recorded_heads(&m->f, o->config, &recorded_from);
    if (o->n_head > 0) {
        g->NH = o->n_head;
        snprintf(g->heads_from, sizeof g->heads_from, "--n-head");
    } else if (o->size) {
        const bloom_size *s = bloom_size_named(o->size);
        if (!s) return snprintf(err, errlen, "--size %s is not a BLOOM size; use " BLOOM_SIZE_NAMES, o->size), -1;
        if (s->hidden_size != g->C || s->n_layer != g->L || (s->vocab_size && s->vocab_size != g->V))
            return snprintf(err, errlen,
                            "%s is not a %s model: n_layer %d, hidden_size %d, vocab_size %d in --size; %d, %d, %d in "
                            "the file. Leave --size out to take the file's shapes",
                            m->f.file, o->size, s->n_layer, s->hidden_size, s->vocab_size, g->L, g->C, g->V),
                   -1;
        g->NH = s->n_head;
        snprintf(g->heads_from, sizeof g->heads_from, "--size %s", o->size);
    } else if (recorded > 0) {
        g->NH = recorded;
        snprintf(g->heads_from, sizeof g->heads_from, "%s", recorded_from);
    } else {
        for (int i = 0; i < BLOOM_NSIZES; i++)
            if (BLOOM_SIZES[i].hidden_size == g->C) {
                g->NH = BLOOM_SIZES[i].n_head;
                snprintf(g->heads_from, sizeof g->heads_from, "BLOOM's for hidden_size %d; --n-head to change", g->C);
                break;
            }
        if (!g->NH)
            return snprintf(err, errlen,
                            "%s: hidden_size is %d, which is no BLOOM size's, and nothing says how many attention "
                            "heads the model has (no n_head metadata, no config.json); give --n-head N",
                            m->f.file, g->C),
                   -1;
    }
    if (g->C % g->NH)
        return snprintf(err, errlen,
                        "%s: hidden_size %d is not a multiple of n_head %d (from %s); give the n_head the model was "
                        "trained with (--n-head N)",
                        m->f.file, g->C, g->NH, g->heads_from),
               -1;
    g->hs = g->C / g->NH;
    return 0;
}

static int take_all(bloom_gen *g, gen_model *m, char *err, size_t errlen) {
    const int C = g->C;
    const int64_t dims[TF_BLOCK_PARAMS][2] = {{C, 0}, {C, 0}, {3 * C, C}, {3 * C, 0}, {C, C},     {C, 0},
                                              {C, 0}, {C, 0}, {4 * C, C}, {4 * C, 0}, {C, 4 * C}, {C, 0}};
    char model[160], name[160];
    snprintf(model, sizeof model, "a BLOOM with hidden_size %d, vocab %d", C, g->V);
    if (!(g->block = calloc((size_t)g->L * TF_BLOCK_PARAMS, sizeof *g->block)))
        return snprintf(err, errlen, "out of memory"), -2;
#define TAKE(n, d0, d1, dst) gen_file_take(&m->f, n, d0, d1, dst, model, FAMILY, err, errlen)
    int r = TAKE("transformer.word_embeddings.weight", g->V, C, &g->wte);
    if (!r) r = TAKE("transformer.word_embeddings_layernorm.weight", C, 0, &g->eln_w);
    if (!r) r = TAKE("transformer.word_embeddings_layernorm.bias", C, 0, &g->eln_b);
    for (int l = 0; !r && l < g->L; l++)
        for (int p = 0; !r && p < TF_BLOCK_PARAMS; p++) {
            snprintf(name, sizeof name, "transformer.h.%d.%s", l, BLOCK_NAMES[p]);
            r = TAKE(name, dims[p][0], dims[p][1], &g->block[(size_t)l * TF_BLOCK_PARAMS + p]);
        }
    if (!r) r = TAKE("transformer.ln_f.weight", C, 0, &g->lnf_w);
    if (!r) r = TAKE("transformer.ln_f.bias", C, 0, &g->lnf_b);
    int64_t s[4];
    g->head = g->wte;
    if (!r && gen_file_shape(&m->f, "lm_head.weight", s)) r = TAKE("lm_head.weight", g->V, C, &g->head);
#undef TAKE
    if (r) return r;
    return gen_file_check_used(&m->f, NULL, "BLOOM", FAMILY, err, errlen);
}

static void gen_free(gen_model *m) {
    bloom_gen *g = m->impl;
    if (!g) return;
    void *bufs[] = {g->kc, g->vc, g->x, g->ln, g->qkv, g->att, g->res2, g->fch, g->stats, g->qa, g->ya, g->scratch};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(g->block);
    free(g);
}

static int gen_start(gen_model *m, int positions) {
    bloom_gen *g = m->impl;
    if (positions < 1) positions = 1;
    g->cap = positions;
    const size_t cache = (size_t)g->L * g->NH * positions * (g->hs + 1);
    return (g->kc = malloc(F(cache))) && (g->vc = malloc(F(cache))) && (g->x = malloc(F(g->C))) &&
                   (g->ln = malloc(F(g->C))) && (g->qkv = malloc(F(3 * g->C))) && (g->att = malloc(F(g->C))) &&
                   (g->res2 = malloc(F(g->C))) && (g->fch = malloc(F(4 * g->C))) && (g->stats = malloc(F(2))) &&
                   (g->qa = malloc(F(g->hs + 1))) && (g->ya = malloc(F(g->hs + 1))) &&
                   (g->scratch = malloc(F(positions)))
               ? 0
               : -1;
}

/* layer l's cache row of head h at position t */
static float *cache(const bloom_gen *g, float *base, int l, int h, int t) {
    return base + (((size_t)l * g->NH + h) * g->cap + t) * (g->hs + 1);
}

/* head h's key and value of one token (its rows of the fused q/k/v: per head q, k, v) into the cache */
static void cache_put(bloom_gen *g, int l, int h, int t, const float *qkv_row) {
    const float *q = qkv_row + (size_t)h * 3 * g->hs;
    float *kr = cache(g, g->kc, l, h, t), *vr = cache(g, g->vc, l, h, t);
    memcpy(kr, q + g->hs, F(g->hs));
    memcpy(vr, q + 2 * g->hs, F(g->hs));
    kr[g->hs] = (float)t, vr[g->hs] = 0.0f;
}

/* ln_f and the head on one row: logits [V] */
static void head(bloom_gen *g, const float *h, float *logits) {
    g->k->layernorm_forward(g->ln, g->stats, g->stats + 1, h, g->lnf_w, g->lnf_b, 1, g->C, SR_FLOAT32);
    g->k->gemv(1, g->V, g->C, 1.0f, g->head, g->C, g->ln, 0.0f, logits, SR_FLOAT32);
}

/* the training forward (bloom_model.c's embedding, tf_block_forward) over ids[0..n); fill: cache */
static int forward(bloom_gen *g, const int32_t *ids, int n, float *logits, int fill) {
    const tf_kernels *k = g->k;
    const int C = g->C;
    tf_shape s = {k, SR_FLOAT32, sizeof(float), 1, 1, n, C, g->NH, NULL, NULL, 0};
    void *acts = malloc(tf_block_acts_bytes(&s));
    float *x = malloc(F((size_t)n * C)), *y = malloc(F((size_t)n * C)), *st = malloc(F(2 * (size_t)n));
    int rc = -1;
    if (!acts || !x || !y || !st) goto out;
    tf_block_acts a = tf_block_acts_at(&s, acts);
    k->embed_forward(y, ids, g->wte, NULL, 1, n, C, SR_FLOAT32);
    k->layernorm_forward(x, st, st + n, y, g->eln_w, g->eln_b, n, C, SR_FLOAT32);
    for (int l = 0; l < g->L; l++) {
        tf_block_forward(&s, &BLOOM_STYLE, (void *const *)(g->block + (size_t)l * TF_BLOCK_PARAMS), x, &a, y);
        for (int t = 0; fill && t < n; t++)
            for (int h = 0; h < g->NH; h++) cache_put(g, l, h, t, (const float *)a.qkv + (size_t)t * 3 * C);
        float *t = x;
        x = y, y = t;
    }
    head(g, x + (size_t)(n - 1) * C, logits);
    if (fill) g->len = n;
    rc = 0;
out:
    free(acts), free(x), free(y), free(st);
    return rc;
}

static int gen_prompt(gen_model *m, const int32_t *ids, int n, float *logits) {
    bloom_gen *g = m->impl;
    g->len = 0;
    return n < 1 || n > g->cap ? -1 : forward(g, ids, n, logits, 1);
}

static int gen_full(gen_model *m, const int32_t *ids, int n, float *logits) {
    return n < 1 || n > m->P ? -1 : forward(m->impl, ids, n, logits, 0);
}

/* out[O] = W x + b, W an nn.Linear weight [O, I] */
static void linear(const tf_kernels *k, float *out, const float *x, const float *W, const float *b, int I, int O) {
    memcpy(out, b, F(O));
    k->gemv(1, O, I, 1.0f, W, I, x, 1.0f, out, SR_FLOAT32);
}

static int gen_next(gen_model *m, int32_t id, float *logits) {
    bloom_gen *g = m->impl;
    const tf_kernels *k = g->k;
    const int C = g->C, hs = g->hs, pos = g->len;
    const float scale = 1.0f / sqrtf((float)hs);
    if (pos >= g->cap || id < 0 || id >= g->V) return -1;
    k->layernorm_forward(g->x, g->stats, g->stats + 1, g->wte + (size_t)id * C, g->eln_w, g->eln_b, 1, C, SR_FLOAT32);
    for (int l = 0; l < g->L; l++) {
        const float *const *p = g->block + (size_t)l * TF_BLOCK_PARAMS;
        k->layernorm_forward(g->ln, g->stats, g->stats + 1, g->x, p[TF_BLOCK_LN1_W], p[TF_BLOCK_LN1_B], 1, C,
                             SR_FLOAT32);
        linear(k, g->qkv, g->ln, p[TF_BLOCK_QKV_W], p[TF_BLOCK_QKV_B], C, 3 * C);
        for (int h = 0; h < g->NH; h++) {
            cache_put(g, l, h, pos, g->qkv);
            memcpy(g->qa, g->qkv + (size_t)h * 3 * hs, F(hs));
            g->qa[hs] = tf_alibi_slope(h, g->NH) / scale; /* times the key's position: ALiBi (see above) */
            k->attention_cached(g->ya, g->qa, hs + 1, cache(g, g->kc, l, h, 0), cache(g, g->vc, l, h, 0), pos, 1,
                                hs + 1, 1, scale, g->scratch, SR_FLOAT32);
            memcpy(g->att + (size_t)h * hs, g->ya, F(hs));
        }
        linear(k, g->res2, g->att, p[TF_BLOCK_OUT_W], p[TF_BLOCK_OUT_B], C, C);
        k->add(g->res2, g->res2, g->x, (size_t)C, SR_FLOAT32);
        k->layernorm_forward(g->ln, g->stats, g->stats + 1, g->res2, p[TF_BLOCK_LN2_W], p[TF_BLOCK_LN2_B], 1, C,
                             SR_FLOAT32);
        linear(k, g->fch, g->ln, p[TF_BLOCK_UP_W], p[TF_BLOCK_UP_B], C, 4 * C);
        k->gelu_forward(g->fch, g->fch, (size_t)4 * C, SR_FLOAT32);
        linear(k, g->x, g->fch, p[TF_BLOCK_DOWN_W], p[TF_BLOCK_DOWN_B], 4 * C, C);
        k->add(g->x, g->x, g->res2, (size_t)C, SR_FLOAT32);
    }
    g->len = pos + 1;
    head(g, g->x, logits);
    return 0;
}

/* ALiBi has no position table: the cap the task has (bloom_model.c) */
#define BLOOM_MAX_TOKENS 32768

int bloom_gen_load(gen_model *m, const gen_opts *o, char *err, size_t errlen) {
    bloom_gen *g = calloc(1, sizeof *g);
    if (!g) return snprintf(err, errlen, "out of memory"), -2;
    g->k = tf_kernels_cpu();
    m->impl = g, m->free_impl = gen_free;
    int64_t e[4];
    if (gen_file_shape(&m->f, "transformer.word_embeddings.weight", e) != 2)
        return snprintf(err, errlen, "%s has no transformer.word_embeddings.weight [vocab, hidden_size]: not a %s",
                        m->f.file, FAMILY),
               -1;
    g->V = (int)e[0], g->C = (int)e[1];
    for (size_t i = 0; gen_file_name(&m->f, i); i++) {
        int l = gen_layer_of(gen_file_name(&m->f, i));
        if (l + 1 > g->L) g->L = l + 1;
    }
    if (!g->L) return snprintf(err, errlen, "%s has no transformer.h.0.* tensors: not a %s", m->f.file, FAMILY), -1;
    int rc = heads(g, m, o, err, errlen);
    if (!rc) rc = take_all(g, m, err, errlen);
    if (rc) return rc;
    m->start = gen_start, m->prompt = gen_prompt, m->next = gen_next, m->full = gen_full;
    m->V = g->V, m->P = BLOOM_MAX_TOKENS;
    snprintf(m->what, sizeof m->what, "%d layers, %d heads (%s), hidden_size %d, ALiBi, vocab %d", g->L, g->NH,
             g->heads_from, g->C, g->V);
    return 0;
}
