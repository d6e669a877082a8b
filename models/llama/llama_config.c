/* llama config (see llama_config.h): the named sizes and HF's config.json. */
#define _POSIX_C_SOURCE 200809L
#include "llama_config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "io/json.h"
#include "read_file.h"

/* The sizes' figures are their config.json files' on the Hub (HuggingFaceTB/SmolLM2-135M and -360M,
   Qwen/Qwen2.5-0.5B, meta-llama/Llama-3.2-1B); tiny is ours, for tests and the demo (its vocabulary
   is the tokenizer's and its head is untied, so the tests cover lm_head as a parameter of its own). */
#define LLAMA_DEFAULTS .init_range = 0.02
static const struct {
    const char *name;
    llama_config c;
} SIZES[] = {
    {"tiny",
     {.n_layer = 4,
      .n_head = 4,
      .n_kv_head = 2,
      .hidden = 128,
      .intermediate = 352,
      .vocab = 0,
      .max_positions = 2048,
      .rope_theta = 10000.0,
      .rms_eps = 1e-5,
      .tie = 0,
      LLAMA_DEFAULTS}},
    {"smollm2-135m",
     {.n_layer = 30,
      .n_head = 9,
      .n_kv_head = 3,
      .hidden = 576,
      .intermediate = 1536,
      .vocab = 49152,
      .max_positions = 8192,
      .rope_theta = 100000.0,
      .rms_eps = 1e-5,
      .tie = 1,
      LLAMA_DEFAULTS}},
    {"smollm2-360m",
     {.n_layer = 32,
      .n_head = 15,
      .n_kv_head = 5,
      .hidden = 960,
      .intermediate = 2560,
      .vocab = 49152,
      .max_positions = 8192,
      .rope_theta = 100000.0,
      .rms_eps = 1e-5,
      .tie = 1,
      LLAMA_DEFAULTS}},
    {"qwen2.5-0.5b",
     {.n_layer = 24,
      .n_head = 14,
      .n_kv_head = 2,
      .hidden = 896,
      .intermediate = 4864,
      .vocab = 151936,
      .max_positions = 32768,
      .rope_theta = 1000000.0,
      .rms_eps = 1e-6,
      .tie = 1,
      .qkv_bias = 1,
      LLAMA_DEFAULTS}},
    {"llama-3.2-1b",
     {.n_layer = 16,
      .n_head = 32,
      .n_kv_head = 8,
      .hidden = 2048,
      .intermediate = 8192,
      .vocab = 128256,
      .max_positions = 131072,
      .rope_theta = 500000.0,
      .rms_eps = 1e-5,
      .tie = 1,
      .llama3 = 1,
      .rope_factor = 32.0,
      .low_freq_factor = 1.0,
      .high_freq_factor = 4.0,
      .original_max_positions = 8192,
      LLAMA_DEFAULTS}},
};

const llama_config *llama_size(const char *name, const char **names) {
    *names = "tiny, smollm2-135m, smollm2-360m, qwen2.5-0.5b or llama-3.2-1b";
    for (size_t i = 0; i < sizeof SIZES / sizeof SIZES[0]; i++)
        if (!strcasecmp(name, SIZES[i].name)) return &SIZES[i].c;
    return NULL;
}

void llama_inv_freq(const llama_config *c, int hd, float *inv_freq) {
    for (int i = 0; i < hd / 2; i++) {
        /* HF: 1 / base ** (arange(0, dim, 2).float() / dim), in float32 */
        float e = (float)(2 * i) / (float)hd;
        float f = (float)(1.0 / pow((double)(float)c->rope_theta, (double)e));
        if (c->llama3) { /* HF's _compute_llama3_parameters, in float32 */
            const float PI = 3.14159265358979323846f;
            float old = (float)c->original_max_positions, factor = (float)c->rope_factor;
            float lo = (float)c->low_freq_factor, hi = (float)c->high_freq_factor;
            float wavelen = 2.0f * PI / f, low_wavelen = old / lo, high_wavelen = old / hi;
            float g = wavelen > low_wavelen ? f / factor : f;
            if (!(wavelen < high_wavelen) && !(wavelen > low_wavelen)) {
                float smooth = (old / wavelen - lo) / (hi - lo);
                g = (1.0f - smooth) * g / factor + smooth * g;
            }
            f = g;
        }
        inv_freq[i] = f;
    }
}

/* ---- config.json --------------------------------------------------------------------------------- */

typedef struct reader {
    sr__json j;
    const char *path;
    const char *field; /* the member being read, for messages */
} reader;

static int bad(reader *r, const char *what) {
    fprintf(stderr, "llama: error: %s: field \"%s\": %s\n", r->path, r->field, what);
    return -1;
}

static int read_num(reader *r, double *out) {
    sr__json_num n;
    if (sr__json_peek(&r->j) != SR__JSON_NUMBER || sr__json_number(&r->j, &n) != 0) return bad(r, "expected a number");
    if (!isfinite(n.value)) /* 1e400: no double holds it, and no model is built from it */
        return bad(r, "is beyond the range of a double (not a finite number)");
    *out = n.value;
    return 0;
}

static int read_int(reader *r, int lo, int hi, int *out) {
    double v;
    if (read_num(r, &v) != 0) return -1;
    if (v != floor(v) || v < lo || v > hi) {
        char m[96];
        snprintf(m, sizeof m, "%g is not an integer in [%d, %d]", v, lo, hi);
        return bad(r, m);
    }
    *out = (int)v;
    return 0;
}

static int read_bool(reader *r, int *out) {
    if (sr__json_peek(&r->j) != SR__JSON_BOOL || sr__json_bool(&r->j, out) != 0)
        return bad(r, "expected true or false");
    return 0;
}

/* a string value equal to one of want (NULL-terminated), or null when null_ok */
static int read_string_is(reader *r, const char *const *want, const char *why) {
    const char *s;
    size_t n;
    if (sr__json_peek(&r->j) != SR__JSON_STRING || sr__json_string(&r->j, &s, &n) != 0)
        return bad(r, "expected a string");
    for (; *want; want++)
        if (sr__json_key_is(s, n, *want)) return 0;
    char m[256];
    snprintf(m, sizeof m, "\"%.*s\" is not implemented (%s)", (int)(n < 64 ? n : 64), s, why);
    return bad(r, m);
}

/* a value that must be null (or false / 0 / 0.0 where that means the same: off) */
static int read_off(reader *r, const char *why) {
    sr__json_type t = sr__json_peek(&r->j);
    if (t == SR__JSON_NULL) return sr__json_null(&r->j);
    if (t == SR__JSON_BOOL) {
        int b;
        if (sr__json_bool(&r->j, &b) == 0 && !b) return 0;
    } else if (t == SR__JSON_NUMBER) {
        sr__json_num n;
        if (sr__json_number(&r->j, &n) == 0 && n.value == 0.0) return 0;
    }
    char m[256];
    snprintf(m, sizeof m, "%s is not implemented; remove the field or set it to null", why);
    return bad(r, m);
}

static int read_rope_scaling(reader *r, llama_config *c) {
    if (sr__json_peek(&r->j) == SR__JSON_NULL) {
        c->llama3 = 0;
        return sr__json_null(&r->j);
    }
    if (sr__json_peek(&r->j) != SR__JSON_OBJECT || sr__json_object(&r->j) != 0)
        return bad(r, "expected an object or null");
    const char *key;
    size_t klen;
    int rc, type_seen = 0, have[4] = {0};
    char name[64];
    while ((rc = sr__json_member(&r->j, &key, &klen)) > 0) {
        snprintf(name, sizeof name, "rope_scaling.%.*s", (int)(klen < 40 ? klen : 40), key);
        r->field = name;
        if (sr__json_key_is(key, klen, "rope_type") || sr__json_key_is(key, klen, "type")) {
            static const char *const types[] = {"llama3", NULL};
            if (read_string_is(r, types, "rope_scaling types: llama3") != 0) return -1;
            type_seen = 1;
        } else if (sr__json_key_is(key, klen, "factor")) {
            if (read_num(r, &c->rope_factor) != 0) return -1;
            have[0] = 1;
        } else if (sr__json_key_is(key, klen, "low_freq_factor")) {
            if (read_num(r, &c->low_freq_factor) != 0) return -1;
            have[1] = 1;
        } else if (sr__json_key_is(key, klen, "high_freq_factor")) {
            if (read_num(r, &c->high_freq_factor) != 0) return -1;
            have[2] = 1;
        } else if (sr__json_key_is(key, klen, "original_max_position_embeddings")) {
            if (read_int(r, 1, 1 << 30, &c->original_max_positions) != 0) return -1;
            have[3] = 1;
        } else {
            return bad(r, "not implemented (llama3 rope_scaling reads rope_type, factor, low_freq_factor, "
                          "high_freq_factor, original_max_position_embeddings)");
        }
    }
    if (rc < 0) return -1;
    r->field = "rope_scaling";
    if (!type_seen || !have[0] || !have[1] || !have[2] || !have[3])
        return bad(r, "llama3 scaling needs rope_type \"llama3\", factor, low_freq_factor, high_freq_factor and "
                      "original_max_position_embeddings");
    if (c->rope_factor <= 0 || c->high_freq_factor <= c->low_freq_factor || c->low_freq_factor <= 0)
        return bad(r, "wants factor > 0 and high_freq_factor > low_freq_factor > 0");
    c->llama3 = 1;
    return 0;
}

/* Fields that do not change the model's computation here: tokens' ids, the dtype the weights were
   saved in, generation and bookkeeping. */
static const char *const HARMLESS[] = {"architectures",
                                       "bos_token_id",
                                       "eos_token_id",
                                       "pad_token_id",
                                       "torch_dtype",
                                       "transformers_version",
                                       "use_cache",
                                       "_name_or_path",
                                       "is_llama_config",
                                       "transformers.js_config",
                                       "max_window_layers",
                                       "dtype",
                                       "shardrun_tokenizer", /* which tokenizer trained a checkpoint (lm_files.c) */
                                       NULL};

/* The fields HF's config classes give a default when the file lacks them (bits of `seen`). */
enum {
    SR__LF_LAYERS = 1 << 0,
    SR__LF_HEADS = 1 << 1,
    SR__LF_KV_HEADS = 1 << 2,
    SR__LF_HIDDEN = 1 << 3,
    SR__LF_INTERMEDIATE = 1 << 4,
    SR__LF_VOCAB = 1 << 5,
    SR__LF_POSITIONS = 1 << 6,
    SR__LF_THETA = 1 << 7,
    SR__LF_EPS = 1 << 8,
    SR__LF_INIT = 1 << 9,
    SR__LF_TIE = 1 << 10,
    SR__LF_SLIDING = 1 << 11,
};

static int member(reader *r, const char *key, size_t klen, llama_config *c, int *model_type, int *sliding_on,
                  int *head_dim, unsigned *seen) {
#define IS(k) sr__json_key_is(key, klen, k)
#define SR__LF_SEEN(bit, read) (*seen |= (bit), (read))
    if (IS("model_type")) {
        static const char *const types[] = {"llama", "qwen2", "mistral", NULL};
        const char *s;
        size_t n;
        if (sr__json_peek(&r->j) == SR__JSON_STRING && sr__json_string(&r->j, &s, &n) == 0) {
            *model_type = sr__json_key_is(s, n, "qwen2") ? 2 : sr__json_key_is(s, n, "mistral") ? 3 : 1;
            for (const char *const *t = types; *t; t++)
                if (sr__json_key_is(s, n, *t)) return 0;
            char m[160];
            snprintf(m, sizeof m, "\"%.*s\" is not implemented (model types: llama, qwen2, mistral)",
                     (int)(n < 64 ? n : 64), s);
            return bad(r, m);
        }
        return bad(r, "expected a string");
    }
    if (IS("num_hidden_layers")) return SR__LF_SEEN(SR__LF_LAYERS, read_int(r, 1, 4096, &c->n_layer));
    if (IS("num_attention_heads")) return SR__LF_SEEN(SR__LF_HEADS, read_int(r, 1, 4096, &c->n_head));
    if (IS("num_key_value_heads")) /* null: as many as the attention heads, in every config class */
        return SR__LF_SEEN(SR__LF_KV_HEADS, sr__json_peek(&r->j) == SR__JSON_NULL
                                                ? (c->n_kv_head = 0, sr__json_null(&r->j))
                                                : read_int(r, 1, 4096, &c->n_kv_head));
    if (IS("hidden_size")) return SR__LF_SEEN(SR__LF_HIDDEN, read_int(r, 1, 1 << 16, &c->hidden));
    if (IS("intermediate_size")) return SR__LF_SEEN(SR__LF_INTERMEDIATE, read_int(r, 1, 1 << 20, &c->intermediate));
    if (IS("vocab_size")) return SR__LF_SEEN(SR__LF_VOCAB, read_int(r, 1, 1 << 24, &c->vocab));
    if (IS("max_position_embeddings")) return SR__LF_SEEN(SR__LF_POSITIONS, read_int(r, 1, 1 << 30, &c->max_positions));
    if (IS("rope_theta")) return SR__LF_SEEN(SR__LF_THETA, read_num(r, &c->rope_theta));
    if (IS("rms_norm_eps")) return SR__LF_SEEN(SR__LF_EPS, read_num(r, &c->rms_eps));
    if (IS("initializer_range")) { /* HF's LlamaConfig refuses a range outside [0, 1] too */
        if (SR__LF_SEEN(SR__LF_INIT, read_num(r, &c->init_range)) != 0) return -1;
        return c->init_range >= 0 && c->init_range <= 1
                   ? 0
                   : bad(r, "the standard deviation of the initial weights must be in [0, 1] (HF's default: 0.02)");
    }
    if (IS("tie_word_embeddings")) return SR__LF_SEEN(SR__LF_TIE, read_bool(r, &c->tie));
    if (IS("attention_bias")) { /* Llama's: q, k, v and o */
        int b;
        if (read_bool(r, &b) != 0) return -1;
        c->qkv_bias = c->o_bias = b;
        return 0;
    }
    if (IS("mlp_bias")) return read_bool(r, &c->mlp_bias);
    if (IS("head_dim"))
        return sr__json_peek(&r->j) == SR__JSON_NULL ? sr__json_null(&r->j) : read_int(r, 1, 1 << 16, head_dim);
    if (IS("rope_scaling")) return read_rope_scaling(r, c);
    if (IS("hidden_act")) {
        static const char *const acts[] = {"silu", NULL};
        return read_string_is(r, acts, "the MLP is SwiGLU: silu");
    }
    if (IS("attention_dropout")) return read_off(r, "dropout");
    if (IS("rope_interleaved")) return read_off(r, "interleaved rotary pairs (HF's Llama rotates halves)");
    if (IS("pretraining_tp")) {
        int tp;
        if (read_int(r, 1, 1 << 20, &tp) != 0) return -1;
        return tp == 1 ? 0
                       : bad(r, "only 1 is implemented (it computes the same model as 1 in exact arithmetic; "
                                "set it to 1)");
    }
    if (IS("use_sliding_window")) {
        int on;
        if (read_bool(r, &on) != 0) return -1;
        *sliding_on = (*sliding_on & ~1) | (on ? 1 : 0);
        return 0;
    }
    if (IS("sliding_window")) { /* Mistral: null for none; Qwen2: set, and off unless use_sliding_window */
        *seen |= SR__LF_SLIDING;
        if (sr__json_peek(&r->j) == SR__JSON_NULL) return sr__json_null(&r->j);
        int w;
        if (read_int(r, 0, 1 << 30, &w) != 0) return -1;
        if (w > 0) *sliding_on |= 2; /* on for Mistral, for Qwen2 only with use_sliding_window */
        return 0;
    }
    for (const char *const *h = HARMLESS; *h; h++)
        if (IS(*h)) return sr__json_skip(&r->j);
#undef SR__LF_SEEN
#undef IS
    return bad(r, "not implemented by the llama task; remove it if it does not change the model");
}

/* HF's config classes' defaults, for the fields a config.json lacks (transformers'
   configuration_llama.py, configuration_qwen2.py, configuration_mistral.py); docs/llama.md's table */
typedef struct sr__llama_hf_class {
    const char *cls;
    int n_layer, n_head, n_kv_head, hidden, intermediate, vocab, max_positions;
    double rope_theta, rms_eps, init_range;
} sr__llama_hf_class;
static const sr__llama_hf_class HF_DEFAULTS[] = {
    /* n_kv_head 0: as many as num_attention_heads */
    [1] = {"LlamaConfig", 32, 32, 0, 4096, 11008, 32000, 2048, 10000.0, 1e-6, 0.02},
    [2] = {"Qwen2Config", 32, 32, 32, 4096, 22016, 151936, 32768, 10000.0, 1e-6, 0.02},
    [3] = {"MistralConfig", 32, 32, 8, 4096, 14336, 32000, 131072, 10000.0, 1e-6, 0.02},
};

/* Fills the fields the file lacks with model_type's class defaults, naming them in c->defaulted. */
static void hf_defaults(llama_config *c, int model_type, unsigned seen) {
    const sr__llama_hf_class *d = &HF_DEFAULTS[model_type];
    char list[sizeof c->defaulted] = "";
    size_t at = 0;
#define SR__LF_DEFAULT(bit, field, value, fmt, key)                                                                    \
    if (!(seen & (bit))) {                                                                                             \
        c->field = value;                                                                                              \
        if (at < sizeof list)                                                                                          \
            at += (size_t)snprintf(list + at, sizeof list - at, "%s" key " " fmt, at ? ", " : "", c->field);           \
    }
    SR__LF_DEFAULT(SR__LF_LAYERS, n_layer, d->n_layer, "%d", "num_hidden_layers")
    SR__LF_DEFAULT(SR__LF_HEADS, n_head, d->n_head, "%d", "num_attention_heads")
    SR__LF_DEFAULT(SR__LF_KV_HEADS, n_kv_head, d->n_kv_head ? d->n_kv_head : c->n_head, "%d", "num_key_value_heads")
    SR__LF_DEFAULT(SR__LF_HIDDEN, hidden, d->hidden, "%d", "hidden_size")
    SR__LF_DEFAULT(SR__LF_INTERMEDIATE, intermediate, d->intermediate, "%d", "intermediate_size")
    SR__LF_DEFAULT(SR__LF_VOCAB, vocab, d->vocab, "%d", "vocab_size")
    SR__LF_DEFAULT(SR__LF_POSITIONS, max_positions, d->max_positions, "%d", "max_position_embeddings")
    SR__LF_DEFAULT(SR__LF_THETA, rope_theta, d->rope_theta, "%g", "rope_theta")
    SR__LF_DEFAULT(SR__LF_EPS, rms_eps, d->rms_eps, "%g", "rms_norm_eps")
    SR__LF_DEFAULT(SR__LF_INIT, init_range, d->init_range, "%g", "initializer_range")
#undef SR__LF_DEFAULT
    if (!(seen & SR__LF_TIE)) {
        c->tie = 0;
        if (at < sizeof list)
            at += (size_t)snprintf(list + at, sizeof list - at, "%stie_word_embeddings false", at ? ", " : "");
    }
    if (at >= sizeof list) memcpy(list + sizeof list - 4, "...", 4);
    c->defaulted[0] = 0;
    if (at) snprintf(c->defaulted, sizeof c->defaulted, "%s's defaults: %s", d->cls, list);
}

int llama_config_read(const char *path, llama_config *c) {
    char err[512];
    size_t n;
    char *text = tf_read_file(path, "config.json", &n, err, sizeof err);
    if (!text) {
        fprintf(stderr, "llama: error: [task] config = %s: %s\n", path, err);
        return -1;
    }
    reader r = {.path = path, .field = "(the document)"};
    sr__json_init(&r.j, text, n, NULL);
    int rc = sr__json_object(&r.j), model_type = 0, sliding = 0, head_dim = 0;
    unsigned seen = 0;
    const char *key;
    size_t klen;
    char name[96];
    /* defaults HF's config classes take for a missing field */
    c->qkv_bias = c->o_bias = c->mlp_bias = 0;
    c->llama3 = 0;
    while (rc == 0 && (rc = sr__json_member(&r.j, &key, &klen)) > 0) {
        snprintf(name, sizeof name, "%.*s", (int)(klen < 80 ? klen : 80), key);
        r.field = name;
        rc = member(&r, key, klen, c, &model_type, &sliding, &head_dim, &seen) != 0 ? -1 : 0;
    }
    if (rc == 0 && sr__json_end(&r.j) != 0) rc = -1;
    size_t at;
    const char *jerr = sr__json_error(&r.j, &at);
    if (rc < 0 && jerr) fprintf(stderr, "llama: error: %s: not valid JSON: %s at byte %zu\n", path, jerr, at);
    sr__json_free(&r.j);
    free(text);
    if (rc < 0) return -1;
    r.field = "model_type";
    if (!model_type) return bad(&r, "missing: the llama task reads configs of model_type llama, qwen2 or mistral");
    /* what the file lacks is what HF's class for its model_type would take, not the figures of a
       size: a config.json describes the model by itself */
    hf_defaults(c, model_type, seen);
    if (model_type == 3 && !(seen & SR__LF_SLIDING)) {
        r.field = "sliding_window";
        return bad(&r, "missing, and MistralConfig's default is 4096: sliding-window attention, which is not "
                       "implemented; set it to null");
    }
    if (model_type == 2) c->qkv_bias = 1, c->o_bias = 0; /* Qwen2: q/k/v biases, none elsewhere */
    /* Qwen2 turns its window on with use_sliding_window; Mistral by setting sliding_window */
    if ((model_type == 2 && (sliding & 1) && (sliding & 2)) || (model_type != 2 && (sliding & 2))) {
        r.field = "sliding_window";
        return bad(&r, "sliding-window attention is not implemented; set it to null (use_sliding_window false for "
                       "Qwen2)");
    }
    if (!c->n_kv_head) c->n_kv_head = c->n_head;
    if (head_dim && head_dim * c->n_head != c->hidden) {
        r.field = "head_dim";
        return bad(&r, "only hidden_size / num_attention_heads is implemented");
    }
    return 0;
}
