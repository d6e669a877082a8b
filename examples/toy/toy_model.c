/* toy_model: a small transformer-like model task for the FSDP engine's tests (parity across world
   sizes and sharding strategies, mixed precision, activation checkpointing, fp16 overflow handling,
   memory accounting).  CPU only, plain loops, everything computed in float.

   Modules in forward order (B samples of T tokens, C = dim, H = 4*dim, V = vocab):
     embed      Embedding   embed.weight [V,C], embed.pos [T,C]          x = wte[tok] + wpe[t]
     blocks.i   MLPBlock    (even i) x + fc2(gelu(fc1(ln(x))))
                MixerBlock  (odd i)  x + proj(mix(ln(x))), mix: causal token mixing [T,T]
     norm_f     LayerNorm
     head       LMHead      logits = h . embed.weight^T + head.bias (head.weight tied to embed.weight)

   [task] keys: vocab (32), dim (16), seq (8), blocks (6), samples (256), data_seed (1234),
   eval_samples (0: no eval data; else held-out samples, made like the training ones from the
   indices after them), inject_overflow_step (-1 = never), inject_overflow_rank (0).

   Reports at destroy: toy_forward_calls (forwards with recompute == 0), toy_recompute_calls,
   toy_backward_calls, toy_overflow_injections. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardrun/half.h"
#include "shardrun/model.h"

enum { K_EMBED, K_MLP, K_MIXER, K_NORM, K_HEAD };
#define MAXP 6 /* most parameters of one module (MLPBlock) */

typedef struct toy_module {
    int kind;
    int np;
    size_t numel[MAXP];
} toy_module;

typedef struct toy {
    sr_ctx *ctx;
    int V, C, T, L, H;
    long long nsamples, neval, data_seed, inject_step, inject_rank;
    int nmod;
    toy_module *mods;
    size_t pmax; /* most parameter elements of one module */

    /* the micro-batch */
    int B, Bcap; /* samples now; samples the buffers below are sized for */
    int *inputs, *labels;
    /* activations: out[m] is module m's output (B*T*C; the head's: B*T*V logits), i.e. module
       m+1's input, always kept.  Intermediates (LN outputs, fc1 pre-activations, ...) go to
       saved[m] when the engine asks to save them.  A checkpointed module's forward writes them to
       `scratch` (overwritten by the next module: dropped); its recompute brings them back in
       saved[m], which its backward then frees. */
    float **out;
    float **saved;
    float *scratch;
    int *have;              /* per module: 0 no intermediates, 1 saved by forward, 2 recomputed */
    float *dlogits;         /* d(loss)/d(logits) * grad_scale, from loss() */
    float *dy, *dx;         /* gradient w.r.t. the current module's output / input (B*T*C) */
    float *dtmp;            /* backward temporaries (B*T*(H+C)) */
    float *check;           /* a recomputed output, compared with the stored one */
    float *pbuf, *gbuf;     /* float copies of one module's params; its gradient deltas */
    int next_fwd, next_bwd; /* call-order checks: what the engine must call next */

    long long nforward, nrecompute, nbackward, ninject;
} toy;

/* ---- element types ------------------------------------------------------------------------ */

static float load_el(const void *p, size_t i, sr_dtype dt) {
    if (dt == SR_BFLOAT16) return sr_bf16_to_f32(((const uint16_t *)p)[i]);
    if (dt == SR_FLOAT16) return sr_f16_to_f32(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

static void store_el(void *p, size_t i, sr_dtype dt, float v) {
    if (dt == SR_BFLOAT16) ((uint16_t *)p)[i] = sr_f32_to_bf16(v);
    else if (dt == SR_FLOAT16) ((uint16_t *)p)[i] = sr_f32_to_f16(v);
    else ((float *)p)[i] = v;
}

/* Low-precision compute stores its activations in that precision: round-trip them. */
static void round_to(float *x, size_t n, sr_dtype dt) {
    if (dt == SR_BFLOAT16)
        for (size_t i = 0; i < n; i++) x[i] = sr_bf16_to_f32(sr_f32_to_bf16(x[i]));
    else if (dt == SR_FLOAT16)
        for (size_t i = 0; i < n; i++) x[i] = sr_f16_to_f32(sr_f32_to_f16(x[i]));
}

/* ---- layers: forward ------------------------------------------------------------------------ */

static void layernorm_forward(float *out, float *mean, float *rstd, const float *x, const float *w, const float *b,
                              int N, int C) {
    for (int n = 0; n < N; n++) {
        const float *xi = x + (size_t)n * C;
        float m = 0.0f, v = 0.0f;
        for (int c = 0; c < C; c++) m += xi[c];
        m /= C;
        for (int c = 0; c < C; c++) v += (xi[c] - m) * (xi[c] - m);
        float s = 1.0f / sqrtf(v / C + 1e-5f);
        for (int c = 0; c < C; c++) out[(size_t)n * C + c] = (xi[c] - m) * s * w[c] + b[c];
        mean[n] = m;
        rstd[n] = s;
    }
}

/* out[N,O] = x[N,I] . w[O,I]^T + b (torch Linear layout) */
static void linear_forward(float *out, const float *x, const float *w, const float *b, int N, int I, int O) {
    for (int n = 0; n < N; n++) {
        const float *xi = x + (size_t)n * I;
        for (int o = 0; o < O; o++) {
            const float *wo = w + (size_t)o * I;
            float s = b ? b[o] : 0.0f;
            for (int i = 0; i < I; i++) s += wo[i] * xi[i];
            out[(size_t)n * O + o] = s;
        }
    }
}

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

static void gelu_forward(float *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        out[i] = 0.5f * v * (1.0f + tanhf(GELU_K * (v + 0.044715f * v * v * v)));
    }
}

/* Causal token mixing, per channel: out[b,t,:] = sum_{j<=t} W[t,j] x[b,j,:] (W's upper triangle unused) */
static void mix_forward(float *out, const float *x, const float *W, int B, int T, int C) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *o = out + ((size_t)b * T + t) * C;
            for (int c = 0; c < C; c++) o[c] = 0.0f;
            for (int j = 0; j <= t; j++) {
                const float *xj = x + ((size_t)b * T + j) * C;
                float w = W[(size_t)t * T + j];
                for (int c = 0; c < C; c++) o[c] += w * xj[c];
            }
        }
}

/* ---- layers: backward (all ADD into dx and the parameter gradients) -------------------------- */

static void layernorm_backward(float *dx, float *dw, float *db, const float *dout, const float *x, const float *mean,
                               const float *rstd, const float *w, int N, int C) {
    for (int n = 0; n < N; n++) {
        const float *xi = x + (size_t)n * C, *di = dout + (size_t)n * C;
        float m = mean[n], s = rstd[n], dmean = 0.0f, dnorm_norm = 0.0f;
        for (int c = 0; c < C; c++) {
            float norm = (xi[c] - m) * s, dnorm = di[c] * w[c];
            dmean += dnorm;
            dnorm_norm += dnorm * norm;
        }
        dmean /= C;
        dnorm_norm /= C;
        for (int c = 0; c < C; c++) {
            float norm = (xi[c] - m) * s, dnorm = di[c] * w[c];
            dw[c] += di[c] * norm;
            db[c] += di[c];
            dx[(size_t)n * C + c] += (dnorm - dmean - norm * dnorm_norm) * s;
        }
    }
}

static void linear_backward(float *dx, float *dw, float *db, const float *dout, const float *x, const float *w, int N,
                            int I, int O) {
    for (int n = 0; n < N; n++) {
        const float *xi = x + (size_t)n * I, *d = dout + (size_t)n * O;
        float *dxi = dx ? dx + (size_t)n * I : NULL;
        for (int o = 0; o < O; o++) {
            float g = d[o];
            float *dwo = dw + (size_t)o * I;
            const float *wo = w + (size_t)o * I;
            for (int i = 0; i < I; i++) dwo[i] += g * xi[i];
            if (dxi)
                for (int i = 0; i < I; i++) dxi[i] += g * wo[i];
            if (db) db[o] += g;
        }
    }
}

/* dx = gelu'(x) * dout (overwrites; dx may alias dout) */
static void gelu_backward(float *dx, const float *x, const float *dout, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float v = x[i], u = GELU_K * (v + 0.044715f * v * v * v), th = tanhf(u);
        float sech2 = 1.0f - th * th;
        float grad = 0.5f * (1.0f + th) + 0.5f * v * sech2 * GELU_K * (1.0f + 3.0f * 0.044715f * v * v);
        dx[i] = grad * dout[i];
    }
}

static void mix_backward(float *dx, float *dW, const float *dout, const float *x, const float *W, int B, int T, int C) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *d = dout + ((size_t)b * T + t) * C;
            for (int j = 0; j <= t; j++) {
                const float *xj = x + ((size_t)b * T + j) * C;
                float *dxj = dx + ((size_t)b * T + j) * C;
                float w = W[(size_t)t * T + j], s = 0.0f;
                for (int c = 0; c < C; c++) {
                    s += d[c] * xj[c];
                    dxj[c] += w * d[c];
                }
                dW[(size_t)t * T + j] += s;
            }
        }
}

/* ---- data: a rule per sample, x_{t+1} = (a x_t + b) mod V, from (data_seed, index) only ---------- */

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void make_sample(const toy *st, int64_t index, int *seq /* T+1 */) {
    static const int mults[3] = {1, 3, 5};
    uint64_t s = (uint64_t)st->data_seed * 0xD1B54A32D192ED69ull ^ (uint64_t)index;
    splitmix64(&s);
    int x = (int)(splitmix64(&s) % (uint64_t)st->V);
    int a = mults[splitmix64(&s) % 3], b = 1 + (int)(splitmix64(&s) % 3);
    for (int t = 0; t <= st->T; t++) {
        seq[t] = x;
        x = (a * x + b) % st->V;
    }
}

/* ---- state ---------------------------------------------------------------------------------- */

/* floats of intermediates per token, by kind */
static size_t inter_per_token(const toy *st, int kind) {
    switch (kind) {
    case K_MLP: return (size_t)st->C + 2 + 2 * (size_t)st->H; /* ln, mean, rstd, pre, act */
    case K_MIXER: return 2 * (size_t)st->C + 2;               /* ln, mean, rstd, mix */
    case K_NORM: return 2;                                    /* mean, rstd */
    default: return 0;
    }
}

static void free_acts(toy *st) {
    for (int m = 0; st->out && m < st->nmod; m++) {
        free(st->out[m]);
        free(st->saved[m]);
        st->out[m] = st->saved[m] = NULL;
        st->have[m] = 0;
    }
    float **bufs[] = {&st->scratch, &st->dlogits, &st->dy, &st->dx, &st->dtmp, &st->check};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        free(*bufs[i]);
        *bufs[i] = NULL;
    }
    free(st->inputs);
    free(st->labels);
    st->inputs = st->labels = NULL;
    st->Bcap = 0;
}

static void free_state(toy *st) {
    free_acts(st);
    free(st->out);
    free(st->saved);
    free(st->have);
    free(st->mods);
    free(st->pbuf);
    free(st->gbuf);
    free(st);
}

static void toy_destroy(void *state) {
    toy *st = state;
    if (!st) return;
    sr_report_int(st->ctx, "toy_forward_calls", st->nforward);
    sr_report_int(st->ctx, "toy_recompute_calls", st->nrecompute);
    sr_report_int(st->ctx, "toy_backward_calls", st->nbackward);
    sr_report_int(st->ctx, "toy_overflow_injections", st->ninject);
    free_state(st);
}

/* Declares one parameter of the last module and records its size. */
static int param(toy *st, sr_model *m, const char *name, int ndim, int64_t d0, int64_t d1, sr_init init,
                 unsigned flags) {
    toy_module *mod = &st->mods[st->nmod - 1];
    int64_t shape[2] = {d0, d1};
    if (sr_model_param(m, name, ndim, shape, init, flags) != 0) return -1;
    mod->numel[mod->np++] = (size_t)d0 * (size_t)(ndim == 2 ? d1 : 1);
    return 0;
}

static int module(toy *st, sr_model *m, const char *name, const char *cls, int kind) {
    if (sr_model_module(m, name, cls) != st->nmod) return -1;
    st->mods[st->nmod++] = (toy_module){.kind = kind};
    return 0;
}

static int config_int(sr_ctx *ctx, const char *key, long long def, long long lo, long long hi, long long *out) {
    if (sr_config_int(ctx, key, def, out) != 0) return -1;
    if (*out < lo || *out > hi) {
        fprintf(stderr, "toy_model: [task] %s = %lld is out of range [%lld, %lld]\n", key, *out, lo, hi);
        return -1;
    }
    return 0;
}

static int64_t toy_eval_num_samples(void *state);
static int toy_eval_batch(void *state, const int64_t *samples, int n, long long *tokens);
#ifndef TOY_EVAL_SIZE /* tests/tasks/eval_*.c: a struct from a newer or a broken header */
#define TOY_EVAL_SIZE sizeof(sr_model_eval)
#endif
static const sr_model_eval toy_eval = {
    .struct_size = TOY_EVAL_SIZE, .num_samples = toy_eval_num_samples, .batch = toy_eval_batch, .cross_entropy = 1};

static void *toy_create(sr_ctx *ctx, sr_model *model) {
    toy *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    st->ctx = ctx;
    long long V, C, T, L;
    if (config_int(ctx, "vocab", 32, 2, 1 << 20, &V) || config_int(ctx, "dim", 16, 1, 1 << 14, &C) ||
        config_int(ctx, "seq", 8, 1, 1 << 14, &T) || config_int(ctx, "blocks", 6, 0, 10000, &L) ||
        config_int(ctx, "samples", 256, 1, 1ll << 40, &st->nsamples) ||
        config_int(ctx, "eval_samples", 0, 0, 1ll << 40, &st->neval) ||
        sr_config_int(ctx, "data_seed", 1234, &st->data_seed) ||
        sr_config_int(ctx, "inject_overflow_step", -1, &st->inject_step) ||
        sr_config_int(ctx, "inject_overflow_rank", 0, &st->inject_rank))
        goto fail;
    st->V = (int)V, st->C = (int)C, st->T = (int)T, st->L = (int)L, st->H = 4 * (int)C;
    int nmod = st->L + 3;
    st->mods = calloc((size_t)nmod, sizeof *st->mods);
    st->out = calloc((size_t)nmod, sizeof *st->out);
    st->saved = calloc((size_t)nmod, sizeof *st->saved);
    st->have = calloc((size_t)nmod, sizeof *st->have);
    if (!st->mods || !st->out || !st->saved || !st->have) {
        free(st->out); /* free_acts walks out[] only when saved[] and have[] exist too */
        st->out = NULL;
        goto fail;
    }

    const unsigned ND = SR_PARAM_NO_DECAY;
    char name[96], pname[160];
    if (module(st, model, "embed", "Embedding", K_EMBED) ||
        param(st, model, "embed.weight", 2, V, C, SR_NORMAL(0.02f), 0) ||
        param(st, model, "embed.pos", 2, T, C, SR_NORMAL(0.02f), 0))
        goto fail;
#define P(suffix, ...) (snprintf(pname, sizeof pname, "%s." suffix, name), param(st, model, pname, __VA_ARGS__))
    for (int i = 0; i < st->L; i++) {
        snprintf(name, sizeof name, "blocks.%d", i);
        int mlp = i % 2 == 0;
        if (module(st, model, name, mlp ? "MLPBlock" : "MixerBlock", mlp ? K_MLP : K_MIXER) ||
            P("ln.weight", 1, C, 0, SR_ONES, ND) || P("ln.bias", 1, C, 0, SR_ZEROS, ND))
            goto fail;
        if (mlp ? (P("fc1.weight", 2, 4 * C, C, SR_NORMAL(0.02f), 0) || P("fc1.bias", 1, 4 * C, 0, SR_ZEROS, ND) ||
                   P("fc2.weight", 2, C, 4 * C, SR_NORMAL(0.02f), 0) || P("fc2.bias", 1, C, 0, SR_ZEROS, ND))
                : (P("mix.weight", 2, T, T, SR_NORMAL(0.1f), 0) || P("proj.weight", 2, C, C, SR_NORMAL(0.02f), 0) ||
                   P("proj.bias", 1, C, 0, SR_ZEROS, ND)))
            goto fail;
    }
#undef P
    if (module(st, model, "norm_f", "LayerNorm", K_NORM) || param(st, model, "norm_f.weight", 1, C, 0, SR_ONES, ND) ||
        param(st, model, "norm_f.bias", 1, C, 0, SR_ZEROS, ND) || module(st, model, "head", "LMHead", K_HEAD) ||
        sr_model_tie(model, "head.weight", "embed.weight") != 0)
        goto fail;
    st->mods[st->nmod - 1].numel[st->mods[st->nmod - 1].np++] = (size_t)V * (size_t)C; /* the tied weight */
    if (param(st, model, "head.bias", 1, V, 0, SR_ZEROS, ND)) goto fail;

    for (int m = 0; m < st->nmod; m++) {
        size_t n = 0;
        for (int i = 0; i < st->mods[m].np; i++) n += st->mods[m].numel[i];
        if (n > st->pmax) st->pmax = n;
    }
    if (st->neval > 0 && sr_model_eval_data(model, &toy_eval) != 0) goto fail;
    st->pbuf = malloc(st->pmax * sizeof(float));
    st->gbuf = malloc(st->pmax * sizeof(float));
    if (!st->pbuf || !st->gbuf) goto fail;
    return st;
fail:
    fprintf(stderr, "toy_model: create failed\n");
    free_state(st);
    return NULL;
}

static int64_t toy_num_samples(void *state) { return ((toy *)state)->nsamples; }

/* Loads samples [first + samples[b]] of the data stream: training samples are indices
   0..nsamples-1, eval samples the next neval. */
static int toy_load(toy *st, const int64_t *samples, int n, long long first, long long count, long long *tokens) {
    const int T = st->T;
    if (n <= 0) {
        fprintf(stderr, "toy_model: batch of %d samples\n", n);
        return -1;
    }
    if (n > st->Bcap) { /* grow to the largest batch seen; everything else is allocated lazily */
        free_acts(st);
        size_t bt = (size_t)n * T, cmax = (size_t)(st->V > st->C ? st->V : st->C);
        st->inputs = malloc(bt * sizeof(int));
        st->labels = malloc(bt * sizeof(int));
        st->dlogits = malloc(bt * st->V * sizeof(float));
        st->dy = malloc(bt * st->C * sizeof(float));
        st->dx = malloc(bt * st->C * sizeof(float));
        st->dtmp = malloc(bt * ((size_t)st->H + st->C) * sizeof(float));
        st->check = malloc(bt * cmax * sizeof(float));
        if (!st->inputs || !st->labels || !st->dlogits || !st->dy || !st->dx || !st->dtmp || !st->check) {
            free_acts(st);
            fprintf(stderr, "toy_model: out of memory for a batch of %d\n", n);
            return -1;
        }
        st->Bcap = n;
    }
    int *seq = malloc(((size_t)T + 1) * sizeof(int));
    if (!seq) return -1;
    for (int b = 0; b < n; b++) {
        if (samples[b] < 0 || samples[b] >= count) {
            fprintf(stderr, "toy_model: %ssample index %lld out of range [0, %lld)\n", first ? "eval " : "",
                    (long long)samples[b], count);
            free(seq);
            return -1;
        }
        make_sample(st, first + samples[b], seq);
        memcpy(st->inputs + (size_t)b * T, seq, (size_t)T * sizeof(int));
        memcpy(st->labels + (size_t)b * T, seq + 1, (size_t)T * sizeof(int));
    }
    free(seq);
    st->B = n;
    for (int m = 0; m < st->nmod; m++) st->have[m] = 0;
    st->next_fwd = 0;
    st->next_bwd = -1;
    *tokens = (long long)n * T; /* every token is predicted: the loss is their mean */
    return 0;
}

static int toy_batch(void *state, const int64_t *samples, int n, long long *tokens) {
    toy *st = state;
    return toy_load(st, samples, n, 0, st->nsamples, tokens);
}

static int64_t toy_eval_num_samples(void *state) { return ((toy *)state)->neval; }

static int toy_eval_batch(void *state, const int64_t *samples, int n, long long *tokens) {
    toy *st = state;
    return toy_load(st, samples, n, st->nsamples, st->neval, tokens);
}

/* Checks what every callback needs and makes float views of the module's parameters in P
   (fp32 params are used in place). */
static int enter(toy *st, const sr_module_call *call, const char *what, float **P) {
    if (call->module < 0 || call->module >= st->nmod) {
        fprintf(stderr, "toy_model: %s of module %d, the model has %d\n", what, call->module, st->nmod);
        return -1;
    }
    const toy_module *mod = &st->mods[call->module];
    if (call->device != SR_DEVICE_CPU) {
        fprintf(stderr, "toy_model: %s of %s: only the cpu device is supported\n", what, call->name);
        return -1;
    }
    if (call->dtype != SR_FLOAT32 && call->dtype != SR_BFLOAT16 && call->dtype != SR_FLOAT16) {
        fprintf(stderr, "toy_model: %s of %s: unsupported dtype %d\n", what, call->name, (int)call->dtype);
        return -1;
    }
    if (call->nparams != mod->np) {
        fprintf(stderr, "toy_model: %s of %s: %d params, expected %d\n", what, call->name, call->nparams, mod->np);
        return -1;
    }
    if (st->Bcap == 0 || call->batch_size != st->B) {
        fprintf(stderr, "toy_model: %s of %s: batch_size %d, but batch() loaded %d samples\n", what, call->name,
                call->batch_size, st->B);
        return -1;
    }
    float *buf = st->pbuf;
    for (int i = 0; i < mod->np; i++) {
        if (call->dtype == SR_FLOAT32) {
            P[i] = call->params[i];
            continue;
        }
        P[i] = buf;
        for (size_t k = 0; k < mod->numel[i]; k++) buf[k] = load_el(call->params[i], k, call->dtype);
        buf += mod->numel[i];
    }
    return 0;
}

/* Module m's forward from its input x into out, intermediates into I. */
static void module_forward(toy *st, int m, const float *const *P, const float *x, float *out, float *I) {
    const int B = st->B, T = st->T, C = st->C, H = st->H, V = st->V, N = B * T;
    const size_t NC = (size_t)N * C;
    switch (st->mods[m].kind) {
    case K_EMBED:
        for (int n = 0; n < N; n++)
            for (int c = 0; c < C; c++)
                out[(size_t)n * C + c] = P[0][(size_t)st->inputs[n] * C + c] + P[1][(size_t)(n % T) * C + c];
        break;
    case K_MLP: { /* P: ln.w ln.b fc1.w fc1.b fc2.w fc2.b */
        float *ln = I, *mean = ln + NC, *rstd = mean + N, *pre = rstd + N, *act = pre + (size_t)N * H;
        layernorm_forward(ln, mean, rstd, x, P[0], P[1], N, C);
        linear_forward(pre, ln, P[2], P[3], N, C, H);
        gelu_forward(act, pre, (size_t)N * H);
        linear_forward(out, act, P[4], P[5], N, H, C);
        for (size_t i = 0; i < NC; i++) out[i] += x[i];
        break;
    }
    case K_MIXER: { /* P: ln.w ln.b mix.w proj.w proj.b */
        float *ln = I, *mean = ln + NC, *rstd = mean + N, *mix = rstd + N;
        layernorm_forward(ln, mean, rstd, x, P[0], P[1], N, C);
        mix_forward(mix, ln, P[2], B, T, C);
        linear_forward(out, mix, P[3], P[4], N, C, C);
        for (size_t i = 0; i < NC; i++) out[i] += x[i];
        break;
    }
    case K_NORM: layernorm_forward(out, I, I + N, x, P[0], P[1], N, C); break;
    case K_HEAD: /* P: head.weight (= embed.weight, [V,C]), head.bias */
        linear_forward(out, x, P[0], P[1], N, C, V);
        break;
    }
}

/* floats of a module's output per token */
static size_t out_width(const toy *st, int m) { return (size_t)(st->mods[m].kind == K_HEAD ? st->V : st->C); }

static int toy_forward(void *state, const sr_module_call *call) {
    toy *st = state;
    float *P[MAXP];
    if (enter(st, call, "forward", P) != 0) return -1;
    const int m = call->module;
    /* A forward of module 0 starts a new pass over the loaded batch.  Recomputes come after the
       loss, for modules whose backward is still to come: one right before each backward, or a
       whole wrap unit's in forward order before the unit's backward. */
    if (call->recompute ? st->next_bwd < 0 || m > st->next_bwd : m != st->next_fwd && m != 0) {
        fprintf(stderr, "toy_model: %s of %s out of order (expected %s %d)\n",
                call->recompute ? "recompute" : "forward", call->name,
                call->recompute ? "after the loss, a module <=" : "module",
                call->recompute ? st->next_bwd : st->next_fwd);
        return -1;
    }
    /* buffers are sized for the largest batch (Bcap) */
    const size_t cap = (size_t)st->Bcap * st->T, per = inter_per_token(st, st->mods[m].kind);
    /* A recompute's intermediates are kept whatever save_activations says: the backward is next. */
    const int keep = call->save_activations || call->recompute;
    float *I = NULL;
    if (per && keep) {
        if (!st->saved[m] && !(st->saved[m] = malloc(cap * per * sizeof(float)))) return -1;
        I = st->saved[m];
    } else if (per) {
        if (!st->scratch && !(st->scratch = malloc(cap * inter_per_token(st, K_MLP) * sizeof(float)))) return -1;
        I = st->scratch;
    }
    if (!st->out[m] && !(st->out[m] = malloc(cap * out_width(st, m) * sizeof(float)))) return -1;
    const size_t nout = (size_t)st->B * st->T * out_width(st, m);
    const float *x = m > 0 ? st->out[m - 1] : NULL;
    /* A recompute must reproduce the forward bit for bit (same gathered params, same input):
       compute into `check` and compare, which catches an engine handing different parameters. */
    float *out = call->recompute ? st->check : st->out[m];
    module_forward(st, m, (const float *const *)P, x, out, I);
    round_to(out, nout, call->dtype);
    st->have[m] = !per || !keep ? 0 : call->recompute ? 2 : 1;
    if (call->recompute) {
        st->nrecompute++;
        if (memcmp(out, st->out[m], nout * sizeof(float)) != 0) {
            fprintf(stderr,
                    "toy_model: recomputed output of %s differs from its forward output "
                    "(parameters or input changed in between)\n",
                    call->name);
            return -1;
        }
    } else {
        st->nforward++;
        st->next_fwd = m + 1;
        st->next_bwd = -1; /* no backward before the loss */
    }
    return 0;
}

static int toy_loss(void *state, const sr_module_call *call, double *loss) {
    toy *st = state;
    if (st->Bcap == 0 || st->next_fwd != st->nmod) {
        fprintf(stderr, "toy_model: loss before the forward of every module\n");
        return -1;
    }
    const int V = st->V, N = st->B * st->T;
    const float *logits = st->out[st->nmod - 1];
    double sum = 0.0;
    for (int n = 0; n < N; n++) {
        const float *l = logits + (size_t)n * V;
        float *d = st->dlogits + (size_t)n * V;
        float mx = l[0], z = 0.0f;
        for (int v = 1; v < V; v++) mx = l[v] > mx ? l[v] : mx;
        for (int v = 0; v < V; v++) z += (d[v] = expf(l[v] - mx));
        int y = st->labels[n];
        sum += (double)(logf(z) - (l[y] - mx));
        float s = call->grad_scale / (float)N;
        for (int v = 0; v < V; v++) d[v] = (d[v] / z - (v == y ? 1.0f : 0.0f)) * s;
    }
    *loss = sum / N;
    st->next_bwd = st->nmod - 1;
    return 0;
}

static int toy_backward(void *state, const sr_module_call *call) {
    toy *st = state;
    float *P[MAXP];
    if (enter(st, call, "backward", P) != 0) return -1;
    const int m = call->module, kind = st->mods[m].kind;
    if (m != st->next_bwd) {
        fprintf(stderr, "toy_model: backward of %s out of order (expected module %d)\n", call->name, st->next_bwd);
        return -1;
    }
    const float *I = NULL;
    if (inter_per_token(st, kind)) {
        if (st->have[m]) I = st->saved[m];
        else {
            fprintf(stderr,
                    "toy_model: backward of %s without its activations (forward had save_activations = 0 "
                    "and no recompute came before this backward)\n",
                    call->name);
            return -1;
        }
    }
    const toy_module *mod = &st->mods[m];
    float *G[MAXP], *g = st->gbuf;
    for (int i = 0; i < mod->np; i++) {
        G[i] = g;
        memset(g, 0, mod->numel[i] * sizeof(float));
        g += mod->numel[i];
    }
    const int B = st->B, T = st->T, C = st->C, H = st->H, V = st->V, N = B * T;
    const size_t NC = (size_t)N * C;
    const float *x = m > 0 ? st->out[m - 1] : NULL;
    const float *dy = kind == K_HEAD ? st->dlogits : st->dy;
    float *dx = st->dx;
    switch (kind) {
    case K_EMBED:
        for (int n = 0; n < N; n++)
            for (int c = 0; c < C; c++) {
                float d = dy[(size_t)n * C + c];
                G[0][(size_t)st->inputs[n] * C + c] += d;
                G[1][(size_t)(n % T) * C + c] += d;
            }
        break;
    case K_MLP: {
        const float *ln = I, *mean = ln + NC, *rstd = mean + N, *pre = rstd + N, *act = pre + (size_t)N * H;
        float *dact = st->dtmp, *dln = dact + (size_t)N * H;
        memcpy(dx, dy, NC * sizeof(float)); /* residual */
        memset(dact, 0, (size_t)N * H * sizeof(float));
        memset(dln, 0, NC * sizeof(float));
        linear_backward(dact, G[4], G[5], dy, act, P[4], N, H, C);
        gelu_backward(dact, pre, dact, (size_t)N * H);
        linear_backward(dln, G[2], G[3], dact, ln, P[2], N, C, H);
        layernorm_backward(dx, G[0], G[1], dln, x, mean, rstd, P[0], N, C);
        break;
    }
    case K_MIXER: {
        const float *ln = I, *mean = ln + NC, *rstd = mean + N, *mix = rstd + N;
        float *dmix = st->dtmp, *dln = dmix + NC;
        memcpy(dx, dy, NC * sizeof(float));
        memset(dmix, 0, 2 * NC * sizeof(float));
        linear_backward(dmix, G[3], G[4], dy, mix, P[3], N, C, C);
        mix_backward(dln, G[2], dmix, ln, P[2], B, T, C);
        layernorm_backward(dx, G[0], G[1], dln, x, mean, rstd, P[0], N, C);
        break;
    }
    case K_NORM:
        memset(dx, 0, NC * sizeof(float));
        layernorm_backward(dx, G[0], G[1], dy, x, I, I + N, P[0], N, C);
        break;
    case K_HEAD:
        memset(dx, 0, NC * sizeof(float));
        linear_backward(dx, G[0], G[1], dy, x, P[0], N, C, V);
        break;
    }
    /* ADD into the engine's buffers, in their dtype (the tied embedding gets both modules' share);
       a frozen parameter has no buffer (NULL: SR_PARAM_FROZEN) */
    for (int i = 0; i < mod->np; i++)
        for (size_t k = 0; call->grads[i] && k < mod->numel[i]; k++)
            store_el(call->grads[i], k, call->dtype, load_el(call->grads[i], k, call->dtype) + G[i][k]);
    if (kind == K_HEAD && call->grads[1] && call->step == st->inject_step && sr_rank(st->ctx) == st->inject_rank) {
        store_el(call->grads[1], 0, call->dtype, INFINITY); /* a gradient overflow the engine must skip */
        st->ninject++;
    }
    st->dx = st->dy; /* this module's input gradient is the previous module's output gradient */
    st->dy = dx;
    if (st->have[m] == 2) { /* a checkpointed module holds its intermediates only until here */
        free(st->saved[m]);
        st->saved[m] = NULL;
    }
    st->have[m] = 0;
    st->next_bwd = m - 1;
    st->nbackward++;
    return 0;
}

/* fp32_only.c reuses this model with fewer dtypes (the engine's "unsupported precision" test) */
#ifndef TOY_DTYPES
#define TOY_DTYPES ((1u << SR_FLOAT32) | (1u << SR_BFLOAT16) | (1u << SR_FLOAT16))
#define TOY_NAME "toy_model"
#endif
static const sr_model_ops toy_ops = {
    .dtypes = TOY_DTYPES,
    .devices = 1u << SR_DEVICE_CPU,
    .create = toy_create,
    .destroy = toy_destroy,
    .num_samples = toy_num_samples,
    .batch = toy_batch,
    .forward = toy_forward,
    .loss = toy_loss,
    .backward = toy_backward,
};

SR_MODEL_TASK(TOY_NAME, toy_ops);
