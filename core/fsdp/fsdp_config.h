/*
 * The FSDP configuration, read back from the environment the accelerate plugin wrote (or the user
 * exported), with accelerate's semantics: names case-insensitive, strategy digits 1-5,
 * str_to_bool spellings, FSDP_* read only when ACCELERATE_USE_FSDP is true, and FSDP_VERSION=2's
 * variables instead of version 1's (docs/environment.md lists every variable).
 * Read once per worker before the model is built; a bad value is an error, never a default.
 */
#ifndef SR_FSDP_CONFIG_H
#define SR_FSDP_CONFIG_H

#include <stddef.h>

#include "shardrun/dtype.h"

typedef enum { SR_FULL_SHARD = 0, SR_SHARD_GRAD_OP, SR_NO_SHARD, SR_HYBRID_SHARD, SR_HYBRID_SHARD_ZERO2 } sr__strategy;
typedef enum { SR_WRAP_NONE = 0, SR_WRAP_TRANSFORMER, SR_WRAP_SIZE } sr__wrap;
typedef enum { SR_PREFETCH_NONE = 0, SR_PREFETCH_PRE, SR_PREFETCH_POST } sr__prefetch;
typedef enum { SR_SD_FULL = 0, SR_SD_LOCAL, SR_SD_SHARDED } sr__state_dict;

typedef struct sr__fsdp_config {
    int enabled;          /* ACCELERATE_USE_FSDP */
    sr_dtype param_dtype; /* ACCELERATE_MIXED_PRECISION: fp32 ("no"), bf16, fp16 */
    int version;          /* FSDP_VERSION */
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

/* Reads every variable; 0, or -1 with one message per problem printed to stderr. */
int sr__fsdp_config_read(sr__fsdp_config *c);
void sr__fsdp_config_free(sr__fsdp_config *c);

const char *sr__strategy_name(sr__strategy s);
const char *sr__prefetch_name(sr__prefetch p);
const char *sr__state_dict_name(sr__state_dict s);

#endif
