/*
 * transformer lm_task: the model-task callbacks every decoder family shares (see lm_task.h).
 *
 * Activations (device): out[m] is module m's output, always kept (module m+1's input; the head's is
 * the logits, which loss() turns into their gradient in place).  inter[m]: the intermediates a
 * block's backward needs, from a pool of equal buffers: a checkpointed block borrows one during its
 * forward and returns it at once, then again from its recompute to its backward.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_task.h"

#include "dataset.h"
#include "dump.h"
#include "kernels.h"
#include "linear.h"
#include "tokenizer.h"


enum { M_EMBED, M_BLOCK, M_LNF, M_HEAD };

typedef struct tf_lm {
    const tf_lm_arch *arch;
    sr_ctx *ctx;
    tf_lm_dims d; /* layers, heads, channels, positions, vocabulary */
    int T;        /* tokens per sample */
    const tf_kernels *k;
    sr_dtype dt; /* compute dtype (fp32 on the CPU) */
    size_t es;   /* its element size */
    tf_tokenizer *tok;
    const char *tok_desc; /* for the log line: which tokenizer */
    tf_dataset data;
    tf_dataset eval; /* held-out samples (eval_data or validation_split_percentage); n = 0: none */
    const char *eval_from; /* for the log line: "eval_data" or "validation_split_percentage = N" */
    char eval_desc[64];
    char *dump_path;

    /* the micro-batch */
    int B, Bcap;
    int32_t *ids_h, *tgt_h; /* host: input ids, targets (-1 = none) */
    int32_t *ids_d, *tgt_d; /* device copies */
    long long ntargets;
    long long samples_read, sample_index_sum; /* reported: which part of the data this rank trained on */
    float *losses_d, *losses_h;

    /* activations (device; see the top of this file) */
    int nmod;
    void *embed_acts; /* the embedding's intermediates (arch->embed_acts_bytes; NULL when 0) */
    void **out;
    void **inter;
    void **pool;
    int npool, pool_cap;
    int held, held_peak; /* block intermediates buffers in use, and the most at once (reported) */
    float *lnf_stats; /* ln_f's mean and rstd (2N floats) */
    void *dy, *dx;    /* gradient of the current module's output / input, N*C */
    void *work;       /* block backward temporaries */
    int next_fwd, next_bwd;
} tf_lm;

static void lm_error(const tf_lm *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void lm_error(const tf_lm *g, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: error: ", g->arch->name);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

static int kind_of(const tf_lm *g, int m) {
    return m == 0 ? M_EMBED : m <= g->d.L ? M_BLOCK : m == g->d.L + 1 ? M_LNF : M_HEAD;
}

static tf_shape shape_of(const tf_lm *g) {
    return (tf_shape){g->k, g->dt, g->es, g->B, g->Bcap, g->T, g->d.C, g->d.NH};
}

/* ---- buffers ---------------------------------------------------------------------------------- */

static void *pool_take(tf_lm *g) {
    tf_shape sh = shape_of(g);
    void *p = g->npool > 0 ? g->pool[--g->npool] : g->k->alloc(tf_block_acts_bytes(&sh));
    if (p && ++g->held > g->held_peak) g->held_peak = g->held;
    return p;
}

static void pool_give(tf_lm *g, void *p) {
    if (!p) return;
    g->held--;
    if (g->npool == g->pool_cap) {
        int cap = g->pool_cap ? 2 * g->pool_cap : 8;
        void **np = realloc(g->pool, (size_t)cap * sizeof *np);
        if (!np) { /* cannot keep it: let it go */
            g->k->free(p);
            return;
        }
        g->pool = np, g->pool_cap = cap;
    }
    g->pool[g->npool++] = p;
}

static void free_acts(tf_lm *g) {
    if (!g->k) return;
    for (int m = 0; g->out && m < g->nmod; m++) {
        g->k->free(g->out[m]);
        g->out[m] = NULL;
        if (g->inter[m]) g->k->free(g->inter[m]);
        g->inter[m] = NULL;
    }
    while (g->npool > 0) g->k->free(g->pool[--g->npool]);
    g->held = 0;
    void **bufs[] = {(void **)&g->ids_d, (void **)&g->tgt_d, (void **)&g->losses_d, (void **)&g->lnf_stats,
                     &g->dy, &g->dx, &g->work, &g->embed_acts};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        g->k->free(*bufs[i]);
        *bufs[i] = NULL;
    }
    free(g->ids_h), free(g->tgt_h), free(g->losses_h);
    g->ids_h = g->tgt_h = NULL;
    g->losses_h = NULL;
    g->Bcap = 0;
}

static int alloc_acts(tf_lm *g, int B) {
    free_acts(g);
    g->Bcap = B;
    size_t N = (size_t)B * g->T, es = g->es;
    tf_shape sh = shape_of(g);
    int bad = !(g->ids_h = malloc(N * sizeof(int32_t))) || !(g->tgt_h = malloc(N * sizeof(int32_t))) ||
              !(g->losses_h = malloc(N * sizeof(float))) || !(g->ids_d = g->k->alloc(N * sizeof(int32_t))) ||
              !(g->tgt_d = g->k->alloc(N * sizeof(int32_t))) || !(g->losses_d = g->k->alloc(N * sizeof(float))) ||
              !(g->lnf_stats = g->k->alloc(2 * N * sizeof(float))) || !(g->dy = g->k->alloc(N * g->d.C * es)) ||
              !(g->dx = g->k->alloc(N * g->d.C * es)) || !(g->work = g->k->alloc(tf_block_work_bytes(&sh)));
    size_t embed_bytes = g->arch->embed_acts_bytes ? g->arch->embed_acts_bytes(&sh) : 0;
    if (!bad && embed_bytes) bad = !(g->embed_acts = g->k->alloc(embed_bytes));
    for (int m = 0; !bad && m < g->nmod; m++)
        bad = !(g->out[m] = g->k->alloc(N * (size_t)(kind_of(g, m) == M_HEAD ? g->d.V : g->d.C) * es));
    if (bad) {
        lm_error(g, "out of %s memory for the activations of a micro-batch of %d samples of %d "
                        "tokens; lower per_device_train_batch_size or max_length, or turn on "
                        "fsdp.activation_checkpointing\n", g->k->name, B, g->T);
        free_acts(g);
        return -1;
    }
    return 0;
}

/* ---- create ------------------------------------------------------------------------------------ */

int tf_lm_config_int(sr_ctx *ctx, const char *prefix, const char *key, long long def, long long lo, long long hi,
                     int *out) {
    long long v;
    if (sr_config_int(ctx, key, def, &v) != 0) return -1;
    if (v < lo || v > hi) {
        fprintf(stderr, "%s: error: [task] %s = %lld is out of range [%lld, %lld]\n", prefix, key, v, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int config_int(const tf_lm *g, const char *key, long long def, long long lo, long long hi, int *out) {
    return tf_lm_config_int(g->ctx, g->arch->name, key, def, lo, hi, out);
}

/* The CUDA kernels live in transformer_cuda.so next to the task, so CPU runs never map cuBLAS. */
static const tf_kernels *load_cuda_kernels(const tf_lm *g) {
    Dl_info info;
    if (!dladdr((void *)tf_kernels_cpu, &info) || !info.dli_fname) return NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s", info.dli_fname);
    char *slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0), "transformer_cuda.so");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        lm_error(g, "this run uses NCCL (GPUs) but the CUDA kernels cannot be loaded: %s; build "
                        "shardrun with nvcc available (-DSHARDRUN_CUDA=ON)\n", dlerror());
        return NULL;
    }
    const tf_kernels *(*get)(void) = (const tf_kernels *(*)(void))dlsym(h, "tf_kernels_cuda");
    if (!get) lm_error(g, "%s has no tf_kernels_cuda (%s); rebuild shardrun\n", path, dlerror());
    return get ? get() : NULL;
}

#ifdef SHARDRUN_BLAS_BLIS
#define TF_BLAS_NAME "BLIS"
#else
#define TF_BLAS_NAME "OpenBLAS"
#endif

/* OpenBLAS 0.3.21 (Debian 12) does not know AMD's Zen 4 and Zen 5 and runs its AVX2 kernels there
   (core "Haswell" or "Zen"), although the CPU has AVX-512: its SkylakeX kernels ran the GPT-2 124M
   GEMMs 1.85x faster on a Zen 5 (docs/benchmarks.md, "GEMM throughput").  OpenBLAS picks its kernels
   when it loads, before this task runs, so only the environment can choose: say so. */
static void avx512_note(const tf_lm *g) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(SHARDRUN_BLAS_BLIS)
    const char *core = tf_cpu_blas();
    if (getenv("OPENBLAS_CORETYPE") || !core || (strcmp(core, "Haswell") && strcmp(core, "Zen"))) return;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        printf("%s: note: this CPU has AVX-512 but OpenBLAS runs its %s (AVX2) kernels; OPENBLAS_CORETYPE=SkylakeX "
               "in shardrun's environment selects its AVX-512 ones (up to 1.85x faster GEMMs; docs/gpt2.md)\n",
               g->arch->name, core);
#endif
}

/* The compute dtype, as the engine will pick it from ACCELERATE_MIXED_PRECISION (the same exact,
   lowercase spellings as core/fsdp/fsdp_config.c; the engine rejects any other).  Known here, at
   create(), so a dtype the device's kernels lack fails before any data moves; every callback
   checks call->dtype against it. */
static sr_dtype compute_dtype(void) {
    const char *mp = getenv("ACCELERATE_MIXED_PRECISION");
    if (mp && !strcmp(mp, "bf16")) return SR_BFLOAT16;
    if (mp && !strcmp(mp, "fp16")) return SR_FLOAT16;
    return SR_FLOAT32;
}

/* The eval samples: files of their own (eval_data: the training data's preprocessing), or the last
   validation_split_percentage % of the training texts, which are then never trained on. */
static int load_eval_data(tf_lm *g, sr_ctx *ctx, const tf_data_opts *train) {
    const char *files = sr_config(ctx, "eval_data");
    int pct;
    char err[1024];
    if (config_int(g, "validation_split_percentage", 0, 0, 99, &pct)) return -1;
    if (files && *files && pct) {
        lm_error(g, "[task] eval_data and validation_split_percentage both name eval data; keep one\n");
        return -1;
    }
    if (files && *files) {
        tf_data_opts o = *train;
        o.patterns = files;
        o.max_samples = 0;
        if (tf_dataset_load(&g->eval, &o, g->tok, err, sizeof err) != 0) {
            lm_error(g, "[task] eval_data: %s\n", err);
            return -1;
        }
        g->eval_from = "eval_data";
    } else if (pct) {
        long long n = g->data.n * pct / 100;
        if (tf_dataset_split_tail(&g->data, n, &g->eval, err, sizeof err) != 0) {
            lm_error(g, "[task] validation_split_percentage = %d of %lld texts: %s; raise it, or add "
                            "data, or give eval_data\n", pct, g->data.n, err);
            return -1;
        }
        snprintf(g->eval_desc, sizeof g->eval_desc, "the last %d%% of the texts", pct);
        g->eval_from = g->eval_desc;
    }
    return 0;
}

static int load_data(tf_lm *g, sr_ctx *ctx) {
    const char *vocab = sr_config(ctx, "vocab_json"), *merges = sr_config(ctx, "merges_txt");
    const char *tj = sr_config(ctx, "tokenizer_json");
    if (!vocab != !merges) {
        lm_error(g, "[task] vocab_json and merges_txt go together: give both (GPT-2 BPE) or "
                        "neither (byte-level tokens)\n");
        return -1;
    }
    if (tj && vocab) {
        lm_error(g, "[task] tokenizer_json and vocab_json + merges_txt each name a tokenizer; keep one\n");
        return -1;
    }
    char err[1024];
    g->tok = tj ? tf_tokenizer_load_json(tj, err, sizeof err) : tf_tokenizer_load(vocab, merges, err, sizeof err);
    g->tok_desc = tj ? "tokenizer.json BPE" : vocab ? "GPT-2 BPE" : "byte-level";
    if (!g->tok) {
        lm_error(g, "%s\n", err);
        return -1;
    }
    tf_data_opts o = {0};
    long long max_samples;
    const char *split = sr_config(ctx, "split");
    o.patterns = sr_config(ctx, "data");
    if (!o.patterns || !*o.patterns) {
        lm_error(g, "[task] data is missing: name the training text files, e.g. "
                        "data = /usr/share/common-licenses/*\n");
        return -1;
    }
    if (split && tf_split_parse(split, &o.split) != 0) {
        lm_error(g, "[task] split = %s; expected paragraph, line or file\n", split);
        return -1;
    }
    if (!split) o.split = TF_SPLIT_PARAGRAPH;
    if (config_int(g, "max_length", 128, 2, g->d.P, &g->T) || config_int(g, "min_chars", 32, 0, 1 << 30, &o.min_chars) ||
        sr_config_int(ctx, "max_samples", 0, &max_samples))
        return -1;
    if (max_samples < 0) {
        lm_error(g, "[task] max_samples = %lld; expected 0 (all) or a positive count\n", max_samples);
        return -1;
    }
    o.max_length = g->T;
    o.max_samples = max_samples;
    if (tf_dataset_load(&g->data, &o, g->tok, err, sizeof err) != 0) {
        lm_error(g, "%s\n", err);
        return -1;
    }
    return load_eval_data(g, ctx, &o);
}

static void free_state(tf_lm *g) {
    free_acts(g);
    free(g->pool);
    free(g->out);
    free(g->inter);
    tf_dataset_free(&g->data);
    tf_dataset_free(&g->eval);
    if (g->tok) tf_tokenizer_free(g->tok);
    free(g->dump_path);
    free(g);
}

void tf_lm_destroy(void *state) {
    tf_lm *g = state;
    if (!g) return;
    if (!strcmp(g->k->name, "cpu")) sr_report_int(g->ctx, "cpu_threads", tf_cpu_threads());
    sr_report_int(g->ctx, "samples_read", g->samples_read);
    sr_report_int(g->ctx, "sample_index_sum", g->sample_index_sum);
    /* activation checkpointing shows here: one block's intermediates at a time instead of n_layer */
    tf_shape sh = shape_of(g);
    sr_report_int(g->ctx, "block_activation_buffers_peak", g->held_peak);
    sr_report_int(g->ctx, "block_activation_bytes", g->Bcap ? (long long)tf_block_acts_bytes(&sh) : 0);
    free_state(g);
}

/* the final LayerNorm and the language-modelling head, the same in every family */
static int declare_head(const tf_lm_dims *d, const tf_lm_arch *arch, sr_model *model) {
    if (sr_model_module(model, "transformer.ln_f", "LayerNorm") < 0 ||
        tf_param1(model, "transformer.ln_f.weight", d->C, SR_ONES, SR_PARAM_NO_DECAY) ||
        tf_param1(model, "transformer.ln_f.bias", d->C, SR_ZEROS, SR_PARAM_NO_DECAY) ||
        sr_model_module(model, "lm_head", "Linear") < 0 || sr_model_tie(model, "lm_head.weight", arch->token_table) != 0)
        return -1;
    return 0;
}

static int64_t eval_num_samples(void *state);
static int eval_batch(void *state, const int64_t *samples, int n, long long *tokens);
static const sr_model_eval lm_eval = {sizeof(sr_model_eval), eval_num_samples, eval_batch};

void *tf_lm_create(const tf_lm_arch *arch, sr_ctx *ctx, sr_model *model) {
    tf_lm *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->arch = arch;
    g->ctx = ctx;
    int vocab_default;
    if (arch->configure(ctx, &g->d, &vocab_default) != 0) goto fail;
    if (g->d.C % g->d.NH) {
        lm_error(g, "[task] %s = %d is not a multiple of n_head = %d\n", arch->width_key, g->d.C, g->d.NH);
        goto fail;
    }
    if (load_data(g, ctx) != 0) goto fail;
    int tv = tf_tokenizer_vocab_size(g->tok);
    if (config_int(g, "vocab_size", vocab_default ? vocab_default : tv, 1, 1 << 24, &g->d.V)) goto fail;
    if (g->d.V < tv) {
        lm_error(g, "[task] vocab_size = %d is smaller than the tokenizer's %d tokens\n", g->d.V, tv);
        goto fail;
    }
    const char *dump = sr_config(ctx, "dump");
    if (dump && *dump && !(g->dump_path = strdup(dump))) goto fail;

    sr_pg *world = sr_world(ctx);
    int cuda = world && !strcmp(sr_pg_backend(world), "nccl");
    g->k = cuda ? load_cuda_kernels(g) : tf_kernels_cpu();
    if (!g->k) goto fail;
    if (sr_profile_enabled()) g->k = tf_kernels_profiled(g->k); /* SHARDRUN_PROFILE=1 */
    g->dt = compute_dtype();
    g->es = sr_dtype_size(g->dt);
    if (!(g->k->dtypes & (1u << g->dt))) {
        lm_error(g, "the %s kernels compute in fp32 only, but mixed_precision asks for %s; set "
                        "[accelerate] mixed_precision = no on CPUs\n", g->k->name, sr_dtype_name(g->dt));
        goto fail;
    }
    g->nmod = g->d.L + 3;
    if (!(g->out = calloc((size_t)g->nmod, sizeof *g->out)) || !(g->inter = calloc((size_t)g->nmod, sizeof *g->inter)))
        goto fail;
    if (arch->declare(&g->d, model) != 0 || declare_head(&g->d, arch, model) != 0) goto fail;
    if (g->eval.n && sr_model_eval_data(model, &lm_eval) != 0) goto fail;

    if (sr_rank(ctx) == 0 && !cuda) avx512_note(g);
    if (sr_rank(ctx) == 0) {
        double params = arch->embed_param_count(&g->d) + g->d.L * tf_block_param_count(g->d.C) + 2.0 * g->d.C;
        char threads[96] = "";
        if (!cuda) snprintf(threads, sizeof threads, " (%s, %d thread%s), its %s kernels", TF_BLAS_NAME,
                            tf_cpu_threads(), tf_cpu_threads() == 1 ? "" : "s", tf_cpu_blas());
        printf("%s: %d layers, %d heads, n_embd %d, vocab %d, positions %d: %.2fM parameters; %s kernels%s\n",
               arch->name, g->d.L, g->d.NH, g->d.C, g->d.V, g->d.P, params / 1e6, g->k->name, threads);
        printf("%s: data: %lld samples of %d tokens (%lld real tokens, %.1f%% padding) from %lld texts of %lld "
               "files (%lld shorter texts dropped); %s tokenizer, %d tokens\n",
               arch->name, g->data.n, g->T, g->data.tokens, 100.0 * (1.0 - (double)g->data.tokens / ((double)g->data.n * g->T)),
               g->data.texts_read - g->data.texts_dropped, g->data.files, g->data.texts_dropped,
               g->tok_desc, tv);
        if (g->eval.n)
            printf("%s: eval data: %lld samples (%lld real tokens) from %s\n", arch->name, g->eval.n, g->eval.tokens,
                   g->eval_from);
        fflush(stdout);
    }
    return g;
fail:
    free_state(g);
    return NULL;
}

int64_t tf_lm_num_samples(void *state) { return ((tf_lm *)state)->data.n; }

/* ---- batch ------------------------------------------------------------------------------------- */

/* Loads samples of d; *real: their real tokens; g->ntargets: the tokens they predict. */
static int load_batch(tf_lm *g, const tf_dataset *d, const int64_t *samples, int n, long long *real_out) {
    if (n <= 0) return -1;
    if (n > g->Bcap && alloc_acts(g, n) != 0) return -1;
    const int T = g->T;
    long long real = 0, targets = 0;
    for (int b = 0; b < n; b++) {
        if (samples[b] < 0 || samples[b] >= d->n) {
            lm_error(g, "%ssample index %lld out of range [0, %lld)\n", d == &g->eval ? "eval " : "",
                    (long long)samples[b], d->n);
            return -1;
        }
        const int32_t *ids = d->ids + (size_t)samples[b] * T;
        int len = d->lengths[samples[b]];
        memcpy(g->ids_h + (size_t)b * T, ids, (size_t)T * sizeof(int32_t));
        for (int t = 0; t < T; t++) /* HF: labels = input_ids, -100 on padding, shifted inside the model */
            g->tgt_h[(size_t)b * T + t] = t + 1 < len ? ids[t + 1] : -1;
        real += len;
        targets += len > 1 ? len - 1 : 0;
    }
    size_t N = (size_t)n * T;
    if (g->k->ids_upload(g->ids_d, g->ids_h, N) != 0 || g->k->ids_upload(g->tgt_d, g->tgt_h, N) != 0) return -1;
    g->B = n;
    g->ntargets = targets;
    g->next_fwd = 0;
    g->next_bwd = -1;
    *real_out = real;
    return 0;
}

int tf_lm_batch(void *state, const int64_t *samples, int n, long long *tokens) {
    tf_lm *g = state;
    if (load_batch(g, &g->data, samples, n, tokens) != 0) return -1;
    for (int b = 0; b < n; b++) g->samples_read++, g->sample_index_sum += samples[b]; /* training samples only */
    return 0;
}

static int64_t eval_num_samples(void *state) { return ((tf_lm *)state)->eval.n; }

/* An eval batch weighs as many tokens as its loss averages over: the predicted ones. */
static int eval_batch(void *state, const int64_t *samples, int n, long long *tokens) {
    tf_lm *g = state;
    long long real;
    if (load_batch(g, &g->eval, samples, n, &real) != 0) return -1;
    *tokens = g->ntargets;
    return 0;
}

/* ---- forward ----------------------------------------------------------------------------------- */

static int check_call(const tf_lm *g, const sr_module_call *call, const char *what) {
    const int nparams[] = {g->arch->embed_params, TF_BLOCK_PARAMS, 2, 1};
    if (call->module < 0 || call->module >= g->nmod || call->nparams != nparams[kind_of(g, call->module)] ||
        call->dtype != g->dt || call->batch_size != g->B || g->Bcap == 0) {
        lm_error(g, "%s of module %d (%s) does not match the model: %d params, dtype %s, batch %d "
                        "(loaded %d)\n", what, call->module, call->name, call->nparams, sr_dtype_name(call->dtype),
                call->batch_size, g->B);
        return -1;
    }
    return 0;
}

int tf_lm_forward(void *state, const sr_module_call *call) {
    tf_lm *g = state;
    if (check_call(g, call, "forward") != 0) return -1;
    const int m = call->module, kind = kind_of(g, m), N = g->B * g->T, C = g->d.C;
    if (call->recompute ? g->next_bwd < 0 || m > g->next_bwd : m != g->next_fwd) {
        lm_error(g, "%s of %s out of order\n", call->recompute ? "recompute" : "forward", call->name);
        return -1;
    }
    void *const *p = call->params;
    const void *x = m > 0 ? g->out[m - 1] : NULL;
    const tf_shape sh = shape_of(g);
    switch (kind) {
    case M_EMBED:
        if (!call->recompute) g->arch->embed_forward(&sh, p, g->ids_d, g->embed_acts, g->out[m]);
        break;
    case M_BLOCK: {
        /* intermediates: kept for backward, or (checkpointed forward) borrowed for the call only */
        int keep = call->save_activations || call->recompute;
        if (!g->inter[m] && !(g->inter[m] = pool_take(g))) {
            lm_error(g, "out of %s memory for the activations of %s\n", g->k->name, call->name);
            return -1;
        }
        tf_block_acts a = tf_block_acts_at(&sh, g->inter[m]);
        tf_block_forward(&sh, &g->arch->block_style, p, x, &a, call->recompute ? NULL : g->out[m]);
        if (!keep) {
            pool_give(g, g->inter[m]);
            g->inter[m] = NULL;
        }
        break;
    }
    case M_LNF:
        g->k->layernorm_forward(g->out[m], g->lnf_stats, g->lnf_stats + N, x, p[0], p[1], N, C, g->dt);
        break;
    case M_HEAD: /* logits = h W^T (lm_head is a Linear: weight [V, C], the token embedding) */
        if (!call->recompute) tf_linear_forward(&sh, TF_WEIGHT_OUT_IN, g->out[m], x, p[0], NULL, N, C, g->d.V);
        break;
    }
    if (!call->recompute) g->next_fwd = m + 1;
    return 0; /* a device error surfaces at loss() or the last backward, which wait for the device */
}

/* ---- loss ---------------------------------------------------------------------------------------- */

static int write_dump(tf_lm *g, const float *logits, float loss) {
    int32_t *labels = malloc((size_t)g->B * g->T * sizeof *labels);
    if (!labels) return -1;
    for (int b = 0; b < g->B; b++) /* HF's labels: the input ids, -100 on padding */
        for (int t = 0; t < g->T; t++) {
            size_t i = (size_t)b * g->T + t;
            labels[i] = t == 0 || g->tgt_h[i - 1] >= 0 ? g->ids_h[i] : -100;
        }
    tf_dump_tensor t[] = {
        {"input_ids", "I32", 2, {g->B, g->T}, g->ids_h},
        {"labels", "I32", 2, {g->B, g->T}, labels},
        {"logits", "F32", 3, {g->B, g->T, g->d.V}, logits},
        {"loss", "F32", 1, {1}, &loss},
    };
    int rc = tf_dump_write(g->dump_path, t, 4);
    free(labels);
    return rc;
}

int tf_lm_loss(void *state, const sr_module_call *call, double *loss) {
    tf_lm *g = state;
    if (g->Bcap == 0 || g->next_fwd != g->nmod) {
        lm_error(g, "loss before the forward of every module\n");
        return -1;
    }
    const int N = g->B * g->T, V = g->d.V;
    void *logits = g->out[g->nmod - 1];
    int dump = g->dump_path && !call->eval && call->step == 0 && call->micro_step == 0 && sr_rank(g->ctx) == 0;
    float *host_logits = NULL;
    if (dump) { /* before cross_entropy turns them into their gradient */
        if (g->dt != SR_FLOAT32 || !(host_logits = malloc((size_t)N * V * sizeof(float))) ||
            g->k->floats_download(host_logits, logits, (size_t)N * V) != 0) {
            lm_error(g, "dump needs fp32 compute and memory for the logits\n");
            free(host_logits);
            return -1;
        }
    }
    float dscale = g->ntargets ? call->grad_scale / (float)g->ntargets : 0.0f;
    g->k->cross_entropy(logits, g->losses_d, g->tgt_d, N, V, dscale, g->dt);
    if (g->k->floats_download(g->losses_h, g->losses_d, (size_t)N) != 0 || g->k->sync() != 0) {
        free(host_logits);
        return -1;
    }
    double sum = 0.0;
    for (int n = 0; n < N; n++) sum += g->losses_h[n];
    *loss = g->ntargets ? sum / (double)g->ntargets : 0.0;
    int rc = dump ? write_dump(g, host_logits, (float)*loss) : 0;
    free(host_logits);
    g->next_bwd = g->nmod - 1;
    return rc;
}

/* ---- backward ---------------------------------------------------------------------------------- */

int tf_lm_backward(void *state, const sr_module_call *call) {
    tf_lm *g = state;
    if (check_call(g, call, "backward") != 0) return -1;
    const int m = call->module, kind = kind_of(g, m), N = g->B * g->T, C = g->d.C;
    if (m != g->next_bwd) {
        lm_error(g, "backward of %s out of order\n", call->name);
        return -1;
    }
    void *const *p = call->params, *const *d = call->grads;
    const void *x = m > 0 ? g->out[m - 1] : NULL;
    const tf_shape sh = shape_of(g);
    switch (kind) {
    case M_HEAD: /* dlogits is in out[m]: dx = dlogits W, dW += dlogits^T h */
        tf_linear_backward(&sh, TF_WEIGHT_OUT_IN, g->dx, 0.0f, d[0], NULL, g->out[m], x, p[0], N, C, g->d.V);
        break;
    case M_LNF:
        g->k->zero(g->dx, (size_t)N * C * g->es);
        g->k->layernorm_backward(g->dx, d[0], d[1], g->dy, x, g->lnf_stats, g->lnf_stats + N, p[0], N, C, g->dt);
        break;
    case M_BLOCK: {
        if (!g->inter[m]) {
            lm_error(g, "backward of %s without its activations (no recompute came first)\n",
                    call->name);
            return -1;
        }
        tf_block_acts a = tf_block_acts_at(&sh, g->inter[m]);
        tf_block_backward(&sh, &g->arch->block_style, p, d, x, &a, g->dy, g->dx, g->work);
        pool_give(g, g->inter[m]);
        g->inter[m] = NULL;
        break;
    }
    case M_EMBED:
        g->arch->embed_backward(&sh, p, d, g->ids_d, g->embed_acts, g->dy, g->dx);
        break;
    }
    void *t = g->dy; /* this module's input gradient is the previous module's output gradient */
    g->dy = g->dx;
    g->dx = t;
    g->next_bwd = m - 1;
    /* waiting for the device after every module would serialise a GPU run: once per pass */
    return m == 0 ? g->k->sync() : 0;
}
