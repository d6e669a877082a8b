#include "pg/reduce.h"

#include <stdint.h>
#include <string.h>

#include "shardrun/half.h"

#define REDUCE_LOOP(T, CONV_IN, CONV_OUT)                                                                              \
    do {                                                                                                               \
        T *d = dst;                                                                                                    \
        const T *s = src;                                                                                              \
        if (op == SR_MAX)                                                                                              \
            for (size_t i = 0; i < n; i++) {                                                                           \
                float a = CONV_IN(d[i]), b = CONV_IN(s[i]);                                                            \
                d[i] = CONV_OUT(b > a || a != a ? b : a);                                                              \
            }                                                                                                          \
        else                                                                                                           \
            for (size_t i = 0; i < n; i++) d[i] = CONV_OUT(CONV_IN(d[i]) + CONV_IN(s[i]));                             \
    } while (0)

#define INT_LOOP(T)                                                                                                    \
    do {                                                                                                               \
        T *d = dst;                                                                                                    \
        const T *s = src;                                                                                              \
        if (op == SR_MAX)                                                                                              \
            for (size_t i = 0; i < n; i++) d[i] = s[i] > d[i] ? s[i] : d[i];                                           \
        else                                                                                                           \
            for (size_t i = 0; i < n; i++) d[i] = (T)((uint64_t)d[i] + (uint64_t)s[i]); /* wraps */                    \
    } while (0)

void sr__reduce(void *dst, const void *src, size_t n, sr_dtype dtype, sr_redop op) {
    switch (dtype) {
    case SR_FLOAT32: {
        float *restrict d = dst;
        const float *restrict s = src;
        if (op == SR_MAX)
            for (size_t i = 0; i < n; i++) d[i] = s[i] > d[i] || d[i] != d[i] ? s[i] : d[i];
        else
            for (size_t i = 0; i < n; i++) d[i] += s[i];
        break;
    }
    case SR_FLOAT16: REDUCE_LOOP(uint16_t, sr_f16_to_f32, sr_f32_to_f16); break;
    case SR_BFLOAT16: REDUCE_LOOP(uint16_t, sr_bf16_to_f32, sr_f32_to_bf16); break;
    case SR_INT32: INT_LOOP(int32_t); break;
    case SR_INT64: INT_LOOP(int64_t); break;
    }
}

void sr__reduce_into(void *dst, const void *a, const void *b, size_t n, sr_dtype dtype, sr_redop op) {
    if (dtype == SR_FLOAT32 && dst != a && dst != b) {
        float *restrict d = dst;
        const float *restrict x = a, *restrict y = b;
        if (op == SR_MAX)
            for (size_t i = 0; i < n; i++) d[i] = y[i] > x[i] || x[i] != x[i] ? y[i] : x[i];
        else
            for (size_t i = 0; i < n; i++) d[i] = x[i] + y[i];
        return;
    }
    if (dst == b) { /* op(a, b) computed as op(b, a) would differ for max when both are NaN: keep order */
        size_t es = sr_dtype_size(dtype), step = 1024;
        unsigned char tmp[1024 * 8];
        for (size_t i = 0; i < n; i += step) {
            size_t k = n - i < step ? n - i : step;
            memcpy(tmp, (const unsigned char *)b + i * es, k * es);
            memcpy((unsigned char *)dst + i * es, (const unsigned char *)a + i * es, k * es);
            sr__reduce((unsigned char *)dst + i * es, tmp, k, dtype, op);
        }
        return;
    }
    if (dst != a) memcpy(dst, a, n * sr_dtype_size(dtype));
    sr__reduce(dst, b, n, dtype, op);
}

void sr__divide(void *buf, size_t n, sr_dtype dtype, int divisor) {
    switch (dtype) {
    case SR_FLOAT32: {
        float *restrict b = buf;
        if ((divisor & (divisor - 1)) == 0) { /* a power of two: its reciprocal is exact, and so is x * it */
            const float r = 1.0f / (float)divisor;
            for (size_t i = 0; i < n; i++) b[i] *= r;
        } else
            for (size_t i = 0; i < n; i++) b[i] /= (float)divisor;
        break;
    }
    case SR_FLOAT16:
        for (size_t i = 0; i < n; i++)
            ((uint16_t *)buf)[i] = sr_f32_to_f16(sr_f16_to_f32(((uint16_t *)buf)[i]) / (float)divisor);
        break;
    case SR_BFLOAT16:
        for (size_t i = 0; i < n; i++)
            ((uint16_t *)buf)[i] = sr_f32_to_bf16(sr_bf16_to_f32(((uint16_t *)buf)[i]) / (float)divisor);
        break;
    case SR_INT32:
    case SR_INT64: break; /* rejected before: avg needs a floating-point dtype */
    }
}
