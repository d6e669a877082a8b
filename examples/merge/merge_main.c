/*
 * shardrun_merge (`shardrun merge`): folds the LoRA adapters of a FULL checkpoint into its base
 * weights, as HF PEFT's merge_and_unload does, and writes an ordinary model.safetensors -- the
 * model's own names and shapes, no adapters -- that loads as init_weights (or in HF) with LoRA off.
 *
 *   shardrun merge CHECKPOINT_DIR [-o OUT.safetensors] [--base BASE.safetensors]
 *
 * Reads CHECKPOINT_DIR/adapter_config.json (PEFT's: r, lora_alpha, fan_in_fan_out, use_rslora) and
 * adapter_model.safetensors ("base_model.model.<path>.lora_A.weight" [r, in], "lora_B.weight"
 * [out, r]); the base is BASE, or the checkpoint's model.safetensors (its lora_* tensors dropped).
 * Each adapted weight becomes W + scale * B A (transposed for fan_in_fan_out, GPT-2's Conv1D
 * [in, out] weights), scale = lora_alpha / r (/ sqrt(r) with use_rslora), in double, stored fp32;
 * every other tensor is copied as fp32.  OUT defaults to CHECKPOINT_DIR/merged/model.safetensors.
 * Exit 0, 1 (a file could not be read or written), 2 (bad arguments or inconsistent files).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/out_file.h"
#include "io/json.h"
#include "io/safetensors.h"

#define PREFIX "base_model.model."

typedef struct lora_cfg {
    double r, alpha;
    int fan_in_fan_out, rslora, dora;
} lora_cfg;

static char *read_text(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, len = 0, got;
    do {
        if (len + 4096 > cap) {
            char *g = realloc(buf, cap = 2 * cap + 8192);
            if (!g) {
                free(buf), fclose(f);
                return NULL;
            }
            buf = g;
        }
        got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
    } while (got > 0);
    fclose(f);
    buf[len] = 0;
    *n = len;
    return buf;
}

static int read_config(const char *path, lora_cfg *c) {
    size_t n;
    char *text = read_text(path, &n);
    if (!text) {
        fprintf(stderr,
                "shardrun merge: cannot read %s: %s (a FULL_STATE_DICT checkpoint of a run with lora_r > 0 "
                "holds it)\n",
                path, strerror(errno));
        return 1;
    }
    memset(c, 0, sizeof *c);
    sr__json j;
    const char *key, *peft = NULL;
    size_t klen, plen = 0;
    sr__json_num num;
    int r, rc = 0;
    sr__json_init(&j, text, n, NULL);
    if (sr__json_object(&j) != 0) rc = -1;
    while (!rc && (r = sr__json_member(&j, &key, &klen)) > 0) {
        if (sr__json_key_is(key, klen, "r") && sr__json_number(&j, &num) == 0) c->r = num.value;
        else if (sr__json_key_is(key, klen, "lora_alpha") && sr__json_number(&j, &num) == 0) c->alpha = num.value;
        else if (sr__json_key_is(key, klen, "fan_in_fan_out")) sr__json_bool(&j, &c->fan_in_fan_out);
        else if (sr__json_key_is(key, klen, "use_rslora")) sr__json_bool(&j, &c->rslora);
        else if (sr__json_key_is(key, klen, "use_dora")) sr__json_bool(&j, &c->dora);
        else if (sr__json_key_is(key, klen, "peft_type")) sr__json_string(&j, &peft, &plen);
        else sr__json_skip(&j);
    }
    if (!rc && (r < 0 || sr__json_end(&j) != 0)) rc = -1;
    if (rc) {
        size_t at;
        const char *why = sr__json_error(&j, &at);
        fprintf(stderr, "shardrun merge: %s: not PEFT's adapter_config.json: %s at byte %zu\n", path, why, at);
    } else if (!peft || strcmp(peft, "LORA") != 0 || !(c->r >= 1) || !(c->alpha > 0) || c->dora) {
        fprintf(stderr,
                "shardrun merge: %s: wants peft_type \"LORA\" with r >= 1 and lora_alpha > 0, no DoRA (has "
                "peft_type %s, r %g, lora_alpha %g, use_dora %s)\n",
                path, peft ? peft : "(none)", c->r, c->alpha, c->dora ? "true" : "false");
        rc = -1;
    }
    sr__json_free(&j);
    free(text);
    return rc ? 2 : 0;
}

static int is_lora(const char *name) { return strstr(name, ".lora_A.") || strstr(name, ".lora_B."); }

/* W (rows x cols, fp32 in place) += scale * (B A), or its transpose for fan_in_fan_out */
static void fold(float *W, const float *A, const float *B, int64_t r, int64_t in, int64_t out, double scale,
                 int fan_in_fan_out) {
    for (int64_t o = 0; o < out; o++)
        for (int64_t i = 0; i < in; i++) {
            double d = 0;
            for (int64_t k = 0; k < r; k++) d += (double)B[o * r + k] * A[k * in + i];
            float *w = fan_in_fan_out ? &W[i * out + o] : &W[o * in + i];
            *w = (float)(*w + scale * d);
        }
}

static float *to_f32(const sr__st_tensor *t, const void *data) {
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
    float *f = malloc((n ? n : 1) * sizeof *f);
    if (f && sr__st_to_f32(t, data, 0, n, f) != 0) free(f), f = NULL;
    return f;
}

static void usage(FILE *f) {
    fprintf(f, "usage: shardrun merge CHECKPOINT_DIR [-o OUT.safetensors] [--base BASE.safetensors]\n"
               "  folds CHECKPOINT_DIR's LoRA adapters (adapter_model.safetensors, adapter_config.json) into the\n"
               "  base weights (BASE, or the checkpoint's model.safetensors) and writes a model.safetensors that\n"
               "  loads with LoRA off (default OUT: CHECKPOINT_DIR/merged/model.safetensors)\n");
}

int main(int argc, char **argv) {
    const char *dir = NULL, *out = NULL, *base = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(argv[i], "--base") && i + 1 < argc) {
            base = argv[++i];
        } else if (argv[i][0] == '-' || dir) {
            fprintf(stderr, "shardrun merge: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else {
            dir = argv[i];
        }
    }
    if (!dir) {
        usage(stderr);
        return 2;
    }
    char cfg_path[4096], ad_path[4096], base_path[4096], out_path[4096], err[1024];
    snprintf(cfg_path, sizeof cfg_path, "%s/adapter_config.json", dir);
    snprintf(ad_path, sizeof ad_path, "%s/adapter_model.safetensors", dir);
    snprintf(base_path, sizeof base_path, "%s", base ? base : "");
    if (!base) snprintf(base_path, sizeof base_path, "%s/model.safetensors", dir);
    if (!out) {
        snprintf(out_path, sizeof out_path, "%s/merged", dir);
        if (mkdir(out_path, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "shardrun merge: cannot create %s: %s\n", out_path, strerror(errno));
            return 1;
        }
        snprintf(out_path, sizeof out_path, "%s/merged/model.safetensors", dir);
    } else {
        snprintf(out_path, sizeof out_path, "%s", out);
    }
    const char *inputs[] = {cfg_path, ad_path, base_path};
    if (sr__out_check(out_path, inputs, 3, err, sizeof err) != 0) {
        fprintf(stderr, "shardrun merge: %s\n", err);
        return 2;
    }
    lora_cfg c;
    int rc = read_config(cfg_path, &c);
    if (rc) return rc;
    double scale = c.alpha / (c.rslora ? sqrt(c.r) : c.r);

    sr__st_file *ad = sr__st_open(ad_path, err, sizeof err), *bf = ad ? sr__st_open(base_path, err, sizeof err) : NULL;
    if (!bf) {
        fprintf(stderr, "shardrun merge: %s\n", err);
        if (ad) sr__st_close(ad);
        return 1;
    }
    size_t nb = sr__st_count(bf), na = sr__st_count(ad), nout = 0, used = 0;
    sr__st_tensor *t = calloc(nb ? nb : 1, sizeof *t);
    float **vals = calloc(nb ? nb : 1, sizeof *vals);
    char name[1024];
    rc = !t || !vals ? 1 : 0;
    if (rc) fprintf(stderr, "shardrun merge: out of memory\n");
    for (size_t i = 0; i < nb && !rc; i++) {
        const sr__st_tensor *bt = sr__st_at(bf, i);
        if (is_lora(bt->name)) continue; /* the checkpoint's own copy of the adapters */
        const void *data;
        sr__st_find(bf, bt->name, &data);
        float *w = to_f32(bt, data);
        if (!w) {
            fprintf(stderr, "shardrun merge: %s: cannot read %s as float32 (dtype %s)\n", base_path, bt->name,
                    sr__st_dtype_name(bt->dtype));
            rc = 2;
            break;
        }
        size_t len = strlen(bt->name);
        if (len > 7 && !strcmp(bt->name + len - 7, ".weight")) {
            const void *ad_a, *ad_b;
            snprintf(name, sizeof name, PREFIX "%.*s.lora_A.weight", (int)(len - 7), bt->name);
            const sr__st_tensor *A = sr__st_find(ad, name, &ad_a);
            snprintf(name, sizeof name, PREFIX "%.*s.lora_B.weight", (int)(len - 7), bt->name);
            const sr__st_tensor *B = sr__st_find(ad, name, &ad_b);
            if (A || B) {
                int64_t r = A ? A->shape[0] : 0, in = A ? A->shape[1] : 0, o = B ? B->shape[0] : 0;
                int64_t rows = c.fan_in_fan_out ? in : o, cols = c.fan_in_fan_out ? o : in;
                float *fa = A && B ? to_f32(A, ad_a) : NULL, *fb = fa ? to_f32(B, ad_b) : NULL;
                if (!A || !B || A->ndim != 2 || B->ndim != 2 || B->shape[1] != r || (double)r != c.r || bt->ndim != 2 ||
                    bt->shape[0] != rows || bt->shape[1] != cols || !fb) {
                    fprintf(stderr,
                            "shardrun merge: %s and %s disagree on %s: lora_A [r, in] and lora_B [out, r] with r = "
                            "%g must fit the weight (%s, fan_in_fan_out %s)\n",
                            ad_path, base_path, bt->name, c.r, c.fan_in_fan_out ? "[in, out]" : "[out, in]",
                            c.fan_in_fan_out ? "true" : "false");
                    free(fa), free(fb), free(w);
                    rc = 2;
                    break;
                }
                fold(w, fa, fb, r, in, o, scale, c.fan_in_fan_out);
                free(fa), free(fb);
                used += 2;
            }
        }
        t[nout] = *bt;
        t[nout].dtype = SR_FLOAT32;
        vals[nout++] = w;
    }
    if (!rc && used != na) {
        fprintf(stderr,
                "shardrun merge: %s holds %zu adapter tensors, but only %zu fit weights of %s; is it the base "
                "these adapters were trained on?\n",
                ad_path, na, used, base_path);
        rc = 2;
    }
    if (!rc) {
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp", out_path);
        const sr__st_kv meta[] = {{"format", "pt"}};
        sr__st_writer *w = sr__st_create(tmp, t, nout, meta, 1, err, sizeof err);
        int ok = w != NULL;
        for (size_t i = 0; ok && i < nout; i++) {
            size_t bytes = sizeof(float);
            for (int d = 0; d < t[i].ndim; d++) bytes *= (size_t)t[i].shape[d];
            if (sr__st_write(w, i, 0, vals[i], bytes, err, sizeof err) != 0) sr__st_abort(w), ok = 0;
        }
        if (ok && sr__st_finish(w, err, sizeof err) != 0) ok = 0;
        if (ok && rename(tmp, out_path) != 0) {
            snprintf(err, sizeof err, "renaming the temporary: %s", strerror(errno));
            ok = 0;
        }
        if (!ok) {
            fprintf(stderr, "shardrun merge: cannot write %s: %s\n", out_path, err);
            remove(tmp);
            rc = 1;
        } else {
            printf("shardrun merge: wrote %s: %zu tensors, %zu adapted weights (scale %g)\n", out_path, nout, used / 2,
                   scale);
        }
    }
    for (size_t i = 0; vals && i < nout; i++) free(vals[i]);
    free(vals), free(t);
    sr__st_close(ad), sr__st_close(bf);
    return rc;
}
