#define _GNU_SOURCE
#include "fsdp/units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/strbuf.h"

/* The new unit's index, or -1 when out of memory. */
static int new_unit(sr__units *us, int root, const char *label) {
    sr__unit *g = sr__realloc(us->u, (size_t)(us->n + 1) * sizeof *us->u);
    if (!g) return -1;
    us->u = g;
    sr__unit *u = &us->u[us->n];
    memset(u, 0, sizeof *u);
    u->root = root;
    u->companion = u->owner = -1;
    u->label = sr__strdup(label);
    return u->label ? us->n++ : -1;
}

/* 0, or -1 when out of memory (or unit ui could not be made). */
static int add_module(sr_model *m, sr__units *us, int ui, int mi) {
    if (ui < 0) return -1;
    sr__unit *u = &us->u[ui];
    int *g = sr__realloc(u->mods, (size_t)(u->nmods + 1) * sizeof *u->mods);
    if (!g) return -1;
    u->mods = g;
    u->mods[u->nmods++] = mi;
    m->mods[mi].unit = ui;
    return 0;
}

static int class_listed(char **classes, const char *cls) {
    for (char **c = classes; *c; c++)
        if (!strcmp(*c, cls)) return 1;
    return 0;
}

/* Every listed class must exist in the model: a typo would silently leave the model one unit. */
static int check_classes(const sr_model *m, char **classes) {
    int rc = 0;
    for (char **c = classes; *c; c++) {
        int found = 0;
        for (int i = 0; i < m->nmods && !found; i++) found = !strcmp(m->mods[i].cls, *c);
        if (found) continue;
        sr__buf have = {0};
        for (int i = 0; i < m->nmods; i++) {
            int dup = 0;
            for (int j = 0; j < i && !dup; j++) dup = !strcmp(m->mods[j].cls, m->mods[i].cls);
            if (!dup) sr__buf_printf(&have, "%s%s", have.n ? ", " : "", m->mods[i].cls);
        }
        sr__log(SR_LOG_ERROR,
                "FSDP_TRANSFORMER_CLS_TO_WRAP names class \"%s\", which this model does not "
                "have; its module classes are: %s (names are case-sensitive, comma-separated, no spaces)",
                *c,
                have.oom ? "(out of memory listing them)"
                : have.s ? have.s
                         : "");
        free(have.s);
        rc = -1;
    }
    return rc;
}

static size_t module_numel(const sr_model *m, int mi) {
    size_t n = 0;
    for (int k = 0; k < m->mods[mi].nparams; k++) {
        const sr__param *p = &m->params[m->mods[mi].params[k]];
        if (p->tied_to < 0) n += p->numel;
    }
    return n;
}

/* Whether module mi takes part in a tie (declares an alias, or owns a parameter someone ties to). */
static int module_tied(const sr_model *m, int mi) {
    for (int i = 0; i < m->nparams; i++) {
        const sr__param *p = &m->params[i];
        if (p->tied_to >= 0 && (p->module == mi || m->params[p->tied_to].module == mi)) return 1;
    }
    return 0;
}

/* Unit u's first frozen (want 1) or trainable (want 0) owned parameter, or -1. */
static int first_param(const sr_model *m, int u, int want) {
    for (int i = 0; i < m->nparams; i++)
        if (m->params[i].tied_to < 0 && m->mods[m->params[i].module].unit == u && sr__param_frozen(m, i) == want)
            return i;
    return -1;
}

/* Marks the units whose parameters are all frozen, and gives each unit mixing frozen and trainable
   parameters a frozen companion -- or, under FSDP_USE_ORIG_PARAMS=false (FSDP version 1), refuses it
   as torch refuses a FlatParameter of mixed requires_grad.  0, or -1 after printing why. */
static int split_frozen(sr_model *m, const sr__fsdp_config *c, sr__units *us, int *oom) {
    int n = us->n, rc = 0;
    for (int u = 0; u < n; u++) {
        int fi = first_param(m, u, 1), ti = first_param(m, u, 0);
        if (fi < 0) continue;
        if (ti < 0) {
            us->u[u].frozen = 1;
            continue;
        }
        if (c->enabled && !c->use_orig_params) {
            sr__log(SR_LOG_ERROR,
                    "FSDP unit %s mixes frozen and trainable parameters (\"%s\" is frozen, \"%s\" is trained), and "
                    "FSDP_USE_ORIG_PARAMS is false: torch's FSDP flattens a unit into one FlatParameter, which "
                    "needs a uniform requires_grad, and refuses it too.  Set [accelerate] fsdp.use_orig_params = "
                    "true (accelerate's default), or wrap so that frozen and trainable parameters fall in "
                    "different units (fsdp.transformer_layer_cls_to_wrap), or change [task] freeze so that the "
                    "unit is all frozen or all trained",
                    us->u[u].label, m->params[fi].name, m->params[ti].name);
            rc = -1;
            continue;
        }
        char *label = sr__fmt("%s (frozen part)", us->u[u].label);
        int k = label ? new_unit(us, us->u[u].root, label) : -1;
        free(label);
        if (k < 0) {
            *oom = 1;
            return 0;
        }
        us->u[k].frozen = 1;
        us->u[k].owner = u;
        us->u[u].companion = k;
    }
    return rc;
}

int sr__units_build(sr_model *m, const sr__fsdp_config *c, int shard_size, sr__units *us) {
    memset(us, 0, sizeof *us);
    us->root = -1;
    if (c->enabled && c->wrap == SR__WRAP_TRANSFORMER && check_classes(m, c->wrap_classes) != 0) return -1;
    /* SIZE_BASED_WRAP over a flat module list: consecutive modules are grouped until the group
       holds at least min_num_params (torch's size policy wraps the smallest subtree that reaches
       it; with no hierarchy, the smallest run of consecutive modules is the analogue).  A short
       tail that never reaches it stays in the root unit, and so do modules sharing a tied
       parameter (FSDP needs both users of a shared parameter in one unit: the root has both). */
    int open = -1;
    size_t open_numel = 0;
    int *tail = sr__calloc((size_t)m->nmods + 1, sizeof *tail), ntail = 0, oom = !tail;
    for (int i = 0; i < m->nmods && !oom; i++) {
        if (c->enabled && c->wrap == SR__WRAP_TRANSFORMER && class_listed(c->wrap_classes, m->mods[i].cls)) {
            oom = add_module(m, us, new_unit(us, 0, m->mods[i].name), i) != 0;
        } else if (c->enabled && c->wrap == SR__WRAP_SIZE && !module_tied(m, i)) {
            if (open < 0) open = new_unit(us, 0, m->mods[i].name), open_numel = 0, ntail = 0;
            if ((oom = add_module(m, us, open, i) != 0)) break;
            tail[ntail++] = i;
            open_numel += module_numel(m, i);
            if (open_numel >= (size_t)c->min_num_params) open = -1, ntail = 0;
        } else {
            m->mods[i].unit = -1;                        /* root */
            if (open >= 0 && c->wrap == SR__WRAP_SIZE) { /* a tied module interrupts the group */
                for (int k = 0; k < ntail; k++) m->mods[tail[k]].unit = -1;
                free(us->u[open].mods), free(us->u[open].label);
                us->n--, open = -1, ntail = 0;
            }
        }
    }
    if (open >= 0) { /* the unfinished group goes back to the root */
        for (int k = 0; k < ntail; k++) m->mods[tail[k]].unit = -1;
        free(us->u[open].mods), free(us->u[open].label);
        us->n--;
    }
    free(tail);
    for (int i = 0; i < m->nmods && !oom; i++) {
        if (m->mods[i].unit >= 0) continue;
        if (us->root < 0) us->root = new_unit(us, 1, "(root)");
        oom = add_module(m, us, us->root, i) != 0;
    }
    int rc = oom ? 0 : split_frozen(m, c, us, &oom);
    /* owned parameters get their place in the flat buffer; ties must stay inside a unit */
    for (int i = 0; i < m->nparams && !oom && !rc; i++) {
        sr__param *p = &m->params[i];
        int ui = m->mods[p->module].unit;
        if (p->tied_to >= 0) {
            sr__param *o = &m->params[p->tied_to];
            if (m->mods[o->module].unit != ui) {
                sr__log(SR_LOG_ERROR,
                        "parameter \"%s\" (module %s) is tied to \"%s\" (module %s), but the wrap "
                        "policy puts the two modules in different FSDP units; wrap them together or leave both "
                        "in the root unit",
                        p->name, m->mods[p->module].name, o->name, m->mods[o->module].name);
                rc = -1;
            }
            continue;
        }
        if (sr__param_frozen(m, i) && !us->u[ui].frozen) ui = us->u[ui].companion;
        sr__unit *u = &us->u[ui];
        p->unit = ui;
        p->offset = u->numel;
        u->numel += p->numel;
        int *g = sr__realloc(u->params, (size_t)(u->nparams + 1) * sizeof *u->params);
        if ((oom = !g)) break;
        u->params = g;
        u->params[u->nparams++] = i;
    }
    if (oom) {
        sr__log(SR_LOG_ERROR, "out of memory for the FSDP units of %d modules and %d parameters", m->nmods, m->nparams);
        rc = -1;
    }
    for (int k = 0; k < us->n; k++) {
        sr__unit *u = &us->u[k];
        u->padded = (u->numel + (size_t)shard_size - 1) / (size_t)shard_size * (size_t)shard_size;
        if (u->padded == 0) u->padded = (size_t)shard_size; /* a unit of parameter-less modules */
        u->shard = u->padded / (size_t)shard_size;
    }
    if (rc) sr__units_free(us);
    return rc;
}

void sr__units_free(sr__units *us) {
    for (int k = 0; k < us->n; k++) free(us->u[k].mods), free(us->u[k].params), free(us->u[k].label);
    free(us->u);
    memset(us, 0, sizeof *us);
    us->root = -1;
}
