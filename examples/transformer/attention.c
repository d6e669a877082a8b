/* transformer attention (see attention.h).
 *
 * One sample at a time, its heads as one batched GEMM: head h's q, k and v start at columns
 * l->q, l->k and l->v plus h * l->head_stride of qkv, rows strided by 3C.  Queries go in blocks of QB
 * rows, and a block's GEMMs stop at its last query's key (causal): at T = 128 that is 3/4 of the full
 * products, at T = 1024 about half.  The scores and gradients right of the diagonal are never
 * computed; softmax writes them as 0. */
#include "attention.h"

#include <math.h>

#define QB 64

static int imin(int a, int b) { return a < b ? a : b; }

void tf_attention_forward(const tf_shape *s, const tf_qkv_layout *l, int alibi, const void *qkv, void *att_,
                          void *y_) {
    const int T = s->T, C = s->C, NH = s->NH, hs = C / NH, hst = l->head_stride;
    const long long TT = (long long)T * T;
    for (int b = 0; b < s->B; b++) {
        const char *row = TF_AT(s, qkv, (size_t)b * T * 3 * C), *q = TF_AT(s, row, l->q), *kk = TF_AT(s, row, l->k),
                   *v = TF_AT(s, row, l->v);
        char *att = TF_AT(s, att_, (size_t)b * NH * TT), *y = TF_AT(s, y_, (size_t)b * T * C);
        /* S[t1, t2] = q_t1 . k_t2, stored row t1: column-major C[t2, t1] = K^T' Q, keys t2 < q0 + nq */
        for (int q0 = 0; q0 < T; q0 += QB) {
            int nq = imin(QB, T - q0);
            s->k->gemm_batched(1, 0, q0 + nq, nq, hs, 1.0f, kk, 3 * C, hst, TF_AT(s, q, (size_t)q0 * 3 * C), 3 * C, hst,
                               0.0f, TF_AT(s, att, (size_t)q0 * T), T, TT, NH, s->dt);
        }
        s->k->softmax_causal_forward(att, att, T, 1.0f / sqrtf((float)hs), alibi ? NH : 0, NH, s->dt);
        /* y[t1, :] = sum_{t2 <= t1} P[t1, t2] v_t2 */
        for (int q0 = 0; q0 < T; q0 += QB) {
            int nq = imin(QB, T - q0);
            s->k->gemm_batched(0, 0, hs, nq, q0 + nq, 1.0f, v, 3 * C, hst, TF_AT(s, att, (size_t)q0 * T), T, TT, 0.0f,
                               TF_AT(s, y, (size_t)q0 * C), C, hs, NH, s->dt);
        }
    }
}

void tf_attention_backward(const tf_shape *s, const tf_qkv_layout *l, const void *qkv, const void *att_, const void *dy_,
                           void *dqkv, void *datt) {
    const int T = s->T, C = s->C, NH = s->NH, hs = C / NH, hst = l->head_stride;
    const long long TT = (long long)T * T;
    for (int b = 0; b < s->B; b++) {
        const char *row = TF_AT(s, qkv, (size_t)b * T * 3 * C), *q = TF_AT(s, row, l->q), *kk = TF_AT(s, row, l->k),
                   *v = TF_AT(s, row, l->v);
        const char *att = TF_AT(s, att_, (size_t)b * NH * TT), *dy = TF_AT(s, dy_, (size_t)b * T * C);
        char *drow = TF_AT(s, dqkv, (size_t)b * T * 3 * C), *dq = TF_AT(s, drow, l->q), *dk = TF_AT(s, drow, l->k),
             *dv = TF_AT(s, drow, l->v);
        /* dP[t1, t2] = dy_t1 . v_t2 for t2 <= t1 */
        for (int q0 = 0; q0 < T; q0 += QB) {
            int nq = imin(QB, T - q0);
            s->k->gemm_batched(1, 0, q0 + nq, nq, hs, 1.0f, v, 3 * C, hst, TF_AT(s, dy, (size_t)q0 * C), C, hs, 0.0f,
                               TF_AT(s, datt, (size_t)q0 * T), T, TT, NH, s->dt);
        }
        s->k->softmax_causal_backward(datt, att, datt, T, 1.0f / sqrtf((float)hs), NH, s->dt);
        for (int q0 = 0; q0 < T; q0 += QB) { /* dq_t1 = sum_{t2 <= t1} dS[t1, t2] k_t2 */
            int nq = imin(QB, T - q0);
            s->k->gemm_batched(0, 0, hs, nq, q0 + nq, 1.0f, kk, 3 * C, hst, TF_AT(s, datt, (size_t)q0 * T), T, TT, 0.0f,
                               TF_AT(s, dq, (size_t)q0 * 3 * C), 3 * C, hst, NH, s->dt);
        }
        /* keys in blocks: dv_t2 = sum_{t1 >= t2} P[t1, t2] dy_t1, dk_t2 = sum_{t1 >= t2} dS[t1, t2] q_t1,
           over the queries from the block's first key on (P and dS are 0 above the diagonal) */
        for (int k0 = 0; k0 < T; k0 += QB) {
            int nk = imin(QB, T - k0);
            size_t diag = (size_t)k0 * T + (size_t)k0;
            s->k->gemm_batched(0, 1, hs, nk, T - k0, 1.0f, TF_AT(s, dy, (size_t)k0 * C), C, hs, TF_AT(s, att, diag), T,
                               TT, 0.0f, TF_AT(s, dv, (size_t)k0 * 3 * C), 3 * C, hst, NH, s->dt);
            s->k->gemm_batched(0, 1, hs, nk, T - k0, 1.0f, TF_AT(s, q, (size_t)k0 * 3 * C), 3 * C, hst,
                               TF_AT(s, datt, diag), T, TT, 0.0f, TF_AT(s, dk, (size_t)k0 * 3 * C), 3 * C, hst, NH,
                               s->dt);
        }
    }
}
