/*
 * The accelerate plugin: what `accelerate launch` gives each worker for FSDP, spelled exactly as
 * HuggingFace Accelerate parses it (docs/environment.md): ACCELERATE_USE_FSDP, ACCELERATE_MIXED_PRECISION
 * and the FSDP_* variables.  The host has already checked types and canonicalised spellings
 * (booleans lowercase, enums uppercase, lists without spaces); this plugin checks what depends on
 * several keys and on the FSDP version, then writes.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "shardrun/plugin.h"

/* applies_to: 0 both versions, 1 FSDP_VERSION 1 only, 2 version 2 only */
typedef struct fsdp_key_rule {
    const char *key;
    int applies_to;
} fsdp_key_rule;

static const sr_key accel_keys[] = {
    {"mixed_precision", SR_KEY_ENUM, "no", "no|fp16|bf16", 0, 0, 0, "ACCELERATE_MIXED_PRECISION",
     "parameter/compute precision (accelerate's spelling: lowercase)"},
    {"use_fsdp", SR_KEY_BOOL, "true", NULL, 0, 0, 0, "ACCELERATE_USE_FSDP",
     "written as `true` (the only spelling accelerate accepts); false: only ACCELERATE_MIXED_PRECISION is "
     "written (replicated, DDP-style training)"},
    {"fsdp.version", SR_KEY_INT, "1", NULL, 0, 1, 2, "FSDP_VERSION", "FSDP API version, 1 or 2"},
    {"fsdp.sharding_strategy", SR_KEY_ENUM, "FULL_SHARD",
     "FULL_SHARD|SHARD_GRAD_OP|NO_SHARD|HYBRID_SHARD|HYBRID_SHARD_ZERO2", SR_KEY_ENUM_DIGITS, 0, 0,
     "FSDP_SHARDING_STRATEGY", "what is sharded (version 1)"},
    {"fsdp.reshard_after_forward", SR_KEY_BOOL, NULL, NULL, 0, 0, 0, "FSDP_RESHARD_AFTER_FORWARD",
     "version 2: free gathered parameters after forward (FULL_SHARD) or keep them (SHARD_GRAD_OP); "
     "written as true when unset"},
    {"fsdp.auto_wrap_policy", SR_KEY_ENUM, "NO_WRAP", "TRANSFORMER_BASED_WRAP|SIZE_BASED_WRAP|NO_WRAP", 0, 0, 0,
     "FSDP_AUTO_WRAP_POLICY", "how modules become FSDP units"},
    {"fsdp.transformer_layer_cls_to_wrap", SR_KEY_LIST, NULL, NULL, 0, 0, 0, "FSDP_TRANSFORMER_CLS_TO_WRAP",
     "module classes that become units (TRANSFORMER_BASED_WRAP), e.g. GPT2Block"},
    {"fsdp.min_num_params", SR_KEY_INT, NULL, NULL, 0, 0, LLONG_MAX, "FSDP_MIN_NUM_PARAMS",
     "parameters per unit (SIZE_BASED_WRAP; required there, positive)"},
    {"fsdp.backward_prefetch", SR_KEY_ENUM, NULL, "BACKWARD_PRE|BACKWARD_POST|NO_PREFETCH", 0, 0, 0,
     "FSDP_BACKWARD_PREFETCH", "when the next unit is gathered in backward (version 1); unset: no prefetch"},
    {"fsdp.forward_prefetch", SR_KEY_BOOL, "false", NULL, 0, 0, 0, "FSDP_FORWARD_PREFETCH",
     "gather the next unit during forward (version 1)"},
    {"fsdp.state_dict_type", SR_KEY_ENUM, NULL, "FULL_STATE_DICT|LOCAL_STATE_DICT|SHARDED_STATE_DICT", 0, 0, 0,
     "FSDP_STATE_DICT_TYPE", "checkpoint layout; unset: FULL_STATE_DICT (version 1), SHARDED_STATE_DICT (version 2)"},
    {"fsdp.offload_params", SR_KEY_BOOL, "false", NULL, 0, 0, 0, "FSDP_OFFLOAD_PARAMS",
     "keep shards and optimizer state in host memory"},
    {"fsdp.use_orig_params", SR_KEY_BOOL, "true", NULL, 0, 0, 0, "FSDP_USE_ORIG_PARAMS",
     "expose original parameters (version 1)"},
    {"fsdp.sync_module_states", SR_KEY_BOOL, "true", NULL, 0, 0, 0, "FSDP_SYNC_MODULE_STATES",
     "broadcast rank 0's initial values (version 1)"},
    {"fsdp.cpu_ram_efficient_loading", SR_KEY_BOOL, "true", NULL, 0, 0, 0, "FSDP_CPU_RAM_EFFICIENT_LOADING",
     "only rank 0 reads weights; requires sync_module_states (version 1)"},
    {"fsdp.activation_checkpointing", SR_KEY_BOOL, "false", NULL, 0, 0, 0, "FSDP_ACTIVATION_CHECKPOINTING",
     "recompute each unit's forward before its backward"},
    {"fsdp.ignored_modules", SR_KEY_STRING, NULL, NULL, 0, 0, 0, "FSDP_IGNORED_MODULES",
     "regex over module names left out of FSDP"},
    {NULL, 0, NULL, NULL, 0, 0, 0, NULL, NULL},
};

static const fsdp_key_rule version_rules[] = {
    {"fsdp.sharding_strategy", 1}, {"fsdp.backward_prefetch", 1},  {"fsdp.forward_prefetch", 1},
    {"fsdp.use_orig_params", 1},   {"fsdp.sync_module_states", 1}, {"fsdp.reshard_after_forward", 2},
};

static int applies_to(const char *key) {
    for (size_t i = 0; i < sizeof version_rules / sizeof *version_rules; i++)
        if (!strcmp(version_rules[i].key, key)) return version_rules[i].applies_to;
    return 0;
}

/* accelerate's YAML writes `fsdp_sharding_strategy`: accept it, bare or under `fsdp.`. */
static const char *accel_normalize_key(const char *key, char *buf, size_t len) {
    const char *rest = !strncmp(key, "fsdp.", 5) ? key + 5 : NULL;
    if (rest && !strncmp(rest, "fsdp_", 5)) rest += 5;
    else if (!rest && !strncmp(key, "fsdp_", 5)) rest = key + 5;
    if (!rest) return key;
    snprintf(buf, len, "fsdp.%s", rest);
    return buf;
}

static int is(const sr_host_api *api, sr_host *h, const char *key, const char *value) {
    const char *v = api->get(h, key);
    return v && !strcmp(v, value);
}

static int accel_validate(const sr_host_api *api, sr_host *h) {
    int bad = 0;
    int version = is(api, h, "fsdp.version", "2") ? 2 : 1;
    if (!is(api, h, "use_fsdp", "true")) {
        for (const sr_key *k = accel_keys; k->name; k++)
            if (!strncmp(k->name, "fsdp.", 5) && api->given(h, k->name)) {
                api->reject(h, k->name, "has no effect with use_fsdp = false; remove it or enable FSDP");
                bad = 1;
            }
        return bad;
    }
    for (const sr_key *k = accel_keys; k->name; k++) {
        int only = applies_to(k->name);
        if (!only || only == version || !api->given(h, k->name)) continue;
        if (only == 1)
            api->reject(h, k->name, "is an FSDP version 1 key, but fsdp.version = 2%s; remove it",
                        !strcmp(k->name, "fsdp.sharding_strategy") ? " (use fsdp.reshard_after_forward)" : "");
        else
            api->reject(h, k->name,
                        "is an FSDP version 2 key, but fsdp.version = 1; use fsdp.sharding_strategy "
                        "or set fsdp.version = 2");
        bad = 1;
    }
    if (version == 2 && is(api, h, "fsdp.state_dict_type", "LOCAL_STATE_DICT")) {
        api->reject(h, "fsdp.state_dict_type",
                    "LOCAL_STATE_DICT does not exist in FSDP version 2; use "
                    "SHARDED_STATE_DICT or FULL_STATE_DICT");
        bad = 1;
    }
    int size_wrap = is(api, h, "fsdp.auto_wrap_policy", "SIZE_BASED_WRAP");
    const char *mnp = api->get(h, "fsdp.min_num_params");
    if (size_wrap && (!mnp || !strcmp(mnp, "0"))) {
        api->reject(h, mnp ? "fsdp.min_num_params" : "fsdp.auto_wrap_policy",
                    "SIZE_BASED_WRAP needs a positive fsdp.min_num_params (accelerate would silently wrap nothing); "
                    "e.g. fsdp.min_num_params = 100000000");
        bad = 1;
    }
    if (!size_wrap && mnp) {
        api->reject(h, "fsdp.min_num_params",
                    "only applies to auto_wrap_policy = SIZE_BASED_WRAP; remove it or "
                    "change the policy");
        bad = 1;
    }
    if (api->get(h, "fsdp.transformer_layer_cls_to_wrap") &&
        !is(api, h, "fsdp.auto_wrap_policy", "TRANSFORMER_BASED_WRAP")) {
        api->reject(h, "fsdp.transformer_layer_cls_to_wrap",
                    "only applies to auto_wrap_policy = "
                    "TRANSFORMER_BASED_WRAP; remove it or change the policy");
        bad = 1;
    }
    if (version == 1 && is(api, h, "fsdp.cpu_ram_efficient_loading", "true") &&
        !is(api, h, "fsdp.sync_module_states", "true")) {
        api->reject(h, "fsdp.cpu_ram_efficient_loading",
                    "is true%s, which requires fsdp.sync_module_states = true "
                    "(only rank 0 loads weights; the others receive them by broadcast); set fsdp.sync_module_states = "
                    "true or fsdp.cpu_ram_efficient_loading = false",
                    api->given(h, "fsdp.cpu_ram_efficient_loading") ? "" : " (the default)");
        bad = 1;
    }
    return bad;
}

static int accel_write_env(const sr_host_api *api, sr_host *h) {
    int bad = 0;
    bad |= api->env_set(h, "ACCELERATE_MIXED_PRECISION", api->get(h, "mixed_precision"), "mixed_precision");
    if (!is(api, h, "use_fsdp", "true")) return bad ? -1 : 0;
    bad |= api->env_set(h, "ACCELERATE_USE_FSDP", "true", "use_fsdp");
    int version = is(api, h, "fsdp.version", "2") ? 2 : 1;
    for (const sr_key *k = accel_keys; k->name; k++) {
        int only = applies_to(k->name);
        if (strncmp(k->name, "fsdp.", 5) || (only && only != version)) continue;
        const char *v = api->get(h, k->name);
        const char *why = k->name;
        if (!v && !strcmp(k->name, "fsdp.state_dict_type")) {
            v = version == 1 ? "FULL_STATE_DICT" : "SHARDED_STATE_DICT";
            why = version == 1 ? "accelerate's default for fsdp.version 1" : "accelerate's default for fsdp.version 2";
        }
        if (!v && !strcmp(k->name, "fsdp.reshard_after_forward")) {
            v = "true";
            why = "accelerate's default for fsdp.version 2";
        }
        if (v) bad |= api->env_set(h, k->env, v, why);
    }
    return bad ? -1 : 0;
}

__attribute__((visibility("default"))) const sr_plugin shardrun_plugin = {
    .abi_version = SR_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(sr_plugin),
    .name = "accelerate",
    .version = "0.1.0",
    .description = "FSDP configuration as `accelerate launch` writes it",
    .requires = "torch",
    .keys = accel_keys,
    .normalize_key = accel_normalize_key,
    .validate = accel_validate,
    .write_env = accel_write_env,
};
