/* kernel_math.h, the per-element formulas the GPT-2 task's CPU and CUDA kernels share, against libm
   in double: the exponential within its stated 2.5e-7 relative error over the whole range, GELU
   (tanh approximation) and its derivative, the tanh, the softmax and cross-entropy gradients, the
   online softmax statistics. */
#include <math.h>
#include <stdio.h>

#include "check.h"
#include "models/transformer/kernel_math.h"

static double gelu_ref(double x) { return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

int main(void) {
    double worst_exp = 0, worst_gelu = 0, worst_grad = 0, worst_tanh = 0;
    for (float x = -87.0f; x <= 88.0f; x += 0.00173f) {
        double e = exp((double)x), r = fabs((double)tf_exp(x) - e) / e;
        if (r > worst_exp) worst_exp = r;
    }
    CHECK(worst_exp < 2.5e-7);
    CHECK(tf_exp(-1000.0f) > 0.0f && tf_exp(-1000.0f) < 1e-37f); /* clamped, not 0 or NaN */
    CHECK(isfinite(tf_exp(1000.0f)));
    CHECK(tf_exp(0.0f) == 1.0f);
    for (float u = -20.0f; u <= 20.0f; u += 0.0007f) {
        double d = fabs((double)tf_tanh(u) - tanh((double)u));
        if (d > worst_tanh) worst_tanh = d;
    }
    CHECK(worst_tanh < 2.5e-7);
    for (float x = -12.0f; x <= 12.0f; x += 0.0009f) {
        /* GELU: relative to max(|y|, 1) -- float's own rounding of y near 12 is 5e-7 */
        double y = gelu_ref(x), d = fabs((double)tf_gelu(x) - y) / fmax(fabs(y), 1.0);
        if (d > worst_gelu) worst_gelu = d;
        double h = 1e-5, g = (gelu_ref(x + h) - gelu_ref(x - h)) / (2 * h);
        double dg = fabs((double)tf_gelu_grad(x) - g);
        if (dg > worst_grad) worst_grad = dg;
    }
    CHECK(worst_gelu < 1e-6);
    CHECK(worst_grad < 5e-6); /* float evaluation of terms up to ~20 that cancel */
    /* softmax and cross-entropy gradients: the formulas, on small exact cases */
    CHECK(tf_softmax_grad(0.5f, 2.0f, 1.0f, 0.25f) == 0.125f); /* 0.25 * 0.5 * (2 - 1) */
    CHECK(tf_ce_grad(2.0f, 0.25f, 1, 0.5f) == -0.25f);         /* (2 / 4 - 1) * 0.5 */
    CHECK(tf_ce_grad(2.0f, 0.25f, 0, 0.5f) == 0.25f);
    CHECK(tf_ln_norm(3.0f, 1.0f, 0.5f) == 1.0f);
    /* online softmax statistics: values added one at a time, and two halves merged, give the max and
       the sum of e^(x - max) */
    {
        const float v[] = {1.5f, -3.0f, 4.25f, 0.0f, 4.0f, -20.0f};
        double mx = 4.25, want = 0;
        for (int i = 0; i < 6; i++) want += exp((double)v[i] - mx);
        float m = 0, s = 0, m1 = 0, s1 = 0, m2 = 0, s2 = 0;
        tf_softmax_merge(&m, &s, 7.0f, 0.0f); /* an empty part changes nothing */
        CHECK(s == 0.0f);
        for (int i = 0; i < 6; i++) tf_softmax_merge(&m, &s, v[i], 1.0f);
        for (int i = 0; i < 3; i++) tf_softmax_merge(&m1, &s1, v[i], 1.0f);
        for (int i = 3; i < 6; i++) tf_softmax_merge(&m2, &s2, v[i], 1.0f);
        tf_softmax_merge(&m1, &s1, m2, s2);
        CHECK(m == 4.25f && m1 == 4.25f);
        CHECK(fabs(s - want) < 1e-6 * want && fabs(s1 - want) < 1e-6 * want);
    }
    /* ALiBi's slopes (HF's build_alibi_tensor), worked out by hand from its rule: 16 heads are a power
       of two, 2^-0.5 .. 2^-8; 12 heads are 8's slopes 2^-1 .. 2^-8, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5;
       1 head 2^-8; 3 heads 2^-4, 2^-8, then 2^-2 */
    for (int h = 0; h < 16; h++) CHECK(tf_alibi_slope(h, 16) == exp2f(-0.5f * (float)(h + 1)));
    for (int h = 0; h < 8; h++) CHECK(tf_alibi_slope(h, 12) == ldexpf(1.0f, -(h + 1)));
    const float extra12[] = {0.70710678f, 0.35355339f, 0.17677670f, 0.08838835f};
    for (int h = 8; h < 12; h++) CHECK(fabsf(tf_alibi_slope(h, 12) - extra12[h - 8]) < 1e-7f);
    CHECK(tf_alibi_slope(0, 1) == 1.0f / 256.0f);
    CHECK(tf_alibi_slope(0, 3) == 1.0f / 16.0f && tf_alibi_slope(1, 3) == 1.0f / 256.0f &&
          tf_alibi_slope(2, 3) == 0.25f);
    printf("exp: worst relative error %.3g; tanh %.3g; gelu %.3g; gelu' %.3g (vs libm in double)\n", worst_exp,
           worst_tanh, worst_gelu, worst_grad);
    return CHECK_DONE();
}
