/*
 * transformer math: the per-element formulas of the decoder tasks, written once for the C loops of
 * kernels_cpu.c and the CUDA kernels of kernels_cuda.cu (SR_HD compiles them for both), so the
 * CPU tests check the arithmetic a GPU runs.
 *
 * Lifecycle: none; pure functions of floats.  The exponential is our own (a 2^k * polynomial
 * reduction, within 2 ulp of expf over the range softmax and GELU use) because it is written in
 * operations GCC vectorises at the x86-64 baseline, where a libm call would not be, and a GPU
 * runs the very same steps.
 */
#ifndef TF_MATH_H
#define TF_MATH_H

#include "shardrun/half.h" /* SR_HD, sr_bits_to_f32, sr_f32_to_bits */

#define TF_GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define TF_GELU_C 0.044715f
#define TF_LN_EPS 1e-5f

/* e^x for x in [-87, 88] (clamped outside), relative error < 2.5e-7. */
SR_HD float tf_exp(float x) {
    x = x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x;
    /* k = round(x / ln 2) with the 1.5 * 2^23 trick: adding it leaves k in the low mantissa bits */
    const float shifter = 12582912.0f;
    float t = x * 1.44269504088896341f + shifter;
    float k = t - shifter;
    float r = x - k * 0.693145751953125f; /* ln 2 split in two: hi has few bits, so k * hi is exact */
    r = r - k * 1.428606765330187e-06f;
    /* e^r on |r| <= 0.347: Taylor to r^7 (the truncation error is below float's half ulp) */
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    /* times 2^k: k + 127 into the exponent field (k is in [-126, 127] after the clamp) */
    int32_t ki = (int32_t)(sr_f32_to_bits(t) - sr_f32_to_bits(shifter));
    return p * sr_bits_to_f32((uint32_t)(ki + 127) << 23);
}

/* tanh through the exponential: 1 - 2 / (e^{2u} + 1).  Its absolute error is below 2.5e-7
   (tests/unit/test_gpt2_math.c), which is what GELU needs: it adds 1 to tanh before multiplying
   by x / 2, so an absolute error, not a relative one, is what shows. */
SR_HD float tf_tanh(float u) { return 1.0f - 2.0f / (tf_exp(2.0f * u) + 1.0f); }

/* GELU, tanh approximation (HF's "gelu_new", torch's gelu(approximate="tanh")) */
SR_HD float tf_gelu(float x) {
    float u = TF_GELU_K * (x + TF_GELU_C * x * x * x);
    return 0.5f * x * (1.0f + tf_tanh(u));
}

/* d gelu(x) / dx */
SR_HD float tf_gelu_grad(float x) {
    float u = TF_GELU_K * (x + TF_GELU_C * x * x * x);
    float th = tf_tanh(u);
    float du = TF_GELU_K * (1.0f + 3.0f * TF_GELU_C * x * x);
#ifndef TF_TEST_FAULT_GELU_GRAD
    return 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
#else /* a wrong formula for tests/selftest/broken_math.c only: 1 - th for 1 - th^2 */
    return 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th) * du;
#endif
}

/* ALiBi's slope for head h of nh (BLOOM; HF's build_alibi_tensor): with p the largest power of two
   <= nh, heads 0 .. p-1 get 2^(-8 (h+1) / p), and the heads past p the odd powers of 2^(-4 / p) --
   2^(-4 * 1 / p), 2^(-4 * 3 / p), ... -- that a model of 2p heads would add between them. */
SR_HD float tf_alibi_slope(int h, int nh) {
    int p = 1;
    while (2 * p <= nh) p *= 2;
    float e = h < p ? -8.0f * (float)(h + 1) / (float)p : -4.0f * (float)(2 * (h - p) + 1) / (float)p;
    return exp2f(e);
}

/* LayerNorm, per element of a row with statistics mean, rstd = 1 / sqrt(var + eps) */
SR_HD float tf_ln_norm(float x, float mean, float rstd) { return (x - mean) * rstd; }
SR_HD float tf_ln_rstd(float var) { return 1.0f / sqrtf(var + TF_LN_EPS); }

/* LayerNorm backward for one element: dnorm = dout * w; mean_dnorm and mean_dnorm_norm are the
   row means of dnorm and dnorm * norm. */
SR_HD float tf_ln_dx(float dnorm, float norm, float mean_dnorm, float mean_dnorm_norm, float rstd) {
    return (dnorm - mean_dnorm - norm * mean_dnorm_norm) * rstd;
}

/* Cross-entropy gradient for one logit: (softmax - onehot) * dscale, with softmax = e / sum */
SR_HD float tf_ce_grad(float e, float inv_sum, int is_target, float dscale) {
    return (e * inv_sum - (is_target ? 1.0f : 0.0f)) * dscale;
}

/* Online softmax statistics: (m, s) = the max of some values and the sum of e^(value - m) over
   them; merging (m2, s2) of other values gives the pair of both, so one pass over a row finds its
   max and its sum of exponentials together.  s = 0 means no values yet (m is then ignored);
   tf_softmax_merge(&m, &s, x, 1) adds the single value x. */
SR_HD void tf_softmax_merge(float *m, float *s, float m2, float s2) {
    if (s2 == 0.0f) return;
    if (*s == 0.0f) {
        *m = m2, *s = s2;
    } else if (m2 > *m) {
        *s = *s * tf_exp(*m - m2) + s2;
        *m = m2;
    } else {
        *s += s2 * tf_exp(m2 - *m);
    }
}

/* Softmax backward for one score: scale * p * (dp - sum_i p_i dp_i) */
SR_HD float tf_softmax_grad(float p, float dp, float dot, float scale) { return scale * p * (dp - dot); }

/* LoRA dropout's counter hash (lora.h, "Dropout", defines it): m(z), splitmix64's output for state z */
SR_HD uint64_t tf_mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* a row's key: m(m(sample_key ^ position) ^ site) */
SR_HD uint64_t tf_drop_row_key(uint64_t sample_key, int position, uint32_t site) {
    return tf_mix64(tf_mix64(sample_key ^ (uint64_t)position) ^ site);
}
/* the multiplier of feature f in that row: 0 (dropped) or keep_scale (1 / (1 - p)) */
SR_HD float tf_drop_factor(uint64_t row_key, int f, uint64_t threshold, float keep_scale) {
    return (tf_mix64(row_key ^ (uint64_t)f) >> 11) < threshold ? 0.0f : keep_scale;
}

#endif
