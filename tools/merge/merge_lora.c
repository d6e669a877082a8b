/* LoRA adapters folded into their base weights as PEFT's merge_and_unload does (see merge_lora.h). */
#define _GNU_SOURCE
#include "merge_lora.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

int sr__merge_is_lora(const char *name) { return strstr(name, ".lora_A.") || strstr(name, ".lora_B."); }

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !strcmp(s + n - t, tail);
}

static int is_float(const sr__st_tensor *t) {
    return t->dtype == SR_FLOAT32 || t->dtype == SR_FLOAT16 || t->dtype == SR_BFLOAT16;
}

static int targets(const sr__merge_job *jb, const char *module) {
    int m = sr__merge_cfg_targets(&jb->cfg, module);
    if (m < 0)
        fprintf(stderr,
                "%s: %s: target_modules or exclude_modules: PCRE2 gave up matching %s (its match "
                "limit); simplify the pattern\n",
                jb->who, jb->cfg_path, module);
    return m;
}

/* Adapter tensor i: its module, paired with the other half.  0, or 2 after saying why. */
static int pair(sr__merge_job *jb, size_t i, size_t *cap) {
    const sr__st_tensor *t = sr__st_at(jb->ad, i);
    const char *n = t->name;
    int a = ends_with(n, ".lora_A.weight"), b = ends_with(n, ".lora_B.weight");
    size_t len = strlen(n);
    if (strncmp(n, SR__MERGE_PREFIX, strlen(SR__MERGE_PREFIX)) || (!a && !b) || len <= strlen(SR__MERGE_PREFIX) + 14) {
        fprintf(stderr,
                "%s: %s holds %s, which is no LoRA weight (\"" SR__MERGE_PREFIX "<module>.lora_A.weight\" or "
                "\"...lora_B.weight\"): a bias, an embedding's adapter or a modules_to_save copy, which merge does "
                "not fold; merge these adapters with PEFT (PeftModel.from_pretrained(base, dir).merge_and_unload())\n",
                jb->who, jb->ad_path, n);
        return 2;
    }
    char other[2048];
    snprintf(other, sizeof other, "%.*s.lora_%c.weight", (int)(len - 14), n, a ? 'B' : 'A');
    const void *od;
    const sr__st_tensor *o = sr__st_find(jb->ad, other, &od);
    if (!o) {
        fprintf(stderr, "%s: %s holds %s but not %s: each adapted module has both\n", jb->who, jb->ad_path, n, other);
        return 2;
    }
    if (b) return 0; /* the pair is made from its lora_A */
    if (sr__grow((void **)&jb->mods, cap, jb->nmods + 1, sizeof *jb->mods) != 0) {
        fprintf(stderr, "%s: out of memory\n", jb->who);
        return 2;
    }
    sr__merge_mod *m = &jb->mods[jb->nmods];
    *m = (sr__merge_mod){.A = t, .B = o, .db = od};
    sr__st_find(jb->ad, n, &m->da);
    if (!(m->module = sr__strndup(n + strlen(SR__MERGE_PREFIX), len - strlen(SR__MERGE_PREFIX) - 14))) {
        fprintf(stderr, "%s: out of memory\n", jb->who);
        return 2;
    }
    jb->nmods++;
    return 0;
}

/* Module m against the config and the base.  0, or 2 after saying why. */
static int check_module(sr__merge_job *jb, sr__merge_mod *m) {
    const sr__merge_cfg *c = &jb->cfg;
    int tg = targets(jb, m->module);
    if (tg <= 0) {
        if (tg == 0)
            fprintf(stderr,
                    "%s: %s holds adapters on %s, but %s's target_modules%s does not adapt it: the config "
                    "is not the one these adapters were trained with; fix target_modules\n",
                    jb->who, jb->ad_path, m->module, jb->cfg_path, c->excludes.set ? " (with exclude_modules)" : "");
        return 2;
    }
    if (sr__merge_cfg_module(c, m->module, &m->r, &m->alpha, &m->rkey, &m->akey) != 0) {
        fprintf(stderr, "%s: %s: PCRE2 gave up matching %s against rank_pattern or alpha_pattern\n", jb->who,
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
                "%s: %s has adapters on %s, but %s holds no %s; is it the base these adapters were "
                "trained on?\n",
                jb->who, jb->ad_path, m->module, jb->base_path, wname);
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
                "%s: %s and %s disagree on %s: lora_A %s %s and lora_B %s %s must be [r, in] and [out, "
                "r] with %s = %g, and the weight %s %s must be %s (fan_in_fan_out %s), all floating point\n",
                jb->who, jb->ad_path, jb->base_path, wname, sr__st_shape_str(sa, sizeof sa, A->ndim, A->shape),
                sr__st_dtype_name(A->dtype), sr__st_shape_str(sb, sizeof sb, B->ndim, B->shape),
                sr__st_dtype_name(B->dtype), rfrom, m->r, sr__st_shape_str(sw, sizeof sw, w->ndim, w->shape),
                sr__st_dtype_name(w->dtype), c->fan_in_fan_out ? "[in, out]" : "[out, in]",
                c->fan_in_fan_out ? "true" : "false");
        return 2;
    }
    return 0;
}

/* Everything the merge needs, checked before any of it is computed.  0, or 2 after saying why. */
static int plan(sr__merge_job *jb) {
    size_t na = sr__st_count(jb->ad), nb = sr__st_count(jb->bf), cap = 0;
    int rc = 0;
    if (!(jb->which = sr__calloc(nb ? nb : 1, sizeof *jb->which)))
        return fprintf(stderr, "%s: out of memory\n", jb->who), 2;
    for (size_t i = 0; i < na && !rc; i++) rc = pair(jb, i, &cap);
    if (!rc && !jb->nmods)
        return fprintf(stderr, "%s: %s holds no adapters; nothing to merge\n", jb->who, jb->ad_path), 2;
    for (size_t i = 0; i < jb->nmods && !rc; i++) rc = check_module(jb, &jb->mods[i]);
    for (size_t i = 0; i < nb && !rc; i++) {
        const sr__st_tensor *t = sr__st_at(jb->bf, i);
        if (sr__merge_is_lora(t->name)) continue; /* the checkpoint's own copy of the adapters */
        if (!is_float(t)) {
            fprintf(stderr, "%s: %s: %s is %s; merge reads floating-point weights (F32, F16, BF16)\n", jb->who,
                    jb->base_path, t->name, sr__st_dtype_name(t->dtype));
            return 2;
        }
        if (jb->which[i] || t->ndim != 2 || !ends_with(t->name, ".weight")) continue;
        char *module = sr__strndup(t->name, strlen(t->name) - 7);
        int tg = module ? targets(jb, module) : -1;
        if (tg)
            fprintf(stderr,
                    "%s: %s's target_modules adapts %s, but %s holds no adapters for it: the config is "
                    "not the one these adapters were trained with (or not for this base); fix target_modules\n",
                    jb->who, jb->cfg_path, module ? module : t->name, jb->ad_path);
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
static int not_finite(const sr__merge_job *jb, const sr__st_tensor *t, size_t at, float v, float base,
                      const sr__merge_mod *m, const float *A, const float *B) {
    char where[64] = "";
    if (t->ndim == 2)
        snprintf(where, sizeof where, " ([%zu, %zu])", at / (size_t)t->shape[1], at % (size_t)t->shape[1]);
    fprintf(stderr, "%s: the merged %s is %g at index %zu%s: ", jb->who, t->name, v, at, where);
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
    fprintf(stderr, "; %s\n", jb->nothing);
    return 2;
}

int sr__merge_compute(sr__merge_job *jb, int adapted_only, sr__st_tensor *t, float **vals, size_t *nout) {
    size_t nb = sr__st_count(jb->bf);
    *nout = 0;
    for (size_t i = 0; i < nb; i++) {
        const sr__st_tensor *bt = sr__st_at(jb->bf, i);
        if (sr__merge_is_lora(bt->name) || (adapted_only && !jb->which[i])) continue;
        const void *data;
        sr__st_find(jb->bf, bt->name, &data);
        float *w = to_f32(bt, data), *base = NULL, *fa = NULL, *fb = NULL;
        const sr__merge_mod *m = jb->which[i] ? &jb->mods[jb->which[i] - 1] : NULL;
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
            fprintf(stderr, "%s: out of memory merging %s\n", jb->who, bt->name);
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

int sr__merge_open(sr__merge_job *jb, const char *who, const char *cfg_path, const char *ad_path,
                   const char *base_path) {
    char err[1024];
    *jb = (sr__merge_job){
        .who = who, .nothing = "nothing was written", .ad_path = ad_path, .base_path = base_path, .cfg_path = cfg_path};
    int rc = sr__merge_cfg_read(who, "shardrun merge", cfg_path, &jb->cfg);
    if (rc) return rc;
    jb->ad = sr__st_open(ad_path, err, sizeof err);
    jb->bf = jb->ad ? sr__st_open(base_path, err, sizeof err) : NULL;
    if (!jb->bf) {
        fprintf(stderr, "%s: %s\n", who, err);
        return 2;
    }
    return plan(jb);
}

void sr__merge_close(sr__merge_job *jb) {
    for (size_t i = 0; i < jb->nmods; i++) free(jb->mods[i].module);
    free(jb->mods), free(jb->which);
    sr__merge_cfg_free(&jb->cfg);
    if (jb->ad) sr__st_close(jb->ad);
    if (jb->bf) sr__st_close(jb->bf);
    jb->mods = NULL, jb->which = NULL, jb->ad = jb->bf = NULL, jb->nmods = 0;
}
