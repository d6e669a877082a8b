/*
 * The math itself: the device under test's kernels in fp32 against float64 references written in
 * the selftest from the definitions (reference.c).  The kernel checks compare the device with the
 * CPU table, and both compute with the same formulas (kernel_math.h, optim_math.h): a wrong
 * formula passes them, on a GPU as on the CPU, where the two sides are the same code.  Here the
 * device's fp32 result must be within what float32 rounding allows of the exact value.
 *
 * Tolerances (u = 2^-24, float's unit roundoff; "of the largest": times the largest |value| of
 * the output).  Each bounds float32's error with room to spare (the CPU uses at most a third of
 * each; the lines print how much) and is far below what a wrong formula does: GELU' with 1 - tanh
 * for 1 - tanh^2 is off by more than its largest value, AdamW with bias correction 2 from beta1
 * moves a weight by 3e-2 where 1e-6 is allowed.
 *  - FORMULA (GELU, GELU'): 5e-6 of the largest + 4u relative.  tanh goes through the kernels'
 *    own exponential, within 2.5e-7 absolute; GELU scales that by x / 2 and GELU' by
 *    |1/2 - x tanh u'| (up to ~4 on [-6, 6]), 1e-6 of the largest; the CPU measures 1.5e-6.
 *  - REDUCE (LayerNorm, softmax, cross-entropy, dbias): 2e-6 of the largest + 2e-5 relative:
 *    float sums of up to 5000 terms in lanes and threads (a few sqrt(n) u), exponentials within
 *    2.5e-7, ALiBi's scores up to 36 (so u 36 in the exponent), and the cancellation in
 *    x - mean and dp - sum(p dp).
 *  - DROPOUT: 2u of the largest + 2u relative: one product and one sum, each rounded once.
 *  - ADAMW: 16u of the magnitude of the terms that make each result (|p| plus the step made of
 *    |m| and |g|; |m| and |g|; v and g^2): about ten roundings, and the cancellation when m and g
 *    differ in sign.  The kernel gets the settings and the step (sr__adamw_args) and derives the
 *    bias corrections itself (sr__adamw_prepare); the reference computes 1 - beta^t on its own.
 *  - sumsq: 1e-10 relative; the device sums exact squares in double, within n 2^-53.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "checks.h"
#include "compare.h"
#include "reference.h"
#include "rng.h"

static const st_tol TOL_FORMULA = {2.4e-7, 5e-6};
static const st_tol TOL_REDUCE = {2e-5, 2e-6};
static const st_tol TOL_DROPOUT = {1.2e-7, 1.2e-7};
static const double TOL_ADAMW = 9.6e-7;

/* ---- fp32 buffers of the table under test ------------------------------------------------------ */

static void *up(const tf_kernels *k, const float *h, size_t n) {
    void *d = k->alloc(n * 4 + 4);
    if (d && n && k->ids_upload(d, (const int32_t *)h, n) != 0) {
        k->free(d);
        return NULL;
    }
    return d;
}

static float *rnd(size_t n, float a, uint64_t seed) {
    float *x = sr__malloc(n * 4 + 4);
    st_rng g = {seed};
    for (size_t i = 0; x && i < n; i++) x[i] = st_uniform(&g, a);
    return x;
}

/* ---- one line: an entry point over its shapes -------------------------------------------------- */

typedef struct macc {
    const tf_kernels *k;
    int ok;
    size_t n;
    double worst;    /* largest |err| / (largest |want|) seen */
    double used;     /* largest |err| / its tolerance */
    char where[240]; /* the first failure */
    char last[64];   /* the shape being checked */
} macc;

static void shape(macc *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void shape(macc *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->last, sizeof a->last, fmt, ap);
    va_end(ap);
}

static void fail_at(macc *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_at(macc *a, const char *fmt, ...) {
    if (!a->ok) return;
    a->ok = 0;
    size_t l = (size_t)snprintf(a->where, sizeof a->where, "%s ", a->last);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->where + l, sizeof a->where - l, fmt, ap);
    va_end(ap);
}

/* got (host floats) against the float64 want: |got - want| <= atol * max|want| + rtol * |want| */
static void cmp_host(macc *a, const char *what, const float *got, const double *want, size_t n, st_tol tol) {
    double scale = 0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    if (scale == 0) scale = 1;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]);
        double bound = tol.atol * scale + tol.rtol * fabs(want[i]);
        a->worst = fmax(a->worst, e / scale), a->used = fmax(a->used, e / bound);
        if (!(e <= bound) && !bad++) first = i;
    }
    a->n += n;
    if (bad)
        fail_at(a, "%s: %zu of %zu elements off, first [%zu]: got %.9g, float64 %.9g", what, bad, n, first, got[first],
                want[first]);
}

/* device buffer d (n fp32 values) against want; d NULL: the device failed earlier */
static void cmp_dev(macc *a, const char *what, const void *d, const double *want, size_t n, st_tol tol) {
    float *got = sr__malloc(n * 4 + 4);
    if (!got || !d || a->k->sync() != 0 || (n && a->k->floats_download(got, d, n) != 0))
        fail_at(a, "%s: the device failed (see its message above)", what);
    else cmp_host(a, what, got, want, n, tol);
    free(got);
}

static void line(st_report *r, const char *name, const macc *a, st_tol tol, const char *what) {
    if (a->ok)
        st_line(r, 1, "math", name, NULL,
                "%s: %zu elements, max |err| %.2g of the largest, %.0f%% of the tolerance (%.2g of the largest + %.2g "
                "relative)",
                what, a->n, a->worst, 100 * a->used, tol.atol, tol.rtol);
    else
        st_line(r, 0, "math", name, NULL, "against float64: %s (tolerance %.2g of the largest + %.2g relative)",
                a->where, tol.atol, tol.rtol);
}

#define FREE_D(k, ...)                                                                                                 \
    do {                                                                                                               \
        void *ptrs_[] = {__VA_ARGS__};                                                                                 \
        for (size_t i_ = 0; i_ < sizeof ptrs_ / sizeof *ptrs_; i_++)                                                   \
            if (ptrs_[i_]) (k)->free(ptrs_[i_]);                                                                       \
    } while (0)

/* ---- GELU ------------------------------------------------------------------------------------------ */

static void gelu(st_report *r, const tf_kernels *k) {
    macc f = {.k = k, .ok = 1}, b = {.k = k, .ok = 1};
    /* a sweep of [-6, 6] (both tails, the knee, 0) as N x O = 41 x 101, then dbias over its columns */
    const int N = 41, O = 101;
    size_t n = (size_t)N * O;
    float *x = sr__malloc(n * 4 + 4), *dout = rnd(n, 1.0f, 7), *db0 = rnd((size_t)O, 1.0f, 8);
    double *want = sr__malloc(n * 8 + 8), *wdb = sr__malloc((size_t)O * 8 + 8);
    if (!x || !dout || !db0 || !want || !wdb) {
        fail_at(&f, "out of memory"), fail_at(&b, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) x[i] = (float)(-6.0 + 12.0 * (double)i / (double)(n - 1));
    shape(&f, "x in [-6, 6], n=%zu", n), shape(&b, "x in [-6, 6], %dx%d", N, O);
    void *dx = up(k, x, n), *dd = up(k, dout, n), *o = k->alloc(n * 4 + 4), *ddb = up(k, db0, (size_t)O);
    int all = dx && dd && o && ddb;
    if (all) k->gelu_forward(o, dx, n, SR_FLOAT32);
    for (size_t i = 0; i < n; i++) want[i] = st_ref_gelu(x[i]);
    cmp_dev(&f, "out", all ? o : NULL, want, n, TOL_FORMULA);
    if (all) k->gelu_backward(o, NULL, dx, dd, N, O, SR_FLOAT32);
    for (size_t i = 0; i < n; i++) want[i] = st_ref_gelu_grad(x[i]) * dout[i];
    cmp_dev(&b, "dx", all ? o : NULL, want, n, TOL_FORMULA);
    /* with the bias gradient, in place (dx = dout) as the model calls it */
    if (all) k->gelu_backward(dd, ddb, dx, dd, N, O, SR_FLOAT32);
    for (int c = 0; c < O; c++) wdb[c] = db0[c];
    for (size_t i = 0; i < n; i++) wdb[i % (size_t)O] += want[i];
    cmp_dev(&b, "dx (with dbias)", all ? dd : NULL, want, n, TOL_FORMULA);
    cmp_dev(&b, "dbias", all ? ddb : NULL, wdb, (size_t)O, TOL_REDUCE);
    FREE_D(k, dx, dd, o, ddb);
out:
    free(x), free(dout), free(db0), free(want), free(wdb);
    line(r, "gpt2.gelu_forward fp32", &f, TOL_FORMULA, "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))");
    line(r, "gpt2.gelu_backward fp32", &b, TOL_FORMULA, "its derivative times dout; dbias");
}

/* ---- LayerNorm ------------------------------------------------------------------------------------- */

static void layernorm(st_report *r, const tf_kernels *k) {
    macc f = {.k = k, .ok = 1}, b = {.k = k, .ok = 1};
    /* row 1 of each shape: values near 1e-3, where eps (1e-5) is most of the variance; row 2:
       centred on 10, where a one-pass variance (E[x^2] - E[x]^2) cancels */
    const int shapes[][2] = {{3, 33}, {7, 769}};
    for (int s = 0; s < 2; s++) {
        int N = shapes[s][0], C = shapes[s][1];
        size_t nc = (size_t)N * C;
        uint64_t seed = 60 + (uint64_t)s * 10;
        float *x = rnd(nc, 3.0f, seed), *w = rnd((size_t)C, 1.5f, seed + 1), *bb = rnd((size_t)C, 0.5f, seed + 2);
        float *dout = rnd(nc, 1.0f, seed + 3), *gx = rnd(nc, 1.0f, seed + 4), *gw = rnd((size_t)C, 1.0f, seed + 5),
              *gb = rnd((size_t)C, 1.0f, seed + 6), *fm = sr__malloc((size_t)N * 4), *fr = sr__malloc((size_t)N * 4);
        double *out = sr__malloc(nc * 8), *mean = sr__malloc((size_t)N * 8), *rstd = sr__malloc((size_t)N * 8),
               *dx = sr__malloc((size_t)C * 8), *wx = sr__malloc(nc * 8), *ww = sr__malloc((size_t)C * 8),
               *wb = sr__malloc((size_t)C * 8);
        shape(&f, "%dx%d", N, C), shape(&b, "%dx%d", N, C);
        if (!x || !w || !bb || !dout || !gx || !gw || !gb || !fm || !fr || !out || !mean || !rstd || !dx || !wx ||
            !ww || !wb) {
            fail_at(&f, "out of memory"), fail_at(&b, "out of memory");
        } else {
            for (int c = 0; c < C; c++) x[C + c] *= 1e-3f, x[2 * C + c] += 10.0f;
            for (int n = 0; n < N; n++)
                st_ref_layernorm_row(x + (size_t)n * C, w, bb, C, out + (size_t)n * C, &mean[n], &rstd[n]);
            void *dx_ = up(k, x, nc), *dw_ = up(k, w, (size_t)C), *db_ = up(k, bb, (size_t)C), *o = k->alloc(nc * 4);
            float *dm = k->alloc((size_t)N * 4), *dr = k->alloc((size_t)N * 4);
            int all = dx_ && dw_ && db_ && o && dm && dr;
            if (all) k->layernorm_forward(o, dm, dr, dx_, dw_, db_, N, C, SR_FLOAT32);
            cmp_dev(&f, "out", all ? o : NULL, out, nc, TOL_REDUCE);
            cmp_dev(&f, "mean", all ? dm : NULL, mean, (size_t)N, TOL_REDUCE);
            cmp_dev(&f, "rstd", all ? dr : NULL, rstd, (size_t)N, TOL_REDUCE);
            /* backward from the float64 statistics (rounded), into non-zero dx, dw, db */
            for (int n = 0; n < N; n++) fm[n] = (float)mean[n], fr[n] = (float)rstd[n];
            for (int c = 0; c < C; c++) ww[c] = gw[c], wb[c] = gb[c];
            for (int n = 0; n < N; n++) {
                st_ref_layernorm_backward_row(dout + (size_t)n * C, x + (size_t)n * C, w, C, dx, ww, wb);
                for (int c = 0; c < C; c++) wx[(size_t)n * C + c] = gx[(size_t)n * C + c] + dx[c];
            }
            void *ddo = up(k, dout, nc), *dgx = up(k, gx, nc), *dgw = up(k, gw, (size_t)C), *dgb = up(k, gb, (size_t)C),
                 *m2 = up(k, fm, (size_t)N), *r2 = up(k, fr, (size_t)N);
            int ball = all && ddo && dgx && dgw && dgb && m2 && r2;
            if (ball) k->layernorm_backward(dgx, dgw, dgb, ddo, dx_, m2, r2, dw_, N, C, SR_FLOAT32);
            cmp_dev(&b, "dx", ball ? dgx : NULL, wx, nc, TOL_REDUCE);
            cmp_dev(&b, "dw", ball ? dgw : NULL, ww, (size_t)C, TOL_REDUCE);
            cmp_dev(&b, "db", ball ? dgb : NULL, wb, (size_t)C, TOL_REDUCE);
            FREE_D(k, dx_, dw_, db_, o, dm, dr, ddo, dgx, dgw, dgb, m2, r2);
        }
        free(x), free(w), free(bb), free(dout), free(gx), free(gw), free(gb), free(fm), free(fr);
        free(out), free(mean), free(rstd), free(dx), free(wx), free(ww), free(wb);
    }
    line(r, "gpt2.layernorm_forward fp32", &f, TOL_REDUCE, "(x - mean) / sqrt(var + 1e-5) w + b, mean, rstd");
    line(r, "gpt2.layernorm_backward fp32", &b, TOL_REDUCE, "dx, dw, db");
}

/* ---- causal softmax (with ALiBi) and cross-entropy ---------------------------------------------------- */

static void softmax(st_report *r, const tf_kernels *k) {
    macc f = {.k = k, .ok = 1}, b = {.k = k, .ok = 1};
    /* T, count, ALiBi heads (3 and 6: not powers of two, so the extra slopes are used too) */
    const int shapes[][3] = {{5, 3, 3}, {67, 2, 0}, {129, 6, 6}};
    const double scale = 0.125;
    for (int s = 0; s < 3; s++) {
        int T = shapes[s][0], cnt = shapes[s][1], nh = shapes[s][2];
        size_t n = (size_t)T * T * cnt;
        float *S = rnd(n, 32.0f, 80 + n), *dP = rnd(n, 1.0f, 81 + n), *P = sr__malloc(n * 4 + 4);
        double *want = sr__calloc(n + 1, 8);
        shape(&f, nh ? "T%dx%d alibi %d" : "T%dx%d", T, cnt, nh), shape(&b, "T%dx%d", T, cnt);
        if (!S || !dP || !P || !want) {
            fail_at(&f, "out of memory"), fail_at(&b, "out of memory");
        } else {
            for (size_t row = 0; row < (size_t)T * cnt; row++) {
                int t = (int)(row % (size_t)T);
                double slope = nh ? st_ref_alibi_slope((int)(row / (size_t)T) % nh, nh) : 0.0;
                st_ref_softmax_row(S + row * T, t + 1, scale, slope, want + row * T);
            }
            void *dS = up(k, S, n), *dPo = k->alloc(n * 4 + 4);
            if (dS && dPo) k->softmax_causal_forward(dPo, dS, T, (float)scale, nh, cnt, SR_FLOAT32);
            cmp_dev(&f, "P", dS && dPo ? dPo : NULL, want, n, TOL_REDUCE);
            /* backward from the float64 P (rounded) */
            for (size_t i = 0; i < n; i++) P[i] = (float)want[i];
            memset(want, 0, n * 8);
            for (size_t row = 0; row < (size_t)T * cnt; row++)
                st_ref_softmax_backward_row(P + row * T, dP + row * T, (int)(row % (size_t)T) + 1, scale,
                                            want + row * T);
            void *dPin = up(k, P, n), *ddP = up(k, dP, n), *ddS = k->alloc(n * 4 + 4);
            int all = dPin && ddP && ddS;
            if (all) k->softmax_causal_backward(ddS, dPin, ddP, T, (float)scale, cnt, SR_FLOAT32);
            cmp_dev(&b, "dS", all ? ddS : NULL, want, n, TOL_REDUCE);
            FREE_D(k, dS, dPo, dPin, ddP, ddS);
        }
        free(S), free(dP), free(P), free(want);
    }
    line(r, "gpt2.softmax_causal_forward fp32", &f, TOL_REDUCE, "softmax(scale s + slope j) over j <= t");
    line(r, "gpt2.softmax_causal_backward fp32", &b, TOL_REDUCE, "scale p (dp - sum p dp)");
}

static void cross_entropy(st_report *r, const tf_kernels *k) {
    macc a = {.k = k, .ok = 1};
    const int shapes[][2] = {{5, 1031}, {9, 5000}};
    const double dscale = 0.25;
    for (int s = 0; s < 2; s++) {
        int N = shapes[s][0], V = shapes[s][1];
        size_t n = (size_t)N * V;
        float *L = rnd(n, 6.0f, 90 + n);
        int32_t *tg = sr__malloc((size_t)N * 4);
        double *loss = sr__calloc((size_t)N, 8), *dl = sr__calloc(n, 8);
        shape(&a, "%dx%d", N, V);
        if (!L || !tg || !loss || !dl) {
            fail_at(&a, "out of memory");
        } else {
            for (int i = 0; i < N; i++) tg[i] = i == 2 ? -1 : i == 0 ? 0 : i == 1 ? V - 1 : (i * 37) % V;
            for (int i = 0; i < N; i++)
                if (tg[i] >= 0)
                    loss[i] = st_ref_cross_entropy_row(L + (size_t)i * V, V, tg[i], dscale, dl + (size_t)i * V);
            void *dL = up(k, L, n), *dt = k->alloc((size_t)N * 4), *dloss = k->alloc((size_t)N * 4);
            int all = dL && dt && dloss && k->ids_upload(dt, tg, (size_t)N) == 0;
            if (all) k->cross_entropy(dL, dloss, dt, N, V, (float)dscale, SR_FLOAT32);
            cmp_dev(&a, "losses", all ? dloss : NULL, loss, (size_t)N, TOL_REDUCE);
            cmp_dev(&a, "dlogits", all ? dL : NULL, dl, n, TOL_REDUCE);
            FREE_D(k, dL, dt, dloss);
        }
        free(L), free(tg), free(loss), free(dl);
    }
    line(r, "gpt2.cross_entropy fp32", &a, TOL_REDUCE, "logsumexp - target logit; (softmax - onehot) dscale");
}

/* ---- LoRA dropout ------------------------------------------------------------------------------------ */

static void lora_dropout(st_report *r, const tf_kernels *k) {
    macc a = {.k = k, .ok = 1};
    const int N = 130, F = 100, T = 13, B = (N + T - 1) / T;
    const uint64_t threshold = (uint64_t)(0.3 * 9007199254740992.0); /* p = 0.3 */
    const float keep = (float)(1.0 / 0.7);
    size_t n = (size_t)N * F;
    float *x = rnd(n, 2.0f, 95), *y = rnd(n, 1.0f, 96);
    uint32_t *keys = sr__malloc(2 * (size_t)B * 4);
    double *want = sr__malloc(n * 8);
    shape(&a, "%dx%d/%d", N, F, T);
    if (!x || !y || !keys || !want) {
        fail_at(&a, "out of memory");
    } else {
        st_rng g = {97};
        for (int i = 0; i < 2 * B; i++) keys[i] = (uint32_t)st_next(&g);
        void *dx = up(k, x, n), *dy = up(k, y, n), *dk = k->alloc(2 * (size_t)B * 4);
        int all = dx && dy && dk && k->ids_upload(dk, (const int32_t *)keys, 2 * (size_t)B) == 0;
        if (all) k->lora_dropout(dy, dx, N, F, T, dk, 259, threshold, keep, 1, SR_FLOAT32);
        size_t dropped = 0;
        for (int row = 0; row < N; row++) {
            uint64_t key = keys[2 * (row / T)] | ((uint64_t)keys[2 * (row / T) + 1] << 32);
            for (int i = 0; i < F; i++) {
                double fct = st_ref_drop_factor(key, row % T, 259, i, threshold, keep);
                dropped += fct == 0;
                want[(size_t)row * F + i] = y[(size_t)row * F + i] + fct * x[(size_t)row * F + i];
            }
        }
        /* a draw that dropped nothing (or everything) would make the comparison prove little */
        if (dropped == 0 || dropped == n)
            fail_at(&a, "the reference's draw dropped %zu of %zu elements at p 0.3", dropped, n);
        cmp_dev(&a, "y (+=)", all ? dy : NULL, want, n, TOL_DROPOUT);
        FREE_D(k, dx, dy, dk);
    }
    free(x), free(y), free(keys), free(want);
    line(r, "gpt2.lora_dropout fp32", &a, TOL_DROPOUT, "y += x or 0 by lora.h's splitmix64 draw, p 0.3");
}

/* ---- core's device table: AdamW, the sum of squares ------------------------------------------------- */

static void adamw(st_report *r, const sr__device *dev) {
    /* one step from random moments at steps 1, 3 and 1000 (bias corrections far from 1, and near),
       weight decay large enough to show, the gradient scaled as clipping does.  The reference gets
       the hyperparameters as the kernel does */
    const double lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
    const float gmul = 0.5f;
    const int steps[] = {1, 3, 1000};
    const size_t n = 1023;
    int ok = 1;
    double worst = 0;
    char where[240] = "";
    for (int s = 0; s < 3 && ok; s++) {
        int t = steps[s];
        const sr__adamw_args a = {lr, b1, b2, eps, wd, t, gmul};
        float *h[4], *got = sr__malloc(n * 4);
        void *d[4];
        st_rng g = {110 + (uint64_t)t};
        for (int i = 0; i < 4; i++) h[i] = sr__malloc(n * 4);
        for (size_t i = 0; h[0] && h[1] && h[2] && h[3] && i < n; i++)
            h[0][i] = st_uniform(&g, 1.0f), h[1][i] = st_uniform(&g, 0.1f), h[2][i] = st_uniform(&g, 0.01f),
            h[3][i] = fabsf(st_uniform(&g, 1e-4f));
        int io = got && h[0] && h[1] && h[2] && h[3];
        for (int i = 0; i < 4; i++) {
            d[i] = io ? dev->alloc(n * 4) : NULL;
            io = io && d[i] && dev->to_device(d[i], h[i], n * 4) == 0;
        }
        if (io) dev->adamw(d[0], d[1], d[2], d[3], n, &a);
        io = io && dev->sync() == 0;
        /* want[o][i], and the magnitude of the terms that make it (what float rounding scales with) */
        double *want[3] = {sr__malloc(n * 8), sr__malloc(n * 8), sr__malloc(n * 8)},
               *mag[3] = {sr__malloc(n * 8), sr__malloc(n * 8), sr__malloc(n * 8)};
        for (int o = 0; o < 3; o++) io = io && want[o] && mag[o];
        for (size_t i = 0; io && i < n; i++) {
            double gr = (double)h[1][i] * gmul;
            want[0][i] = h[0][i], want[1][i] = h[2][i], want[2][i] = h[3][i];
            mag[1][i] = b1 * fabs(want[1][i]) + (1 - (double)b1) * fabs(gr);
            mag[2][i] = b2 * want[2][i] + (1 - (double)b2) * gr * gr;
            mag[0][i] = st_ref_adamw(&want[0][i], gr, &want[1][i], &want[2][i], lr, b1, b2, eps, wd, t);
        }
        static const char *const what[3] = {"param", "exp_avg", "exp_avg_sq"};
        const int at[3] = {0, 2, 3};
        for (int o = 0; o < 3 && ok; o++) {
            if (!io || dev->to_host(got, d[at[o]], n * 4) != 0) {
                ok = 0, snprintf(where, sizeof where, "step %d: the device failed (see its message above)", t);
                break;
            }
            for (size_t i = 0; i < n && ok; i++) {
                double e = fabs((double)got[i] - want[o][i]) / mag[o][i];
                worst = fmax(worst, e);
                if (!(e <= TOL_ADAMW))
                    ok = 0, snprintf(where, sizeof where, "step %d %s [%zu]: got %.9g, float64 %.9g", t, what[o], i,
                                     got[i], want[o][i]);
            }
        }
        for (int i = 0; i < 4; i++) {
            if (d[i]) dev->free(d[i]);
            free(h[i]);
        }
        free(got);
        for (int o = 0; o < 3; o++) free(want[o]), free(mag[o]);
    }
    if (ok)
        st_line(r, 1, "math", "device.adamw", NULL,
                "AdamW with bias corrections and decoupled weight decay, steps 1, 3, 1000: %zu elements, max |err| "
                "%.2g of the magnitude of their terms (tolerance %.2g)",
                3 * 3 * n, worst, TOL_ADAMW);
    else
        st_line(r, 0, "math", "device.adamw", NULL,
                "against float64: %s (tolerance %.2g of the magnitude of its terms)", where, TOL_ADAMW);
}

/* sum of x^2 (the gradient norm's): each square is exact in double, and the device sums n of them
   in double, within n 2^-53 relative (2.9e-11 at n = 262145); the reference sums in long double */
static void sumsq(st_report *r, const sr__device *dev) {
    const size_t n = 262145;
    float *x = rnd(n, 2.0f, 120);
    void *d = x ? dev->alloc(n * 4) : NULL;
    int io = d && dev->to_device(d, x, n * 4) == 0;
    long double want = 0;
    for (size_t i = 0; x && i < n; i++) want += (long double)x[i] * x[i];
    double got = io ? dev->sumsq(d, n) : NAN, rel = fabs(got - (double)want) / (double)want;
    if (io && dev->sync() != 0) io = 0;
    if (io && rel <= 1e-10)
        st_line(r, 1, "math", "device.sumsq", NULL,
                "sum of x^2, n=%zu: relative error %.2g (tolerance 1e-10: n 2^-53 is 2.9e-11)", n, rel);
    else if (io)
        st_line(r, 0, "math", "device.sumsq", NULL,
                "against float64: n=%zu: got %.17g, want %.17g (relative %.3g > 1e-10)", n, got, (double)want, rel);
    else st_line(r, 0, "math", "device.sumsq", NULL, "n=%zu: the device failed (see its message above)", n);
    if (d) dev->free(d);
    free(x);
}

void st_check_math(st_report *r, const st_dut *d) {
    if (d->k->dtypes & (1u << SR_FLOAT32)) {
        gelu(r, d->k);
        layernorm(r, d->k);
        softmax(r, d->k);
        cross_entropy(r, d->k);
        lora_dropout(r, d->k);
    }
    adamw(r, d->dev);
    sumsq(r, d->dev);
}
