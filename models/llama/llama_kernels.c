/* llama kernels on the CPU (see llama_kernels.h). */
#include "llama_kernels.h"

#include <math.h>
#include <omp.h>

/* below this many elements a loop is not worth waking the other threads for (kernels_cpu.c's) */
#define PAR_MIN 16384
#define LANES 16 /* partial sums per row reduction: the same order at any vector width */

static float sum_sq(const float *x, int n) {
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) acc[j] += x[i + j] * x[i + j];
    for (int j = 0; i < n; i++, j++) acc[j] += x[i] * x[i];
    float s = 0.0f;
    for (int j = 0; j < LANES; j++) s += acc[j];
    return s;
}

void llama_rmsnorm_forward(float *out, float *rstd, const float *x, const float *w, int N, int C, float eps) {
#pragma omp parallel for schedule(static) if ((size_t)N * C >= PAR_MIN)
    for (int n = 0; n < N; n++) {
        const float *xi = x + (size_t)n * C;
        float *o = out + (size_t)n * C;
        float r = 1.0f / sqrtf(sum_sq(xi, C) / (float)C + eps);
        for (int c = 0; c < C; c++) o[c] = w[c] * (xi[c] * r);
        rstd[n] = r;
    }
}

/* columns [c0, c1) of thread t out of nt */
static void col_range(int C, int t, int nt, int *c0, int *c1) {
    *c0 = (int)((long long)C * t / nt);
    *c1 = (int)((long long)C * (t + 1) / nt);
}

void llama_rmsnorm_backward(float *dx, float *dw, const float *dout, const float *x, const float *rstd, const float *w,
                            int N, int C) {
#pragma omp parallel if ((size_t)N * C >= PAR_MIN)
    {
        int c0, c1;
        col_range(C, omp_get_thread_num(), omp_get_num_threads(), &c0, &c1);
        for (int n = 0; dw && n < N; n++) { /* dw (NULL: frozen): each column on one thread, rows in order */
            const float *d = dout + (size_t)n * C, *xi = x + (size_t)n * C;
            float r = rstd[n];
            for (int c = c0; c < c1; c++) dw[c] += d[c] * (xi[c] * r);
        }
        /* y = w x r with r = (mean(x^2) + eps)^-1/2: dx = r g - x r^3 mean(g x), g = w dout */
#pragma omp for schedule(static)
        for (int n = 0; n < N; n++) {
            if (!dx) continue;
            const float *d = dout + (size_t)n * C, *xi = x + (size_t)n * C;
            float *o = dx + (size_t)n * C, r = rstd[n];
            float acc[LANES] = {0};
            int i = 0;
            for (; i + LANES <= C; i += LANES)
                for (int j = 0; j < LANES; j++) acc[j] += w[i + j] * d[i + j] * xi[i + j];
            for (int j = 0; i < C; i++, j++) acc[j] += w[i] * d[i] * xi[i];
            float s = 0.0f;
            for (int j = 0; j < LANES; j++) s += acc[j];
            float k = s / (float)C * r * r * r;
            for (int c = 0; c < C; c++) o[c] += r * (w[c] * d[c]) - xi[c] * k;
        }
    }
}

void llama_rope(float *x, int N, int T, int ld, int heads, int hd, const float *cos, const float *sin, int inverse) {
    const int half = hd / 2;
    const float sign = inverse ? -1.0f : 1.0f;
#pragma omp parallel for schedule(static) if ((size_t)N * heads * hd >= PAR_MIN)
    for (int n = 0; n < N; n++) {
        const float *c = cos + (size_t)(n % T) * half, *s = sin + (size_t)(n % T) * half;
        for (int h = 0; h < heads; h++) {
            float *v = x + (size_t)n * ld + (size_t)h * hd;
            for (int i = 0; i < half; i++) {
                float a = v[i], b = v[i + half], sn = sign * s[i];
                v[i] = a * c[i] - b * sn;
                v[i + half] = b * c[i] + a * sn;
            }
        }
    }
}

void llama_swiglu_forward(float *h, const float *gate, const float *up, size_t n) {
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        float g = gate[i];
        h[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

void llama_swiglu_backward(float *dgate, float *dup, const float *gate, const float *up, const float *dh, size_t n) {
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        float g = gate[i], sig = 1.0f / (1.0f + expf(-g)), d = dh[i];
        dgate[i] = d * up[i] * (sig * (1.0f + g * (1.0f - sig)));
        dup[i] = d * (g * sig);
    }
}

void llama_bias_fill_strided(float *out, int ld, const float *b, int N, int O) {
#pragma omp parallel for schedule(static) if ((size_t)N * O >= PAR_MIN)
    for (int n = 0; n < N; n++)
        for (int o = 0; o < O; o++) out[(size_t)n * ld + o] = b[o];
}

void llama_bias_backward_strided(float *db, const float *dout, int ld, int N, int O) {
#pragma omp parallel if ((size_t)N * O >= PAR_MIN)
    {
        int c0, c1;
        col_range(O, omp_get_thread_num(), omp_get_num_threads(), &c0, &c1);
        for (int n = 0; n < N; n++)
            for (int c = c0; c < c1; c++) db[c] += dout[(size_t)n * ld + c];
    }
}
