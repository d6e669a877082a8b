/*
 * transformer kernels: everything the decoder tasks (GPT-2, BLOOM) compute, as one table per device.
 *
 * Lifecycle: lm_kernels.c (lm_task) picks a table when the first callback names a device
 * (tf_kernels_cpu() from kernels_cpu.c; tf_kernels_cuda() from kernels_cuda.cu, in its own
 * transformer_cuda.so that only GPU runs load) -> alloc activation buffers -> per micro-batch:
 * ids_upload, then the layer kernels below in forward order, cross_entropy, then the backward
 * kernels in reverse -> free.  Generation (shardrun_generate, each family's *_infer.c) runs the same forward
 * kernels, plus gemv and attention_cached for one new token against its key/value cache.
 *
 * Conventions, the same on every device:
 *  - Matrices are what the model code calls them, stored row-major; gemm() and gemm_batched()
 *    follow BLAS's column-major convention (a row-major [rows, cols] array is a column-major
 *    [cols x rows] one with ld = cols), so cblas_sgemm(CblasColMajor, ...) and cublasGemmEx get
 *    identical arguments and the CPU tests check the argument logic the GPU uses.
 *  - `dt` is the element type of activations, parameters and parameter gradients (fp32 on the
 *    CPU; fp32, bf16 or fp16 on CUDA).  LayerNorm statistics and per-row losses are always float.
 *    Arithmetic inside a kernel is float; the per-element formulas live in kernel_math.h.
 *  - "+=" kernels accumulate into their output (parameter gradients arrive zeroed from the
 *    engine and several calls may add into them); "=" kernels overwrite.
 *  - Pointers are device pointers, except where a comment says host.
 *  - N = rows (tokens in the micro-batch, B*T), C = channels.
 */
#ifndef TF_KERNELS_H
#define TF_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "shardrun/pg.h" /* sr_dtype */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tf_kernels {
    const char *name; /* "cpu", "cuda" */
    uint32_t dtypes;  /* 1u << sr_dtype it computes in */

    void *(*alloc)(size_t bytes); /* NULL when out of memory; contents undefined */
    void (*free)(void *p);
    void (*zero)(void *p, size_t bytes);
    /* host token ids -> device (n int32 values) */
    int (*ids_upload)(int32_t *dev_dst, const int32_t *host_src, size_t n);
    /* device floats -> host (for losses and tests) */
    int (*floats_download)(float *host_dst, const float *dev_src, size_t n);
    int (*sync)(void); /* waits for queued work: 0, or -1 after printing the device's error */
    /* dst = src, n elements of dt (device to device) */
    void (*copy)(void *dst, const void *src, size_t n, sr_dtype dt);

    /* C[m x n] = alpha * op(A) op(B) + beta * C, column-major; trans* = 1 means op(X) = X^T.
       Accumulates in float. */
    void (*gemm)(int transa, int transb, int m, int n, int k, float alpha, const void *A, int lda, const void *B,
                 int ldb, float beta, void *C, int ldc, sr_dtype dt);
    /* `batch` independent gemms; matrix i of A starts at A + i*strideA elements (same for B, C) */
    void (*gemm_batched)(int transa, int transb, int m, int n, int k, float alpha, const void *A, int lda,
                         long long strideA, const void *B, int ldb, long long strideB, float beta, void *C, int ldc,
                         long long strideC, int batch, sr_dtype dt);

    /* out[b,t,:] = wte[ids[b,t],:] + wpe[t,:]   (out [B*T, C]); wpe NULL: no position term (BLOOM) */
    void (*embed_forward)(void *out, const int32_t *ids, const void *wte, const void *wpe, int B, int T, int C,
                          sr_dtype dt);
    /* dwte[ids[b,t],:] += dout[b,t,:];  dwpe[t,:] += sum_b dout[b,t,:] (dwpe NULL: none) */
    void (*embed_backward)(void *dwte, void *dwpe, const int32_t *ids, const void *dout, int B, int T, int C,
                           sr_dtype dt);

    /* out = (x - mean) * rstd * w + b per row, eps 1e-5; mean[N], rstd[N] saved (float) */
    void (*layernorm_forward)(void *out, float *mean, float *rstd, const void *x, const void *w, const void *b, int N,
                              int C, sr_dtype dt);
    /* dx += ..., dw += ..., db += ... from dout and the saved statistics */
    void (*layernorm_backward)(void *dx, void *dw, void *db, const void *dout, const void *x, const float *mean,
                               const float *rstd, const void *w, int N, int C, sr_dtype dt);

    /* out[n,:] = bias + res[n,:]  (out and res [N, O]; bias NULL or res NULL: that term is 0; res
       may alias out).  A GEMM with beta = 1 then adds onto it, which saves the pass over the output
       that beta = 0 costs (BLAS zeroes C first), a separate bias pass and, with res, the residual
       add after the layer (tf_linear_forward_residual) */
    void (*bias_fill)(void *out, const void *bias, const void *res, int N, int O, sr_dtype dt);
    /* dbias += sum over rows of dout [N, O] */
    void (*bias_backward)(void *dbias, const void *dout, int N, int O, sr_dtype dt);

    /* out = gelu_tanh(x), n elements (out may alias x).  Kept apart from the GEMM before it: the
       backward needs x, and writing gelu(x) next to x costs the pass this one makes anyway. */
    void (*gelu_forward)(void *out, const void *x, size_t n, sr_dtype dt);
    /* dx = gelu_tanh'(x) * dout over [N, O] (dx may alias dout); dbias (NULL: none) += the column
       sums of that dx in the same pass: the bias gradient of the layer that produced x, the sums
       bias_backward(dbias, dx) would make, in the same order (rows in order) */
    void (*gelu_backward)(void *dx, void *dbias, const void *x, const void *dout, int N, int O, sr_dtype dt);

    /* out = a + b, n elements (out may alias a or b) */
    void (*add)(void *out, const void *a, const void *b, size_t n, sr_dtype dt);

    /* Causal softmax over `count` score matrices of T x T (each row-major, row t = query t):
       P[t, j] = softmax_j<=t(scale * S[t, j] + m j), P[t, j > t] = 0.  P may alias S.  m = 0 when
       alibi_heads is 0; else matrix i is head i % alibi_heads and m = tf_alibi_slope(that head,
       alibi_heads) (kernel_math.h): ALiBi's linear bias on the key position.  The bias needs no
       term in the backward: it does not depend on the scores. */
    void (*softmax_causal_forward)(void *P, const void *S, int T, float scale, int alibi_heads, int count, sr_dtype dt);
    /* dS[t, j] = scale * P[t, j] * (dP[t, j] - sum_i P[t, i] dP[t, i]); dS may alias dP */
    void (*softmax_causal_backward)(void *dS, const void *P, const void *dP, int T, float scale, int count,
                                    sr_dtype dt);

    /* Cross-entropy over logits [N, V] with targets[N] (-1 = ignored).  losses[n] (float) =
       logsumexp(logits[n]) - logits[n, target] (0 for ignored rows); then, in place,
       logits[n, :] = (softmax(logits[n]) - onehot(target)) * dscale (0 for ignored rows).
       CUDA makes two passes over a row (its max and sum of exponentials together, online per
       thread with tf_softmax_merge, then the gradient); the CPU three (kernels_cpu.c says why). */
    void (*cross_entropy)(void *logits, float *losses, const int32_t *targets, int N, int V, float dscale, sr_dtype dt);

    /* Generation (*_infer.c): y[m] = alpha * op(A) x + beta * y, op(A) m x k column-major as in
       gemm (transa = 1: A is k x m), x [k] and y [m] contiguous.  gemm with n = 1 computes the same,
       but BLAS's gemm packs A first, which for one column costs 2-4x a matrix-vector product. */
    void (*gemv)(int transa, int m, int k, float alpha, const void *A, int lda, const void *x, float beta, void *y,
                 sr_dtype dt);
    /* Generation (*_infer.c): attention of nq new queries against a key/value cache.  kc and vc
       are [positions, C] (row = position, head h in columns h*hs ..), rows [0, pos0 + nq) filled,
       the new tokens' at pos0 ..; query i (row i of q, rows strided by ldq) sits at position pos0 + i
       and sees keys 0 .. pos0 + i.  Per head: y[i, h] = sum_j softmax_j(scale * q_i . k_j) v_j,
       y [nq, C].  The softmax is softmax_causal_forward's formula.  scratch: nq * NH * (pos0 + nq)
       floats (device). */
    void (*attention_cached)(void *y, const void *q, int ldq, const void *kc, const void *vc, int pos0, int nq, int C,
                             int NH, float scale, float *scratch, sr_dtype dt);

    /* LoRA dropout (lora.h, "Dropout"): y[n, i] = (accumulate ? y[n, i] : 0) + f * x[n, i] over
       [N, F] (both contiguous, rows F apart), f = tf_drop_factor(row key, i, threshold, keep_scale)
       (kernel_math.h) with row n's key tf_drop_row_key(sample key, n % T, site), the sample key of
       row n being keys[2 (n / T)] (low word) and keys[2 (n / T) + 1] (high word).  x and y do not
       overlap. */
    void (*lora_dropout)(void *y, const void *x, int N, int F, int T, const uint32_t *keys, uint32_t site,
                         uint64_t threshold, float keep_scale, int accumulate, sr_dtype dt);
} tf_kernels;

const tf_kernels *tf_kernels_cpu(void);
/* threads the CPU kernels use (OpenMP's, from OMP_NUM_THREADS as the process had it when the task
   was loaded) */
int tf_cpu_threads(void);
/* the BLAS's kernels the CPU table runs: OpenBLAS's core name ("Haswell", "SkylakeX") or BLIS's
   configuration ("zen3", "generic") */
const char *tf_cpu_blas(void);
/* kernels_profile.c: a table that runs k's kernels and reports each call to the step profile
   (SHARDRUN_PROFILE=1); one per process */
const tf_kernels *tf_kernels_profiled(const tf_kernels *k);
/* in transformer_cuda.so, found with dlsym by lm_kernels.c */
const tf_kernels *tf_kernels_cuda(void);

#ifdef __cplusplus
}
#endif
#endif
