/*
 * shardrun_merge (`shardrun merge`): folds the LoRA adapters of a FULL checkpoint into its base
 * weights, as HF PEFT's merge_and_unload does, and writes an ordinary model.safetensors -- the
 * model's own names and shapes, no adapters -- that loads as init_weights (or in HF) with LoRA off.
 *
 *   shardrun merge CHECKPOINT_DIR [-o OUT.safetensors] [--base BASE.safetensors]
 *
 * Reads CHECKPOINT_DIR/adapter_config.json (PEFT's LoraConfig: merge_config.h says which fields it
 * applies and which it refuses) and adapter_model.safetensors ("base_model.model.<path>.lora_A.weight"
 * [r, in], "lora_B.weight" [out, r]); the base is BASE, or the checkpoint's model.safetensors (its
 * lora_* tensors dropped).  Each adapted weight becomes W + scale * B A (transposed for
 * fan_in_fan_out, GPT-2's Conv1D [in, out] weights), with the module's r and alpha (rank_pattern,
 * alpha_pattern) and scale = alpha / r (/ sqrt(r) with use_rslora), in double, stored fp32; every
 * other tensor is copied as fp32.  OUT defaults to CHECKPOINT_DIR/merged/model.safetensors
 * (merge_out.h: never written through a link).
 *
 * Every check comes before the work: the destination, the config, both files, that the config and
 * the tensors agree (each adapter pair on a module target_modules names, of the module's rank and
 * the weight's shape; each weight target_modules names adapted); then the result must be finite
 * before anything is written.  Exit 0; 2 (bad arguments, files or config, a result that is not
 * finite; nothing written); 1 (the output could not be written).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "io/safetensors.h"
#include "merge_config.h"
#include "merge_out.h"

#define PREFIX "base_model.model."

typedef struct adapted { /* one adapted module */
    char *module;        /* its path, "transformer.h.0.attn.c_attn" */
    const sr__st_tensor *A, *B;
    const void *da, *db;
    double r, alpha, scale;
    const char *rkey, *akey; /* the rank_pattern / alpha_pattern keys that gave r, alpha (or NULL) */
} adapted;

typedef struct job {
    const char *ad_path, *base_path, *cfg_path;
    sr__merge_cfg cfg;
    sr__st_file *ad, *bf;
    adapted *mods;
    size_t nmods;
    int *which; /* per base tensor: 1 + its index in mods, or 0 */
} job;

static int is_lora(const char *name) { return strstr(name, ".lora_A.") || strstr(name, ".lora_B."); }

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !strcmp(s + n - t, tail);
}

static int is_float(const sr__st_tensor *t) {
    return t->dtype == SR_FLOAT32 || t->dtype == SR_FLOAT16 || t->dtype == SR_BFLOAT16;
}

static int targets(const job *jb, const char *module) {
    int m = sr__merge_cfg_targets(&jb->cfg, module);
    if (m < 0)
        fprintf(stderr,
                "shardrun merge: %s: target_modules or exclude_modules: PCRE2 gave up matching %s (its match "
                "limit); simplify the pattern\n",
                jb->cfg_path, module);
    return m;
}

/* Adapter tensor i: its module, paired with the other half.  0, or 2 after saying why. */
static int pair(job *jb, size_t i, size_t *cap) {
    const sr__st_tensor *t = sr__st_at(jb->ad, i);
    const char *n = t->name;
    int a = ends_with(n, ".lora_A.weight"), b = ends_with(n, ".lora_B.weight");
    size_t len = strlen(n);
    if (strncmp(n, PREFIX, strlen(PREFIX)) || (!a && !b) || len <= strlen(PREFIX) + 14) {
        fprintf(stderr,
                "shardrun merge: %s holds %s, which is no LoRA weight (\"" PREFIX "<module>.lora_A.weight\" or "
                "\"...lora_B.weight\"): a bias, an embedding's adapter or a modules_to_save copy, which merge does "
                "not fold; merge these adapters with PEFT (PeftModel.from_pretrained(base, dir).merge_and_unload())\n",
                jb->ad_path, n);
        return 2;
    }
    char other[2048];
    snprintf(other, sizeof other, "%.*s.lora_%c.weight", (int)(len - 14), n, a ? 'B' : 'A');
    const void *od;
    const sr__st_tensor *o = sr__st_find(jb->ad, other, &od);
    if (!o) {
        fprintf(stderr, "shardrun merge: %s holds %s but not %s: each adapted module has both\n", jb->ad_path, n,
                other);
        return 2;
    }
    if (b) return 0; /* the pair is made from its lora_A */
    if (sr__grow((void **)&jb->mods, cap, jb->nmods + 1, sizeof *jb->mods) != 0) {
        fprintf(stderr, "shardrun merge: out of memory\n");
        return 2;
    }
    adapted *m = &jb->mods[jb->nmods];
    *m = (adapted){.A = t, .B = o, .db = od};
    sr__st_find(jb->ad, n, &m->da);
    if (!(m->module = sr__strndup(n + strlen(PREFIX), len - strlen(PREFIX) - 14))) {
        fprintf(stderr, "shardrun merge: out of memory\n");
        return 2;
    }
    jb->nmods++;
    return 0;
}

/* Module m against the config and the base.  0, or 2 after saying why. */
static int check_module(job *jb, adapted *m) {
    const sr__merge_cfg *c = &jb->cfg;
    int tg = targets(jb, m->module);
    if (tg <= 0) {
        if (tg == 0)
            fprintf(stderr,
                    "shardrun merge: %s holds adapters on %s, but %s's target_modules%s does not adapt it: the config "
                    "is not the one these adapters were trained with; fix target_modules\n",
                    jb->ad_path, m->module, jb->cfg_path, c->excludes.set ? " (with exclude_modules)" : "");
        return 2;
    }
    if (sr__merge_cfg_module(c, m->module, &m->r, &m->alpha, &m->rkey, &m->akey) != 0) {
        fprintf(stderr, "shardrun merge: %s: PCRE2 gave up matching %s against rank_pattern or alpha_pattern\n",
                jb->cfg_path, m->module);
        return 2;
    }
    m->scale = sr__merge_cfg_scale(c, m->r, m->alpha);
    char wname[2048];
    snprintf(wname, sizeof wname, "%s.weight", m->module);
    const sr__st_tensor *w = NULL;
    size_t nb = sr__st_count(jb->bf), wi = 0;
    for (; wi < nb && !w; wi++)
        if (!strcmp(sr__st_at(jb->bf, wi)->name, wname)) w = sr__st_at(jb->bf, wi);
    if (!w) {
        fprintf(stderr,
                "shardrun merge: %s has adapters on %s, but %s holds no %s; is it the base these adapters were "
                "trained on?\n",
                jb->ad_path, m->module, jb->base_path, wname);
        return 2;
    }
    jb->which[wi - 1] = (int)(m - jb->mods) + 1;
    const sr__st_tensor *A = m->A, *B = m->B;
    int64_t in = A->ndim == 2 ? A->shape[1] : -1, out = B->ndim == 2 ? B->shape[0] : -1;
    int64_t rows = c->fan_in_fan_out ? in : out, cols = c->fan_in_fan_out ? out : in;
    if (!is_float(A) || !is_float(B) || !is_float(w) || A->ndim != 2 || B->ndim != 2 || (double)A->shape[0] != m->r ||
        (double)B->shape[1] != m->r || w->ndim != 2 || w->shape[0] != rows || w->shape[1] != cols) {
        char sa[64], sb[64], sw[64], rfrom[300] = "r";
        if (m->rkey) snprintf(rfrom, sizeof rfrom, "rank_pattern[\"%.200s\"]", m->rkey);
        fprintf(stderr,
                "shardrun merge: %s and %s disagree on %s: lora_A %s %s and lora_B %s %s must be [r, in] and [out, "
                "r] with %s = %g, and the weight %s %s must be %s (fan_in_fan_out %s), all floating point\n",
                jb->ad_path, jb->base_path, wname, sr__st_shape_str(sa, sizeof sa, A->ndim, A->shape),
                sr__st_dtype_name(A->dtype), sr__st_shape_str(sb, sizeof sb, B->ndim, B->shape),
                sr__st_dtype_name(B->dtype), rfrom, m->r, sr__st_shape_str(sw, sizeof sw, w->ndim, w->shape),
                sr__st_dtype_name(w->dtype), c->fan_in_fan_out ? "[in, out]" : "[out, in]",
                c->fan_in_fan_out ? "true" : "false");
        return 2;
    }
    return 0;
}

/* Everything the merge needs, checked before any of it is computed.  0, or 2 after saying why. */
static int plan(job *jb) {
    size_t na = sr__st_count(jb->ad), nb = sr__st_count(jb->bf), cap = 0;
    int rc = 0;
    if (!(jb->which = sr__calloc(nb ? nb : 1, sizeof *jb->which)))
        return fprintf(stderr, "shardrun merge: out of memory\n"), 2;
    for (size_t i = 0; i < na && !rc; i++) rc = pair(jb, i, &cap);
    if (!rc && !jb->nmods)
        return fprintf(stderr, "shardrun merge: %s holds no adapters; nothing to merge\n", jb->ad_path), 2;
    for (size_t i = 0; i < jb->nmods && !rc; i++) rc = check_module(jb, &jb->mods[i]);
    for (size_t i = 0; i < nb && !rc; i++) {
        const sr__st_tensor *t = sr__st_at(jb->bf, i);
        if (is_lora(t->name)) continue; /* the checkpoint's own copy of the adapters */
        if (!is_float(t)) {
            fprintf(stderr, "shardrun merge: %s: %s is %s; merge reads floating-point weights (F32, F16, BF16)\n",
                    jb->base_path, t->name, sr__st_dtype_name(t->dtype));
            return 2;
        }
        if (jb->which[i] || t->ndim != 2 || !ends_with(t->name, ".weight")) continue;
        char *module = sr__strndup(t->name, strlen(t->name) - 7);
        int tg = module ? targets(jb, module) : -1;
        if (tg)
            fprintf(stderr,
                    "shardrun merge: %s's target_modules adapts %s, but %s holds no adapters for it: the config is "
                    "not the one these adapters were trained with (or not for this base); fix target_modules\n",
                    jb->cfg_path, module ? module : t->name, jb->ad_path);
        free(module);
        if (tg) return 2;
    }
    return rc;
}

static float *to_f32(const sr__st_tensor *t, const void *data) {
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
    float *f = sr__malloc((n ? n : 1) * sizeof *f);
    if (f && sr__st_to_f32(t, data, 0, n, f) != 0) free(f), f = NULL;
    return f;
}

static size_t count(const sr__st_tensor *t) {
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
    return n;
}

/* The first element of x[0 .. n) that is not finite, or n */
static size_t first_nonfinite(const float *x, size_t n) {
    size_t i = 0;
    while (i < n && isfinite(x[i])) i++;
    return i;
}

/* W (fp32, in place) += scale * (B A), or its transpose for fan_in_fan_out */
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

/* A merged value that is not finite: where, and why.  Returns 2. */
static int not_finite(const job *jb, const sr__st_tensor *t, size_t at, float v, float base, const adapted *m,
                      const float *A, const float *B) {
    char where[64] = "";
    if (t->ndim == 2)
        snprintf(where, sizeof where, " ([%zu, %zu])", at / (size_t)t->shape[1], at % (size_t)t->shape[1]);
    fprintf(stderr, "shardrun merge: the merged %s is %g at index %zu%s: ", t->name, v, at, where);
    size_t ia = m ? first_nonfinite(A, count(m->A)) : 0, ib = m ? first_nonfinite(B, count(m->B)) : 0;
    if (!isfinite(base)) fprintf(stderr, "the base's value there is already %g (%s)", base, jb->base_path);
    else if (m && (ia < count(m->A) || ib < count(m->B)))
        fprintf(stderr,
                "%s.lora_%c.weight holds %g at index %zu (%s): the adapters are not finite (did training "
                "diverge?)",
                m->module, ia < count(m->A) ? 'A' : 'B', ia < count(m->A) ? A[ia] : B[ib], ia < count(m->A) ? ia : ib,
                jb->ad_path);
    else if (m)
        fprintf(stderr,
                "scale %g (alpha %g from %s%s%s / %sr %g from %s%s%s) times B A overflows float32; check the "
                "config's alpha and r",
                m->scale, m->alpha, m->akey ? "alpha_pattern[\"" : "lora_alpha", m->akey ? m->akey : "",
                m->akey ? "\"]" : "", jb->cfg.rslora ? "sqrt " : "", m->r, m->rkey ? "rank_pattern[\"" : "r",
                m->rkey ? m->rkey : "", m->rkey ? "\"]" : "");
    fprintf(stderr, "; nothing was written\n");
    return 2;
}

/* The merged tensors, in the base's order, checked finite.  0, or 2 after saying why. */
static int compute(job *jb, sr__st_tensor *t, float **vals, size_t *nout) {
    size_t nb = sr__st_count(jb->bf);
    for (size_t i = 0; i < nb; i++) {
        const sr__st_tensor *bt = sr__st_at(jb->bf, i);
        if (is_lora(bt->name)) continue;
        const void *data;
        sr__st_find(jb->bf, bt->name, &data);
        float *w = to_f32(bt, data), *base = NULL, *fa = NULL, *fb = NULL;
        const adapted *m = jb->which[i] ? &jb->mods[jb->which[i] - 1] : NULL;
        size_t n = count(bt);
        if (w && m) {
            base = sr__malloc((n ? n : 1) * sizeof *base);
            fa = to_f32(m->A, m->da), fb = to_f32(m->B, m->db);
            if (base) memcpy(base, w, n * sizeof *w);
            if (base && fa && fb)
                fold(w, fa, fb, m->A->shape[0], m->A->shape[1], m->B->shape[0], m->scale, jb->cfg.fan_in_fan_out);
        }
        int rc = 0;
        if (!w || (m && (!base || !fa || !fb))) {
            fprintf(stderr, "shardrun merge: out of memory merging %s\n", bt->name);
            rc = 2;
        } else {
            size_t at = first_nonfinite(w, n);
            if (at < n) rc = not_finite(jb, bt, at, w[at], base ? base[at] : w[at], m, fa, fb);
        }
        free(base), free(fa), free(fb);
        t[*nout] = *bt;
        t[*nout].dtype = SR_FLOAT32;
        vals[(*nout)++] = w;
        if (rc) return rc;
    }
    return 0;
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
    char cfg_path[4096], ad_path[4096], base_path[4096], out_path[4096], folder[4096], err[1024];
    snprintf(cfg_path, sizeof cfg_path, "%s/adapter_config.json", dir);
    snprintf(ad_path, sizeof ad_path, "%s/adapter_model.safetensors", dir);
    snprintf(base_path, sizeof base_path, "%s", base ? base : "");
    if (!base) snprintf(base_path, sizeof base_path, "%s/model.safetensors", dir);
    snprintf(folder, sizeof folder, "%s/merged", dir);
    if (out) snprintf(out_path, sizeof out_path, "%s", out);
    else snprintf(out_path, sizeof out_path, "%s/merged/model.safetensors", dir);
    sr__merge_dest dest = {.path = out_path, .folder = out ? NULL : folder};
    const char *inputs[] = {cfg_path, ad_path, base_path};
    if (sr__merge_dest_check(&dest, inputs, 3, err, sizeof err) != 0) {
        fprintf(stderr, "shardrun merge: %s\n", err);
        return 2;
    }
    job jb = {.ad_path = ad_path, .base_path = base_path, .cfg_path = cfg_path};
    int rc = sr__merge_cfg_read(cfg_path, &jb.cfg);
    if (rc) return rc;
    jb.ad = sr__st_open(ad_path, err, sizeof err);
    jb.bf = jb.ad ? sr__st_open(base_path, err, sizeof err) : NULL;
    if (!jb.bf) {
        fprintf(stderr, "shardrun merge: %s\n", err);
        rc = 2;
    }
    if (!rc) rc = plan(&jb);
    size_t nb = jb.bf ? sr__st_count(jb.bf) : 0, nout = 0;
    sr__st_tensor *t = rc ? NULL : sr__calloc(nb ? nb : 1, sizeof *t);
    float **vals = rc ? NULL : sr__calloc(nb ? nb : 1, sizeof *vals);
    if (!rc && (!t || !vals)) rc = 2, fprintf(stderr, "shardrun merge: out of memory\n");
    if (!rc) rc = compute(&jb, t, vals, &nout);
    if (!rc && sr__merge_dest_write(&dest, t, vals, nout, err, sizeof err) != 0) {
        fprintf(stderr, "shardrun merge: %s\n", err);
        rc = 1;
    }
    if (!rc) {
        double lo = INFINITY, hi = 0;
        for (size_t i = 0; i < jb.nmods; i++) lo = fmin(lo, jb.mods[i].scale), hi = fmax(hi, jb.mods[i].scale);
        printf("shardrun merge: wrote %s: %zu tensors, %zu adapted weights (", out_path, nout, jb.nmods);
        if (lo == hi) printf("scale %g)\n", lo);
        else printf("scales %g to %g)\n", lo, hi);
    }
    for (size_t i = 0; vals && i < nout; i++) free(vals[i]);
    for (size_t i = 0; i < jb.nmods; i++) free(jb.mods[i].module);
    free(vals), free(t), free(jb.mods), free(jb.which);
    sr__merge_cfg_free(&jb.cfg);
    if (jb.ad) sr__st_close(jb.ad);
    if (jb.bf) sr__st_close(jb.bf);
    return rc;
}
