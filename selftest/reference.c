/* selftest's float64 references (see reference.h): each formula from its definition, in double. */
#include "reference.h"

#include <math.h>

#include "rng.h"

static const double PI = 3.14159265358979323846;

double st_ref_gelu(double x) { return 0.5 * x * (1.0 + tanh(sqrt(2.0 / PI) * (x + 0.044715 * x * x * x))); }

/* d/dx of 0.5 x (1 + tanh u(x)), u = k (x + c x^3): 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) u'(x) */
double st_ref_gelu_grad(double x) {
    double k = sqrt(2.0 / PI), c = 0.044715;
    double th = tanh(k * (x + c * x * x * x));
    return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * k * (1.0 + 3.0 * c * x * x);
}

void st_ref_layernorm_row(const float *x, const float *w, const float *b, int C, double *out, double *mean,
                          double *rstd) {
    double m = 0, var = 0;
    for (int i = 0; i < C; i++) m += x[i];
    m /= C;
    for (int i = 0; i < C; i++) var += (x[i] - m) * (x[i] - m);
    var /= C;
    double r = 1.0 / sqrt(var + 1e-5);
    for (int i = 0; i < C; i++) out[i] = (x[i] - m) * r * w[i] + b[i];
    *mean = m, *rstd = r;
}

/* With xh = (x - mean) r and out = xh w + b: dxh = dout w, and through mean and r (both functions
   of the whole row): dx = r (dxh - mean(dxh) - xh mean(dxh xh)). */
void st_ref_layernorm_backward_row(const float *dout, const float *x, const float *w, int C, double *dx, double *dw,
                                   double *db) {
    double m = 0, var = 0;
    for (int i = 0; i < C; i++) m += x[i];
    m /= C;
    for (int i = 0; i < C; i++) var += (x[i] - m) * (x[i] - m);
    var /= C;
    double r = 1.0 / sqrt(var + 1e-5), s1 = 0, s2 = 0;
    for (int i = 0; i < C; i++) {
        double xh = (x[i] - m) * r, dxh = (double)dout[i] * w[i];
        s1 += dxh, s2 += dxh * xh;
        dw[i] += dout[i] * xh;
        db[i] += dout[i];
    }
    s1 /= C, s2 /= C;
    for (int i = 0; i < C; i++) dx[i] = r * ((double)dout[i] * w[i] - s1 - (x[i] - m) * r * s2);
}

/* closest power of two p <= nh: slopes (2^(-8/p))^k, k = 1..p; past p, (2^(-4/p))^k for odd k */
double st_ref_alibi_slope(int h, int nh) {
    double p = pow(2.0, floor(log2((double)nh)));
    if (h < p) return pow(pow(2.0, -8.0 / p), h + 1);
    return pow(pow(2.0, -4.0 / p), 2 * (h - p) + 1);
}

void st_ref_softmax_row(const float *s, int len, double scale, double slope, double *p) {
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < len; j++) mx = fmax(mx, scale * s[j] + slope * j);
    for (int j = 0; j < len; j++) sum += p[j] = exp(scale * s[j] + slope * j - mx);
    for (int j = 0; j < len; j++) p[j] /= sum;
}

void st_ref_softmax_backward_row(const float *p, const float *dp, int len, double scale, double *ds) {
    double dot = 0;
    for (int j = 0; j < len; j++) dot += (double)p[j] * dp[j];
    for (int j = 0; j < len; j++) ds[j] = scale * p[j] * (dp[j] - dot);
}

double st_ref_cross_entropy_row(const float *l, int V, int y, double dscale, double *dl) {
    double mx = -INFINITY, sum = 0;
    for (int v = 0; v < V; v++) mx = fmax(mx, l[v]);
    for (int v = 0; v < V; v++) sum += exp(l[v] - mx);
    for (int v = 0; v < V; v++) dl[v] = (exp(l[v] - mx) / sum - (v == y)) * dscale;
    return log(sum) + mx - l[y];
}

/* lora.h's m(z) is splitmix64's output for state z, which is selftest's own generator (rng.h) */
static uint64_t mix(uint64_t z) {
    st_rng g = {z};
    return st_next(&g);
}

double st_ref_drop_factor(uint64_t sample_key, int position, uint32_t site, int f, uint64_t threshold,
                          double keep_scale) {
    uint64_t row = mix(mix(sample_key ^ (uint64_t)position) ^ site);
    return (mix(row ^ (uint64_t)f) >> 11) < threshold ? 0.0 : keep_scale;
}

double st_ref_adamw(double *p, double g, double *m, double *v, double lr, double b1, double b2, double eps, double wd,
                    int t) {
    double mag = fabs(*p), mterms = b1 * fabs(*m) + (1 - b1) * fabs(g);
    *p -= lr * wd * *p; /* decoupled: on the weight, not through the gradient */
    *m = b1 * *m + (1 - b1) * g;
    *v = b2 * *v + (1 - b2) * g * g;
    double mhat = *m / (1 - pow(b1, t)), vhat = *v / (1 - pow(b2, t));
    *p -= lr * mhat / (sqrt(vhat) + eps);
    return mag + lr * mterms / (1 - pow(b1, t)) / (sqrt(vhat) + eps);
}
