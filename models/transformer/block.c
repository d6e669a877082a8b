/* transformer block: the pre-LayerNorm decoder block over the kernel table (see block.h). */
#include "block.h"

#include "attention.h"
#include "linear.h"
#include "lora.h"

#define AT(p, i) TF_AT(s, p, i)

double tf_block_param_count(int C) { return 12.0 * C * C + 13.0 * C; }

/* 4 floats of LayerNorm statistics per token, then ln1 [N,C], qkv [N,3C], att [B,NH,T,T],
   atty [N,C], res2 [N,C], ln2 [N,C], fch [N,4C], fchg [N,4C] in the compute dtype */
size_t tf_block_acts_bytes(const tf_shape *s) {
    size_t N = (size_t)s->Bcap * s->T;
    return 16 * N + s->es * (N * 15 * (size_t)s->C + (size_t)s->Bcap * s->NH * s->T * s->T + tf_lora_acts_elems(s));
}

tf_block_acts tf_block_acts_at(const tf_shape *s, void *buf) {
    size_t N = (size_t)s->Bcap * s->T, C = (size_t)s->C;
    tf_block_acts a;
    a.mean1 = buf, a.rstd1 = a.mean1 + N, a.mean2 = a.rstd1 + N, a.rstd2 = a.mean2 + N;
    a.ln1 = (char *)(a.rstd2 + N);
    a.qkv = AT(a.ln1, N * C);
    a.att = AT(a.qkv, 3 * N * C);
    a.atty = AT(a.att, (size_t)s->Bcap * s->NH * s->T * s->T);
    a.res2 = AT(a.atty, N * C);
    a.ln2 = AT(a.res2, N * C);
    a.fch = AT(a.ln2, N * C);
    a.fchg = AT(a.fch, 4 * N * C);
    a.lora_h = s->lora && s->lora->r ? AT(a.fchg, 4 * N * C) : NULL;
    return a;
}

/* backward temporaries: d(fch) [N,4C], dqkv [N,3C], a [N,C] and one sample's datt [NH,T,T] */
size_t tf_block_work_bytes(const tf_shape *s) {
    size_t N = (size_t)s->Bcap * s->T;
    return s->es * (N * 8 * (size_t)s->C + (size_t)s->NH * s->T * s->T + tf_lora_work_elems(s));
}

/* LoRA on linear `lin` (lora.h), when it carries an adapter: out += scale x A^T B^T (out NULL: only
   x A^T, which backward needs) */
static void lora_fwd(const tf_shape *s, void *const *p, const tf_block_acts *a, int lin, void *out, const void *x,
                     int I, int O) {
    int i = tf_lora_index(s->lora, s->block, lin);
    if (i < 0) return;
    tf_lora_forward(s, lin, out, O, tf_lora_h(s, a->lora_h, lin), x, p[i], p[i + 1], s->B * s->T, I, O);
}

/* its backward: the adapters' gradients, and dx += its share (dx of the base linear written first) */
static void lora_bwd(const tf_shape *s, void *const *p, void *const *d, const tf_block_acts *a, int lin, void *dx,
                     const void *dout, const void *x, void *dh, int I, int O) {
    int i = tf_lora_index(s->lora, s->block, lin);
    if (i < 0) return;
    tf_lora_backward(s, lin, dx, d[i], d[i + 1], dh, dout, O, x, tf_lora_h(s, a->lora_h, lin), p[i], p[i + 1],
                     s->B * s->T, I, O);
}

void tf_block_forward(const tf_shape *s, const tf_block_style *st, void *const *p, const void *x,
                      const tf_block_acts *a, void *out) {
    const int N = s->B * s->T, C = s->C;
    s->k->layernorm_forward(a->ln1, a->mean1, a->rstd1, x, p[TF_BLOCK_LN1_W], p[TF_BLOCK_LN1_B], N, C, s->dt);
    tf_linear_forward(s, st->weights, a->qkv, a->ln1, p[TF_BLOCK_QKV_W], p[TF_BLOCK_QKV_B], N, C, 3 * C);
    lora_fwd(s, p, a, TF_LIN_QKV, a->qkv, a->ln1, C, 3 * C);
    tf_qkv_layout l = st->qkv_per_head ? tf_qkv_per_head(C, s->NH) : tf_qkv_blocks(C, s->NH);
    tf_attention_forward(s, &l, st->alibi, a->qkv, a->att, a->atty);
    /* the residuals are added where the bias is written, before the projection's GEMM adds onto it */
    tf_linear_forward_residual(s, st->weights, a->res2, a->atty, p[TF_BLOCK_OUT_W], p[TF_BLOCK_OUT_B], x, N, C, C);
    lora_fwd(s, p, a, TF_LIN_OUT, a->res2, a->atty, C, C);
    s->k->layernorm_forward(a->ln2, a->mean2, a->rstd2, a->res2, p[TF_BLOCK_LN2_W], p[TF_BLOCK_LN2_B], N, C, s->dt);
    tf_linear_forward(s, st->weights, a->fch, a->ln2, p[TF_BLOCK_UP_W], p[TF_BLOCK_UP_B], N, C, 4 * C);
    lora_fwd(s, p, a, TF_LIN_UP, a->fch, a->ln2, C, 4 * C);
    s->k->gelu_forward(a->fchg, a->fch, (size_t)N * 4 * C, s->dt);
    if (!out) { /* a recompute: the down projection's adapter input is still needed by backward */
        lora_fwd(s, p, a, TF_LIN_DOWN, NULL, a->fchg, 4 * C, C);
        return;
    }
    tf_linear_forward_residual(s, st->weights, out, a->fchg, p[TF_BLOCK_DOWN_W], p[TF_BLOCK_DOWN_B], a->res2, N, 4 * C,
                               C);
    lora_fwd(s, p, a, TF_LIN_DOWN, out, a->fchg, 4 * C, C);
}

void tf_block_backward(const tf_shape *s, const tf_block_style *st, void *const *p, void *const *d, const void *x,
                       const tf_block_acts *a, const void *dy, void *dx, void *work) {
    const int N = s->B * s->T, C = s->C;
    char *dfch = work, *dqkv = AT(dfch, (size_t)N * 4 * C), *dc = AT(dqkv, (size_t)N * 3 * C),
         *datt = AT(dc, (size_t)N * C), *dh = AT(datt, (size_t)s->NH * s->T * s->T);
    s->k->copy(dx, dy, (size_t)N * C, s->dt); /* the residual around the MLP: dx = d(res2) from here on */
    tf_linear_backward(s, st->weights, dfch, 0.0f, d[TF_BLOCK_DOWN_W], d[TF_BLOCK_DOWN_B], dy, a->fchg,
                       p[TF_BLOCK_DOWN_W], N, 4 * C, C);
    lora_bwd(s, p, d, a, TF_LIN_DOWN, dfch, dy, a->fchg, dh, 4 * C, C);
    /* the up projection's bias gradient comes out of GELU's backward pass, not a second pass over dfch */
    s->k->gelu_backward(dfch, d[TF_BLOCK_UP_B], a->fch, dfch, N, 4 * C, s->dt);
    tf_linear_backward(s, st->weights, dc, 0.0f, d[TF_BLOCK_UP_W], NULL, dfch, a->ln2, p[TF_BLOCK_UP_W], N, C, 4 * C);
    lora_bwd(s, p, d, a, TF_LIN_UP, dc, dfch, a->ln2, dh, C, 4 * C);
    s->k->layernorm_backward(dx, d[TF_BLOCK_LN2_W], d[TF_BLOCK_LN2_B], dc, a->res2, a->mean2, a->rstd2,
                             p[TF_BLOCK_LN2_W], N, C, s->dt);
    tf_linear_backward(s, st->weights, dc, 0.0f, d[TF_BLOCK_OUT_W], d[TF_BLOCK_OUT_B], dx, a->atty, p[TF_BLOCK_OUT_W],
                       N, C, C);
    lora_bwd(s, p, d, a, TF_LIN_OUT, dc, dx, a->atty, dh, C, C);
    tf_qkv_layout l = st->qkv_per_head ? tf_qkv_per_head(C, s->NH) : tf_qkv_blocks(C, s->NH);
    tf_attention_backward(s, &l, a->qkv, a->att, dc, dqkv, datt);
    tf_linear_backward(s, st->weights, dc, 0.0f, d[TF_BLOCK_QKV_W], d[TF_BLOCK_QKV_B], dqkv, a->ln1, p[TF_BLOCK_QKV_W],
                       N, C, 3 * C);
    lora_bwd(s, p, d, a, TF_LIN_QKV, dc, dqkv, a->ln1, dh, C, 3 * C);
    s->k->layernorm_backward(dx, d[TF_BLOCK_LN1_W], d[TF_BLOCK_LN1_B], dc, x, a->mean1, a->rstd1, p[TF_BLOCK_LN1_W], N,
                             C, s->dt);
}
