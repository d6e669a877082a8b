/* The CPU kernels that fuse passes (models/transformer/kernels_cpu.c) against what they replace:
   cross_entropy against the loss and gradient computed in double (rows up to 600001 logits);
   gelu_backward with the bias gradient against gelu_backward then bias_backward (the same sums in
   the same order: bit-identical); bias_fill with a residual against the two additions.  Each at 1
   and 2 OpenMP threads, which must give the same bits. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "models/transformer/kernels.h"

static unsigned seed = 12345u;
static float rnd(float a) {
    seed = seed * 1664525u + 1013904223u;
    return ((float)(seed >> 8) / 16777216.0f - 0.5f) * 2.0f * a;
}
static float *rnd_buf(size_t n, float a) {
    float *x = malloc(n * sizeof *x + 4);
    for (size_t i = 0; i < n; i++) x[i] = rnd(a);
    return x;
}

/* cross-entropy of N rows of V logits (row 1 ignored when N > 1) at `threads`: the worst error of
   the losses (relative to max(1, loss)) and of the gradients (relative to dscale) against double;
   the gradients and losses are left in out/losses for the thread comparison */
static double ce_case(int N, int V, int threads, float *out, float *losses, const float *logits) {
    const float dscale = 0.125f;
    int32_t *tg = malloc((size_t)N * sizeof *tg);
    for (int n = 0; n < N; n++) tg[n] = n == 1 ? -1 : n == 0 ? V - 1 : (int)(((long long)n * 7919) % V);
    memcpy(out, logits, (size_t)N * V * sizeof *out);
    omp_set_num_threads(threads);
    tf_kernels_cpu()->cross_entropy(out, losses, tg, N, V, dscale, SR_FLOAT32);
    double worst = 0;
    for (int n = 0; n < N; n++) {
        const float *l = logits + (size_t)n * V, *g = out + (size_t)n * V;
        if (tg[n] < 0) {
            for (int v = 0; v < V; v++) worst = fmax(worst, fabs((double)g[v]));
            worst = fmax(worst, fabs((double)losses[n]));
            continue;
        }
        double mx = -INFINITY, sum = 0;
        for (int v = 0; v < V; v++) mx = fmax(mx, (double)l[v]);
        for (int v = 0; v < V; v++) sum += exp((double)l[v] - mx);
        double loss = log(sum) + mx - (double)l[tg[n]];
        worst = fmax(worst, fabs((double)losses[n] - loss) / fmax(1.0, fabs(loss)));
        for (int v = 0; v < V; v++) {
            double want = (exp((double)l[v] - mx) / sum - (v == tg[n])) * dscale;
            worst = fmax(worst, fabs((double)g[v] - want) / dscale);
        }
    }
    free(tg);
    return worst;
}

static void check_ce(int N, int V) {
    float *logits = rnd_buf((size_t)N * V, 8.0f);
    if (V > 3) logits[5] = 30.0f; /* one logit far above the rest, in the first chunk */
    float *g1 = malloc((size_t)N * V * sizeof *g1), *g2 = malloc((size_t)N * V * sizeof *g2);
    float *l1 = malloc((size_t)N * sizeof *l1), *l2 = malloc((size_t)N * sizeof *l2);
    double w1 = ce_case(N, V, 1, g1, l1, logits), w2 = ce_case(N, V, 2, g2, l2, logits);
    printf("cross_entropy %d x %d: worst error %.3g (1 thread), %.3g (2 threads)\n", N, V, w1, w2);
    CHECK(w1 < 2e-6 && w2 < 2e-6);
    CHECK(memcmp(g1, g2, (size_t)N * V * sizeof *g1) == 0 && memcmp(l1, l2, (size_t)N * sizeof *l1) == 0);
    free(logits), free(g1), free(g2), free(l1), free(l2);
}

static void check_gelu_bias(int N, int O) {
    const tf_kernels *k = tf_kernels_cpu();
    size_t n = (size_t)N * O;
    float *x = rnd_buf(n, 4.0f), *dout = rnd_buf(n, 1.0f), *db0 = rnd_buf((size_t)O, 1.0f);
    float *want = malloc(n * sizeof *want + 4), *wdb = malloc((size_t)O * sizeof *wdb + 4);
    memcpy(wdb, db0, (size_t)O * sizeof *wdb);
    omp_set_num_threads(1);
    k->gelu_backward(want, NULL, x, dout, N, O, SR_FLOAT32);
    k->bias_backward(wdb, want, N, O, SR_FLOAT32);
    for (int t = 1; t <= 2; t++) {
        float *dx = malloc(n * sizeof *dx + 4), *db = malloc((size_t)O * sizeof *db + 4);
        memcpy(dx, dout, n * sizeof *dx); /* in place, as the block calls it */
        memcpy(db, db0, (size_t)O * sizeof *db);
        omp_set_num_threads(t);
        k->gelu_backward(dx, db, x, dx, N, O, SR_FLOAT32);
        CHECK(memcmp(dx, want, n * sizeof *dx) == 0);
        CHECK(memcmp(db, wdb, (size_t)O * sizeof *db) == 0);
        free(dx), free(db);
    }
    free(x), free(dout), free(db0), free(want), free(wdb);
}

static void check_bias_fill(int N, int O) {
    const tf_kernels *k = tf_kernels_cpu();
    size_t n = (size_t)N * O;
    float *b = rnd_buf((size_t)O, 1.0f), *r = rnd_buf(n, 2.0f), *out = malloc(n * sizeof *out + 4);
    float *in_place = malloc(n * sizeof *in_place + 4);
    for (int t = 1; t <= 2; t++) {
        omp_set_num_threads(t);
        int ok = 1;
        k->bias_fill(out, b, r, N, O, SR_FLOAT32);
        for (size_t i = 0; i < n; i++) ok &= out[i] == b[i % (size_t)O] + r[i];
        memcpy(in_place, r, n * sizeof *r);
        k->bias_fill(in_place, b, in_place, N, O, SR_FLOAT32);
        ok &= memcmp(in_place, out, n * sizeof *out) == 0;
        k->bias_fill(out, NULL, r, N, O, SR_FLOAT32);
        ok &= memcmp(out, r, n * sizeof *out) == 0;
        k->bias_fill(out, b, NULL, N, O, SR_FLOAT32);
        for (size_t i = 0; i < n; i++) ok &= out[i] == b[i % (size_t)O];
        k->bias_fill(out, NULL, NULL, N, O, SR_FLOAT32);
        for (size_t i = 0; i < n; i++) ok &= out[i] == 0.0f;
        CHECK(ok);
    }
    free(b), free(r), free(out), free(in_place);
}

int main(void) {
    check_ce(1, 1);
    check_ce(3, 7);
    check_ce(5, 2049);
    check_ce(4, 50257);  /* GPT-2's vocabulary */
    check_ce(2, 600001); /* one logit far above 600000 others: the small terms must not vanish */
    check_gelu_bias(1, 1);
    check_gelu_bias(7, 769);
    check_gelu_bias(130, 3072);
    check_bias_fill(3, 33);
    check_bias_fill(130, 769);
    return CHECK_DONE();
}
