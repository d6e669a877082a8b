/* The CPU device: conversions (exact bits), accumulate, reductions, AdamW against a
   double-precision evaluation of torch's formula, and device lookup by name. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "device/device.h"

static const sr__device *cpu;

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static int same_float(float a, float b) { return bits(a) == bits(b) || (isnan(a) && isnan(b)); }

/* 1.0, -2.5, 65504, 1e-8, 6e-8, ties to even at bf16 / fp16 precision, inf, -inf, NaN */
#define NV 11
static const float in[NV] = {1.0f,        -2.5f,          65504.0f, 1e-8f,     6e-8f, 1.00390625f,
                             1.01171875f, 1.00146484375f, INFINITY, -INFINITY, NAN};
static const uint16_t want_bf16[NV] = {0x3f80, 0xc020, 0x4780, 0x322c, 0x3381, 0x3f80,
                                       0x3f82, 0x3f80, 0x7f80, 0xff80, 0x7fc0};
static const uint16_t want_f16[NV] = {0x3c00, 0xc100, 0x7bff, 0x0000, 0x0001, 0x3c04,
                                      0x3c0c, 0x3c02, 0x7c00, 0xfc00, 0x7e00};

static void test_cast(void) {
    uint16_t h[NV], b[NV];
    float back[NV];
    cpu->cast(b, SR_BFLOAT16, in, SR_FLOAT32, NV);
    cpu->cast(h, SR_FLOAT16, in, SR_FLOAT32, NV);
    for (int i = 0; i < NV; i++) {
        CHECK(b[i] == want_bf16[i]);
        CHECK(h[i] == want_f16[i]);
    }
    /* back to fp32: 65504 became 65536 in bf16, 1e-8 underflowed to 0 in fp16, 6e-8 became 2^-24 */
    const float from_bf16[NV] = {1.0f,     -2.5f,     65536.0f, 1.00117177e-8f, 6.00703061e-8f, 1.0f, 1.015625f, 1.0f,
                                 INFINITY, -INFINITY, NAN};
    const float from_f16[NV] = {1.0f,        -2.5f,       65504.0f,     0.0f,     5.9604644775390625e-8f,
                                1.00390625f, 1.01171875f, 1.001953125f, INFINITY, -INFINITY,
                                NAN};
    cpu->cast(back, SR_FLOAT32, b, SR_BFLOAT16, NV);
    for (int i = 0; i < NV; i++) CHECK(same_float(back[i], from_bf16[i]));
    CHECK(bits(back[3]) == 0x322c0000u);
    cpu->cast(back, SR_FLOAT32, h, SR_FLOAT16, NV);
    for (int i = 0; i < NV; i++) CHECK(same_float(back[i], from_f16[i]));

    /* fp16 beyond its range: 65520 and up is inf; bf16 -> fp16 directly (65536 overflows) */
    const float big[2] = {65519.0f, -65520.0f};
    cpu->cast(h, SR_FLOAT16, big, SR_FLOAT32, 2);
    CHECK(h[0] == 0x7bff && h[1] == 0xfc00);
    cpu->cast(h, SR_FLOAT16, b, SR_BFLOAT16, 3);
    CHECK(h[0] == 0x3c00 && h[1] == 0xc100 && h[2] == 0x7c00);
    const uint16_t f16_in[3] = {0x3c00, 0xc100, 0x7bff}; /* 1, -2.5, 65504 */
    cpu->cast(b, SR_BFLOAT16, f16_in, SR_FLOAT16, 3);
    CHECK(b[0] == 0x3f80 && b[1] == 0xc020 && b[2] == 0x4780);

    /* same dtype: a copy, for any dtype */
    const int64_t i64[3] = {1, -2, 1LL << 40};
    int64_t o64[3] = {0};
    cpu->cast(o64, SR_INT64, i64, SR_INT64, 3);
    CHECK(o64[0] == 1 && o64[1] == -2 && o64[2] == 1LL << 40);
    float f[NV];
    cpu->cast(f, SR_FLOAT32, in, SR_FLOAT32, NV);
    CHECK(!memcmp(f, in, sizeof f));
}

static void test_memory(void) {
    unsigned char *p = cpu->alloc(1000);
    CHECK(p && (uintptr_t)p % 64 == 0);
    int zero = 1;
    for (int i = 0; i < 1000; i++) zero &= p[i] == 0;
    CHECK(zero);
    unsigned char src[1000], dst[1000];
    for (int i = 0; i < 1000; i++) src[i] = (unsigned char)(i * 7 + 1);
    CHECK(cpu->to_device(p, src, sizeof src) == 0);
    CHECK(cpu->to_host(dst, p, sizeof dst) == 0);
    CHECK(!memcmp(src, dst, sizeof src));
    cpu->zero(p + 10, 20);
    CHECK(p[9] == src[9] && p[10] == 0 && p[29] == 0 && p[30] == src[30]);
    cpu->free(p);
    void *z = cpu->alloc(0); /* NULL would mean out of memory */
    CHECK(z != NULL);
    cpu->free(z);
    CHECK(cpu->sync() == 0);
    CHECK_STR(cpu->name, "cpu");
    CHECK(cpu->kind == SR_DEVICE_CPU);
}

static void test_elementwise(void) {
    float acc[5] = {1, 2, 3, 4, 5};
    const float f32[5] = {0.5f, -1, 0, 2, 1e-3f};
    const uint16_t bf[5] = {0x3f80, 0xc020, 0, 0x4780, 0x3f82};      /* 1, -2.5, 0, 65536, 1.015625 */
    const uint16_t hf[5] = {0x3c00, 0xc100, 0x0001, 0x7bff, 0x3c04}; /* 1, -2.5, 2^-24, 65504, 1.00390625 */
    cpu->accumulate(acc, f32, SR_FLOAT32, 5);
    CHECK(acc[0] == 1.5f && acc[1] == 1 && acc[2] == 3 && acc[3] == 6 && acc[4] == 5 + 1e-3f);
    cpu->accumulate(acc, bf, SR_BFLOAT16, 5);
    CHECK(acc[0] == 2.5f && acc[1] == -1.5f && acc[2] == 3 && acc[3] == 65542 && acc[4] == (5 + 1e-3f) + 1.015625f);
    cpu->accumulate(acc, hf, SR_FLOAT16, 4);
    CHECK(acc[0] == 3.5f && acc[1] == -4 && acc[2] == 3 + 5.9604644775390625e-8f && acc[3] == 131046);
    CHECK(acc[4] == (5 + 1e-3f) + 1.015625f); /* n = 4 leaves the fifth alone */
}

static void test_reductions(void) {
    enum { N = 10003 }; /* not a multiple of the unrolling, and more than one nonfinite chunk */
    float *x = malloc(N * sizeof *x);
    for (int i = 0; i < N; i++) x[i] = (float)(i + 1) * (i % 2 ? -1.0f : 1.0f);
    double n = N;
    CHECK(cpu->sumsq(x, N) == n * (n + 1) * (2 * n + 1) / 6); /* exact: every partial sum is an integer < 2^53 */
    CHECK(cpu->sumsq(x, 0) == 0);
    CHECK(cpu->sumsq(x, 3) == 14);

    /* in double, not float: 1e6 squares of 0.1f (a float sum would be off by ~1e-3) */
    enum { M = 1000000 };
    float *y = malloc(M * sizeof *y);
    double ref = 0;
    for (int i = 0; i < M; i++) y[i] = 0.1f, ref += (double)0.1f * 0.1f;
    CHECK(fabs(cpu->sumsq(y, M) - ref) <= 1e-9 * ref);
    free(y);

    CHECK(cpu->nonfinite(x, N) == 0);
    CHECK(cpu->nonfinite(x, 0) == 0);
    x[N - 1] = FLT_MAX;
    x[N - 2] = 1e-45f; /* subnormal */
    CHECK(cpu->nonfinite(x, N) == 0);
    const float bad[3] = {INFINITY, -INFINITY, NAN};
    for (int k = 0; k < 3; k++) {
        int at[3] = {0, 4096, N - 1};
        for (int j = 0; j < 3; j++) {
            float keep = x[at[j]];
            x[at[j]] = bad[k];
            CHECK(cpu->nonfinite(x, N) == 1);
            CHECK(cpu->nonfinite(x, (size_t)at[j]) == 0); /* the elements before it only */
            x[at[j]] = keep;
        }
    }
    free(x);
}

/* torch.optim.AdamW's formula in double, from the same (float) scalars the device gets */
typedef struct {
    double lr, beta1, beta2, eps, wd, grad_mul;
} ref_args;

static void ref_adamw(double *p, const float *g, double *m, double *v, int n, const ref_args *a, int t) {
    double bc1 = 1 - pow(a->beta1, t), bc2 = 1 - pow(a->beta2, t);
    for (int i = 0; i < n; i++) {
        double gi = (double)g[i] * a->grad_mul;
        p[i] *= 1 - a->lr * a->wd;
        m[i] = a->beta1 * m[i] + (1 - a->beta1) * gi;
        v[i] = a->beta2 * v[i] + (1 - a->beta2) * gi * gi;
        double denom = sqrt(v[i]) / sqrt(bc2) + a->eps;
        p[i] -= a->lr / bc1 * m[i] / denom;
    }
}

static unsigned long long rng = 88172645463325252ULL;
static float uniform(float lo, float hi) { /* xorshift64 */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return lo + (hi - lo) * (float)((rng >> 40) * (1.0 / (1 << 24)));
}

static int within(double got, double want, double tol) { return fabs(got - want) <= tol; }

static void test_adamw(void) {
    enum { N = 37, STEPS = 12 };
    /* lr, beta1, beta2, eps, weight_decay, grad_mul; eps 1e-3 makes its place in the formula matter */
    const float cfg[][6] = {
        {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 1.0f},
        {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1.0f},
        {3e-2f, 0.8f, 0.95f, 1e-3f, 0.1f, 0.37f},
        {1e-2f, 0.4f, 0.99f, 1e-8f, 0.05f, 1.0f / 1024}, /* beta1 <= 0.5: the other form of torch's lerp */
        {5e-3f, 0.9f, 0.999f, 1e-6f, 0.0f, 2.5f}};
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        const float *k = cfg[c];
        ref_args r = {k[0], k[1], k[2], k[3], k[4], k[5]};
        float p[N], g[N], m[N] = {0}, v[N] = {0};
        double rp[N], rm[N] = {0}, rv[N] = {0};
        for (int i = 0; i < N; i++) p[i] = uniform(-2, 2), rp[i] = p[i];
        int ok = 1;
        for (int t = 1; t <= STEPS; t++) {
            float gscale = t % 3 == 0 ? 1e-4f : 1.0f; /* small gradients: eps matters */
            for (int i = 0; i < N; i++) g[i] = uniform(-gscale, gscale) + (i % 5 == 0 ? 0.5f * gscale : 0.0f);
            sr__adamw_args a = {k[0], k[1], k[2], k[3], k[4], t, k[5]};
            cpu->adamw(p, g, m, v, N, &a);
            ref_adamw(rp, g, rm, rv, N, &r, t);
            /* relative 1e-6, against the scale of the terms that were added (cancellation) */
            double gmax = k[5] * 1.5;
            for (int i = 0; i < N; i++) {
                ok &= within(p[i], rp[i], 1e-6 * (fabs(rp[i]) + r.lr));
                ok &= within(m[i], rm[i], 1e-6 * (fabs(rm[i]) + gmax));
                ok &= within(v[i], rv[i], 1e-6 * rv[i] + 1e-30);
            }
        }
        if (!ok) fprintf(stderr, "adamw config %zu differs from the reference\n", c);
        CHECK(ok);
    }

    /* one element by hand, first step: m = 0.1 g, v = 0.001 g^2, m_hat / sqrt(v_hat) = sign(g) */
    float p = 1, g = -0.5f, m = 0, v = 0;
    sr__adamw_args a = {0.1, 0.9, 0.999, 0, 0.5, 1, 2};
    cpu->adamw(&p, &g, &m, &v, 1, &a);
    CHECK(within(p, 1 * (1 - 0.05) + 0.1, 1e-6));
    CHECK(within(m, -0.1, 1e-7) && within(v, 0.001, 1e-7));
}

static void test_lookup(void) {
    char err[512] = "";
    CHECK(sr__device_get("tpu", err, sizeof err) == NULL);
    CHECK(strstr(err, "tpu") && strstr(err, "cpu") && strstr(err, "cuda"));
    CHECK(sr__device_get(NULL, err, sizeof err) == NULL);
    CHECK(sr__device_get("cpu", NULL, 0) == cpu);
    /* no GPU here: a message, not a crash; with a GPU, the CUDA device */
    err[0] = 0;
    const sr__device *cuda = sr__device_get("cuda", err, sizeof err);
    if (cuda) {
        CHECK_STR(cuda->name, "cuda");
        CHECK(cuda->kind == SR_DEVICE_CUDA);
    } else {
        CHECK(err[0] != 0);
        printf("cuda: %s\n", err);
    }
}

int main(void) {
    char err[256];
    cpu = sr__device_get("cpu", err, sizeof err);
    CHECK(cpu != NULL);
    if (!cpu) return CHECK_DONE();
    test_cast();
    test_memory();
    test_elementwise();
    test_reductions();
    test_adamw();
    test_lookup();
    return CHECK_DONE();
}
