/*
 * fp16/bf16 <-> fp32 conversions with round-to-nearest-even, as torch and the hardware do.
 *
 * Where they are used: a model task's forward/backward callbacks under ACCELERATE_MIXED_PRECISION
 * (parameters and gradients arrive as bf16/fp16, shardrun/model.h), a main task filling
 * process-group buffers of those dtypes (shardrun/pg.h), and shardrun's own reductions and casts.
 * Written once for a C loop and a CUDA kernel (SR_HD marks functions both compile).
 */
#ifndef SHARDRUN_HALF_H
#define SHARDRUN_HALF_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define SR_HD __host__ __device__ static inline
#else
#define SR_HD static inline
#endif

SR_HD float sr_bits_to_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
SR_HD uint32_t sr_f32_to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

SR_HD float sr_bf16_to_f32(uint16_t h) { return sr_bits_to_f32((uint32_t)h << 16); }

SR_HD uint16_t sr_f32_to_bf16(float f) {
    uint32_t u = sr_f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* NaN stays NaN */
    u += 0x7fffu + ((u >> 16) & 1u);                                          /* round to nearest even */
    return (uint16_t)(u >> 16);
}

SR_HD float sr_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return sr_bits_to_f32(sign | 0x7f800000u | (man << 13)); /* inf, NaN */
    if (exp == 0) {
        if (man == 0) return sr_bits_to_f32(sign);
        /* subnormal: value = man * 2^-24 */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return sr_bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

SR_HD uint16_t sr_f32_to_f16(float f) {
    uint32_t u = sr_f32_to_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);  /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
    if (a < 0x38800000u) {                                   /* below the smallest normal */
        /* round a * 2^24 to an integer, ties to even */
        float v = sr_bits_to_f32(a) * 16777216.0f;
        uint32_t i = (uint32_t)v;
        float frac = v - (float)i;
        if (frac > 0.5f || (frac == 0.5f && (i & 1u))) i++;
        return (uint16_t)(sign | i);
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u) - (112u << 23); /* rebias, round to nearest even */
    return (uint16_t)(sign | (r >> 13));
}

#endif
