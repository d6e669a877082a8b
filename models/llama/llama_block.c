/* llama block (see llama_block.h).  CPU only: the elementwise kernels are llama_kernels.c's, the
   GEMMs and attention the shared table's and attention.c's (fp32). */
#include "llama_block.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "linear.h"
#include "llama_kernels.h"
#include "lora.h"

static const llama_config *cfg;
static int slot_index[LB_SLOTS]; /* slot -> index in the module's parameters, -1: not declared */
static int nparams;
static float *rope_cos, *rope_sin; /* [positions, hd/2]: HF's cos(t * inv_freq[i]), sin(...) */

int llama_block_use(const llama_config *c, int positions) {
    cfg = c;
    nparams = 0;
    for (int i = 0; i < LB_SLOTS; i++) {
        int bias = i == LB_Q_B || i == LB_K_B || i == LB_V_B          ? c->qkv_bias
                   : i == LB_O_B                                      ? c->o_bias
                   : i == LB_GATE_B || i == LB_UP_B || i == LB_DOWN_B ? c->mlp_bias
                                                                      : 1;
        slot_index[i] = bias ? nparams++ : -1;
    }
    /* the tables of every position a sample may hold (max_length <= positions), the angle a float32
       product as HF's */
    int hd = c->hidden / c->n_head, half = hd / 2;
    size_t n = (size_t)positions * half;
    float *inv_freq = malloc((size_t)(half + 1) * sizeof *inv_freq);
    free(rope_cos), free(rope_sin);
    rope_cos = malloc(n * sizeof(float)), rope_sin = malloc(n * sizeof(float));
    if (!inv_freq || !rope_cos || !rope_sin) {
        free(inv_freq);
        return -1;
    }
    llama_inv_freq(c, hd, inv_freq);
    for (int t = 0; t < positions; t++)
        for (int i = 0; i < half; i++) {
            float a = (float)t * inv_freq[i];
            rope_cos[(size_t)t * half + i] = (float)cos((double)a);
            rope_sin[(size_t)t * half + i] = (float)sin((double)a);
        }
    free(inv_freq);
    return nparams;
}

int llama_block_has(int slot) { return slot_index[slot] >= 0; }

const llama_config *llama_block_config(void) { return cfg; }

void llama_block_rope_at(float *x, int heads, int pos) {
    int half = cfg->hidden / cfg->n_head / 2;
    llama_rope(x, 1, 1, 0, heads, 2 * half, rope_cos + (size_t)pos * half, rope_sin + (size_t)pos * half, 0);
}

/* widths: C hidden, A = NH * hd attention (= C), KVd = KV * hd, W = the fused q/k/v row, F the MLP's */
typedef struct widths {
    int C, hd, KV, W, F;
} widths;
static widths widths_of(const tf_shape *s) {
    int hd = s->C / s->NH;
    return (widths){s->C, hd, cfg->n_kv_head, s->C + 2 * cfg->n_kv_head * hd, cfg->intermediate};
}

double llama_block_param_count(const tf_lm_dims *d) {
    double C = d->C, KVd = (double)cfg->n_kv_head * (d->C / d->NH), F = cfg->intermediate;
    double n = 2 * C + 2 * C * C + 2 * C * KVd + 3 * C * F;
    if (cfg->qkv_bias) n += C + 2 * KVd;
    if (cfg->o_bias) n += C;
    if (cfg->mlp_bias) n += 2 * F + C;
    return n;
}

/* rstd1, rstd2 [N] (float), then ln1 [N,C], qkv [N,W], att [B,NH,T,T], atty, res2, ln2 [N,C],
   gate, up, h [N,F], then with LoRA each linear's x A^T (lora.h) */
typedef struct acts {
    float *rstd1, *rstd2, *ln1, *qkv, *att, *atty, *res2, *ln2, *gate, *up, *h, *lora_h;
} acts;

size_t llama_block_acts_bytes(const tf_shape *s) {
    widths w = widths_of(s);
    size_t N = (size_t)s->Bcap * s->T;
    return sizeof(float) * (2 * N + N * (4 * (size_t)w.C + w.W + 3 * (size_t)w.F) +
                            (size_t)s->Bcap * s->NH * s->T * s->T + tf_lora_acts_elems(s));
}

static acts acts_at(const tf_shape *s, void *buf) {
    widths w = widths_of(s);
    size_t N = (size_t)s->Bcap * s->T;
    acts a;
    a.rstd1 = buf, a.rstd2 = a.rstd1 + N, a.ln1 = a.rstd2 + N, a.qkv = a.ln1 + N * w.C;
    a.att = a.qkv + N * w.W;
    a.atty = a.att + (size_t)s->Bcap * s->NH * s->T * s->T;
    a.res2 = a.atty + N * w.C, a.ln2 = a.res2 + N * w.C, a.gate = a.ln2 + N * w.C;
    a.up = a.gate + N * w.F, a.h = a.up + N * w.F, a.lora_h = a.h + N * w.F;
    return a;
}

/* backward scratch: dgate, dup [N,F], dqkv [N,W], dc [N,C], one sample's datt [NH,T,T], with LoRA
   d(x A^T) [N,r] */
size_t llama_block_work_bytes(const tf_shape *s) {
    widths w = widths_of(s);
    size_t N = (size_t)s->Bcap * s->T;
    return sizeof(float) * (N * (2 * (size_t)w.F + w.W + w.C) + (size_t)s->NH * s->T * s->T + tf_lora_work_elems(s));
}

/* LoRA (lora.h) on linear `lin` (LL_* in llama_block.h) when it carries an adapter: out (rows ldo
   apart; NULL: only x A^T) += scale x A^T B^T; and its backward, dx += its share */
static void lora_fwd(const tf_shape *s, void *const *p, const acts *a, int lin, float *out, int ldo, const float *x,
                     int I, int O) {
    int i = tf_lora_index(s->lora, s->block, lin);
    if (i >= 0) tf_lora_forward(s, lin, out, ldo, tf_lora_h(s, a->lora_h, lin), x, p[i], p[i + 1], s->B * s->T, I, O);
}
static void lora_bwd(const tf_shape *s, void *const *p, void *const *d, const acts *a, int lin, float *dx, float *dh,
                     const float *dout, int ldo, const float *x, int I, int O) {
    int i = tf_lora_index(s->lora, s->block, lin);
    if (i >= 0)
        tf_lora_backward(s, lin, dx, d[i], d[i + 1], dh, dout, ldo, x, tf_lora_h(s, a->lora_h, lin), p[i], p[i + 1],
                         s->B * s->T, I, O);
}

/* out[n, 0..O) (rows strided by ld) = x[N, I] W^T (+ b), W an nn.Linear weight [O, I] */
static void lin_forward(const tf_shape *s, float *out, int ld, const float *x, const void *W, const void *b, int N,
                        int I, int O) {
    if (b) llama_bias_fill_strided(out, ld, b, N, O);
    s->k->gemm(1, 0, O, N, I, 1.0f, W, I, x, I, b ? 1.0f : 0.0f, out, ld, s->dt);
}
/* dW += dout^T x, db += column sums of dout (rows strided by ld), dx = dout W + beta dx (dx NULL: none) */
static void lin_backward(const tf_shape *s, float *dx, float beta, void *dW, void *db, const float *dout, int ld,
                         const float *x, const void *W, int N, int I, int O) {
    if (db) llama_bias_backward_strided(db, dout, ld, N, O);
    if (dW) s->k->gemm(0, 1, I, O, N, 1.0f, x, I, dout, ld, 1.0f, dW, I, s->dt); /* NULL: frozen */
    if (dx) s->k->gemm(0, 0, I, N, O, 1.0f, W, I, dout, ld, beta, dx, I, s->dt);
}

#define P(slot) (slot_index[slot] >= 0 ? p[slot_index[slot]] : NULL)
#define D(slot) (slot_index[slot] >= 0 ? d[slot_index[slot]] : NULL)

void llama_block_forward(const tf_shape *s, void *const *p, const void *x, void *buf, void *out) {
    widths w = widths_of(s);
    const int N = s->B * s->T, C = w.C, KVd = w.KV * w.hd;
    acts a = acts_at(s, buf);
    llama_rmsnorm_forward(a.ln1, a.rstd1, x, P(LB_LN1), N, C, (float)cfg->rms_eps);
    lin_forward(s, a.qkv, w.W, a.ln1, P(LB_Q_W), P(LB_Q_B), N, C, C);
    lin_forward(s, a.qkv + C, w.W, a.ln1, P(LB_K_W), P(LB_K_B), N, C, KVd);
    lin_forward(s, a.qkv + C + KVd, w.W, a.ln1, P(LB_V_W), P(LB_V_B), N, C, KVd);
    lora_fwd(s, p, &a, LL_Q, a.qkv, w.W, a.ln1, C, C); /* the adapters add before RoPE, as PEFT's on q_proj */
    lora_fwd(s, p, &a, LL_K, a.qkv + C, w.W, a.ln1, C, KVd);
    lora_fwd(s, p, &a, LL_V, a.qkv + C + KVd, w.W, a.ln1, C, KVd);
    llama_rope(a.qkv, N, s->T, w.W, s->NH + w.KV, w.hd, rope_cos, rope_sin, 0); /* the queries and keys */
    tf_qkv_layout l = tf_qkv_grouped(C, s->NH, w.KV);
    tf_attention_forward(s, &l, 0, a.qkv, a.att, a.atty);
    tf_linear_forward_residual(s, TF_WEIGHT_OUT_IN, a.res2, a.atty, P(LB_O_W), P(LB_O_B), x, N, C, C);
    lora_fwd(s, p, &a, LL_O, a.res2, C, a.atty, C, C);
    llama_rmsnorm_forward(a.ln2, a.rstd2, a.res2, P(LB_LN2), N, C, (float)cfg->rms_eps);
    tf_linear_forward(s, TF_WEIGHT_OUT_IN, a.gate, a.ln2, P(LB_GATE_W), P(LB_GATE_B), N, C, w.F);
    tf_linear_forward(s, TF_WEIGHT_OUT_IN, a.up, a.ln2, P(LB_UP_W), P(LB_UP_B), N, C, w.F);
    lora_fwd(s, p, &a, LL_GATE, a.gate, w.F, a.ln2, C, w.F);
    lora_fwd(s, p, &a, LL_UP, a.up, w.F, a.ln2, C, w.F);
    llama_swiglu_forward(a.h, a.gate, a.up, (size_t)N * w.F);
    if (out) tf_linear_forward_residual(s, TF_WEIGHT_OUT_IN, out, a.h, P(LB_DOWN_W), P(LB_DOWN_B), a.res2, N, w.F, C);
    lora_fwd(s, p, &a, LL_DOWN, out, C, a.h, w.F, C); /* a recompute (out NULL) still keeps its x A^T */
}

void llama_block_backward(const tf_shape *s, void *const *p, void *const *d, const void *x, void *buf, const void *dy,
                          void *dx_, void *work) {
    widths w = widths_of(s);
    const int N = s->B * s->T, C = w.C, KVd = w.KV * w.hd;
    acts a = acts_at(s, buf);
    float *dx = dx_, *dgate = work, *dup = dgate + (size_t)N * w.F, *dqkv = dup + (size_t)N * w.F,
          *dc = dqkv + (size_t)N * w.W, *datt = dc + (size_t)N * C, *dh = datt + (size_t)s->NH * s->T * s->T;
    s->k->copy(dx, dy, (size_t)N * C, s->dt); /* the residual around the MLP: dx = d(res2) from here on */
    tf_linear_backward(s, TF_WEIGHT_OUT_IN, dup, 0.0f, D(LB_DOWN_W), D(LB_DOWN_B), dy, a.h, P(LB_DOWN_W), N, w.F, C);
    lora_bwd(s, p, d, &a, LL_DOWN, dup, dh, dy, C, a.h, w.F, C);
    llama_swiglu_backward(dgate, dup, a.gate, a.up, dup, (size_t)N * w.F);
    tf_linear_backward(s, TF_WEIGHT_OUT_IN, dc, 0.0f, D(LB_GATE_W), D(LB_GATE_B), dgate, a.ln2, P(LB_GATE_W), N, C,
                       w.F);
    tf_linear_backward(s, TF_WEIGHT_OUT_IN, dc, 1.0f, D(LB_UP_W), D(LB_UP_B), dup, a.ln2, P(LB_UP_W), N, C, w.F);
    lora_bwd(s, p, d, &a, LL_GATE, dc, dh, dgate, w.F, a.ln2, C, w.F);
    lora_bwd(s, p, d, &a, LL_UP, dc, dh, dup, w.F, a.ln2, C, w.F);
    llama_rmsnorm_backward(dx, D(LB_LN2), dc, a.res2, a.rstd2, P(LB_LN2), N, C);
    tf_linear_backward(s, TF_WEIGHT_OUT_IN, dc, 0.0f, D(LB_O_W), D(LB_O_B), dx, a.atty, P(LB_O_W), N, C, C);
    lora_bwd(s, p, d, &a, LL_O, dc, dh, dx, C, a.atty, C, C);
    tf_qkv_layout l = tf_qkv_grouped(C, s->NH, w.KV);
    tf_attention_backward(s, &l, a.qkv, a.att, dc, dqkv, datt);
    llama_rope(dqkv, N, s->T, w.W, s->NH + w.KV, w.hd, rope_cos, rope_sin, 1);
    lin_backward(s, dc, 0.0f, D(LB_Q_W), D(LB_Q_B), dqkv, w.W, a.ln1, P(LB_Q_W), N, C, C);
    lin_backward(s, dc, 1.0f, D(LB_K_W), D(LB_K_B), dqkv + C, w.W, a.ln1, P(LB_K_W), N, C, KVd);
    lin_backward(s, dc, 1.0f, D(LB_V_W), D(LB_V_B), dqkv + C + KVd, w.W, a.ln1, P(LB_V_W), N, C, KVd);
    lora_bwd(s, p, d, &a, LL_Q, dc, dh, dqkv, w.W, a.ln1, C, C); /* d(q/k/v) before RoPE, as forward added */
    lora_bwd(s, p, d, &a, LL_K, dc, dh, dqkv + C, w.W, a.ln1, C, KVd);
    lora_bwd(s, p, d, &a, LL_V, dc, dh, dqkv + C + KVd, w.W, a.ln1, C, KVd);
    llama_rmsnorm_backward(dx, D(LB_LN1), dc, x, a.rstd1, P(LB_LN1), N, C);
}

float *llama_block_qkv(const tf_shape *s, void *buf) { return acts_at(s, buf).qkv; }
