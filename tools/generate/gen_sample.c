/* gen sample: greedy, temperature, top-k and top-p over a row of logits (see gen_sample.h). */
#include "gen_sample.h"

#include <math.h>
#include <stdlib.h>

typedef struct gen_cand {
    double logit; /* logit / temperature, in double: finite for every accepted temperature */
    int32_t id;
} gen_cand;

int gen_sampler_init(gen_sampler *s, uint64_t seed, int V, int allowed, double temperature, int top_k, float top_p) {
    s->state = seed;
    s->V = V;
    s->allowed = allowed < V ? allowed : V;
    s->temperature = temperature, s->top_k = top_k, s->top_p = top_p;
    s->cand = malloc((size_t)V * sizeof *s->cand);
    return s->cand ? 0 : -1;
}

void gen_sampler_free(gen_sampler *s) {
    free(s->cand);
    s->cand = NULL;
}

/* splitmix64 -> a double in [0, 1) */
static double uniform(gen_sampler *s) {
    uint64_t z = (s->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

/* larger logit first; equal logits: smaller id first (so top-k 1 is the greedy token) */
static int by_logit(const void *a, const void *b) {
    const gen_cand *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

int32_t gen_sample(gen_sampler *s, const float *logits) {
    const int n = s->allowed;
    for (int v = 0; v < n; v++)
        if (!isfinite(logits[v])) { /* NaN or inf weights (a diverged run): no token can be drawn */
            s->bad = v;
            return -1;
        }
    if (s->temperature <= 0.0) { /* greedy: the first largest */
        int32_t best = 0;
        for (int v = 1; v < n; v++)
            if (logits[v] > logits[best]) best = v;
        return best;
    }
    gen_cand *c = s->cand;
    for (int v = 0; v < n; v++) c[v].logit = (double)logits[v] / s->temperature, c[v].id = v;
    int keep = n;
    if ((s->top_k > 0 && s->top_k < n) || s->top_p < 1.0f) {
        qsort(c, (size_t)n, sizeof *c, by_logit);
        if (s->top_k > 0 && s->top_k < n) keep = s->top_k;
    }
    /* probabilities of the kept candidates, relative to the largest (exp(logit - max) <= 1: no
       overflow however small the temperature), in double: a sum over 50k terms */
    double mx = c[0].logit, sum = 0.0;
    for (int i = 1; i < keep; i++)
        if (c[i].logit > mx) mx = c[i].logit;
    for (int i = 0; i < keep; i++) sum += exp(c[i].logit - mx);
    if (s->top_p < 1.0f) { /* sorted: keep the fewest whose probabilities reach top_p */
        double cum = 0.0, total = sum;
        sum = 0.0;
        int k = 0;
        while (k < keep) {
            double p = exp(c[k].logit - mx);
            sum += p, k++;
            if ((cum += p / total) >= s->top_p) break;
        }
        keep = k;
    }
    double r = uniform(s) * sum;
    for (int i = 0; i < keep; i++) {
        r -= exp(c[i].logit - mx);
        if (r < 0.0) return c[i].id;
    }
    return c[keep - 1].id; /* rounding left r a hair above 0 */
}
