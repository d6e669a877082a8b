/*
 * llama kernels: what a Llama block computes besides GEMMs and attention, on the CPU (fp32,
 * OpenMP): RMSNorm, rotary position embeddings, SwiGLU, and the bias of a linear layer whose output
 * rows are strided (q/k/v written side by side into one activation).
 *
 * Lifecycle: none; llama_block.c calls them between the shared kernel table's calls.  There is no
 * CUDA version yet: the llama task refuses runs under NCCL (tf_lm_arch.cpu_only).
 *
 * Like kernels_cpu.c's, results do not depend on the thread count: a row is one thread's, and
 * column sums (parameter gradients) run over the rows in order, so parity runs get the same bits.
 */
#ifndef LLAMA_KERNELS_H
#define LLAMA_KERNELS_H

#include <stddef.h>

/* HF's LlamaRMSNorm per row of x [N, C]: out = w * (x * rstd), rstd = 1 / sqrt(mean(x^2) + eps),
   saved in rstd[N] */
void llama_rmsnorm_forward(float *out, float *rstd, const float *x, const float *w, int N, int C, float eps);
/* dx += d out / d x applied to dout (dx NULL: skipped), dw += sum over rows of dout * x * rstd */
void llama_rmsnorm_backward(float *dx, float *dw, const float *dout, const float *x, const float *rstd, const float *w,
                            int N, int C);

/* Rotary embeddings in HF's rotate-half convention, in place on `heads` heads of hd columns
   starting at column 0 of each row of x (rows strided by ld; row n is position n % T):
   for i < hd/2, (a, b) = (x[i], x[i + hd/2]) becomes (a cos - b sin, b cos + a sin) with the angle
   cos[t * hd/2 + i], sin[...] of position t.  inverse = 1 rotates back (sin negated): the
   backward of the rotation applied to its output's gradient. */
void llama_rope(float *x, int N, int T, int ld, int heads, int hd, const float *cos, const float *sin, int inverse);

/* h = silu(gate) * up over n elements (silu(g) = g / (1 + e^-g)) */
void llama_swiglu_forward(float *h, const float *gate, const float *up, size_t n);
/* from dh: dgate = dh * up * silu'(gate), dup = dh * silu(gate); dup may alias dh */
void llama_swiglu_backward(float *dgate, float *dup, const float *gate, const float *up, const float *dh, size_t n);

/* out[n, o] = b[o] for rows strided by ld (then a GEMM adds onto it) */
void llama_bias_fill_strided(float *out, int ld, const float *b, int N, int O);
/* db[o] += sum over rows of dout[n, o], rows strided by ld, in row order */
void llama_bias_backward_strided(float *db, const float *dout, int ld, int N, int O);

#endif
