/* gpt2 block: a GPT2Block over the kernel table (see gpt2_block.h). */
#include "gpt2_block.h"

#include <math.h>

#define AT(p, i) ((char *)(p) + (size_t)(i) * s->es) /* element i of a compute-dtype array */

/* 4 floats of LayerNorm statistics per token, then ln1 [N,C], qkv [N,3C], att [B,NH,T,T],
   atty [N,C], res2 [N,C], ln2 [N,C], fch [N,4C], fchg [N,4C] in the compute dtype */
size_t gpt2_block_acts_bytes(const gpt2_shape *s) {
    size_t N = (size_t)s->Bcap * s->T;
    return 16 * N + s->es * (N * 15 * (size_t)s->C + (size_t)s->Bcap * s->NH * s->T * s->T);
}

gpt2_block_acts gpt2_block_acts_at(const gpt2_shape *s, void *buf) {
    size_t N = (size_t)s->Bcap * s->T, C = (size_t)s->C;
    gpt2_block_acts a;
    a.mean1 = buf, a.rstd1 = a.mean1 + N, a.mean2 = a.rstd1 + N, a.rstd2 = a.mean2 + N;
    a.ln1 = (char *)(a.rstd2 + N);
    a.qkv = AT(a.ln1, N * C);
    a.att = AT(a.qkv, 3 * N * C);
    a.atty = AT(a.att, (size_t)s->Bcap * s->NH * s->T * s->T);
    a.res2 = AT(a.atty, N * C);
    a.ln2 = AT(a.res2, N * C);
    a.fch = AT(a.ln2, N * C);
    a.fchg = AT(a.fch, 4 * N * C);
    return a;
}

/* backward temporaries: d(fch) [N,4C], dqkv [N,3C], a [N,C] and one sample's datt [NH,T,T] */
size_t gpt2_block_work_bytes(const gpt2_shape *s) {
    size_t N = (size_t)s->Bcap * s->T;
    return s->es * (N * 8 * (size_t)s->C + (size_t)s->NH * s->T * s->T);
}

/* out[N,O] = x[N,I] W[I,O] (+ b): a Conv1D, whose weight HF stores [in, out] */
static void conv1d_forward(const gpt2_shape *s, void *out, const void *x, const void *W, const void *b, int N, int I,
                           int O) {
    if (b) s->k->bias_fill(out, b, N, O, s->dt);
    s->k->gemm(0, 0, O, N, I, 1.0f, W, O, x, I, b ? 1.0f : 0.0f, out, O, s->dt);
}

/* dW += x^T dout, db += column sums of dout, dx (+)= dout W^T (beta 0: overwrite, 1: add) */
static void conv1d_backward(const gpt2_shape *s, void *dx, float beta, void *dW, void *db, const void *dout,
                            const void *x, const void *W, int N, int I, int O) {
    if (db) s->k->bias_backward(db, dout, N, O, s->dt);
    s->k->gemm(0, 1, O, I, N, 1.0f, dout, O, x, I, 1.0f, dW, O, s->dt);
    if (dx) s->k->gemm(1, 0, I, N, O, 1.0f, W, O, dout, O, beta, dx, I, s->dt);
}

/* Causal self-attention: qkv [N,3C] -> att (probabilities), atty [N,C].  One sample at a time,
   its heads as one batched GEMM: head h's q, k, v are columns h*hs, C + h*hs and 2C + h*hs of
   qkv, rows strided by 3C.  Queries go in blocks of QB rows, and a block's GEMMs stop at its last
   query's key (causal): at T = 128 that is 3/4 of the full products, at T = 1024 about half.  The
   scores and gradients right of the diagonal are never computed; softmax writes them as 0. */
#define QB 64

static int imin(int a, int b) { return a < b ? a : b; }

static void attention_forward(const gpt2_shape *s, const gpt2_block_acts *a) {
    const int T = s->T, C = s->C, NH = s->NH, hs = C / NH;
    const long long TT = (long long)T * T;
    for (int b = 0; b < s->B; b++) {
        char *q = AT(a->qkv, (size_t)b * T * 3 * C), *kk = AT(q, C), *v = AT(q, 2 * C);
        char *att = AT(a->att, (size_t)b * NH * TT), *y = AT(a->atty, (size_t)b * T * C);
        /* S[t1, t2] = q_t1 . k_t2, stored row t1: column-major C[t2, t1] = K^T' Q, keys t2 < q0 + nq */
        for (int q0 = 0; q0 < T; q0 += QB) {
            int nq = imin(QB, T - q0);
            s->k->gemm_batched(1, 0, q0 + nq, nq, hs, 1.0f, kk, 3 * C, hs, AT(q, (size_t)q0 * 3 * C), 3 * C, hs,
                               0.0f, AT(att, (size_t)q0 * T), T, TT, NH, s->dt);
        }
        s->k->softmax_causal_forward(att, att, T, 1.0f / sqrtf((float)hs), NH, s->dt);
        /* y[t1, :] = sum_{t2 <= t1} P[t1, t2] v_t2 */
        for (int q0 = 0; q0 < T; q0 += QB) {
            int nq = imin(QB, T - q0);
            s->k->gemm_batched(0, 0, hs, nq, q0 + nq, 1.0f, v, 3 * C, hs, AT(att, (size_t)q0 * T), T, TT, 0.0f,
                               AT(y, (size_t)q0 * C), C, hs, NH, s->dt);
        }
    }
}

static void attention_backward(const gpt2_shape *s, const gpt2_block_acts *a, const void *datty, void *dqkv,
                               void *datt) {
    const int T = s->T, C = s->C, NH = s->NH, hs = C / NH;
    const long long TT = (long long)T * T;
    for (int b = 0; b < s->B; b++) {
        const char *q = AT(a->qkv, (size_t)b * T * 3 * C), *kk = AT(q, C), *v = AT(q, 2 * C);
        const char *att = AT(a->att, (size_t)b * NH * TT), *dy = AT(datty, (size_t)b * T * C);
        char *dq = AT(dqkv, (size_t)b * T * 3 * C), *dk = AT(dq, C), *dv = AT(dq, 2 * C);
        /* dP[t1, t2] = dy_t1 . v_t2 for t2 <= t1 */
        for (int q0 = 0; q0 < T; q0 += QB) {
            int nq = imin(QB, T - q0);
            s->k->gemm_batched(1, 0, q0 + nq, nq, hs, 1.0f, v, 3 * C, hs, AT(dy, (size_t)q0 * C), C, hs, 0.0f,
                               AT(datt, (size_t)q0 * T), T, TT, NH, s->dt);
        }
        s->k->softmax_causal_backward(datt, att, datt, T, 1.0f / sqrtf((float)hs), NH, s->dt);
        for (int q0 = 0; q0 < T; q0 += QB) { /* dq_t1 = sum_{t2 <= t1} dS[t1, t2] k_t2 */
            int nq = imin(QB, T - q0);
            s->k->gemm_batched(0, 0, hs, nq, q0 + nq, 1.0f, kk, 3 * C, hs, AT(datt, (size_t)q0 * T), T, TT, 0.0f,
                               AT(dq, (size_t)q0 * 3 * C), 3 * C, hs, NH, s->dt);
        }
        /* keys in blocks: dv_t2 = sum_{t1 >= t2} P[t1, t2] dy_t1, dk_t2 = sum_{t1 >= t2} dS[t1, t2] q_t1,
           over the queries from the block's first key on (P and dS are 0 above the diagonal) */
        for (int k0 = 0; k0 < T; k0 += QB) {
            int nk = imin(QB, T - k0);
            size_t diag = (size_t)k0 * T + (size_t)k0;
            s->k->gemm_batched(0, 1, hs, nk, T - k0, 1.0f, AT(dy, (size_t)k0 * C), C, hs, AT(att, diag), T, TT, 0.0f,
                               AT(dv, (size_t)k0 * 3 * C), 3 * C, hs, NH, s->dt);
            s->k->gemm_batched(0, 1, hs, nk, T - k0, 1.0f, AT(q, (size_t)k0 * 3 * C), 3 * C, hs, AT(datt, diag), T,
                               TT, 0.0f, AT(dk, (size_t)k0 * 3 * C), 3 * C, hs, NH, s->dt);
        }
    }
}

void gpt2_block_forward(const gpt2_shape *s, void *const *p, const void *x, const gpt2_block_acts *a, void *out) {
    const int N = s->B * s->T, C = s->C;
    s->k->layernorm_forward(a->ln1, a->mean1, a->rstd1, x, p[GPT2_LN1_W], p[GPT2_LN1_B], N, C, s->dt);
    conv1d_forward(s, a->qkv, a->ln1, p[GPT2_ATTN_W], p[GPT2_ATTN_B], N, C, 3 * C);
    attention_forward(s, a);
    conv1d_forward(s, a->res2, a->atty, p[GPT2_APROJ_W], p[GPT2_APROJ_B], N, C, C);
    s->k->add(a->res2, a->res2, x, (size_t)N * C, s->dt);
    s->k->layernorm_forward(a->ln2, a->mean2, a->rstd2, a->res2, p[GPT2_LN2_W], p[GPT2_LN2_B], N, C, s->dt);
    conv1d_forward(s, a->fch, a->ln2, p[GPT2_FC_W], p[GPT2_FC_B], N, C, 4 * C);
    s->k->gelu_forward(a->fchg, a->fch, (size_t)N * 4 * C, s->dt);
    if (!out) return;
    conv1d_forward(s, out, a->fchg, p[GPT2_MPROJ_W], p[GPT2_MPROJ_B], N, 4 * C, C);
    s->k->add(out, out, a->res2, (size_t)N * C, s->dt);
}

void gpt2_block_backward(const gpt2_shape *s, void *const *p, void *const *d, const void *x,
                         const gpt2_block_acts *a, const void *dy, void *dx, void *work) {
    const int N = s->B * s->T, C = s->C;
    char *dfch = work, *dqkv = AT(dfch, (size_t)N * 4 * C), *dc = AT(dqkv, (size_t)N * 3 * C),
         *datt = AT(dc, (size_t)N * C);
    s->k->copy(dx, dy, (size_t)N * C, s->dt); /* the residual around the MLP: dx = d(res2) from here on */
    conv1d_backward(s, dfch, 0.0f, d[GPT2_MPROJ_W], d[GPT2_MPROJ_B], dy, a->fchg, p[GPT2_MPROJ_W], N, 4 * C, C);
    s->k->gelu_backward(dfch, a->fch, dfch, (size_t)N * 4 * C, s->dt);
    conv1d_backward(s, dc, 0.0f, d[GPT2_FC_W], d[GPT2_FC_B], dfch, a->ln2, p[GPT2_FC_W], N, C, 4 * C);
    s->k->layernorm_backward(dx, d[GPT2_LN2_W], d[GPT2_LN2_B], dc, a->res2, a->mean2, a->rstd2, p[GPT2_LN2_W], N, C,
                             s->dt);
    conv1d_backward(s, dc, 0.0f, d[GPT2_APROJ_W], d[GPT2_APROJ_B], dx, a->atty, p[GPT2_APROJ_W], N, C, C);
    attention_backward(s, a, dc, dqkv, datt);
    conv1d_backward(s, dc, 0.0f, d[GPT2_ATTN_W], d[GPT2_ATTN_B], dqkv, a->ln1, p[GPT2_ATTN_W], N, C, 3 * C);
    s->k->layernorm_backward(dx, d[GPT2_LN1_W], d[GPT2_LN1_B], dc, x, a->mean1, a->rstd1, p[GPT2_LN1_W], N, C, s->dt);
}
