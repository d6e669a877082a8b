/* selftest comparisons (see compare.h) */
#include "compare.h"

#include <math.h>
#include <string.h>

#include "shardrun/half.h"

int st_compare(const float *got, const float *want, size_t n, st_tol tol, st_cmp *c) {
    memset(c, 0, sizeof *c);
    c->n = n;
    double scale = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(want[i]) && fabs(want[i]) > scale) scale = fabs(want[i]);
    if (scale == 0) scale = 1;
    int exact = tol.rtol == 0 && tol.atol == 0;
    for (size_t i = 0; i < n; i++) {
        float g = got[i], w = want[i];
        int ok;
        if (exact) ok = !memcmp(&g, &w, sizeof g) || (isnan(g) && isnan(w));
        else if (!isfinite(w) || !isfinite(g)) ok = (isnan(g) && isnan(w)) || g == w;
        else ok = fabs((double)g - w) <= tol.atol * scale + tol.rtol * fabs(w);
        if (isfinite(g) && isfinite(w) && fabs((double)g - w) > c->max_err) c->max_err = fabs((double)g - w);
        if (!ok && c->bad++ == 0) c->first_bad = i, c->got = g, c->want = w;
    }
    return c->bad == 0;
}

void st_cmp_merge(st_cmp *a, const st_cmp *b) {
    if (!a->bad && b->bad) a->first_bad = b->first_bad, a->got = b->got, a->want = b->want;
    a->n += b->n;
    a->bad += b->bad;
    if (b->max_err > a->max_err) a->max_err = b->max_err;
}

st_tol st_tol_for(sr_dtype dt, st_tol fp32, double ulps) {
    if (dt == SR_FLOAT32) return fp32;
    double ulp = dt == SR_BFLOAT16 ? 1.0 / 128 : 1.0 / 1024; /* relative spacing: 2^-7, 2^-10 */
    st_tol t = {ulps * ulp, ulps * ulp};
    if (fp32.rtol > t.rtol) t.rtol = fp32.rtol;
    if (fp32.atol > t.atol) t.atol = fp32.atol;
    return t;
}

float st_round(float x, sr_dtype dt) {
    if (dt == SR_BFLOAT16) return sr_bf16_to_f32(sr_f32_to_bf16(x));
    if (dt == SR_FLOAT16) return sr_f16_to_f32(sr_f32_to_f16(x));
    return x;
}
