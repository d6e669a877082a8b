/*
 * transformer kernels on the CPU: OpenBLAS (its OpenMP build) for the GEMMs, C loops for the rest,
 * spread over OpenMP threads (OMP_NUM_THREADS; the torch plugin sets 1 when several workers share
 * a node, as torchrun does).  One thread pool serves both: OpenBLAS's OpenMP build runs
 * single-threaded inside our parallel regions, so the attention's many small GEMMs go one per
 * thread instead of splitting each in two.
 *
 * Lifecycle: tf_kernels_cpu() returns a static table; nothing to set up or tear down.
 *
 * fp32 only.  Results do not depend on the thread count: every reduction runs in a fixed order
 * (column sums loop over rows in order; row-wise kernels own their row), so 1 and 2 threads give
 * the same bits, and so do ranks of a parity test.  Hot loops are compiled for AVX-512, AVX2
 * and the x86-64 baseline (target_clones picks at load time); ISO C mode keeps GCC from fusing
 * multiply-adds, so every clone computes the same bits.
 */
#include <cblas.h>
#include <math.h>
#ifdef SHARDRUN_BLAS_BLIS
#include <blis.h>
#endif
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "kernel_math.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define HOT __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define HOT
#endif

/* Below this many elements a loop is not worth waking the other threads for. */
#define PAR_MIN 16384
#define LANES 16 /* partial sums per reduction: vectorisable, and the same order at any width */

static void *cpu_alloc(size_t bytes) { return malloc(bytes ? bytes : 1); }
static void cpu_free(void *p) { free(p); }
static void cpu_zero(void *p, size_t bytes) { memset(p, 0, bytes); }
static int cpu_ids_upload(int32_t *dst, const int32_t *src, size_t n) {
    memcpy(dst, src, n * sizeof *dst);
    return 0;
}
static int cpu_floats_download(float *dst, const float *src, size_t n) {
    memcpy(dst, src, n * sizeof *dst);
    return 0;
}
static int cpu_sync(void) { return 0; }
static void cpu_copy(void *dst, const void *src, size_t n, sr_dtype dt) {
    (void)dt;
    memcpy(dst, src, n * sizeof(float));
}

static void cpu_gemm(int ta, int tb, int m, int n, int k, float alpha, const void *A, int lda, const void *B, int ldb,
                     float beta, void *C, int ldc, sr_dtype dt) {
    (void)dt;
    cblas_sgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, A, lda,
                B, ldb, beta, C, ldc);
}

static void cpu_gemm_batched(int ta, int tb, int m, int n, int k, float alpha, const void *A, int lda, long long sA,
                             const void *B, int ldb, long long sB, float beta, void *C, int ldc, long long sC,
                             int batch, sr_dtype dt) {
    (void)dt;
#pragma omp parallel for schedule(static) if (batch > 1)
    for (int i = 0; i < batch; i++)
        cblas_sgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha,
                    (const float *)A + i * sA, lda, (const float *)B + i * sB, ldb, beta, (float *)C + i * sC, ldc);
}

static void cpu_embed_forward(void *out_, const int32_t *ids, const void *wte_, const void *wpe_, int B, int T, int C,
                              sr_dtype dt) {
    (void)dt;
    float *out = out_;
    const float *wte = wte_, *wpe = wpe_;
    const int N = B * T;
#pragma omp parallel for schedule(static) if ((size_t)N * C >= PAR_MIN)
    for (int n = 0; n < N; n++) {
        const float *e = wte + (size_t)ids[n] * C;
        float *o = out + (size_t)n * C;
        if (!wpe) {
            memcpy(o, e, (size_t)C * sizeof *o);
            continue;
        }
        const float *p = wpe + (size_t)(n % T) * C;
        for (int c = 0; c < C; c++) o[c] = e[c] + p[c];
    }
}

/* Rows sharing a token id add into the same dwte row, so this runs in row order on one thread:
   it is N*C additions, nothing next to the GEMMs. */
static void cpu_embed_backward(void *dwte_, void *dwpe_, const int32_t *ids, const void *dout_, int B, int T, int C,
                               sr_dtype dt) {
    (void)dt;
    float *dwte = dwte_, *dwpe = dwpe_;
    const float *dout = dout_;
    for (int n = 0; n < B * T; n++) {
        const float *d = dout + (size_t)n * C;
        if (dwte) { /* NULL: a frozen embedding */
            float *e = dwte + (size_t)ids[n] * C;
            for (int c = 0; c < C; c++) e[c] += d[c];
        }
        if (!dwpe) continue;
        float *p = dwpe + (size_t)(n % T) * C;
        for (int c = 0; c < C; c++) p[c] += d[c];
    }
}

/* sum of x[0..n) in LANES partial sums, combined in a fixed order */
HOT static float sum_lanes(const float *x, int n) {
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) acc[j] += x[i + j];
    for (int j = 0; i < n; i++, j++) acc[j] += x[i];
    float s = 0.0f;
    for (int j = 0; j < LANES; j++) s += acc[j];
    return s;
}

HOT static void layernorm_row(float *o, float *mean, float *rstd, const float *x, const float *w, const float *b,
                              int C) {
    float m = sum_lanes(x, C) / (float)C;
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= C; i += LANES)
        for (int j = 0; j < LANES; j++) acc[j] += (x[i + j] - m) * (x[i + j] - m);
    for (int j = 0; i < C; i++, j++) acc[j] += (x[i] - m) * (x[i] - m);
    float v = 0.0f;
    for (int j = 0; j < LANES; j++) v += acc[j];
    float s = tf_ln_rstd(v / (float)C);
    for (int c = 0; c < C; c++) o[c] = tf_ln_norm(x[c], m, s) * w[c] + b[c];
    *mean = m;
    *rstd = s;
}

static void cpu_layernorm_forward(void *out, float *mean, float *rstd, const void *x, const void *w, const void *b,
                                  int N, int C, sr_dtype dt) {
    (void)dt;
#pragma omp parallel for schedule(static) if ((size_t)N * C >= PAR_MIN)
    for (int n = 0; n < N; n++)
        layernorm_row((float *)out + (size_t)n * C, mean + n, rstd + n, (const float *)x + (size_t)n * C, w, b, C);
}

HOT static void layernorm_dx_row(float *dx, const float *d, const float *x, float m, float s, const float *w, int C) {
    float a1[LANES] = {0}, a2[LANES] = {0};
    int i = 0;
    for (; i + LANES <= C; i += LANES)
        for (int j = 0; j < LANES; j++) {
            float dn = d[i + j] * w[i + j];
            a1[j] += dn;
            a2[j] += dn * tf_ln_norm(x[i + j], m, s);
        }
    for (int j = 0; i < C; i++, j++) {
        float dn = d[i] * w[i];
        a1[j] += dn;
        a2[j] += dn * tf_ln_norm(x[i], m, s);
    }
    float s1 = 0.0f, s2 = 0.0f;
    for (int j = 0; j < LANES; j++) s1 += a1[j], s2 += a2[j];
    s1 /= (float)C, s2 /= (float)C;
    for (int c = 0; c < C; c++) dx[c] += tf_ln_dx(d[c] * w[c], tf_ln_norm(x[c], m, s), s1, s2, s);
}

/* dw[c] += sum_n d[n,c] * norm[n,c] and db[c] += sum_n d[n,c], columns [c0, c1), rows in order.
   dw or db NULL: a frozen parameter (shardrun/model.h), whose sum is not made. */
HOT static void layernorm_dwdb_cols(float *dw, float *db, const float *dout, const float *x, const float *mean,
                                    const float *rstd, int N, int C, int c0, int c1) {
    if (!dw && !db) return;
    for (int n = 0; n < N; n++) {
        const float *d = dout + (size_t)n * C, *xi = x + (size_t)n * C;
        float m = mean[n], s = rstd[n];
        if (dw && db) {
            for (int c = c0; c < c1; c++) {
                dw[c] += d[c] * tf_ln_norm(xi[c], m, s);
                db[c] += d[c];
            }
        } else if (dw) {
            for (int c = c0; c < c1; c++) dw[c] += d[c] * tf_ln_norm(xi[c], m, s);
        } else {
            for (int c = c0; c < c1; c++) db[c] += d[c];
        }
    }
}

/* columns [c0, c1) of thread t out of nt, in whole cache lines */
static void col_range(int C, int t, int nt, int *c0, int *c1) {
    int chunks = (C + 15) / 16;
    *c0 = (int)((long long)chunks * t / nt) * 16;
    *c1 = (int)((long long)chunks * (t + 1) / nt) * 16;
    if (*c1 > C) *c1 = C;
    if (*c0 > C) *c0 = C;
}

static void cpu_layernorm_backward(void *dx, void *dw, void *db, const void *dout, const void *x, const float *mean,
                                   const float *rstd, const void *w, int N, int C, sr_dtype dt) {
    (void)dt;
#pragma omp parallel if ((size_t)N * C >= PAR_MIN)
    {
        int c0, c1;
        col_range(C, omp_get_thread_num(), omp_get_num_threads(), &c0, &c1);
        layernorm_dwdb_cols(dw, db, dout, x, mean, rstd, N, C, c0, c1);
#pragma omp for schedule(static)
        for (int n = 0; n < N; n++)
            layernorm_dx_row((float *)dx + (size_t)n * C, (const float *)dout + (size_t)n * C,
                             (const float *)x + (size_t)n * C, mean[n], rstd[n], w, C);
    }
}

HOT static void add_range(float *out, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

static void cpu_bias_fill(void *out_, const void *bias_, const void *res_, int N, int O, sr_dtype dt) {
    (void)dt;
    float *out = out_;
    const float *bias = bias_, *res = res_;
    const size_t row = (size_t)O * sizeof *out;
#pragma omp parallel for schedule(static) if ((size_t)N * O >= PAR_MIN)
    for (int n = 0; n < N; n++) {
        float *o = out + (size_t)n * O;
        const float *r = res ? res + (size_t)n * O : NULL;
        if (bias && r) add_range(o, bias, r, (size_t)O);
        else if (bias) memcpy(o, bias, row);
        else if (r && r != o) memcpy(o, r, row);
        else if (!r) memset(o, 0, row);
    }
}

HOT static void colsum_cols(float *db, const float *dout, int N, int O, int c0, int c1) {
    for (int n = 0; n < N; n++) {
        const float *d = dout + (size_t)n * O;
        for (int c = c0; c < c1; c++) db[c] += d[c];
    }
}

static void cpu_bias_backward(void *dbias, const void *dout, int N, int O, sr_dtype dt) {
    (void)dt;
#pragma omp parallel if ((size_t)N * O >= PAR_MIN)
    {
        int c0, c1;
        col_range(O, omp_get_thread_num(), omp_get_num_threads(), &c0, &c1);
        colsum_cols(dbias, dout, N, O, c0, c1);
    }
}

HOT static void gelu_range(float *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = tf_gelu(x[i]);
}
HOT static void gelu_grad_range(float *dx, const float *x, const float *dout, size_t n) {
    for (size_t i = 0; i < n; i++) dx[i] = tf_gelu_grad(x[i]) * dout[i];
}
/* gelu_grad_range over columns [c0, c1) of [N, O], adding each column's values into db (rows in
   order, as colsum_cols does) */
HOT static void gelu_grad_cols(float *dx, float *db, const float *x, const float *dout, int N, int O, int c0, int c1) {
    for (int n = 0; n < N; n++) {
        size_t base = (size_t)n * O;
        float *d = dx + base;
        const float *xi = x + base, *g = dout + base;
        for (int c = c0; c < c1; c++) {
            float v = tf_gelu_grad(xi[c]) * g[c];
            d[c] = v;
            db[c] += v;
        }
    }
}

/* Splits [0, n) into one contiguous chunk per thread and runs f on it. */
#define PARALLEL_CHUNKS(n, body)                                                                                       \
    _Pragma("omp parallel if ((n) >= PAR_MIN)") {                                                                      \
        size_t nt_ = (size_t)omp_get_num_threads(), t_ = (size_t)omp_get_thread_num();                                 \
        size_t lo = (n)*t_ / nt_, hi = (n) * (t_ + 1) / nt_;                                                           \
        body;                                                                                                          \
    }

static void cpu_gelu_forward(void *out, const void *x, size_t n, sr_dtype dt) {
    (void)dt;
    PARALLEL_CHUNKS(n, gelu_range((float *)out + lo, (const float *)x + lo, hi - lo))
}
/* Without dbias each thread takes a contiguous part; with it, a range of columns over every row
   (bias_backward's split), so each column sum stays on one thread, in row order. */
static void cpu_gelu_backward(void *dx, void *dbias, const void *x, const void *dout, int N, int O, sr_dtype dt) {
    (void)dt;
    size_t n = (size_t)N * O;
    if (!dbias) {
        PARALLEL_CHUNKS(n, gelu_grad_range((float *)dx + lo, (const float *)x + lo, (const float *)dout + lo, hi - lo))
        return;
    }
#pragma omp parallel if (n >= PAR_MIN)
    {
        int c0, c1;
        col_range(O, omp_get_thread_num(), omp_get_num_threads(), &c0, &c1);
        gelu_grad_cols(dx, dbias, x, dout, N, O, c0, c1);
    }
}
static void cpu_add(void *out, const void *a, const void *b, size_t n, sr_dtype dt) {
    (void)dt;
    PARALLEL_CHUNKS(n, add_range((float *)out + lo, (const float *)a + lo, (const float *)b + lo, hi - lo))
}

HOT static float max_lanes(const float *x, int n) {
    float acc[LANES];
    for (int j = 0; j < LANES; j++) acc[j] = -INFINITY;
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
    for (int j = 0; i < n; i++, j++) acc[j] = x[i] > acc[j] ? x[i] : acc[j];
    float m = -INFINITY;
    for (int j = 0; j < LANES; j++) m = acc[j] > m ? acc[j] : m;
    return m;
}

/* e[i] = exp(a * x[i] - b), returns the sum (LANES partial sums) */
HOT static float exp_lanes(float *e, const float *x, int n, float a, float b) {
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) acc[j] += (e[i + j] = tf_exp(a * x[i + j] - b));
    for (int j = 0; i < n; i++, j++) acc[j] += (e[i] = tf_exp(a * x[i] - b));
    float s = 0.0f;
    for (int j = 0; j < LANES; j++) s += acc[j];
    return s;
}

HOT static float dot_lanes(const float *x, const float *y, int n) {
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) acc[j] += x[i + j] * y[i + j];
    for (int j = 0; i < n; i++, j++) acc[j] += x[i] * y[i];
    float s = 0.0f;
    for (int j = 0; j < LANES; j++) s += acc[j];
    return s;
}

static void cpu_softmax_causal_forward(void *P_, const void *S_, int T, float scale, int alibi_heads, int count,
                                       sr_dtype dt) {
    (void)dt;
    float *P = P_;
    const float *S = S_;
    long long rows = (long long)count * T;
#pragma omp parallel for schedule(static) if (rows * T >= PAR_MIN)
    for (long long r = 0; r < rows; r++) {
        int t = (int)(r % T), len = t + 1;
        const float *s = S + r * T;
        float *p = P + r * T;
        float inv;
        if (alibi_heads) { /* the biased scores first (in P: S's row is read before it is written) */
            float m = tf_alibi_slope((int)(r / T) % alibi_heads, alibi_heads);
            for (int j = 0; j < len; j++) p[j] = scale * s[j] + m * (float)j;
            inv = 1.0f / exp_lanes(p, p, len, 1.0f, max_lanes(p, len));
        } else {
            inv = 1.0f / exp_lanes(p, s, len, scale, max_lanes(s, len) * scale);
        }
        for (int j = 0; j < len; j++) p[j] *= inv;
        for (int j = len; j < T; j++) p[j] = 0.0f;
    }
}

static void cpu_softmax_causal_backward(void *dS_, const void *P_, const void *dP_, int T, float scale, int count,
                                        sr_dtype dt) {
    (void)dt;
    float *dS = dS_;
    const float *P = P_, *dP = dP_;
    long long rows = (long long)count * T;
#pragma omp parallel for schedule(static) if (rows * T >= PAR_MIN)
    for (long long r = 0; r < rows; r++) {
        int len = (int)(r % T) + 1;
        const float *p = P + r * T, *dp = dP + r * T;
        float *ds = dS + r * T;
        float dot = dot_lanes(p, dp, len);
        for (int j = 0; j < len; j++) ds[j] = tf_softmax_grad(p[j], dp[j], dot, scale);
        for (int j = len; j < T; j++) ds[j] = 0.0f;
    }
}

HOT static void ce_grad_row(float *l, int V, float inv, int y, float dscale) {
    float ey = l[y];
    for (int v = 0; v < V; v++) l[v] = tf_ce_grad(l[v], inv, 0, dscale);
    l[y] = tf_ce_grad(ey, inv, 1, dscale);
}

/* Three passes over a row -- its max, its exponentials written in place and summed, the gradient --
   where a GPU makes two (kernels_cuda.cu).  A row of GPT-2's 50257 logits (200 KB) stays in L2
   between them, and the kernel is bound by its exponentials: two passes over chunks kept in L1
   measured 2% slower at V = 50257 and 10% at BLOOM's 250880 on a Zen 5 (1 MB of L2 per core). */
static void cpu_cross_entropy(void *logits_, float *losses, const int32_t *targets, int N, int V, float dscale,
                              sr_dtype dt) {
    (void)dt;
    float *logits = logits_;
#pragma omp parallel for schedule(static) if ((size_t)N * V >= PAR_MIN)
    for (int n = 0; n < N; n++) {
        float *l = logits + (size_t)n * V;
        int y = targets[n];
        if (y < 0) {
            losses[n] = 0.0f;
            memset(l, 0, (size_t)V * sizeof *l);
            continue;
        }
        float mx = max_lanes(l, V), ly = l[y];
        float sum = exp_lanes(l, l, V, 1.0f, mx); /* l now holds e^(l - max) */
        losses[n] = logf(sum) - (ly - mx);
        ce_grad_row(l, V, 1.0f / sum, y, dscale);
    }
}

static void cpu_gemv(int ta, int m, int k, float alpha, const void *A, int lda, const void *x, float beta, void *y,
                     sr_dtype dt) {
    (void)dt;
    if (ta) cblas_sgemv(CblasColMajor, CblasTrans, k, m, alpha, A, lda, x, 1, beta, y, 1);
    else cblas_sgemv(CblasColMajor, CblasNoTrans, m, k, alpha, A, lda, x, 1, beta, y, 1);
}

/* One (query, head) pair of attention_cached: scores against keys 0 .. len-1 into s, softmax as
   cpu_softmax_causal_forward computes it, then y = sum_j p_j v_j with the keys in order. */
HOT static void attention_row(float *y, const float *q, const float *kc, const float *vc, int len, int C, int hs,
                              float scale, float *s) {
    for (int j = 0; j < len; j++) s[j] = dot_lanes(q, kc + (size_t)j * C, hs);
    float mx = max_lanes(s, len) * scale;
    float inv = 1.0f / exp_lanes(s, s, len, scale, mx);
    for (int d = 0; d < hs; d++) y[d] = 0.0f;
    for (int j = 0; j < len; j++) {
        const float p = s[j] * inv, *v = vc + (size_t)j * C;
        for (int d = 0; d < hs; d++) y[d] += p * v[d];
    }
}

static void cpu_attention_cached(void *y, const void *q, int ldq, const void *kc, const void *vc, int pos0, int nq,
                                 int C, int NH, float scale, float *scratch, sr_dtype dt) {
    (void)dt;
    const int hs = C / NH, keys = pos0 + nq;
    const long long pairs = (long long)nq * NH;
#pragma omp parallel for schedule(static) if (pairs * keys * hs >= PAR_MIN && pairs > 1)
    for (long long r = 0; r < pairs; r++) {
        int i = (int)(r / NH), h = (int)(r % NH);
        attention_row((float *)y + (size_t)i * C + (size_t)h * hs, (const float *)q + (size_t)i * ldq + (size_t)h * hs,
                      (const float *)kc + (size_t)h * hs, (const float *)vc + (size_t)h * hs, pos0 + i + 1, C, hs,
                      scale, scratch + r * keys);
    }
}

/* one row's key per row; the element loop is the hash and a select, which the compiler vectorises */
HOT static void cpu_lora_dropout(void *y_, const void *x_, int N, int F, int T, const uint32_t *keys, uint32_t site,
                                 uint64_t threshold, float keep_scale, int accumulate, sr_dtype dt) {
    (void)dt;
    float *y = y_;
    const float *x = x_;
#pragma omp parallel for schedule(static) if ((size_t)N * F >= PAR_MIN)
    for (int n = 0; n < N; n++) {
        const int b = n / T;
        const uint64_t key = tf_drop_row_key(keys[2 * b] | ((uint64_t)keys[2 * b + 1] << 32), n % T, site);
        float *yr = y + (size_t)n * F;
        const float *xr = x + (size_t)n * F;
        if (accumulate)
            for (int i = 0; i < F; i++) yr[i] += tf_drop_factor(key, i, threshold, keep_scale) * xr[i];
        else
            for (int i = 0; i < F; i++) yr[i] = tf_drop_factor(key, i, threshold, keep_scale) * xr[i];
    }
}

static const tf_kernels cpu_kernels = {
    .name = "cpu",
    .dtypes = 1u << SR_FLOAT32,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .zero = cpu_zero,
    .ids_upload = cpu_ids_upload,
    .floats_download = cpu_floats_download,
    .sync = cpu_sync,
    .copy = cpu_copy,
    .gemm = cpu_gemm,
    .gemm_batched = cpu_gemm_batched,
    .embed_forward = cpu_embed_forward,
    .embed_backward = cpu_embed_backward,
    .layernorm_forward = cpu_layernorm_forward,
    .layernorm_backward = cpu_layernorm_backward,
    .bias_fill = cpu_bias_fill,
    .bias_backward = cpu_bias_backward,
    .gelu_forward = cpu_gelu_forward,
    .gelu_backward = cpu_gelu_backward,
    .add = cpu_add,
    .softmax_causal_forward = cpu_softmax_causal_forward,
    .softmax_causal_backward = cpu_softmax_causal_backward,
    .cross_entropy = cpu_cross_entropy,
    .gemv = cpu_gemv,
    .attention_cached = cpu_attention_cached,
    .lora_dropout = cpu_lora_dropout,
};

const tf_kernels *tf_kernels_cpu(void) { return &cpu_kernels; }
int tf_cpu_threads(void) { return omp_get_max_threads(); }

#ifdef SHARDRUN_BLAS_BLIS
const char *tf_cpu_blas(void) { return bli_arch_string(bli_arch_query_id()); }
#else
const char *tf_cpu_blas(void) { return openblas_get_corename(); }
#endif
