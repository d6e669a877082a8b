/*
 * selftest's float64 references: the math of the kernels, written here from the definitions in
 * plain double-precision loops, sharing no code with the kernels (not kernel_math.h, not
 * optim_math.h, not half.h).  The kernel checks compare two devices that share those formulas, so
 * a wrong formula passes them on both; check_math.c compares the device under test with these.
 *
 * Lifecycle: none; pure functions.  Inputs are the float values the kernels read.
 */
#ifndef SELFTEST_REFERENCE_H
#define SELFTEST_REFERENCE_H

#include <stdint.h>

/* GELU, tanh approximation (torch's gelu(approximate="tanh")):
   0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), and its derivative in x */
double st_ref_gelu(double x);
double st_ref_gelu_grad(double x);

/* LayerNorm of one row of C (eps 1e-5, biased variance): out = (x - mean) / sqrt(var + eps) * w + b,
   and the row's mean and 1 / sqrt(var + eps) */
void st_ref_layernorm_row(const float *x, const float *w, const float *b, int C, double *out, double *mean,
                          double *rstd);
/* its gradients for one row: dx = d out . dout / dx; dw, db += this row's share */
void st_ref_layernorm_backward_row(const float *dout, const float *x, const float *w, int C, double *dx, double *dw,
                                   double *db);

/* ALiBi's slope for head h of nh, HF's build_alibi_tensor */
double st_ref_alibi_slope(int h, int nh);
/* softmax over the first len entries of a causal row: p[j] = e^(z_j) / sum e^(z_i), z_j = scale s[j] + slope j */
void st_ref_softmax_row(const float *s, int len, double scale, double slope, double *p);
/* its gradient: ds[j] = scale * d/ds_j of sum_i dp_i p_i = scale p_j (dp_j - sum_i p_i dp_i) */
void st_ref_softmax_backward_row(const float *p, const float *dp, int len, double scale, double *ds);

/* cross-entropy of one row of V logits with target y: returns -log softmax(l)[y]; dl = its
   gradient in the logits times dscale */
double st_ref_cross_entropy_row(const float *l, int V, int y, double dscale, double *dl);

/* LoRA dropout's multiplier of feature f in row `position` of a sample (lora.h, "Dropout"):
   splitmix64 of (row key ^ f), its top 53 bits below threshold: dropped (0), else keep_scale */
double st_ref_drop_factor(uint64_t sample_key, int position, uint32_t site, int f, uint64_t threshold,
                          double keep_scale);

/* One step of AdamW (Loshchilov & Hutter; torch.optim.AdamW), step t >= 1, on one element, the
   gradient g already scaled:  p -= lr wd p;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
   p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
   Returns the magnitude of what makes the new p, |p| + lr |mhat| / (sqrt(vhat) + eps) with mhat
   made of |terms| (b1 |m| + (1 - b1) |g|): float rounding errs in proportion to it. */
double st_ref_adamw(double *p, double g, double *m, double *v, double lr, double b1, double b2, double eps, double wd,
                    int t);

#endif
