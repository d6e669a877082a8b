/*
 * gen sample: picks the next token from a row of logits, as HF's generate() does: greedy (the
 * first largest logit) when temperature is 0, else logits / temperature, then top-k (keep the k
 * largest; 0 = off), then top-p (keep the fewest most likely tokens whose probabilities reach p;
 * 1 = off; the most likely is always kept), then one draw from what is left.
 *
 * Lifecycle: gen_sampler_init(seed, V) -> gen_sample() per token -> gen_sampler_free().  The
 * draws come from the sampler's own generator (splitmix64), so a seed gives the same tokens on
 * every machine and build.
 */
#ifndef GEN_SAMPLE_H
#define GEN_SAMPLE_H

#include <stdint.h>

/* The smallest temperature above 0 (greedy) taken: logits / temperature stays finite in double for
   every finite float logit (|logit| < 3.5e38), and below it sampling is greedy in all but name. */
#define GEN_MIN_TEMPERATURE 1e-30
#define GEN_MAX_TEMPERATURE 1e6

typedef struct gen_sampler {
    uint64_t state;
    double temperature;
    float top_p;
    int top_k;
    int V;                 /* logits per row */
    int allowed;           /* only ids < allowed are picked (the tokenizer's vocabulary) */
    struct gen_cand *cand; /* V candidates (scratch) */
    int bad;               /* after gen_sample returned -1: the id whose logit is not finite */
} gen_sampler;

/* 0, or -1 when out of memory.  temperature: 0 (greedy) or from GEN_MIN_TEMPERATURE to
   GEN_MAX_TEMPERATURE. */
int gen_sampler_init(gen_sampler *s, uint64_t seed, int V, int allowed, double temperature, int top_k, float top_p);
/* The next token, or -1 when a logit (of an id that may be picked) is NaN or infinite: s->bad. */
int32_t gen_sample(gen_sampler *s, const float *logits);
void gen_sampler_free(gen_sampler *s);

#endif
