/* mlp: a model task built outside shardrun's tree (CMake + find_package(shardrun)).  A 2-layer
   perceptron, y = W2 tanh(W1 x + b1) + b2, learns a fixed teacher function of 16 inputs by mean
   squared error; the task describes its two layers and computes them, and shardrun's FSDP engine
   and trainer shard, train, evaluate and checkpoint it.  fp32 on the CPU, plain loops.
   [task] keys: samples (training samples, default 1024), hidden (width, default 64). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shardrun/model.h>
#include <shardrun/task.h>

enum { IN = 16, OUT = 4, EVAL_SAMPLES = 128 };

typedef struct mlp {
    int hidden;
    int64_t samples;
    int n;          /* samples in the current micro-batch */
    float *x, *t;   /* its inputs [n][IN] and targets [n][OUT] */
    float *h, *y;   /* fc1's output [n][hidden] (after tanh) and fc2's [n][OUT] */
    float *dy, *dh; /* the loss's gradient of y, and fc2's of h */
} mlp;

/* Sample i's inputs, from a counter-based hash (the same on every rank), and its target. */
static float unit(uint64_t i, int k) {
    uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull + (uint64_t)k * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 31)) * 0x94D049BB133111EBull;
    return (float)((double)(z >> 11) / 9007199254740992.0) * 2.0f - 1.0f;
}
static void sample(int64_t i, float *x, float *t) {
    for (int k = 0; k < IN; k++) x[k] = unit((uint64_t)i, k);
    for (int o = 0; o < OUT; o++) {
        double s = 0;
        for (int k = 0; k < IN; k++) s += x[k] * sin(0.3 * (k + 1) * (o + 1));
        t[o] = (float)tanh(s);
    }
}

static int64_t num_samples(void *state) { return ((mlp *)state)->samples; }
static int64_t num_eval(void *state) {
    (void)state;
    return EVAL_SAMPLES;
}

/* The micro-batch of these samples (offset: where the index space starts) into the buffers, which
   grow to the batch's size. */
static int load(mlp *m, const int64_t *idx, int n, int64_t offset, long long *tokens) {
    float **bufs[] = {&m->x, &m->t, &m->y, &m->dy, &m->h, &m->dh};
    size_t width[] = {IN, OUT, OUT, OUT, (size_t)m->hidden, (size_t)m->hidden};
    for (int b = 0; b < 6; b++) {
        float *p = realloc(*bufs[b], sizeof(float) * (size_t)n * width[b]);
        if (!p) return -1;
        *bufs[b] = p;
    }
    for (int s = 0; s < n; s++) sample(idx[s] + offset, m->x + s * IN, m->t + s * OUT);
    m->n = n;
    *tokens = n;
    return 0;
}
static int batch(void *state, const int64_t *idx, int n, long long *tokens) { return load(state, idx, n, 0, tokens); }
/* held-out samples: indices past the training set's */
static int eval_batch(void *state, const int64_t *idx, int n, long long *tokens) {
    mlp *m = state;
    return load(m, idx, n, m->samples, tokens);
}

/* out[n][o] = in[n][i] . W[o][i] + b[o] */
static void linear(const float *in, const float *w, const float *b, float *out, int n, int ni, int no) {
    for (int s = 0; s < n; s++)
        for (int o = 0; o < no; o++) {
            float acc = b[o];
            for (int i = 0; i < ni; i++) acc += in[s * ni + i] * w[o * ni + i];
            out[s * no + o] = acc;
        }
}
/* gw[o][i] += sum_s d[s][o] in[s][i]; gb[o] += sum_s d[s][o]; din[s][i] = sum_o d[s][o] W[o][i] */
static void linear_back(const float *in, const float *w, const float *d, float *gw, float *gb, float *din, int n,
                        int ni, int no) {
    for (int s = 0; s < n; s++)
        for (int o = 0; o < no; o++) {
            float g = d[s * no + o];
            if (gb) gb[o] += g; /* NULL: a frozen parameter ([task] freeze) */
            for (int i = 0; gw && i < ni; i++) gw[o * ni + i] += g * in[s * ni + i];
        }
    if (din)
        for (int s = 0; s < n; s++)
            for (int i = 0; i < ni; i++) {
                float acc = 0;
                for (int o = 0; o < no; o++) acc += d[s * no + o] * w[o * ni + i];
                din[s * ni + i] = acc;
            }
}

static int forward(void *state, const sr_module_call *c) {
    mlp *m = state;
    const float *w = c->params[0], *b = c->params[1];
    if (c->module == 0) {
        linear(m->x, w, b, m->h, m->n, IN, m->hidden);
        for (int i = 0; i < m->n * m->hidden; i++) m->h[i] = tanhf(m->h[i]);
    } else {
        linear(m->h, w, b, m->y, m->n, m->hidden, OUT);
    }
    return 0;
}

static int loss(void *state, const sr_module_call *c, double *out) {
    mlp *m = state;
    double sum = 0;
    int count = m->n * OUT;
    for (int i = 0; i < count; i++) {
        double e = (double)m->y[i] - m->t[i];
        sum += e * e;
        m->dy[i] = (float)(2.0 * e / count) * c->grad_scale;
    }
    *out = sum / count;
    return 0;
}

static int backward(void *state, const sr_module_call *c) {
    mlp *m = state;
    const float *w = c->params[0];
    float *gw = c->grads[0], *gb = c->grads[1];
    if (c->module == 1) {
        linear_back(m->h, w, m->dy, gw, gb, m->dh, m->n, m->hidden, OUT);
        for (int i = 0; i < m->n * m->hidden; i++) m->dh[i] *= 1.0f - m->h[i] * m->h[i]; /* tanh' */
    } else {
        linear_back(m->x, w, m->dh, gw, gb, NULL, m->n, IN, m->hidden);
    }
    return 0;
}

static void *create(sr_ctx *ctx, sr_model *model) {
    long long samples, hidden;
    if (sr_config_int(ctx, "samples", 1024, &samples) != 0 || sr_config_int(ctx, "hidden", 64, &hidden) != 0 ||
        samples < 1 || hidden < 1 || hidden > 65536) {
        fprintf(stderr, "mlp: [task] samples and hidden (1..65536) must be positive integers\n");
        return NULL;
    }
    mlp *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->hidden = (int)hidden, m->samples = samples;
    int64_t w1[2] = {hidden, IN}, b1[1] = {hidden}, w2[2] = {OUT, hidden}, b2[1] = {OUT};
    int bad = sr_model_module(model, "fc1", "Linear") < 0 ||
              sr_model_param(model, "fc1.weight", 2, w1, SR_UNIFORM(1.0f / sqrtf(IN)), 0) ||
              sr_model_param(model, "fc1.bias", 1, b1, SR_ZEROS, SR_PARAM_NO_DECAY) ||
              sr_model_module(model, "fc2", "Linear") < 0 ||
              sr_model_param(model, "fc2.weight", 2, w2, SR_UNIFORM(1.0f / sqrtf((float)hidden)), 0) ||
              sr_model_param(model, "fc2.bias", 1, b2, SR_ZEROS, SR_PARAM_NO_DECAY);
    static const sr_model_eval eval = {sizeof(sr_model_eval), num_eval, eval_batch};
    if (bad || sr_model_eval_data(model, &eval) != 0) {
        free(m);
        return NULL;
    }
    return m;
}

static void destroy(void *state) {
    mlp *m = state;
    free(m->x), free(m->t), free(m->h), free(m->y), free(m->dy), free(m->dh), free(m);
}

static const sr_model_ops ops = {
    1u << SR_FLOAT32, 1u << SR_DEVICE_CPU, create, destroy, num_samples, batch, forward, loss, backward};
SR_MODEL_TASK("mlp", ops);
