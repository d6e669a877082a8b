/* The GPT-2 kernels' attention_cached (models/transformer/kernels_cpu.c), which generation runs for each
   new token, against attention computed in double from its definition: nq queries at positions
   pos0 .. pos0 + nq - 1, each over keys 0 .. its own position, per head softmax(scale q.k) v.  One
   query (what gpt2_generate runs), several at once, pos0 = 0 (a whole prompt), at 1 and 2 OpenMP
   threads (the kernel parallelises over (query, head) pairs), and a key past a query's position
   changed (it must not matter: causality). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "models/transformer/kernels.h"

static double worst_case(int pos0, int nq, int C, int NH, int threads, int poke_future) {
    const int keys = pos0 + nq, hs = C / NH, ldq = 3 * C; /* q rows strided as in a qkv buffer */
    float *q = malloc(sizeof(float) * (size_t)nq * ldq), *kc = malloc(sizeof(float) * (size_t)keys * C),
          *vc = malloc(sizeof(float) * (size_t)keys * C), *y = malloc(sizeof(float) * (size_t)nq * C),
          *scratch = malloc(sizeof(float) * (size_t)nq * NH * keys);
    unsigned s = 12345u + (unsigned)(pos0 * 31 + nq);
#define RND() ((s = s * 1664525u + 1013904223u), ((float)(s >> 8) / 16777216.0f - 0.5f) * 4.0f)
    for (int i = 0; i < nq * ldq; i++) q[i] = RND();
    for (int i = 0; i < keys * C; i++) kc[i] = RND(), vc[i] = RND();
    const float scale = 1.0f / sqrtf((float)hs);
    omp_set_num_threads(threads);
    tf_kernels_cpu()->attention_cached(y, q, ldq, kc, vc, pos0, nq, C, NH, scale, scratch, SR_FLOAT32);
    if (poke_future && nq > 1) { /* the last key changes: every query but the last must not see it */
        float *y2 = malloc(sizeof(float) * (size_t)nq * C);
        for (int c = 0; c < C; c++) kc[(size_t)(keys - 1) * C + c] += 3.0f, vc[(size_t)(keys - 1) * C + c] -= 2.0f;
        tf_kernels_cpu()->attention_cached(y2, q, ldq, kc, vc, pos0, nq, C, NH, scale, scratch, SR_FLOAT32);
        int same = 1, last_changed = 0;
        for (int i = 0; i < nq - 1; i++)
            for (int c = 0; c < C; c++) same &= y[(size_t)i * C + c] == y2[(size_t)i * C + c];
        for (int c = 0; c < C; c++) last_changed |= y[(size_t)(nq - 1) * C + c] != y2[(size_t)(nq - 1) * C + c];
        CHECK(same);
        CHECK(last_changed);
        for (int i = 0; i < nq * C; i++) y[i] = y2[i]; /* the reference below uses the changed key */
        free(y2);
    }
    double worst = 0.0;
    double *p = malloc(sizeof(double) * (size_t)keys);
    for (int i = 0; i < nq; i++)
        for (int h = 0; h < NH; h++) {
            int len = pos0 + i + 1;
            double mx = -INFINITY, sum = 0.0;
            for (int j = 0; j < len; j++) {
                double d = 0.0;
                for (int e = 0; e < hs; e++)
                    d += (double)q[(size_t)i * ldq + h * hs + e] * kc[(size_t)j * C + h * hs + e];
                p[j] = d * scale;
                if (p[j] > mx) mx = p[j];
            }
            for (int j = 0; j < len; j++) sum += (p[j] = exp(p[j] - mx));
            for (int e = 0; e < hs; e++) {
                double ref = 0.0;
                for (int j = 0; j < len; j++) ref += p[j] / sum * vc[(size_t)j * C + h * hs + e];
                double d = fabs(ref - y[(size_t)i * C + h * hs + e]);
                if (d > worst) worst = d;
            }
        }
    free(p), free(q), free(kc), free(vc), free(y), free(scratch);
    return worst;
}

int main(void) {
    /* (pos0, nq, C, NH): one new token late in a sequence, several, a whole prompt, uneven sizes */
    const int cases[][4] = {{37, 1, 64, 4}, {0, 1, 64, 4}, {20, 7, 48, 3}, {0, 33, 64, 2}, {100, 1, 768, 12}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int threads = 1; threads <= 2; threads++) {
            double w = worst_case(cases[c][0], cases[c][1], cases[c][2], cases[c][3], threads, 1);
            /* values are O(1) (v in [-2, 2]): float rounding is ~1e-6 */
            if (w > 1e-5)
                fprintf(stderr, "pos0 %d nq %d C %d NH %d, %d threads: off by %.3g\n", cases[c][0], cases[c][1],
                        cases[c][2], cases[c][3], threads, w);
            CHECK(w <= 1e-5);
        }
    return CHECK_DONE();
}
