/*
 * The "cpu" device (plain loops over host memory; the arithmetic is optim_math.h's, shared with
 * the CUDA kernels) and the lookup of devices by name.
 *
 * The loops run over every parameter each step, so they are kept simple enough for the compiler
 * to vectorise: restrict pointers, the dtype dispatched once outside each loop, no calls.  Long
 * loops are cut into parts that run on the engine's thread pool (device/pool.h); the parts depend
 * only on the length, and reductions combine their parts in order, so the results are the same bits
 * at any thread count.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "device/cuda_lib.h"
#include "device/device.h"
#include "device/optim_math.h"
#include "device/pool.h"

#define CPU_ALIGN 64 /* a cache line, and wide enough for any vector load */

/* The engine only passes floating dtypes where it converts; anything else is its bug, and
   going on would silently corrupt parameters. */
static void bad_dtype(const char *op, sr_dtype t) {
    fprintf(stderr, "shardrun: internal error: device cpu: %s of %s (fp32, bf16, fp16 only)\n", op, sr_dtype_name(t));
    abort();
}

static void *cpu_alloc(size_t bytes) {
    /* 0 bytes still gets a pointer (NULL means out of memory); the rounding up to the alignment
       is zeroed too */
    void *p = sr__aligned_alloc(CPU_ALIGN, bytes);
    if (p) memset(p, 0, bytes ? (bytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN : CPU_ALIGN);
    return p;
}

static void cpu_free(void *p) { free(p); }

static int cpu_copy(void *dst, const void *src, size_t bytes) {
    if (bytes) memcpy(dst, src, bytes);
    return 0;
}

/* ---- loops cut into parts (device/pool.h): part k is elements [k * grain, min(n, (k + 1) * grain)) */

typedef struct job {
    size_t n, grain;
    void *dst;
    const void *src;
    sr_dtype dt, st;
    float *param, *exp_avg, *exp_avg_sq;
    const float *grad;
    sr__adamw_coef coef;
    double *sums; /* reductions: one slot per part */
    int *flags;
} job;

static size_t job_parts(job *j, size_t n) {
    j->n = n;
    j->grain = sr__pool_grain(n);
    return (n + j->grain - 1) / j->grain;
}

static void part_range(const job *j, size_t k, size_t *lo, size_t *len) {
    *lo = k * j->grain;
    *len = j->n - *lo < j->grain ? j->n - *lo : j->grain;
}

static void zero_part(void *arg, size_t k) {
    job *j = arg;
    size_t lo, len;
    part_range(j, k, &lo, &len);
    memset((char *)j->dst + lo, 0, len);
}

static void cpu_zero(void *p, size_t bytes) {
    if (!bytes) return;
    job j = {.dst = p};
    sr__pool_run(job_parts(&j, bytes), zero_part, &j); /* bytes as elements: parts of >= 32 KiB */
}

/* One loop per (dst, src) pair: with constant dtypes the loads and stores inline to straight code. */
#define CAST_LOOP(DT, ST)                                                                                              \
    for (size_t i = 0; i < n; i++) sr__store_float(dst, DT, i, sr__load_float(src, ST, i));                            \
    break
#define PAIR(d, s) ((int)(d)*8 + (int)(s))

static void cast_range(void *restrict dst, sr_dtype dt, const void *restrict src, sr_dtype st, size_t n) {
    switch (PAIR(dt, st)) {
    case PAIR(SR_FLOAT32, SR_BFLOAT16): CAST_LOOP(SR_FLOAT32, SR_BFLOAT16);
    case PAIR(SR_FLOAT32, SR_FLOAT16): CAST_LOOP(SR_FLOAT32, SR_FLOAT16);
    case PAIR(SR_BFLOAT16, SR_FLOAT32): CAST_LOOP(SR_BFLOAT16, SR_FLOAT32);
    case PAIR(SR_BFLOAT16, SR_FLOAT16): CAST_LOOP(SR_BFLOAT16, SR_FLOAT16);
    case PAIR(SR_FLOAT16, SR_FLOAT32): CAST_LOOP(SR_FLOAT16, SR_FLOAT32);
    case PAIR(SR_FLOAT16, SR_BFLOAT16): CAST_LOOP(SR_FLOAT16, SR_BFLOAT16);
    default: memcpy(dst, src, n * sr_dtype_size(dt)); break; /* dt == st */
    }
}

static void cast_part(void *arg, size_t k) {
    job *j = arg;
    size_t lo, len;
    part_range(j, k, &lo, &len);
    cast_range((char *)j->dst + lo * sr_dtype_size(j->dt), j->dt, (const char *)j->src + lo * sr_dtype_size(j->st),
               j->st, len);
}

static void cpu_cast(void *restrict dst, sr_dtype dt, const void *restrict src, sr_dtype st, size_t n) {
    if (dt == st && (dst == src || !n)) return;
    if (dt != st && !sr__is_float_dtype(dt)) bad_dtype("cast", dt);
    if (dt != st && !sr__is_float_dtype(st)) bad_dtype("cast", st);
    job j = {.dst = dst, .src = src, .dt = dt, .st = st};
    sr__pool_run(job_parts(&j, n), cast_part, &j);
}

#define ACC_LOOP(ST)                                                                                                   \
    for (size_t i = 0; i < n; i++) acc[i] += sr__load_float(src, ST, i);                                               \
    break

static void accumulate_range(float *restrict acc, const void *restrict src, sr_dtype st, size_t n) {
    switch (st) {
    case SR_FLOAT32: ACC_LOOP(SR_FLOAT32);
    case SR_BFLOAT16: ACC_LOOP(SR_BFLOAT16);
    default: ACC_LOOP(SR_FLOAT16);
    }
}

static void accumulate_part(void *arg, size_t k) {
    job *j = arg;
    size_t lo, len;
    part_range(j, k, &lo, &len);
    accumulate_range((float *)j->dst + lo, (const char *)j->src + lo * sr_dtype_size(j->st), j->st, len);
}

static void cpu_accumulate(float *restrict acc, const void *restrict src, sr_dtype st, size_t n) {
    if (!sr__is_float_dtype(st)) bad_dtype("accumulate", st);
    job j = {.dst = acc, .src = src, .st = st};
    sr__pool_run(job_parts(&j, n), accumulate_part, &j);
}

static double sumsq_range(const float *restrict x, size_t n) {
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

static void sumsq_part(void *arg, size_t k) {
    job *j = arg;
    size_t lo, len;
    part_range(j, k, &lo, &len);
    j->sums[k] = sumsq_range((const float *)j->src + lo, len);
}

static double cpu_sumsq(const float *restrict x, size_t n) {
    double sums[SR__POOL_MAX_PARTS];
    job j = {.src = x, .sums = sums};
    size_t parts = job_parts(&j, n);
    sr__pool_run(parts, sumsq_part, &j);
    double s = 0;
    for (size_t k = 0; k < parts; k++) s += sums[k]; /* in part order: the same at any thread count */
    return s;
}

static void nonfinite_part(void *arg, size_t k) {
    job *j = arg;
    size_t lo, len;
    part_range(j, k, &lo, &len);
    const float *restrict x = (const float *)j->src + lo;
    int bad = 0;
    for (size_t i = 0; i < len; i++) bad |= sr__nonfinite_f32(x[i]); /* branch-free: vectorises */
    j->flags[k] = bad;
}

static int cpu_nonfinite(const float *restrict x, size_t n) {
    int flags[SR__POOL_MAX_PARTS];
    job j = {.src = x, .flags = flags};
    size_t parts = job_parts(&j, n);
    sr__pool_run(parts, nonfinite_part, &j);
    for (size_t k = 0; k < parts; k++)
        if (flags[k]) return 1;
    return 0;
}

static void adamw_part(void *arg, size_t k) {
    job *j = arg;
    size_t lo, len;
    part_range(j, k, &lo, &len);
    float *restrict p = j->param + lo, *restrict m = j->exp_avg + lo, *restrict v = j->exp_avg_sq + lo;
    const float *restrict g = j->grad + lo;
    const sr__adamw_coef c = j->coef;
    for (size_t i = 0; i < len; i++) sr__adamw_elem(&p[i], g[i], &m[i], &v[i], &c);
}

static void cpu_adamw(float *restrict param, const float *restrict grad, float *restrict exp_avg,
                      float *restrict exp_avg_sq, size_t n, const sr__adamw_args *a) {
    job j = {.param = param, .grad = grad, .exp_avg = exp_avg, .exp_avg_sq = exp_avg_sq, .coef = sr__adamw_prepare(a)};
    sr__pool_run(job_parts(&j, n), adamw_part, &j);
}

static int cpu_sync(void) { return 0; }

static const sr__device cpu_device = {
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
static const sr__device *load_cuda(char *err, size_t errlen) {
    char why[4500] = "";
    const sr__device *dev = sr__cuda_device_table(why, sizeof why);
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

const sr__device *sr__device_get(const char *name, char *err, size_t errlen) {
    char dummy[1];
    if (!err || !errlen) err = dummy, errlen = sizeof dummy;
    if (name && !strcmp(name, "cpu")) return &cpu_device;
    if (name && !strcmp(name, "cuda")) return load_cuda(err, errlen);
    snprintf(err, errlen, "unknown device \"%s\" (valid devices: cpu, cuda)", name ? name : "(null)");
    return NULL;
}
