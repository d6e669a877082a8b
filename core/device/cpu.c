/*
 * The "cpu" device (plain loops over host memory; the arithmetic is optim_math.h's, shared with
 * the CUDA kernels) and the lookup of devices by name.
 *
 * The loops run over every parameter each step, so they are kept simple enough for the compiler
 * to vectorise: restrict pointers, the dtype dispatched once outside each loop, no calls.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cuda_lib.h"
#include "device/device.h"
#include "device/optim_math.h"

#define CPU_ALIGN 64 /* a cache line, and wide enough for any vector load */

/* The engine only passes floating dtypes where it converts; anything else is its bug, and
   going on would silently corrupt parameters. */
static void bad_dtype(const char *op, sr_dtype t) {
    fprintf(stderr, "shardrun: internal error: device cpu: %s of %s (fp32, bf16, fp16 only)\n", op,
            sr_dtype_name(t));
    abort();
}

static void *cpu_alloc(size_t bytes) {
    if (bytes > SIZE_MAX - CPU_ALIGN) return NULL;
    /* aligned_alloc wants a multiple of the alignment; 0 bytes still gets a pointer (NULL means
       out of memory) */
    size_t size = bytes ? (bytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN : CPU_ALIGN;
    void *p = aligned_alloc(CPU_ALIGN, size);
    if (p) memset(p, 0, size);
    return p;
}

static void cpu_free(void *p) { free(p); }

static int cpu_copy(void *dst, const void *src, size_t bytes) {
    if (bytes) memcpy(dst, src, bytes);
    return 0;
}

static void cpu_zero(void *p, size_t bytes) {
    if (bytes) memset(p, 0, bytes);
}

/* One loop per (dst, src) pair: with constant dtypes the loads and stores inline to straight code. */
#define CAST_LOOP(DT, ST)                                                                      \
    for (size_t i = 0; i < n; i++) sr_store_float(dst, DT, i, sr_load_float(src, ST, i));    \
    break
#define PAIR(d, s) ((int)(d) * 8 + (int)(s))

static void cpu_cast(void *restrict dst, sr_dtype dt, const void *restrict src, sr_dtype st, size_t n) {
    if (dt == st) {
        if (dst != src && n) memcpy(dst, src, n * sr_dtype_size(dt));
        return;
    }
    if (!sr_is_float_dtype(dt)) bad_dtype("cast", dt);
    if (!sr_is_float_dtype(st)) bad_dtype("cast", st);
    switch (PAIR(dt, st)) {
    case PAIR(SR_FLOAT32, SR_BFLOAT16): CAST_LOOP(SR_FLOAT32, SR_BFLOAT16);
    case PAIR(SR_FLOAT32, SR_FLOAT16): CAST_LOOP(SR_FLOAT32, SR_FLOAT16);
    case PAIR(SR_BFLOAT16, SR_FLOAT32): CAST_LOOP(SR_BFLOAT16, SR_FLOAT32);
    case PAIR(SR_BFLOAT16, SR_FLOAT16): CAST_LOOP(SR_BFLOAT16, SR_FLOAT16);
    case PAIR(SR_FLOAT16, SR_FLOAT32): CAST_LOOP(SR_FLOAT16, SR_FLOAT32);
    case PAIR(SR_FLOAT16, SR_BFLOAT16): CAST_LOOP(SR_FLOAT16, SR_BFLOAT16);
    default: break;
    }
}

#define ACC_LOOP(ST)                                                                           \
    for (size_t i = 0; i < n; i++) acc[i] += sr_load_float(src, ST, i);                        \
    break

static void cpu_accumulate(float *restrict acc, const void *restrict src, sr_dtype st, size_t n) {
    switch (st) {
    case SR_FLOAT32: ACC_LOOP(SR_FLOAT32);
    case SR_BFLOAT16: ACC_LOOP(SR_BFLOAT16);
    case SR_FLOAT16: ACC_LOOP(SR_FLOAT16);
    default: bad_dtype("accumulate", st);
    }
}

static double cpu_sumsq(const float *restrict x, size_t n) {
    /* 8 independent partial sums: vectorisable without licence to reassociate, and the rounding
       error grows more slowly than with one running sum.  Each square is exact in double. */
    double part[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) part[k] += (double)x[i + k] * (double)x[i + k];
    double s = 0;
    for (; i < n; i++) s += (double)x[i] * (double)x[i];
    for (int k = 0; k < 8; k++) s += part[k];
    return s;
}

static int cpu_nonfinite(const float *restrict x, size_t n) {
    /* a branch-free inner loop over chunks, leaving early between chunks */
    for (size_t i = 0; i < n; i += 4096) {
        size_t end = n - i < 4096 ? n : i + 4096;
        int bad = 0;
        for (size_t j = i; j < end; j++) bad |= sr_nonfinite_f32(x[j]);
        if (bad) return 1;
    }
    return 0;
}

static void cpu_adamw(float *restrict param, const float *restrict grad, float *restrict exp_avg,
                      float *restrict exp_avg_sq, size_t n, const sr_adamw_args *a) {
    const sr_adamw_coef c = sr_adamw_prepare(a);
    for (size_t i = 0; i < n; i++) sr_adamw_elem(&param[i], grad[i], &exp_avg[i], &exp_avg_sq[i], &c);
}

static int cpu_sync(void) { return 0; }

static const sr_device cpu_device = {
    .name = "cpu",
    .kind = SR_DEVICE_CPU,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .to_host = cpu_copy,
    .to_device = cpu_copy,
    .zero = cpu_zero,
    .cast = cpu_cast,
    .accumulate = cpu_accumulate,
    .sumsq = cpu_sumsq,
    .nonfinite = cpu_nonfinite,
    .adamw = cpu_adamw,
    .sync = cpu_sync,
};

/* "cuda" lives in libshardrun_cuda.so, loaded on first use; it is only handed out when a GPU is
   visible, so a GPU-less machine hears why here rather than at the first allocation. */
static const sr_device *load_cuda(char *err, size_t errlen) {
    char why[4500] = "";
    const sr_device *dev = sr__cuda_device_table(why, sizeof why);
    if (!dev) {
        snprintf(err, errlen, "device cuda: %s", why);
        return NULL;
    }
    if (sr__cuda_device_count(why, sizeof why) <= 0) {
        snprintf(err, errlen, "device cuda: no CUDA device is visible (%s)", why[0] ? why : "0 devices");
        return NULL;
    }
    return dev;
}

const sr_device *sr__device_get(const char *name, char *err, size_t errlen) {
    char dummy[1];
    if (!err || !errlen) err = dummy, errlen = sizeof dummy;
    if (name && !strcmp(name, "cpu")) return &cpu_device;
    if (name && !strcmp(name, "cuda")) return load_cuda(err, errlen);
    snprintf(err, errlen, "unknown device \"%s\" (valid devices: cpu, cuda)", name ? name : "(null)");
    return NULL;
}
