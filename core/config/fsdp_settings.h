/*
 * The FSDP configuration, read back from the environment the accelerate plugin wrote (or the user
 * exported), with accelerate's semantics: names case-insensitive, strategy digits 1-5,
 * str_to_bool spellings, FSDP_* read only when ACCELERATE_USE_FSDP is true, and FSDP_VERSION=2's
 * variables instead of version 1's (docs/environment.md lists every variable).
 *
 * Lifecycle: part of the worker's settings (config/worker_settings.h), parsed once at a model
 * task's worker start-up, before the task is loaded; a bad value is a configuration error (one
 * message per problem in the diag list, exit 2), never a default.  The engine reads the result.
 * The enumerations' spellings are config/enums.h's.
 */
#ifndef SR__CONFIG_FSDP_SETTINGS_H
#define SR__CONFIG_FSDP_SETTINGS_H

#include <stddef.h>

#include "shardrun/dtype.h"
#include "base/diag.h"
#include "config/enums.h"

typedef struct sr__fsdp_config {
    int enabled;               /* ACCELERATE_USE_FSDP */
    char enabled_spelling[16]; /* ACCELERATE_USE_FSDP as written, when it enables FSDP ("true" or not) */
    sr__precision precision;   /* ACCELERATE_MIXED_PRECISION: "no" when unset */
    sr_dtype param_dtype;      /* the precision's parameter type: fp32 ("no"), bf16, fp16 */
    int version;               /* FSDP_VERSION */
    sr__strategy strategy;
    int reshard_after_forward; /* derived from the strategy (v1) or read (v2) */
    sr__wrap wrap;
    char **wrap_classes; /* FSDP_TRANSFORMER_CLS_TO_WRAP split on ',' (NULL-terminated) */
    long long min_num_params;
    sr__prefetch backward_prefetch;
    int forward_prefetch;
    sr__state_dict state_dict;
    int offload_params, sync_module_states, cpu_ram_efficient_loading, activation_checkpointing;
    /* FSDP_USE_ORIG_PARAMS (version 1; version 2 always keeps the original parameters): the engine
       never shows a task flat parameters, but without it a wrap unit must be uniformly frozen or
       trainable, as torch's FlatParameter must (units.c) */
    int use_orig_params;
} sr__fsdp_config;

/* The defaults (FSDP off, fp32, sync_module_states): what an unset environment gives. */
void sr__fsdp_config_defaults(sr__fsdp_config *c);
/* Parses every variable through `get` (the worker's settings reader passes getenv; tests their
   own); 0, or -1 with one message per problem added to diag.  c is filled either way (bad values
   leave their defaults); free it with sr__fsdp_config_free. */
int sr__fsdp_config_parse(sr__fsdp_config *c, const char *(*get)(const char *name), sr__diag *diag);
void sr__fsdp_config_free(sr__fsdp_config *c);

#endif
