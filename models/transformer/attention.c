/* transformer attention (see attention.h).
 *
 * One sample at a time, its heads as batched GEMMs: head h's q, k and v start at columns l->q,
 * l->k and l->v plus h * l->head_stride of qkv, rows strided by l->row.  Queries go in blocks of QB
 * rows, and a block's GEMMs stop at its last query's key (causal): at T = 128 that is 3/4 of the
 * full products, at T = 1024 about half.  The scores and gradients right of the diagonal are never
 * computed; softmax writes them as 0.
 *
 * Grouped-query attention (l->kv_heads < NH, rep = NH / kv_heads query heads per key/value head):
 * query head g*rep + r uses key/value head g.  Each GEMM then runs once per r, batched over the
 * kv_heads groups (query heads r, rep + r, ... against key/value heads 0, 1, ...); without GQA
 * (rep = 1) that is the one batched GEMM over all heads.  The key and value gradients of a group
 * are the sums over its query heads: the first r writes them, the others add (beta = 1). */
#include "attention.h"

#include <math.h>

#define QB 64

static int imin(int a, int b) { return a < b ? a : b; }

void tf_attention_forward(const tf_shape *s, const tf_qkv_layout *l, int alibi, const void *qkv, void *att_, void *y_) {
    const int T = s->T, C = s->C, NH = s->NH, hs = C / NH, hst = l->head_stride, W = l->row, G = l->kv_heads,
              rep = NH / G;
    const long long TT = (long long)T * T;
    for (int b = 0; b < s->B; b++) {
        const char *row = TF_AT(s, qkv, (size_t)b * T * W), *q = TF_AT(s, row, l->q), *kk = TF_AT(s, row, l->k),
                   *v = TF_AT(s, row, l->v);
        char *att = TF_AT(s, att_, (size_t)b * NH * TT), *y = TF_AT(s, y_, (size_t)b * T * C);
        /* S[t1, t2] = q_t1 . k_t2, stored row t1: column-major C[t2, t1] = K^T' Q, keys t2 < q0 + nq */
        for (int r = 0; r < rep; r++) {
            const char *qr = TF_AT(s, q, (size_t)r * hst);
            char *ar = TF_AT(s, att, (size_t)r * TT);
            for (int q0 = 0; q0 < T; q0 += QB) {
                int nq = imin(QB, T - q0);
                s->k->gemm_batched(1, 0, q0 + nq, nq, hs, 1.0f, kk, W, hst, TF_AT(s, qr, (size_t)q0 * W), W,
                                   (long long)rep * hst, 0.0f, TF_AT(s, ar, (size_t)q0 * T), T, rep * TT, G, s->dt);
            }
        }
        s->k->softmax_causal_forward(att, att, T, 1.0f / sqrtf((float)hs), alibi ? NH : 0, NH, s->dt);
        /* y[t1, :] = sum_{t2 <= t1} P[t1, t2] v_t2 */
        for (int r = 0; r < rep; r++) {
            const char *ar = TF_AT(s, att, (size_t)r * TT);
            char *yr = TF_AT(s, y, (size_t)r * hs);
            for (int q0 = 0; q0 < T; q0 += QB) {
                int nq = imin(QB, T - q0);
                s->k->gemm_batched(0, 0, hs, nq, q0 + nq, 1.0f, v, W, hst, TF_AT(s, ar, (size_t)q0 * T), T, rep * TT,
                                   0.0f, TF_AT(s, yr, (size_t)q0 * C), C, (long long)rep * hs, G, s->dt);
            }
        }
    }
}

void tf_attention_backward(const tf_shape *s, const tf_qkv_layout *l, const void *qkv, const void *att_,
                           const void *dy_, void *dqkv, void *datt) {
    const int T = s->T, C = s->C, NH = s->NH, hs = C / NH, hst = l->head_stride, W = l->row, G = l->kv_heads,
              rep = NH / G;
    const long long TT = (long long)T * T;
    for (int b = 0; b < s->B; b++) {
        const char *row = TF_AT(s, qkv, (size_t)b * T * W), *q = TF_AT(s, row, l->q), *kk = TF_AT(s, row, l->k),
                   *v = TF_AT(s, row, l->v);
        const char *att = TF_AT(s, att_, (size_t)b * NH * TT), *dy = TF_AT(s, dy_, (size_t)b * T * C);
        char *drow = TF_AT(s, dqkv, (size_t)b * T * W), *dq = TF_AT(s, drow, l->q), *dk = TF_AT(s, drow, l->k),
             *dv = TF_AT(s, drow, l->v);
        /* dP[t1, t2] = dy_t1 . v_t2 for t2 <= t1 */
        for (int r = 0; r < rep; r++) {
            const char *dyr = TF_AT(s, dy, (size_t)r * hs);
            char *dar = TF_AT(s, datt, (size_t)r * TT);
            for (int q0 = 0; q0 < T; q0 += QB) {
                int nq = imin(QB, T - q0);
                s->k->gemm_batched(1, 0, q0 + nq, nq, hs, 1.0f, v, W, hst, TF_AT(s, dyr, (size_t)q0 * C), C,
                                   (long long)rep * hs, 0.0f, TF_AT(s, dar, (size_t)q0 * T), T, rep * TT, G, s->dt);
            }
        }
        s->k->softmax_causal_backward(datt, att, datt, T, 1.0f / sqrtf((float)hs), NH, s->dt);
        for (int r = 0; r < rep; r++) { /* dq_t1 = sum_{t2 <= t1} dS[t1, t2] k_t2 */
            const char *dar = TF_AT(s, datt, (size_t)r * TT);
            char *dqr = TF_AT(s, dq, (size_t)r * hst);
            for (int q0 = 0; q0 < T; q0 += QB) {
                int nq = imin(QB, T - q0);
                s->k->gemm_batched(0, 0, hs, nq, q0 + nq, 1.0f, kk, W, hst, TF_AT(s, dar, (size_t)q0 * T), T, rep * TT,
                                   0.0f, TF_AT(s, dqr, (size_t)q0 * W), W, (long long)rep * hst, G, s->dt);
            }
        }
        /* keys in blocks: dv_t2 = sum_{t1 >= t2} P[t1, t2] dy_t1, dk_t2 = sum_{t1 >= t2} dS[t1, t2] q_t1,
           over the queries from the block's first key on (P and dS are 0 above the diagonal) */
        for (int k0 = 0; k0 < T; k0 += QB) {
            int nk = imin(QB, T - k0);
            size_t diag = (size_t)k0 * T + (size_t)k0;
            for (int r = 0; r < rep; r++) {
                float beta = r ? 1.0f : 0.0f;
                const char *ar = TF_AT(s, att, (size_t)r * TT), *dar = TF_AT(s, datt, (size_t)r * TT);
                s->k->gemm_batched(0, 1, hs, nk, T - k0, 1.0f, TF_AT(s, dy, (size_t)k0 * C + (size_t)r * hs), C,
                                   (long long)rep * hs, TF_AT(s, ar, diag), T, rep * TT, beta,
                                   TF_AT(s, dv, (size_t)k0 * W), W, hst, G, s->dt);
                s->k->gemm_batched(0, 1, hs, nk, T - k0, 1.0f, TF_AT(s, q, (size_t)k0 * W + (size_t)r * hst), W,
                                   (long long)rep * hst, TF_AT(s, dar, diag), T, rep * TT, beta,
                                   TF_AT(s, dk, (size_t)k0 * W), W, hst, G, s->dt);
            }
        }
    }
}
