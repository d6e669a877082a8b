/* gpt2 infer: generation's forward over the kernel table, with a key/value cache (see gpt2_infer.h). */
#include "gpt2_infer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_model.h"
#include "gpt2_block.h"

struct gpt2_infer {
    const gpt2_weights *w;
    const tf_kernels *k;
    void **params;  /* L * GPT2_BLOCK_PARAMS, as tf_block_forward takes them */
    int len;        /* positions in the cache */
    float *kc, *vc; /* [L][P][C] keys and values */
    /* one token's activations */
    float *x, *ln, *qkv, *att, *res2, *fch, *stats, *scratch, *logits;
    int32_t *id;
};

#define F(n) ((size_t)(n) * sizeof(float))

gpt2_infer *gpt2_infer_new(const gpt2_weights *w, const tf_kernels *k) {
    gpt2_infer *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->w = w, g->k = k;
    const size_t L = (size_t)w->L, P = (size_t)w->P, C = (size_t)w->C;
    int ok = (g->params = malloc(L * GPT2_BLOCK_PARAMS * sizeof *g->params)) != NULL;
    for (size_t i = 0; ok && i < L * GPT2_BLOCK_PARAMS; i++) g->params[i] = (void *)w->block[i];
    ok = ok && (g->kc = k->alloc(F(L * P * C))) && (g->vc = k->alloc(F(L * P * C))) && (g->x = k->alloc(F(C))) &&
         (g->ln = k->alloc(F(C))) && (g->qkv = k->alloc(F(3 * C))) && (g->att = k->alloc(F(C))) &&
         (g->res2 = k->alloc(F(C))) && (g->fch = k->alloc(F(4 * C))) && (g->stats = k->alloc(F(2))) &&
         (g->scratch = k->alloc(F((size_t)w->NH * P))) && (g->logits = k->alloc(F(w->V))) &&
         (g->id = k->alloc(sizeof(int32_t)));
    if (!ok) {
        gpt2_infer_free(g);
        return NULL;
    }
    return g;
}

void gpt2_infer_free(gpt2_infer *g) {
    if (!g) return;
    void *bufs[] = {g->kc, g->vc, g->x, g->ln, g->qkv, g->att, g->res2, g->fch, g->stats, g->scratch, g->logits, g->id};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) g->k->free(bufs[i]);
    free(g->params);
    free(g);
}

/* out[O] = x[I] W[I,O] + b: linear.c's Conv1D layout for one token */
static void conv1d(const tf_kernels *k, float *out, const float *x, const void *W, const void *b, int I, int O) {
    k->copy(out, b, (size_t)O, SR_FLOAT32);
    k->gemv(0, O, I, 1.0f, W, O, x, 1.0f, out, SR_FLOAT32);
}

/* ln_f and the head on one row h [C]: host logits [V] */
static int head(gpt2_infer *g, const float *h, float *logits) {
    const gpt2_weights *w = g->w;
    g->k->layernorm_forward(g->ln, g->stats, g->stats + 1, h, w->lnf_w, w->lnf_b, 1, w->C, SR_FLOAT32);
    g->k->gemv(1, w->V, w->C, 1.0f, w->head, w->C, g->ln, 0.0f, g->logits, SR_FLOAT32);
    return g->k->floats_download(logits, g->logits, (size_t)w->V) || g->k->sync() ? -1 : 0;
}

/* The training forward (tf_block_forward, GPT-2 style) over ids[0..n); with fill, each layer's keys and values
   go to the cache. */
static int forward(gpt2_infer *g, const int32_t *ids, int n, float *logits, int fill) {
    const gpt2_weights *w = g->w;
    const tf_kernels *k = g->k;
    const int C = w->C;
    tf_shape s = {k, SR_FLOAT32, sizeof(float), 1, 1, n, C, w->NH, NULL, NULL, 0};
    void *acts = k->alloc(tf_block_acts_bytes(&s));
    float *x = k->alloc(F((size_t)n * C)), *y = k->alloc(F((size_t)n * C));
    int32_t *ids_d = k->alloc((size_t)n * sizeof *ids_d);
    int rc = -1;
    if (!acts || !x || !y || !ids_d || k->ids_upload(ids_d, ids, (size_t)n) != 0) goto out;
    tf_block_acts a = tf_block_acts_at(&s, acts);
    k->embed_forward(x, ids_d, w->wte, w->wpe, 1, n, C, SR_FLOAT32);
    for (int l = 0; l < w->L; l++) {
        tf_block_forward(&s, &GPT2_BLOCK_STYLE, g->params + (size_t)l * GPT2_BLOCK_PARAMS, x, &a, y);
        if (fill) { /* qkv rows are [q | k | v] */
            const float *qkv = (const float *)a.qkv;
            float *kc = g->kc + (size_t)l * w->P * C, *vc = g->vc + (size_t)l * w->P * C;
            for (int t = 0; t < n; t++) {
                k->copy(kc + (size_t)t * C, qkv + (size_t)t * 3 * C + C, (size_t)C, SR_FLOAT32);
                k->copy(vc + (size_t)t * C, qkv + (size_t)t * 3 * C + 2 * C, (size_t)C, SR_FLOAT32);
            }
        }
        float *t = x;
        x = y, y = t;
    }
    rc = head(g, x + (size_t)(n - 1) * C, logits);
    if (fill) g->len = rc == 0 ? n : 0;
out:
    if (acts) k->free(acts);
    if (x) k->free(x);
    if (y) k->free(y);
    if (ids_d) k->free(ids_d);
    return rc;
}

int gpt2_infer_prompt(gpt2_infer *g, const int32_t *ids, int n, float *logits) {
    g->len = 0;
    if (n < 1 || n > g->w->P) return -1;
    return forward(g, ids, n, logits, 1);
}

int gpt2_infer_full(gpt2_infer *g, const int32_t *ids, int n, float *logits) {
    if (n < 1 || n > g->w->P) return -1;
    return forward(g, ids, n, logits, 0);
}

int gpt2_infer_next(gpt2_infer *g, int32_t id, float *logits) {
    const gpt2_weights *w = g->w;
    const tf_kernels *k = g->k;
    const int C = w->C, pos = g->len;
    if (pos >= w->P || id < 0 || id >= w->V || k->ids_upload(g->id, &id, 1) != 0) return -1;
    k->embed_forward(g->x, g->id, w->wte, w->wpe + (size_t)pos * C, 1, 1, C, SR_FLOAT32);
    const float scale = 1.0f / sqrtf((float)(C / w->NH));
    for (int l = 0; l < w->L; l++) {
        void *const *p = g->params + (size_t)l * GPT2_BLOCK_PARAMS;
        float *kc = g->kc + (size_t)l * w->P * C, *vc = g->vc + (size_t)l * w->P * C;
        k->layernorm_forward(g->ln, g->stats, g->stats + 1, g->x, p[GPT2_LN1_W], p[GPT2_LN1_B], 1, C, SR_FLOAT32);
        conv1d(k, g->qkv, g->ln, p[GPT2_ATTN_W], p[GPT2_ATTN_B], C, 3 * C);
        k->copy(kc + (size_t)pos * C, g->qkv + C, (size_t)C, SR_FLOAT32);
        k->copy(vc + (size_t)pos * C, g->qkv + 2 * C, (size_t)C, SR_FLOAT32);
        k->attention_cached(g->att, g->qkv, 3 * C, kc, vc, pos, 1, C, w->NH, scale, g->scratch, SR_FLOAT32);
        conv1d(k, g->res2, g->att, p[GPT2_APROJ_W], p[GPT2_APROJ_B], C, C);
        k->add(g->res2, g->res2, g->x, (size_t)C, SR_FLOAT32);
        k->layernorm_forward(g->ln, g->stats, g->stats + 1, g->res2, p[GPT2_LN2_W], p[GPT2_LN2_B], 1, C, SR_FLOAT32);
        conv1d(k, g->fch, g->ln, p[GPT2_FC_W], p[GPT2_FC_B], C, 4 * C);
        k->gelu_forward(g->fch, g->fch, (size_t)4 * C, SR_FLOAT32);
        conv1d(k, g->x, g->fch, p[GPT2_MPROJ_W], p[GPT2_MPROJ_B], 4 * C, C);
        k->add(g->x, g->x, g->res2, (size_t)C, SR_FLOAT32);
    }
    g->len = pos + 1;
    return head(g, g->x, logits);
}

/* ---- the generator's view (tools/generate/gen_model.h) ------------------------------------- */

typedef struct gpt2_gen {
    gpt2_weights w;
    gpt2_infer *g;
} gpt2_gen;

static int gen_start(gen_model *m, int positions) {
    gpt2_gen *x = m->impl;
    (void)positions; /* the cache holds the whole context (n_positions is small for GPT-2) */
    return (x->g = gpt2_infer_new(&x->w, tf_kernels_cpu())) ? 0 : -1;
}
static int gen_prompt(gen_model *m, const int32_t *ids, int n, float *logits) {
    return gpt2_infer_prompt(((gpt2_gen *)m->impl)->g, ids, n, logits);
}
static int gen_next(gen_model *m, int32_t id, float *logits) {
    return gpt2_infer_next(((gpt2_gen *)m->impl)->g, id, logits);
}
static int gen_full(gen_model *m, const int32_t *ids, int n, float *logits) {
    return gpt2_infer_full(((gpt2_gen *)m->impl)->g, ids, n, logits);
}
static void gen_free(gen_model *m) {
    gpt2_gen *x = m->impl;
    if (!x) return;
    gpt2_infer_free(x->g);
    gpt2_weights_free(&x->w);
    free(x);
}

int gpt2_gen_load(gen_model *m, const gen_opts *o, char *err, size_t errlen) {
    gpt2_gen *x = calloc(1, sizeof *x);
    if (!x) return snprintf(err, errlen, "out of memory"), -2;
    int rc = gpt2_weights_read(&m->f, o, &x->w, err, errlen);
    if (rc) {
        free(x);
        return rc;
    }
    const gpt2_weights *w = &x->w;
    m->impl = x, m->free_impl = gen_free;
    m->start = gen_start, m->prompt = gen_prompt, m->next = gen_next, m->full = gen_full;
    m->V = w->V, m->P = w->P;
    snprintf(m->what, sizeof m->what, "%d layers, %d heads (%s), n_embd %d, context %d, vocab %d", w->L, w->NH,
             w->heads_from, w->C, w->P, w->V);
    return 0;
}
