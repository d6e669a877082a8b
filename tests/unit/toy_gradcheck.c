/* Gradient check of the toy model task (examples/toy/toy_model.c), without the engine.

   The task's source is included here and the few host functions it calls are provided below, so
   this program must NOT link libshardrun.  For each config it checks:
   - every parameter's gradient (~20 sampled elements each, the tied embedding included) against
     central finite differences of the loss, in float;
   - the activation-checkpointing path (forward with save_activations = 0, then recomputes: each
     module right before its backward, or a whole unit of modules before the unit's backward, as
     the engine does) gives bit-identical gradients and loss;
   - a backward without the promised recompute is refused;
   - bf16 and fp16 params/grads give gradients close to fp32's;
   - inject_overflow_step puts +inf into head.bias's gradient at that step only;
   - the call counters reported at destroy;
   - the synthetic data is learnable (a short Adam run lowers the loss). */
#include "../../examples/toy/toy_model.c"

#include <stdarg.h>

/* ---- the host, reduced to what the task calls ------------------------------------------------ */

#define MAX_KV 16
#define MAX_MODS 64
#define MAX_PARAMS 256

struct sr_ctx {
    const char *kv[2 * MAX_KV]; /* key, value, ..., NULL */
    int rank;
    char report_name[8][48];
    long long report_value[8];
    int nreports;
};

typedef struct gc_param {
    char name[128];
    size_t numel;
    sr_init init;
} gc_param;

struct sr_model {
    int nmod, np;
    struct {
        char name[64];
        int np;
        int storage[MAXP]; /* index into params[] of each of the module's params (ties resolved) */
    } mods[MAX_MODS];
    gc_param params[MAX_PARAMS]; /* declared (owned) params only: one storage each */
};

const char *sr_config(const sr_ctx *ctx, const char *key) {
    for (int i = 0; ctx->kv[i]; i += 2)
        if (!strcmp(ctx->kv[i], key)) return ctx->kv[i + 1];
    return NULL;
}

int sr_rank(const sr_ctx *ctx) { return ctx->rank; }

int sr_config_int(const sr_ctx *ctx, const char *key, long long def, long long *out) {
    const char *v = sr_config(ctx, key);
    if (!v) {
        *out = def;
        return 0;
    }
    char *end;
    *out = strtoll(v, &end, 10);
    if (!*v || *end) {
        fprintf(stderr, "config: %s = '%s' is not an integer\n", key, v);
        return -1;
    }
    return 0;
}

int sr_report_int(sr_ctx *ctx, const char *name, long long value) {
    if (ctx->nreports == 8) return -1;
    snprintf(ctx->report_name[ctx->nreports], sizeof ctx->report_name[0], "%s", name);
    ctx->report_value[ctx->nreports++] = value;
    return 0;
}

int sr_model_module(sr_model *m, const char *name, const char *class_name) {
    (void)class_name;
    size_t len = strlen(name);
    /* refused, not cut: the engine keeps the whole name */
    if (m->nmod == MAX_MODS || len == 0 || len >= sizeof m->mods[0].name) return -1;
    memcpy(m->mods[m->nmod].name, name, len + 1);
    m->mods[m->nmod].np = 0;
    return m->nmod++;
}

int sr_model_param(sr_model *m, const char *name, int ndim, const int64_t *shape, sr_init init, unsigned flags) {
    (void)flags;
    if (m->nmod == 0 || m->np == MAX_PARAMS || ndim < 1 || ndim > 4 || m->mods[m->nmod - 1].np == MAXP) return -1;
    gc_param *p = &m->params[m->np];
    snprintf(p->name, sizeof p->name, "%s", name);
    p->numel = 1;
    for (int i = 0; i < ndim; i++) p->numel *= (size_t)shape[i];
    p->init = init;
    m->mods[m->nmod - 1].storage[m->mods[m->nmod - 1].np++] = m->np;
    m->np++;
    return 0;
}

int sr_model_tie(sr_model *m, const char *name, const char *target) {
    (void)name;
    for (int i = 0; i < m->np; i++)
        if (!strcmp(m->params[i].name, target) && m->nmod > 0 && m->mods[m->nmod - 1].np < MAXP) {
            m->mods[m->nmod - 1].storage[m->mods[m->nmod - 1].np++] = i;
            return 0;
        }
    return -1;
}

int sr_model_eval_data(sr_model *m, const sr_model_eval *eval) { /* eval data are not checked here */
    (void)m, (void)eval;
    return 0;
}

/* ---- the checker's "engine" ------------------------------------------------------------------ */

static int failures;

static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failures++;
}

static uint64_t rng = 42;

static float randn(void) {
    float u1 = (float)((splitmix64(&rng) >> 11) + 1) / 9007199254740993.0f;
    float u2 = (float)(splitmix64(&rng) >> 11) / 9007199254740992.0f;
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
}

typedef struct net {
    sr_ctx ctx;
    sr_model model;
    void *st;
    float **w, **g; /* fp32 weights and gradients, one per owned param */
    long long calls_fwd, calls_rec, calls_bwd;
} net;

static int net_create(net *n, const char *const *kv) {
    memset(n, 0, sizeof *n);
    for (int i = 0; kv[i]; i++) n->ctx.kv[i] = kv[i];
    n->st = toy_ops.create(&n->ctx, &n->model);
    if (!n->st) return -1;
    n->w = calloc((size_t)n->model.np, sizeof *n->w);
    n->g = calloc((size_t)n->model.np, sizeof *n->g);
    for (int p = 0; p < n->model.np; p++) {
        gc_param *pp = &n->model.params[p];
        n->w[p] = malloc(pp->numel * sizeof(float));
        n->g[p] = calloc(pp->numel, sizeof(float));
        for (size_t k = 0; k < pp->numel; k++) {
            float v = pp->init.kind == SR_INIT_NORMAL ? pp->init.a * randn()
                      : pp->init.kind == SR_INIT_ONES ? 1.0f
                                                      : 0.0f;
            /* jitter ones and zeros so that no product in the model is trivially 0 or 1 */
            if (pp->init.kind != SR_INIT_NORMAL) v += 0.05f * randn();
            n->w[p][k] = v;
        }
    }
    return 0;
}

static void net_destroy(net *n) {
    toy_ops.destroy(n->st);
    for (int p = 0; p < n->model.np; p++) {
        free(n->w[p]);
        free(n->g[p]);
    }
    free(n->w);
    free(n->g);
}

/* Parameter and gradient buffers of one run, in its dtype (fp32: the net's own). */
typedef struct run {
    sr_dtype dt;
    void **w, **g;
} run;

static run run_make(net *n, sr_dtype dt) {
    run r = {dt, calloc((size_t)n->model.np, sizeof(void *)), calloc((size_t)n->model.np, sizeof(void *))};
    for (int p = 0; p < n->model.np; p++) {
        size_t k, numel = n->model.params[p].numel;
        if (dt == SR_FLOAT32) {
            r.w[p] = n->w[p];
            r.g[p] = n->g[p];
            continue;
        }
        r.w[p] = malloc(numel * 2);
        r.g[p] = malloc(numel * 2);
        for (k = 0; k < numel; k++) store_el(r.w[p], k, dt, n->w[p][k]);
    }
    return r;
}

static void run_free(net *n, run *r) {
    for (int p = 0; r->dt != SR_FLOAT32 && p < n->model.np; p++) {
        free(r->w[p]);
        free(r->g[p]);
    }
    free(r->w);
    free(r->g);
}

static void run_zero_grads(net *n, run *r) {
    for (int p = 0; p < n->model.np; p++) memset(r->g[p], 0, n->model.params[p].numel * (r->dt == SR_FLOAT32 ? 4 : 2));
}

static sr_module_call make_call(net *n, run *r, int m, int bwd, void **pv, void **gv) {
    for (int i = 0; i < n->model.mods[m].np; i++) {
        pv[i] = r->w[n->model.mods[m].storage[i]];
        gv[i] = r->g[n->model.mods[m].storage[i]];
    }
    toy *st = n->st;
    return (sr_module_call){.module = m,
                            .name = n->model.mods[m].name,
                            .nparams = n->model.mods[m].np,
                            .params = pv,
                            .grads = bwd ? gv : NULL,
                            .dtype = r->dt,
                            .device = SR_DEVICE_CPU,
                            .batch_size = st->B,
                            .save_activations = 1,
                            .grad_scale = 1.0f};
}

static int load_batch(net *n, int first, int count) {
    int64_t idx[64];
    long long tokens;
    for (int i = 0; i < count; i++) idx[i] = (first + i) % toy_ops.num_samples(n->st);
    return toy_ops.batch(n->st, idx, count, &tokens);
}

/* Forward over every module and the loss (the batch is already loaded). */
static int forward_loss(net *n, run *r, int save, float grad_scale, double *loss) {
    void *pv[MAXP], *gv[MAXP];
    for (int m = 0; m < n->model.nmod; m++) {
        sr_module_call c = make_call(n, r, m, 0, pv, gv);
        c.save_activations = save;
        if (toy_ops.forward(n->st, &c) != 0) return -1;
        n->calls_fwd++;
    }
    sr_module_call c = make_call(n, r, n->model.nmod - 1, 0, pv, gv);
    c.grad_scale = grad_scale;
    return toy_ops.loss(n->st, &c, loss);
}

/* One micro-batch: forward, loss, backward.  checkpoint = k > 0: activation checkpointing with
   wrap units of k consecutive modules; before the backward of a unit's last module, the unit's
   modules are recomputed in forward order (k = 1: each module right before its own backward). */
static int train_step(net *n, run *r, int checkpoint, float grad_scale, long long step, double *loss) {
    void *pv[MAXP], *gv[MAXP];
    if (forward_loss(n, r, !checkpoint, grad_scale, loss) != 0) return -1;
    for (int m = n->model.nmod - 1; m >= 0; m--) {
        sr_module_call c;
        if (checkpoint && (m % checkpoint == checkpoint - 1 || m == n->model.nmod - 1))
            for (int k = m - m % checkpoint; k <= m; k++) {
                c = make_call(n, r, k, 0, pv, gv);
                c.step = step;
                c.recompute = 1;
                if (toy_ops.forward(n->st, &c) != 0) return -1;
                n->calls_rec++;
            }
        c = make_call(n, r, m, 1, pv, gv);
        c.step = step;
        if (toy_ops.backward(n->st, &c) != 0) return -1;
        n->calls_bwd++;
    }
    return 0;
}

/* Finite differences of the sum of token losses (grads of the mean are tiny; the sum's are O(1)
   and make an absolute tolerance meaningful): analytic grads use grad_scale = tokens. */
static void gradcheck(net *n, const char *label, int B) {
    toy *st = n->st;
    const float eps = 1e-2f, S = (float)(B * st->T);
    run r = run_make(n, SR_FLOAT32);
    double loss;
    run_zero_grads(n, &r);
    if (load_batch(n, 0, B) || train_step(n, &r, 0, S, 0, &loss)) {
        fail("%s: forward/backward failed", label);
        return;
    }
    printf("%s: %d params, loss at init %.4f (ln vocab = %.4f)\n", label, n->model.np, loss, log(st->V));
    int checked = 0, bad = 0;
    double worst = 0.0, worst_abs = 0.0, gmax = 0.0;
    const char *worst_name = "";
    for (int p = 0; p < n->model.np; p++) {
        gc_param *pp = &n->model.params[p];
        int k_count = pp->numel <= 20 ? (int)pp->numel : 20;
        for (int s = 0; s < k_count; s++) {
            size_t k = pp->numel <= 20 ? (size_t)s : splitmix64(&rng) % pp->numel;
            float v = n->w[p][k], vp = v + eps, vm = v - eps;
            double lp, lm;
            n->w[p][k] = vp;
            forward_loss(n, &r, 1, 1.0f, &lp);
            n->w[p][k] = vm;
            forward_loss(n, &r, 1, 1.0f, &lm);
            n->w[p][k] = v;
            double num = S * (lp - lm) / ((double)vp - (double)vm), ana = n->g[p][k];
            double err = fabs(ana - num), tol = 2e-3 + 2e-2 * fabs(num);
            if (err / tol > worst) worst = err / tol, worst_name = pp->name;
            if (err > worst_abs) worst_abs = err;
            if (fabs(num) > gmax) gmax = fabs(num);
            if (err > tol) {
                if (bad++ < 10) fail("%s: %s[%zu]: analytic %.6g, numeric %.6g", label, pp->name, k, ana, num);
            }
            checked++;
        }
    }
    printf("%s: gradcheck %d elements of %d params, max |analytic - numeric| %.3g (largest gradient %.3g), "
           "worst error/tolerance %.3f (%s), %d failed\n",
           label, checked, n->model.np, worst_abs, gmax, worst, worst_name, bad);
    run_free(n, &r);
}

/* Checkpointed gradients and loss must equal the normal path's bit for bit. */
static void recompute_check(net *n, const char *label, int B) {
    run r = run_make(n, SR_FLOAT32);
    double l1, l2;
    size_t total = 0;
    float **ref = calloc((size_t)n->model.np, sizeof *ref);
    run_zero_grads(n, &r);
    if (load_batch(n, 3, B) || train_step(n, &r, 0, 1.0f, 0, &l1)) fail("%s: normal step failed", label);
    for (int p = 0; p < n->model.np; p++) {
        size_t bytes = n->model.params[p].numel * sizeof(float);
        ref[p] = malloc(bytes);
        memcpy(ref[p], n->g[p], bytes);
        total += n->model.params[p].numel;
    }
    for (int k = 1; k <= 3; k += 2) { /* per module; units of 3 modules */
        run_zero_grads(n, &r);
        if (load_batch(n, 3, B) || train_step(n, &r, k, 1.0f, 0, &l2)) fail("%s: checkpointed step failed", label);
        int differ = 0;
        for (int p = 0; p < n->model.np; p++)
            if (memcmp(ref[p], n->g[p], n->model.params[p].numel * sizeof(float)) != 0) {
                fail("%s: recompute path: %s gradients differ", label, n->model.params[p].name);
                differ++;
            }
        if (memcmp(&l1, &l2, sizeof l1) != 0) fail("%s: recompute path: loss %.9g vs %.9g", label, l1, l2);
        printf("%s: recompute path (units of %d module%s): %zu gradient elements in %d params %s\n", label, k,
               k > 1 ? "s" : "", total, n->model.np, differ ? "DIFFER" : "bit-identical");
    }

    /* the engine forgets a recompute: some backward must refuse (and say why on stderr) */
    void *pv[MAXP], *gv[MAXP];
    int refused = 0;
    load_batch(n, 3, B);
    fflush(stdout);
    fprintf(stderr, "(an error about a missing recompute is expected next)\n");
    if (forward_loss(n, &r, 0, 1.0f, &l1) == 0)
        for (int m = n->model.nmod - 1; m >= 0 && !refused; m--) {
            sr_module_call c = make_call(n, &r, m, 1, pv, gv);
            refused = toy_ops.backward(n->st, &c) != 0;
            n->calls_bwd += !refused;
        }
    if (!refused) fail("%s: backward without recompute was accepted", label);
    for (int p = 0; p < n->model.np; p++) free(ref[p]);
    free(ref);
    run_free(n, &r);
}

/* bf16/fp16 params and grads: gradients close to fp32's (fp16 with a loss scale, as the engine
   would, so small gradients stay normal numbers). */
static void half_check(net *n, const char *label, int B) {
    run r32 = run_make(n, SR_FLOAT32);
    double l32;
    run_zero_grads(n, &r32);
    if (load_batch(n, 5, B) || train_step(n, &r32, 0, 1.0f, 0, &l32)) fail("%s: fp32 step failed", label);
    const sr_dtype dts[2] = {SR_BFLOAT16, SR_FLOAT16};
    const float scales[2] = {1.0f, 1024.0f}, tols[2] = {0.08f, 0.02f};
    for (int d = 0; d < 2; d++) {
        run r = run_make(n, dts[d]);
        double l;
        run_zero_grads(n, &r);
        if (load_batch(n, 5, B) || train_step(n, &r, d == 1 ? 2 : 0, scales[d], 0, &l)) {
            fail("%s: %s step failed", label, d ? "fp16" : "bf16");
            continue;
        }
        double worst = 0.0;
        const char *worst_name = "";
        for (int p = 0; p < n->model.np; p++) {
            double num = 0.0, den = 0.0;
            for (size_t k = 0; k < n->model.params[p].numel; k++) {
                double a = load_el(r.g[p], k, dts[d]) / scales[d], b = n->g[p][k];
                num += (a - b) * (a - b);
                den += b * b;
            }
            double rel = sqrt(num / (den + 1e-30));
            if (rel > worst) worst = rel, worst_name = n->model.params[p].name;
        }
        printf("%s: %s: loss %.5f (fp32 %.5f), worst relative gradient error %.4f (%s)\n", label, d ? "fp16" : "bf16",
               l, l32, worst, worst_name);
        if (worst > tols[d] || fabs(l - l32) > 0.02)
            fail("%s: %s gradients too far from fp32", label, d ? "fp16" : "bf16");
        run_free(n, &r);
    }
    run_free(n, &r32);
}

/* inject_overflow_step = 7 (rank 0): head.bias's gradient starts with +inf at step 7 only. */
static void overflow_check(net *n, const char *label, int B) {
    run r = run_make(n, SR_FLOAT16);
    int head = n->model.nmod - 1, bias = n->model.mods[head].storage[1];
    for (long long step = 6; step <= 7; step++) {
        double l;
        run_zero_grads(n, &r);
        if (load_batch(n, 0, B) || train_step(n, &r, 0, 1.0f, step, &l)) fail("%s: fp16 step failed", label);
        float g0 = load_el(r.g[bias], 0, SR_FLOAT16);
        if (step == 7 ? !(isinf(g0) && g0 > 0) : !isfinite(g0))
            fail("%s: step %lld: head.bias grad[0] = %g", label, step, g0);
    }
    printf("%s: overflow injection: head.bias gradient +inf at step 7 only\n", label);
    run_free(n, &r);
}

/* A short Adam run on fp32: the synthetic data must be learnable. */
static void learn_check(net *n, const char *label, int B, int steps) {
    run r = run_make(n, SR_FLOAT32);
    float **mo = calloc((size_t)n->model.np, sizeof *mo), **ve = calloc((size_t)n->model.np, sizeof *ve);
    for (int p = 0; p < n->model.np; p++) {
        mo[p] = calloc(n->model.params[p].numel, sizeof(float));
        ve[p] = calloc(n->model.params[p].numel, sizeof(float));
    }
    double first = 0.0, last = 0.0, l;
    for (int s = 1; s <= steps; s++) {
        run_zero_grads(n, &r);
        if (load_batch(n, s * B, B) || train_step(n, &r, 0, 1.0f, 0, &l)) {
            fail("%s: training step failed", label);
            break;
        }
        if (s <= 10) first += l / 10;
        if (s > steps - 10) last += l / 10;
        float b1c = 1.0f - powf(0.9f, (float)s), b2c = 1.0f - powf(0.999f, (float)s);
        for (int p = 0; p < n->model.np; p++)
            for (size_t k = 0; k < n->model.params[p].numel; k++) {
                float gk = n->g[p][k];
                mo[p][k] = 0.9f * mo[p][k] + 0.1f * gk;
                ve[p][k] = 0.999f * ve[p][k] + 0.001f * gk * gk;
                n->w[p][k] -= 3e-3f * (mo[p][k] / b1c) / (sqrtf(ve[p][k] / b2c) + 1e-8f);
            }
    }
    printf("%s: training: mean loss of the first 10 steps %.4f, of the last 10 %.4f\n", label, first, last);
    if (!(last < 0.7 * first)) fail("%s: the loss did not fall enough", label);
    for (int p = 0; p < n->model.np; p++) {
        free(mo[p]);
        free(ve[p]);
    }
    free(mo);
    free(ve);
    run_free(n, &r);
}

static void counters_check(net *n, const char *label) {
    long long want[3] = {n->calls_fwd, n->calls_rec, n->calls_bwd};
    const char *names[3] = {"toy_forward_calls", "toy_recompute_calls", "toy_backward_calls"};
    sr_ctx *ctx = &n->ctx;
    net_destroy(n);
    for (int i = 0; i < 3; i++) {
        int found = 0;
        for (int j = 0; j < ctx->nreports; j++)
            if (!strcmp(ctx->report_name[j], names[i])) {
                found = 1;
                if (ctx->report_value[j] != want[i])
                    fail("%s: %s = %lld, expected %lld", label, names[i], ctx->report_value[j], want[i]);
            }
        if (!found) fail("%s: %s not reported", label, names[i]);
    }
    printf("%s: counters: %lld forward, %lld recompute, %lld backward calls reported\n", label, want[0], want[1],
           want[2]);
}

int main(void) {
    static const char *const defaults[] = {"inject_overflow_step", "7", NULL};
    static const char *const odd[] = {"vocab",
                                      "11",
                                      "dim",
                                      "6",
                                      "seq",
                                      "5",
                                      "blocks",
                                      "3",
                                      "samples",
                                      "40",
                                      "data_seed",
                                      "99",
                                      "inject_overflow_step",
                                      "7",
                                      NULL};
    static const char *const bad[] = {"dim", "x16", NULL};
    struct {
        const char *label;
        const char *const *kv;
        int B;
    } cfgs[2] = {{"defaults", defaults, 4}, {"vocab11-dim6-seq5-blocks3", odd, 3}};
    for (int c = 0; c < 2; c++) {
        net n;
        if (net_create(&n, cfgs[c].kv) != 0) {
            fail("%s: create failed", cfgs[c].label);
            continue;
        }
        gradcheck(&n, cfgs[c].label, cfgs[c].B);
        recompute_check(&n, cfgs[c].label, cfgs[c].B);
        half_check(&n, cfgs[c].label, cfgs[c].B);
        overflow_check(&n, cfgs[c].label, cfgs[c].B);
        /* a larger batch after smaller ones: activation storage grows */
        learn_check(&n, cfgs[c].label, 16, 300);
        counters_check(&n, cfgs[c].label);
    }
    net n;
    fprintf(stderr, "(errors about a malformed dim are expected next)\n");
    if (net_create(&n, bad) == 0) {
        fail("create accepted dim = x16");
        net_destroy(&n);
    }
    printf("toy_gradcheck: %s (%d failures)\n", failures ? "FAILED" : "ok", failures);
    return failures ? 1 : 0;
}
