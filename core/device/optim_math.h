/*
 * Per-element arithmetic of the devices, written once for the C loops of device_cpu.c and the
 * kernels of cuda/device_cuda.cu, so the CPU unit tests check what a GPU computes.
 *
 * Bit-identical on both sides: in device code the float operations go through the _rn
 * intrinsics, which nvcc never fuses into FMAs (it does fuse a*b+c by default); the C side is
 * built with -std=c11, where GCC does not contract either.  sqrt and division are IEEE-rounded
 * on both (nvcc's defaults -prec-sqrt/-prec-div=true).
 */
#ifndef SR__CORE_OPTIM_MATH_H
#define SR__CORE_OPTIM_MATH_H

#include <math.h>
#include <stddef.h>

#include "shardrun/half.h"
#include "device/device.h"

#ifdef __CUDA_ARCH__
#define SR__FADD(a, b) __fadd_rn(a, b)
#define SR__FSUB(a, b) __fsub_rn(a, b)
#define SR__FMUL(a, b) __fmul_rn(a, b)
#define SR__FDIV(a, b) __fdiv_rn(a, b)
#define SR__FSQRT(a) __fsqrt_rn(a)
#else
#define SR__FADD(a, b) ((a) + (b))
#define SR__FSUB(a, b) ((a) - (b))
#define SR__FMUL(a, b) ((a) * (b))
#define SR__FDIV(a, b) ((a) / (b))
#define SR__FSQRT(a) sqrtf(a)
#endif

/* ---- elements of a floating dtype (fp32, bf16, fp16) as float ------------------------------- */

SR_HD float sr__load_float(const void *p, sr_dtype t, size_t i) {
    if (t == SR_FLOAT32) return ((const float *)p)[i];
    if (t == SR_BFLOAT16) return sr_bf16_to_f32(((const uint16_t *)p)[i]);
    return sr_f16_to_f32(((const uint16_t *)p)[i]);
}

SR_HD void sr__store_float(void *p, sr_dtype t, size_t i, float v) {
    if (t == SR_FLOAT32) ((float *)p)[i] = v;
    else if (t == SR_BFLOAT16) ((uint16_t *)p)[i] = sr_f32_to_bf16(v);
    else ((uint16_t *)p)[i] = sr_f32_to_f16(v);
}

SR_HD int sr__is_float_dtype(sr_dtype t) { return t == SR_FLOAT32 || t == SR_BFLOAT16 || t == SR_FLOAT16; }

/* 1 for inf and NaN: all exponent bits set (no isfinite, which -ffast-math may fold away) */
SR_HD int sr__nonfinite_f32(float x) { return (sr_f32_to_bits(x) & 0x7f800000u) == 0x7f800000u; }

/* ---- AdamW ------------------------------------------------------------------------------------ */

/* The step's scalars as torch derives them: in Python (double) arithmetic, each rounded to float
   where the tensor op takes it.  Computed once on the host per call, not per element. */
typedef struct sr__adamw_coef {
    float grad_mul;
    float decay;     /* 1 - lr * weight_decay */
    float w1;        /* 1 - beta1: exp_avg.lerp_(grad, w1) */
    float beta2, w2; /* exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=w2 = 1 - beta2) */
    float bc2_sqrt;  /* sqrt(bias_correction2) */
    float eps;
    float neg_step; /* -lr / bias_correction1 */
} sr__adamw_coef;

static inline sr__adamw_coef sr__adamw_prepare(const sr__adamw_args *a) {
    sr__adamw_coef c;
    double t = (double)a->step;
    double bias_correction1 = 1.0 - pow(a->beta1, t), bias_correction2 = 1.0 - pow(a->beta2, t);
#ifdef SR__TEST_FAULT_ADAMW_BC2 /* a wrong formula for tests/selftest/broken_math.c only: from beta1 */
    bias_correction2 = 1.0 - pow(a->beta1, t);
#endif
    c.grad_mul = a->grad_mul;
    c.decay = (float)(1.0 - a->lr * a->weight_decay);
    c.w1 = (float)(1.0 - a->beta1);
    c.beta2 = (float)a->beta2;
    c.w2 = (float)(1.0 - a->beta2);
    c.bc2_sqrt = (float)sqrt(bias_correction2);
    c.eps = (float)a->eps;
    c.neg_step = (float)(-a->lr / bias_correction1);
    return c;
}

/* torch.optim.AdamW (foreach=False, fp32), one element, in torch's order of operations:
     p.mul_(1 - lr*wd); m.lerp_(g, 1 - beta1); v.mul_(beta2).addcmul_(g, g, value=1 - beta2);
     denom = (v.sqrt() / sqrt(bc2)).add_(eps); p.addcdiv_(m, denom, value=-lr/bc1)
   i.e. m = beta1*m + (1-beta1)*g, v = beta2*v + (1-beta2)*g^2, p -= lr/bc1 * m/denom.
   The lerp is torch's: start + w*(end - start) for w < 0.5, else end - (end - start)*(1 - w). */
SR_HD void sr__adamw_elem(float *p, float grad, float *m, float *v, const sr__adamw_coef *c) {
    float g = SR__FMUL(grad, c->grad_mul);
    float pp = SR__FMUL(*p, c->decay);
    float d = SR__FSUB(g, *m);
    float mm = c->w1 < 0.5f ? SR__FADD(*m, SR__FMUL(c->w1, d)) : SR__FSUB(g, SR__FMUL(d, SR__FSUB(1.0f, c->w1)));
    float vv = SR__FADD(SR__FMUL(*v, c->beta2), SR__FMUL(SR__FMUL(c->w2, g), g));
    float denom = SR__FADD(SR__FDIV(SR__FSQRT(vv), c->bc2_sqrt), c->eps);
    *p = SR__FADD(pp, SR__FDIV(SR__FMUL(c->neg_step, mm), denom));
    *m = mm;
    *v = vv;
}

#endif
