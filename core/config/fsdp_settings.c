#define _GNU_SOURCE
#include "config/fsdp_settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "config/value.h"

/* One message per problem, as the worker reports them (exit 2 before the task is loaded). */
static int bad(sr__diag *d, const char *var, const char *v, const char *expected) {
    sr__diag_add(d, "%s=%s: expected %s; fix the [accelerate] section or unset the variable", var, v, expected);
    return -1;
}

typedef struct reader {
    const char *(*get)(const char *name);
    sr__diag *diag;
} reader;

/* 0 = unset (*out = def), 1 = read, -1 = bad */
static int read_bool(const reader *r, const char *var, int def, int *out) {
    const char *v = r->get(var);
    *out = def;
    if (!v) return 0;
    if (sr__parse_bool(v, out) == 0) return 1;
    return bad(r->diag, var, v, "a boolean: " SR__BOOL_SPELLINGS);
}

static int read_enum(const reader *r, const char *var, const char *choices, unsigned flags, int def, int *out) {
    const char *v = r->get(var);
    *out = def;
    if (!v) return 0;
    int i = sr__enum_index(choices, flags, v);
    if (i >= 0) {
        *out = i;
        return 1;
    }
    char desc[256];
    sr__enum_describe(choices, flags, desc, sizeof desc);
    return bad(r->diag, var, v, desc);
}

static char **split_commas(const char *s) {
    size_t n = 1;
    for (const char *p = s; *p; p++) n += *p == ',';
    char **v = sr__calloc(n + 1, sizeof *v);
    const char *p = s;
    for (size_t i = 0; v && i < n; i++) {
        const char *e = strchr(p, ',');
        v[i] = e ? sr__strndup(p, (size_t)(e - p)) : sr__strdup(p);
        if (!v[i]) {
            while (i-- > 0) free(v[i]);
            free(v);
            return NULL;
        }
        p = e ? e + 1 : p;
    }
    return v;
}

static int read_fsdp(const reader *r, sr__fsdp_config *c);

void sr__fsdp_config_defaults(sr__fsdp_config *c) {
    memset(c, 0, sizeof *c);
    c->version = 1;
    c->precision = SR__PRECISION_NO;
    c->param_dtype = SR_FLOAT32;
    c->sync_module_states = 1; /* the default, also when FSDP is off (replicated training) */
}

int sr__fsdp_config_parse(sr__fsdp_config *c, const char *(*get)(const char *name), sr__diag *diag) {
    const reader rd = {get, diag}, *r = &rd;
    sr__fsdp_config_defaults(c);
    int rc = 0;
    /* ACCELERATE_USE_FSDP: accelerate itself only takes lowercase "true" (the engine warns about
       another spelling, enabled_spelling) */
    if (read_bool(r, "ACCELERATE_USE_FSDP", 0, &c->enabled) < 0) rc = -1;
    if (c->enabled) snprintf(c->enabled_spelling, sizeof c->enabled_spelling, "%s", get("ACCELERATE_USE_FSDP"));

    const char *mp = get("ACCELERATE_MIXED_PRECISION");
    int p = mp ? sr__enum_index(SR__PRECISION_CHOICES, 0, mp) : SR__PRECISION_NO;
    if (p >= 0 && mp && strcmp(mp, sr__precision_name((sr__precision)p))) p = -1; /* lowercase only */
    if (p >= 0) c->precision = (sr__precision)p;
    c->param_dtype = c->precision == SR__PRECISION_BF16   ? SR_BFLOAT16
                     : c->precision == SR__PRECISION_FP16 ? SR_FLOAT16
                                                          : SR_FLOAT32;
    if (p < 0 && !strcmp(mp, "fp8"))
        rc =
            bad(diag, "ACCELERATE_MIXED_PRECISION", mp, "no, fp16 or bf16 (fp8 is not supported by shardrun's engine)");
    else if (p < 0)
        rc = bad(diag, "ACCELERATE_MIXED_PRECISION", mp,
                 "no, fp16 or bf16, lowercase (accelerate does not lowercase it)");

    if (!c->enabled) return rc; /* accelerate reads no FSDP_* variable then, and neither do we */
    if (read_fsdp(r, c) != 0) rc = -1;
    return rc;
}

/* The FSDP_* variables, read only when ACCELERATE_USE_FSDP is true. */
static int read_fsdp(const reader *r, sr__fsdp_config *c) {
    int rc = 0, v;
    const char *ver = r->get("FSDP_VERSION");
    long long version = 1;
    if (ver && (sr__parse_int(ver, &version) != 0 || (version != 1 && version != 2)))
        rc = bad(r->diag, "FSDP_VERSION", ver, "1 or 2");
    c->version = (int)version == 2 ? 2 : 1;

    if (c->version == 1) {
        if (read_enum(r, "FSDP_SHARDING_STRATEGY", SR__STRATEGY_CHOICES, SR_KEY_ENUM_DIGITS, SR__FULL_SHARD, &v) < 0)
            rc = -1;
        c->strategy = (sr__strategy)v;
        c->reshard_after_forward = c->strategy == SR__FULL_SHARD || c->strategy == SR__HYBRID_SHARD;
        if (read_enum(r, "FSDP_BACKWARD_PREFETCH", SR__PREFETCH_CHOICES, 0, SR__PREFETCH_NONE, &v) < 0) rc = -1;
        c->backward_prefetch = (sr__prefetch)v;
        if (read_bool(r, "FSDP_FORWARD_PREFETCH", 0, &c->forward_prefetch) < 0) rc = -1;
        /* FSDP_USE_ORIG_PARAMS: the engine never shows a task flat parameters, only each parameter's
           own array; false refuses a unit mixing frozen and trainable parameters (units.c) */
        if (read_bool(r, "FSDP_USE_ORIG_PARAMS", 0, &c->use_orig_params) < 0) rc = -1;
    } else {
        /* version 2 has no strategy names: reshard_after_forward says FULL_SHARD or SHARD_GRAD_OP, and
           prefetching is always on (FSDP2 prefetches the next unit in both passes) */
        if (read_bool(r, "FSDP_RESHARD_AFTER_FORWARD", 1, &c->reshard_after_forward) < 0) rc = -1;
        c->strategy = c->reshard_after_forward ? SR__FULL_SHARD : SR__SHARD_GRAD_OP;
        c->backward_prefetch = SR__PREFETCH_PRE;
        c->forward_prefetch = 1;
        c->use_orig_params = 1; /* FSDP2 shards each parameter on its own: mixed units are fine */
    }
    if (read_enum(r, "FSDP_AUTO_WRAP_POLICY", SR__WRAP_CHOICES, 0, SR__WRAP_NONE, &v) < 0) rc = -1;
    c->wrap = (sr__wrap)v;
    const char *cls = r->get("FSDP_TRANSFORMER_CLS_TO_WRAP");
    if (c->wrap == SR__WRAP_TRANSFORMER) {
        if (!cls || !*cls) {
            sr__diag_add(r->diag,
                         "FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP needs FSDP_TRANSFORMER_CLS_TO_WRAP "
                         "(class names, comma-separated); set [accelerate] fsdp.transformer_layer_cls_to_wrap");
            rc = -1;
        } else {
            c->wrap_classes = split_commas(cls);
            if (!c->wrap_classes) {
                sr__diag_add(r->diag, "out of memory for FSDP_TRANSFORMER_CLS_TO_WRAP=%s", cls);
                rc = -1;
            }
        }
    }
    const char *mnp = r->get("FSDP_MIN_NUM_PARAMS");
    if (c->wrap == SR__WRAP_SIZE) {
        if (!mnp || sr__parse_int(mnp, &c->min_num_params) != 0 || c->min_num_params <= 0) {
            sr__diag_add(r->diag,
                         "FSDP_AUTO_WRAP_POLICY=SIZE_BASED_WRAP needs FSDP_MIN_NUM_PARAMS, a positive "
                         "integer (it is %s%s%s; accelerate would silently wrap nothing); set [accelerate] "
                         "fsdp.min_num_params",
                         mnp ? "\"" : "unset", mnp ? mnp : "", mnp ? "\"" : "");
            rc = -1;
        }
    }
    if (read_enum(r, "FSDP_STATE_DICT_TYPE", SR__STATE_DICT_CHOICES, 0, c->version == 2 ? SR__SD_SHARDED : SR__SD_FULL,
                  &v) < 0)
        rc = -1;
    c->state_dict = (sr__state_dict)v;
    if (c->version == 2 && c->state_dict == SR__SD_LOCAL)
        rc = bad(r->diag, "FSDP_STATE_DICT_TYPE", r->get("FSDP_STATE_DICT_TYPE"),
                 "FULL_STATE_DICT or SHARDED_STATE_DICT with FSDP_VERSION=2");
    if (read_bool(r, "FSDP_OFFLOAD_PARAMS", 0, &c->offload_params) < 0) rc = -1;
    if (read_bool(r, "FSDP_SYNC_MODULE_STATES", 1, &c->sync_module_states) < 0) rc = -1;
    if (read_bool(r, "FSDP_CPU_RAM_EFFICIENT_LOADING", 0, &c->cpu_ram_efficient_loading) < 0) rc = -1;
    if (read_bool(r, "FSDP_ACTIVATION_CHECKPOINTING", 0, &c->activation_checkpointing) < 0) rc = -1;
    if (c->cpu_ram_efficient_loading && !c->sync_module_states) {
        sr__diag_add(r->diag, "FSDP_CPU_RAM_EFFICIENT_LOADING=true requires FSDP_SYNC_MODULE_STATES=true (only "
                              "rank 0 holds the weights; the others receive them), as in accelerate");
        rc = -1;
    }
    const char *ign = r->get("FSDP_IGNORED_MODULES");
    if (ign && *ign) {
        sr__diag_add(r->diag,
                     "FSDP_IGNORED_MODULES=%s: ignored modules are not supported by shardrun's engine "
                     "yet; remove [accelerate] fsdp.ignored_modules",
                     ign);
        rc = -1;
    }
    return rc;
}

void sr__fsdp_config_free(sr__fsdp_config *c) {
    if (c->wrap_classes)
        for (char **p = c->wrap_classes; *p; p++) free(*p);
    free(c->wrap_classes);
    c->wrap_classes = NULL;
}
