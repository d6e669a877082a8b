#define _GNU_SOURCE
#include "fsdp/model_desc.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/abi.h"
#include "base/alloc.h"
#include "base/log.h"

sr_model *sr__model_new(void) { return sr__calloc(1, sizeof(sr_model)); }

void sr__model_free(sr_model *m) {
    if (!m) return;
    for (int i = 0; i < m->nmods; i++) free(m->mods[i].name), free(m->mods[i].cls), free(m->mods[i].params);
    for (int i = 0; i < m->nparams; i++) free(m->params[i].name);
    sr__model_files_free(m);
    free(m->mods), free(m->params), free(m->adapter_prefix), free(m->adapter_config), free(m);
}

static int find_param(const sr_model *m, const char *name) {
    for (int i = 0; i < m->nparams; i++)
        if (!strcmp(m->params[i].name, name)) return i;
    return -1;
}

static int fail(sr_model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(sr_model *m, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sr__log(SR_LOG_ERROR, "model description: %s", msg);
    m->errors++;
    return -1;
}

int sr_model_module(sr_model *m, const char *name, const char *cls) {
    if (!name || !*name || !cls || !*cls) return fail(m, "sr_model_module: empty module or class name");
    for (int i = 0; i < m->nmods; i++)
        if (!strcmp(m->mods[i].name, name)) return fail(m, "module \"%s\" is declared twice", name);
    sr__module *g = sr__realloc(m->mods, (size_t)(m->nmods + 1) * sizeof *m->mods);
    if (g) m->mods = g;
    sr__module *mod = g ? &m->mods[m->nmods] : NULL;
    if (mod) memset(mod, 0, sizeof *mod), mod->name = sr__strdup(name), mod->cls = sr__strdup(cls);
    if (!mod || !mod->name || !mod->cls) {
        if (mod) free(mod->name), free(mod->cls);
        return fail(m, "out of memory for module \"%s\"", name);
    }
    mod->unit = -1;
    return m->nmods++;
}

static int add_param(sr_model *m, const char *name, int tied_to) {
    if (m->nmods == 0)
        return fail(m, "parameter \"%s\" is declared before any module (call sr_model_module first)", name);
    if (find_param(m, name) >= 0) return fail(m, "parameter \"%s\" is declared twice", name);
    sr__param *g = sr__realloc(m->params, (size_t)(m->nparams + 1) * sizeof *m->params);
    sr__module *mod = &m->mods[m->nmods - 1];
    int *gp = g ? sr__realloc(mod->params, (size_t)(mod->nparams + 1) * sizeof *mod->params) : NULL;
    if (g) m->params = g;
    if (gp) mod->params = gp;
    sr__param *p = g ? &m->params[m->nparams] : NULL;
    if (p) memset(p, 0, sizeof *p), p->name = sr__strdup(name);
    if (!gp || !p->name) return fail(m, "out of memory for parameter \"%s\"", name);
    p->module = m->nmods - 1;
    p->tied_to = tied_to;
    p->unit = -1;
    mod->params[mod->nparams++] = m->nparams;
    return m->nparams++;
}

int sr_model_param(sr_model *m, const char *name, int ndim, const int64_t *shape, sr_init init, unsigned flags) {
    if (!name || !*name) return fail(m, "sr_model_param: empty parameter name");
    if (ndim < 1 || ndim > SR__MAX_DIMS || !shape) return fail(m, "parameter \"%s\": ndim must be 1..4", name);
    size_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] <= 0) return fail(m, "parameter \"%s\": every dimension must be positive", name);
        numel *= (size_t)shape[d];
    }
    if (init.kind > SR_INIT_UNIFORM) return fail(m, "parameter \"%s\": unknown initialiser", name);
    if (!isfinite(init.a)) /* it would start the model from NaN or infinity */
        return fail(m, "parameter \"%s\": the initialiser's value is %g, not a finite number", name, (double)init.a);
    int i = add_param(m, name, -1);
    if (i < 0) return -1;
    sr__param *p = &m->params[i];
    p->ndim = ndim;
    memcpy(p->shape, shape, (size_t)ndim * sizeof *shape);
    p->numel = numel;
    p->init = init;
    p->flags = flags;
    return 0;
}

int sr_model_tie(sr_model *m, const char *name, const char *target) {
    if (!name || !target) return fail(m, "sr_model_tie: NULL name");
    int t = find_param(m, target);
    if (t < 0) return fail(m, "\"%s\" is tied to \"%s\", which is not declared (declare it first)", name, target);
    t = sr__param_owner(m, t);
    int i = add_param(m, name, t);
    if (i < 0) return -1;
    sr__param *p = &m->params[i], *o = &m->params[t];
    p->ndim = o->ndim;
    memcpy(p->shape, o->shape, sizeof p->shape);
    p->numel = o->numel;
    p->flags = o->flags;
    return 0;
}

int sr__param_owner(const sr_model *m, int i) { return m->params[i].tied_to >= 0 ? m->params[i].tied_to : i; }

size_t sr__model_numel(const sr_model *m) {
    size_t n = 0;
    for (int i = 0; i < m->nparams; i++)
        if (m->params[i].tied_to < 0) n += m->params[i].numel;
    return n;
}

int sr__param_frozen(const sr_model *m, int i) {
    return (m->params[sr__param_owner(m, i)].flags & SR_PARAM_FROZEN) != 0;
}

size_t sr__model_frozen_numel(const sr_model *m) {
    size_t n = 0;
    for (int i = 0; i < m->nparams; i++)
        if (m->params[i].tied_to < 0 && sr__param_frozen(m, i)) n += m->params[i].numel;
    return n;
}

int sr__model_check(const sr_model *m, const char *task) {
    if (m->errors) {
        sr__log(SR_LOG_ERROR, "task %s: %d error(s) in its model description (above); fix the task", task, m->errors);
        return -1;
    }
    if (m->nmods == 0 || sr__model_numel(m) == 0) {
        sr__log(SR_LOG_ERROR,
                "task %s declared no %s; a model task declares them in create() with "
                "sr_model_module() and sr_model_param()",
                task, m->nmods ? "parameters" : "modules");
        return -1;
    }
    return 0;
}

int sr_model_eval_data(sr_model *m, const sr_model_eval *eval) {
    if (!m || !eval) return -1;
    if (!SR__REACHES(sr_model_eval, eval->struct_size, batch))
        return fail(m,
                    "sr_model_eval_data: struct_size %u is too small (this shardrun needs %zu); set it to "
                    "sizeof(sr_model_eval)",
                    (unsigned)eval->struct_size, offsetof(sr_model_eval, batch) + sizeof eval->batch);
    if (!eval->num_samples || !eval->batch) return fail(m, "sr_model_eval_data: num_samples and batch are required");
    m->eval = (sr_model_eval){sizeof(sr_model_eval),
                              eval->num_samples,
                              eval->batch,
                              SR__REACHES(sr_model_eval, eval->struct_size, cross_entropy) && eval->cross_entropy,
                              0,
                              0,
                              NULL,
                              NULL};
    /* multiple-choice scoring: all four fields, or none of them */
    if (SR__REACHES(sr_model_eval, eval->struct_size, choice_losses) && (eval->choice_batch || eval->choice_losses)) {
        if (!eval->choice_batch || !eval->choice_losses || eval->vocab_size < 1 || eval->max_tokens < 2)
            return fail(m,
                        "sr_model_eval_data: choice_batch and choice_losses go together, with vocab_size >= 1 "
                        "and max_tokens >= 2 (got vocab_size %lld, max_tokens %lld)",
                        (long long)eval->vocab_size, (long long)eval->max_tokens);
        m->eval.vocab_size = eval->vocab_size;
        m->eval.max_tokens = eval->max_tokens;
        m->eval.choice_batch = eval->choice_batch;
        m->eval.choice_losses = eval->choice_losses;
    }
    return 0;
}

int sr_model_adapter(sr_model *m, const char *prefix, const char *config_json) {
    if (!m || !prefix || !config_json) return m ? fail(m, "sr_model_adapter: NULL prefix or config") : -1;
    if (m->adapter_config) return fail(m, "sr_model_adapter: called twice (one adapter per model)");
    m->adapter_prefix = sr__strdup(prefix);
    m->adapter_config = sr__strdup(config_json);
    if (!m->adapter_prefix || !m->adapter_config) return fail(m, "sr_model_adapter: out of memory");
    return 0;
}
