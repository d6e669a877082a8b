/* gpt2 block: a GPT2Block over the kernel table (see gpt2_block.h). */
#include "gpt2_block.h"

#include "attention.h"
#include "linear.h"

#define AT(p, i) TF_AT(s, p, i)

/* 4 floats of LayerNorm statistics per token, then ln1 [N,C], qkv [N,3C], att [B,NH,T,T],
   atty [N,C], res2 [N,C], ln2 [N,C], fch [N,4C], fchg [N,4C] in the compute dtype */
size_t gpt2_block_acts_bytes(const tf_shape *s) {
    size_t N = (size_t)s->Bcap * s->T;
    return 16 * N + s->es * (N * 15 * (size_t)s->C + (size_t)s->Bcap * s->NH * s->T * s->T);
}

gpt2_block_acts gpt2_block_acts_at(const tf_shape *s, void *buf) {
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
size_t gpt2_block_work_bytes(const tf_shape *s) {
    size_t N = (size_t)s->Bcap * s->T;
    return s->es * (N * 8 * (size_t)s->C + (size_t)s->NH * s->T * s->T);
}

void gpt2_block_forward(const tf_shape *s, void *const *p, const void *x, const gpt2_block_acts *a, void *out) {
    const int N = s->B * s->T, C = s->C;
    s->k->layernorm_forward(a->ln1, a->mean1, a->rstd1, x, p[GPT2_LN1_W], p[GPT2_LN1_B], N, C, s->dt);
    tf_linear_forward(s, TF_WEIGHT_IN_OUT, a->qkv, a->ln1, p[GPT2_ATTN_W], p[GPT2_ATTN_B], N, C, 3 * C);
    tf_qkv_layout l = tf_qkv_blocks(C, s->NH);
    tf_attention_forward(s, &l, 0, a->qkv, a->att, a->atty);
    /* the residuals are added where the bias is written, before the projection's GEMM adds onto it */
    tf_linear_forward_residual(s, TF_WEIGHT_IN_OUT, a->res2, a->atty, p[GPT2_APROJ_W], p[GPT2_APROJ_B], x, N, C, C);
    s->k->layernorm_forward(a->ln2, a->mean2, a->rstd2, a->res2, p[GPT2_LN2_W], p[GPT2_LN2_B], N, C, s->dt);
    tf_linear_forward(s, TF_WEIGHT_IN_OUT, a->fch, a->ln2, p[GPT2_FC_W], p[GPT2_FC_B], N, C, 4 * C);
    s->k->gelu_forward(a->fchg, a->fch, (size_t)N * 4 * C, s->dt);
    if (!out) return;
    tf_linear_forward_residual(s, TF_WEIGHT_IN_OUT, out, a->fchg, p[GPT2_MPROJ_W], p[GPT2_MPROJ_B], a->res2, N,
                               4 * C, C);
}

void gpt2_block_backward(const tf_shape *s, void *const *p, void *const *d, const void *x,
                         const gpt2_block_acts *a, const void *dy, void *dx, void *work) {
    const int N = s->B * s->T, C = s->C;
    char *dfch = work, *dqkv = AT(dfch, (size_t)N * 4 * C), *dc = AT(dqkv, (size_t)N * 3 * C),
         *datt = AT(dc, (size_t)N * C);
    s->k->copy(dx, dy, (size_t)N * C, s->dt); /* the residual around the MLP: dx = d(res2) from here on */
    tf_linear_backward(s, TF_WEIGHT_IN_OUT, dfch, 0.0f, d[GPT2_MPROJ_W], d[GPT2_MPROJ_B], dy, a->fchg, p[GPT2_MPROJ_W], N, 4 * C, C);
    /* c_fc's bias gradient comes out of GELU's backward pass, not a second pass over dfch */
    s->k->gelu_backward(dfch, d[GPT2_FC_B], a->fch, dfch, N, 4 * C, s->dt);
    tf_linear_backward(s, TF_WEIGHT_IN_OUT, dc, 0.0f, d[GPT2_FC_W], NULL, dfch, a->ln2, p[GPT2_FC_W], N, C, 4 * C);
    s->k->layernorm_backward(dx, d[GPT2_LN2_W], d[GPT2_LN2_B], dc, a->res2, a->mean2, a->rstd2, p[GPT2_LN2_W], N, C,
                             s->dt);
    tf_linear_backward(s, TF_WEIGHT_IN_OUT, dc, 0.0f, d[GPT2_APROJ_W], d[GPT2_APROJ_B], dx, a->atty, p[GPT2_APROJ_W], N, C, C);
    tf_qkv_layout l = tf_qkv_blocks(C, s->NH);
    tf_attention_backward(s, &l, a->qkv, a->att, dc, dqkv, datt);
    tf_linear_backward(s, TF_WEIGHT_IN_OUT, dc, 0.0f, d[GPT2_ATTN_W], d[GPT2_ATTN_B], dqkv, a->ln1, p[GPT2_ATTN_W], N, C, 3 * C);
    s->k->layernorm_backward(dx, d[GPT2_LN1_W], d[GPT2_LN1_B], dc, x, a->mean1, a->rstd1, p[GPT2_LN1_W], N, C, s->dt);
}
