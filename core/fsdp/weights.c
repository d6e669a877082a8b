/* Initial weights from a safetensors file (see sr__engine_load_weights in engine.h). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "fsdp/engine_internal.h"
#include "io/safetensors.h"

typedef struct weights {
    sr__st_file *f;
    sr__st_file *fa;         /* init_adapters' adapter_model.safetensors, or NULL */
    const char *adapters;    /* its path */
    const sr__st_tensor **t; /* per parameter: its tensor, or NULL (missing: initialiser) */
    const void **data;
    long long bytes;
    int stripped;             /* parameters found without their first name component */
    const char *stripped_one; /* one of them */
    /* non-finite values among those this rank loaded, and the first of them */
    long long nonfinite;
    int bad_param;
    size_t bad_index;
    float bad_value;
} weights;

/* NaN or infinity in what was just converted (elements first.. of parameter i): a file with them
   is no model to start from, and a value that the data never reaches (a position row beyond
   max_length, a token never seen) would survive training into every checkpoint unnoticed. */
static void check_finite(weights *w, int i, size_t first, const float *v, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (!isfinite(v[k]) && w->nonfinite++ == 0) w->bad_param = i, w->bad_index = first + k, w->bad_value = v[k];
}

/* The initialisers first (padding, parameters the file lacks), then what the file holds. */
static void fill_from_file(sr__engine *e, int u, float *dst, size_t lo, size_t n, void *arg) {
    weights *w = arg;
    const sr__unit *un = &e->units.u[u];
    size_t a, b;
    sr__engine_init_range(e, u, dst, lo, n);
    for (int k = 0; k < un->nparams; k++) {
        int i = un->params[k];
        const sr__param *p = &e->model->params[i];
        if (!w->t[i] || !sr__param_in_range(p, lo, n, &a, &b)) continue;
        sr__st_to_f32(w->t[i], w->data[i], a - p->offset, b - a, dst + (a - lo));
        check_finite(w, i, a - p->offset, dst + (a - lo), b - a);
        w->bytes += (long long)((b - a) * sr_dtype_size(w->t[i]->dtype));
    }
}

static int same_shape(const sr__param *p, const sr__st_tensor *t) {
    if (p->ndim != t->ndim) return 0;
    for (int d = 0; d < p->ndim; d++)
        if (p->shape[d] != t->shape[d]) return 0;
    return 1;
}

/* The adapters of a PEFT adapter folder (init_adapters), under PEFT's names (the model's adapter
   prefix + the parameter's name): every adapter parameter must be there with its shape, and nothing
   else may be (a folder for other targets or another rank is refused, naming what differs).  0, or -2
   after printing why. */
static int open_adapters(sr__engine *e, weights *w) {
    const sr_model *m = e->model;
    char err[512];
    if (!m->adapter_prefix) {
        sr__log(SR_LOG_ERROR,
                "init_adapters = %s: this model has no adapters to start from it; set lora_r (and the other lora_* "
                "keys as the folder's adapter_config.json says) to train LoRA adapters",
                w->adapters);
        return -2;
    }
    if (!(w->fa = sr__st_open(w->adapters, err, sizeof err))) {
        sr__log(SR_LOG_ERROR, "init_adapters: %s; name a folder holding adapter_model.safetensors (PEFT's)", err);
        return -2;
    }
    int bad = 0, nmissing = 0;
    const char *first = NULL;
    size_t plen = strlen(m->adapter_prefix);
    for (int i = 0; i < m->nparams; i++) {
        const sr__param *p = &m->params[i];
        if (!(p->flags & SR_PARAM_ADAPTER) || p->tied_to >= 0) continue;
        char *name = sr__fmt("%s%s", m->adapter_prefix, p->name);
        if (!name) return sr__log(SR_LOG_ERROR, "init_adapters: out of memory"), -2;
        w->t[i] = sr__st_find(w->fa, name, &w->data[i]);
        free(name);
        if (!w->t[i] && !nmissing++) first = p->name;
        if (w->t[i] && (!same_shape(p, w->t[i]) || w->t[i]->dtype == SR_INT32 || w->t[i]->dtype == SR_INT64)) {
            char want[128], have[128];
            sr__st_shape_str(want, sizeof want, p->ndim, p->shape);
            sr__st_shape_str(have, sizeof have, w->t[i]->ndim, w->t[i]->shape);
            sr__log(SR_LOG_ERROR,
                    "init_adapters: %s: tensor \"%s\" is %s %s, but this run's adapter is %s (floating point): the "
                    "folder's rank is not lora_r = %lld; set lora_r to its adapter_config.json's r",
                    w->adapters, w->t[i]->name, sr__st_dtype_name(w->t[i]->dtype), have, want,
                    (long long)p->shape[strstr(p->name, ".lora_A.") ? 0 : 1]);
            bad = 1;
        }
    }
    if (nmissing) {
        sr__log(SR_LOG_ERROR,
                "init_adapters: %s lacks %d of this run's adapter tensors (the first: %s%s): the folder's adapters "
                "are on other modules; set lora_target_modules to its adapter_config.json's target_modules",
                w->adapters, nmissing, m->adapter_prefix, first);
        bad = 1;
    }
    for (size_t k = 0; k < sr__st_count(w->fa) && !bad; k++) {
        const sr__st_tensor *t = sr__st_at(w->fa, k);
        int known = 0;
        for (int i = 0; i < m->nparams && !known; i++) known = w->t[i] == t;
        if (!known) {
            sr__log(SR_LOG_ERROR,
                    "init_adapters: %s holds %s, which is no adapter of this run (%s + a lora_A or lora_B "
                    "parameter's name): its adapters are on other modules, or it holds more than LoRA "
                    "weights; set lora_target_modules to its adapter_config.json's target_modules",
                    w->adapters, t->name, plen ? m->adapter_prefix : "\"\"");
            bad = 1;
        }
    }
    return bad ? -2 : 0;
}

/* Opens and checks the files against the model: 0, or -2 (bad input) after printing every problem. */
static int open_weights(sr__engine *e, const char *path, weights *w) {
    char err[512];
    if (w->adapters && open_adapters(e, w) != 0) return -2;
    if (!path) return 0;
    w->f = sr__st_open(path, err, sizeof err);
    if (!w->f) {
        sr__log(SR_LOG_ERROR, "init_weights: %s", err);
        return -2;
    }
    int bad = 0, nmodel = e->model->nparams, nmissing = 0; /* the lists name the first 8 */
    sr__buf missing = {0}, extra = {0};
    /* A base model holds no adapters (LoRA's SR_PARAM_ADAPTER): that they start from the initialisers
       is the normal start, not worth a warning.  A file holding some adapters but not all is named. */
    int adapters_in_file = 0;
    for (int i = 0; i < nmodel && !adapters_in_file; i++)
        adapters_in_file =
            (e->model->params[i].flags & SR_PARAM_ADAPTER) && sr__st_find(w->f, e->model->params[i].name, NULL);
    for (int i = 0; i < nmodel; i++) {
        const sr__param *p = &e->model->params[i];
        if (p->tied_to >= 0 || (w->fa && w->t[i])) continue; /* the adapter folder's */
        w->t[i] = sr__st_find(w->f, p->name, &w->data[i]);
        /* HF checkpoints saved from a base model (the Hub's gpt2: "h.0.ln_1.weight") lack the
           head model's first name component ("transformer."): look for the rest */
        const char *dot = strchr(p->name, '.');
        if (!w->t[i] && dot && (w->t[i] = sr__st_find(w->f, dot + 1, &w->data[i])))
            w->stripped++, w->stripped_one = p->name;
        if (!w->t[i]) {
            if ((p->flags & SR_PARAM_ADAPTER) && !adapters_in_file) continue;
            if (nmissing++ < 8) sr__buf_printf(&missing, "%s%s", missing.n ? ", " : "", p->name);
            continue;
        }
        if (!same_shape(p, w->t[i]) || w->t[i]->dtype == SR_INT32 || w->t[i]->dtype == SR_INT64) {
            char want[128], have[128];
            sr__st_shape_str(want, sizeof want, p->ndim, p->shape);
            sr__st_shape_str(have, sizeof have, w->t[i]->ndim, w->t[i]->shape);
            sr__log(SR_LOG_ERROR,
                    "init_weights: %s: tensor \"%s\" is %s %s, but the model's parameter is "
                    "%s (floating point); the file belongs to another model or size",
                    path, p->name, sr__st_dtype_name(w->t[i]->dtype), have, want);
            bad = 1;
        }
    }
    if (nmissing > 8) sr__buf_printf(&missing, " and %d more", nmissing - 8);
    int nextra = 0;
    for (size_t k = 0; k < sr__st_count(w->f); k++) {
        const sr__st_tensor *t = sr__st_at(w->f, k);
        int known = 0;
        /* a tied parameter saved under its own name too (HF's lm_head.weight) is the same tensor */
        for (int i = 0; i < nmodel && !known; i++) known = w->t[i] == t || !strcmp(e->model->params[i].name, t->name);
        if (!known && w->fa && strstr(t->name, ".lora_")) continue; /* a LoRA checkpoint's own, replaced */
        if (!known && nextra++ < 8) sr__buf_printf(&extra, "%s%s", extra.n ? ", " : "", t->name);
    }
    if (nextra > 8) sr__buf_printf(&extra, " and %d more", nextra - 8);
    if (!bad && missing.n)
        sr__log(SR_LOG_WARN, "init_weights: %s lacks %s; %s start%s from the task's initialisers", path, missing.s,
                strchr(missing.s, ',') ? "they" : "it", strchr(missing.s, ',') ? "" : "s");
    if (!bad && extra.n) sr__log(SR_LOG_WARN, "init_weights: %s has tensors the model does not use: %s", path, extra.s);
    if (!bad && w->stripped)
        sr__log(SR_LOG_INFO,
                "init_weights: %s: %d parameters found without their first name component "
                "(e.g. \"%s\" as \"%s\"), as HF base-model checkpoints name them",
                path, w->stripped, w->stripped_one, strchr(w->stripped_one, '.') + 1);
    sr__buf_free(&missing), sr__buf_free(&extra);
    return bad ? -2 : 0;
}

/* The first non-finite value of the file, in the model's parameter order, whichever rank read it:
   each rank's first (parameter << 40 | element, or none) and count (<< 2 | NaN, inf or -inf) are
   gathered, and rank 0 names it.  Collective.  0 (none), -2 (some: said) or -1 (the gather failed). */
#define SR__NONE UINT64_MAX
static int agree_finite(sr__engine *e, const char *path, const weights *w) {
    int kind = isnan(w->bad_value) ? 0 : w->bad_value > 0 ? 1 : 2;
    uint64_t first = w->nonfinite ? (uint64_t)w->bad_param << 40 | (w->bad_index & ((1ull << 40) - 1)) : SR__NONE;
    uint64_t count = (uint64_t)w->nonfinite << 2 | (uint64_t)kind, *firsts = NULL, *counts = NULL;
    size_t n = 0, m = 0;
    if (sr__engine_gather_u64(e, 0, first, "the weights' check", &firsts, &n) != 0 ||
        sr__engine_gather_u64(e, 0, count, "the weights' check", &counts, &m) != 0) {
        free(firsts);
        return -1;
    }
    size_t at = 0;
    unsigned long long total = 0;
    for (size_t r = 0; r < n; r++) {
        total += counts[r] >> 2;
        if (firsts[r] < firsts[at]) at = r;
    }
    int rc = firsts[at] == SR__NONE ? 0 : -2;
    if (rc && e->rank == 0) {
        int i = (int)(firsts[at] >> 40);
        size_t index = (size_t)(firsts[at] & ((1ull << 40) - 1));
        const sr__param *p = &e->model->params[i];
        char pos[160] = "", shape[128], more[96] = "";
        size_t rest = index;
        for (int d = p->ndim - 1; d >= 0; d--) { /* row-major: the last dimension varies fastest */
            char one[24];
            int len = snprintf(one, sizeof one, "%zu%s", rest % (size_t)p->shape[d], d == p->ndim - 1 ? "" : ", ");
            memmove(pos + len, pos, strlen(pos) + 1);
            memcpy(pos, one, (size_t)len);
            rest /= (size_t)p->shape[d];
        }
        sr__st_shape_str(shape, sizeof shape, p->ndim, p->shape);
        if (total > 1) snprintf(more, sizeof more, ", the first of %llu non-finite values", total);
        static const char *const what[] = {"NaN", "inf", "-inf"};
        int ad = w->fa && (p->flags & SR_PARAM_ADAPTER); /* the adapter folder's tensor */
        sr__log(SR_LOG_ERROR,
                "%s: %s: tensor \"%s\" %s holds %s at [%s] (element %zu)%s; a model with NaN or infinite "
                "weights cannot be trained (a value no batch reaches would stay in every checkpoint), so nothing "
                "was trained.  Start from another file (a checkpoint saved before the values went bad), or repair "
                "the tensor",
                ad ? "init_adapters" : "init_weights", ad ? w->adapters : path, w->t[i] ? w->t[i]->name : p->name,
                shape, what[counts[at] & 3], pos, index, more);
    }
    free(firsts), free(counts);
    return rc;
}
#undef SR__NONE

int sr__engine_load_weights(sr__engine *e, const char *path, const char *adapters, long long *bytes_read) {
    int from_rank0 = e->cfg.enabled && e->cfg.cpu_ram_efficient_loading && e->world && e->world_size > 1;
    int reader = !from_rank0 || e->rank == 0; /* with cpu_ram_efficient_loading, the others never open it */
    weights w = {.adapters = adapters};
    w.t = sr__calloc((size_t)e->model->nparams, sizeof *w.t);
    w.data = sr__calloc((size_t)e->model->nparams, sizeof *w.data);
    int rc = !w.t || !w.data ? -1 : reader ? open_weights(e, path, &w) : 0;
    if (rc == -1) sr__log(SR_LOG_ERROR, "init_weights: out of memory for the list of %d parameters", e->model->nparams);
    /* over every rank, readers or not: the collectives below are taken by all of them or by none */
    rc = sr__engine_agree_rc(e, e->world, rc);
    if (rc == 0) rc = sr__engine_agree_rc(e, e->world, sr__engine_fill_master(e, fill_from_file, &w, from_rank0));
    /* each rank checked only what it filled */
    if (rc == 0) rc = agree_finite(e, path, &w);
    if (path) snprintf(e->base_from, sizeof e->base_from, "init_weights = %s", path);
    else
        snprintf(e->base_from, sizeof e->base_from, "the task's initialisers with seed %llu (no init_weights)",
                 (unsigned long long)e->seed);
    if (w.f) sr__st_close(w.f);
    if (w.fa) sr__st_close(w.fa);
    free(w.t), free(w.data);
    *bytes_read = w.bytes;
    return rc;
}
