/*
 * The step profile of the transformer kernels (SHARDRUN_PROFILE=1): a kernel table that runs the device's
 * table and reports each call to shardrun by class, with its floating-point operations or its
 * memory traffic (sr_profile_kernel, shardrun/model.h).
 *
 * Lifecycle: lm_kernels.c picks it at create() when sr_profile_enabled() says so, wrapping the
 * device's table once for the run; without profiling the device's own table is used and the
 * kernels pay nothing.  Each call waits for the device (sync) before its time is taken, so on a
 * GPU a profiled step loses the overlap of queued kernels.
 *
 * Classes: gemm = the layers (GEMM); gemm_batched and the causal softmax = attention (this task
 * uses batched GEMMs only there); cross_entropy = softmax/cross-entropy; LayerNorm, GELU, bias,
 * residual add, embeddings, LoRA dropout = norms/activations; copy and zero = casts/copies.
 * Traffic counts each array read or written once (what a kernel must move at least).
 */
#include "kernels.h"
#include "shardrun/model.h"

static const tf_kernels *inner;
static tf_kernels table;

#define BEGIN double t0_ = sr_profile_clock()
#define END(cls, flops, bytes)                                                                                         \
    do {                                                                                                               \
        inner->sync();                                                                                                 \
        sr_profile_kernel((cls), sr_profile_clock() - t0_, (double)(flops), (double)(bytes));                          \
    } while (0)

static void p_zero(void *p, size_t bytes) {
    BEGIN;
    inner->zero(p, bytes);
    END(SR_KERNEL_COPY, 0, bytes);
}

static void p_copy(void *dst, const void *src, size_t n, sr_dtype dt) {
    BEGIN;
    inner->copy(dst, src, n, dt);
    END(SR_KERNEL_COPY, 0, 2.0 * (double)n * (double)sr_dtype_size(dt));
}

static void p_gemm(int ta, int tb, int m, int n, int k, float alpha, const void *A, int lda, const void *B, int ldb,
                   float beta, void *C, int ldc, sr_dtype dt) {
    BEGIN;
    inner->gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, dt);
    END(SR_KERNEL_GEMM, 2.0 * m * n * k, 0);
}

static void p_gemm_batched(int ta, int tb, int m, int n, int k, float alpha, const void *A, int lda, long long sA,
                           const void *B, int ldb, long long sB, float beta, void *C, int ldc, long long sC, int batch,
                           sr_dtype dt) {
    BEGIN;
    inner->gemm_batched(ta, tb, m, n, k, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch, dt);
    END(SR_KERNEL_ATTENTION, 2.0 * m * n * k * batch, 0);
}

static void p_embed_forward(void *out, const int32_t *ids, const void *wte, const void *wpe, int B, int T, int C,
                            sr_dtype dt) {
    BEGIN;
    inner->embed_forward(out, ids, wte, wpe, B, T, C, dt);
    END(SR_KERNEL_NORM_ACT, 0, 3.0 * B * T * C * (double)sr_dtype_size(dt));
}

static void p_embed_backward(void *dwte, void *dwpe, const int32_t *ids, const void *dout, int B, int T, int C,
                             sr_dtype dt) {
    BEGIN;
    inner->embed_backward(dwte, dwpe, ids, dout, B, T, C, dt);
    END(SR_KERNEL_NORM_ACT, 0, 5.0 * B * T * C * (double)sr_dtype_size(dt));
}

static void p_layernorm_forward(void *out, float *mean, float *rstd, const void *x, const void *w, const void *b, int N,
                                int C, sr_dtype dt) {
    BEGIN;
    inner->layernorm_forward(out, mean, rstd, x, w, b, N, C, dt);
    END(SR_KERNEL_NORM_ACT, 0, 2.0 * N * C * (double)sr_dtype_size(dt));
}

static void p_layernorm_backward(void *dx, void *dw, void *db, const void *dout, const void *x, const float *mean,
                                 const float *rstd, const void *w, int N, int C, sr_dtype dt) {
    BEGIN;
    inner->layernorm_backward(dx, dw, db, dout, x, mean, rstd, w, N, C, dt);
    END(SR_KERNEL_NORM_ACT, 0, 4.0 * N * C * (double)sr_dtype_size(dt)); /* dout, x, dx read and written */
}

static void p_bias_fill(void *out, const void *bias, const void *res, int N, int O, sr_dtype dt) {
    BEGIN;
    inner->bias_fill(out, bias, res, N, O, dt);
    END(SR_KERNEL_NORM_ACT, 0, (res ? 2.0 : 1.0) * N * O * (double)sr_dtype_size(dt));
}

static void p_bias_backward(void *dbias, const void *dout, int N, int O, sr_dtype dt) {
    BEGIN;
    inner->bias_backward(dbias, dout, N, O, dt);
    END(SR_KERNEL_NORM_ACT, 0, (double)N * O * (double)sr_dtype_size(dt));
}

static void p_gelu_forward(void *out, const void *x, size_t n, sr_dtype dt) {
    BEGIN;
    inner->gelu_forward(out, x, n, dt);
    END(SR_KERNEL_NORM_ACT, 0, 2.0 * (double)n * (double)sr_dtype_size(dt));
}

static void p_gelu_backward(void *dx, void *dbias, const void *x, const void *dout, int N, int O, sr_dtype dt) {
    BEGIN;
    inner->gelu_backward(dx, dbias, x, dout, N, O, dt);
    END(SR_KERNEL_NORM_ACT, 0, 3.0 * N * O * (double)sr_dtype_size(dt));
}

static void p_add(void *out, const void *a, const void *b, size_t n, sr_dtype dt) {
    BEGIN;
    inner->add(out, a, b, n, dt);
    END(SR_KERNEL_NORM_ACT, 0, 3.0 * (double)n * (double)sr_dtype_size(dt));
}

/* the causal softmax: counted with attention (its rate there is the products' FLOPs) */
static void p_softmax_forward(void *P, const void *S, int T, float scale, int alibi_heads, int count, sr_dtype dt) {
    BEGIN;
    inner->softmax_causal_forward(P, S, T, scale, alibi_heads, count, dt);
    END(SR_KERNEL_ATTENTION, 0, 0);
}

static void p_softmax_backward(void *dS, const void *P, const void *dP, int T, float scale, int count, sr_dtype dt) {
    BEGIN;
    inner->softmax_causal_backward(dS, P, dP, T, scale, count, dt);
    END(SR_KERNEL_ATTENTION, 0, 0);
}

static void p_cross_entropy(void *logits, float *losses, const int32_t *targets, int N, int V, float dscale,
                            sr_dtype dt) {
    BEGIN;
    inner->cross_entropy(logits, losses, targets, N, V, dscale, dt);
    END(SR_KERNEL_SOFTMAX_CE, 0, 2.0 * N * V * (double)sr_dtype_size(dt)); /* logits read, gradient written */
}

static void p_lora_dropout(void *y, const void *x, int N, int F, int T, const uint32_t *keys, uint32_t site,
                           uint64_t threshold, float keep_scale, int accumulate, sr_dtype dt) {
    BEGIN;
    inner->lora_dropout(y, x, N, F, T, keys, site, threshold, keep_scale, accumulate, dt);
    END(SR_KERNEL_NORM_ACT, 0, (2.0 + accumulate) * N * F * (double)sr_dtype_size(dt));
}

const tf_kernels *tf_kernels_profiled(const tf_kernels *k) {
    inner = k;
    table = *k; /* every entry this file does not time (alloc, uploads, sync, newer ones) as it is */
    table.zero = p_zero;
    table.copy = p_copy;
    table.gemm = p_gemm;
    table.gemm_batched = p_gemm_batched;
    table.embed_forward = p_embed_forward;
    table.embed_backward = p_embed_backward;
    table.layernorm_forward = p_layernorm_forward;
    table.layernorm_backward = p_layernorm_backward;
    table.bias_fill = p_bias_fill;
    table.bias_backward = p_bias_backward;
    table.gelu_forward = p_gelu_forward;
    table.gelu_backward = p_gelu_backward;
    table.add = p_add;
    table.softmax_causal_forward = p_softmax_forward;
    table.softmax_causal_backward = p_softmax_backward;
    table.cross_entropy = p_cross_entropy;
    table.lora_dropout = p_lora_dropout;
    return &table;
}
