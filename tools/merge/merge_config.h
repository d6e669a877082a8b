/*
 * adapter_config.json for shardrun merge: PEFT's LoraConfig as saved by save_pretrained (or by a
 * shardrun LoRA run), read into what the merge needs, every other field checked to be one that does
 * not change the merged weights.
 *
 * Applied as PEFT applies them (peft/tuners/lora/model.py, _create_and_replace; layer.py,
 * update_layer): r and lora_alpha, overridden per module by rank_pattern and alpha_pattern (see
 * merge_match.h); scale = alpha / r, or alpha / sqrt(r) with use_rslora; fan_in_fan_out (the weight is
 * [in, out]); target_modules and exclude_modules (which modules are adapted).
 * Accepted and ignored (no effect on a merge): peft_type "LORA", task_type, base_model_name_or_path,
 * revision, inference_mode, auto_mapping, peft_version, lora_dropout, runtime_config, megatron_core,
 * qalora_group_size, init_lora_weights true/false/"gaussian"/"eva"/"orthogonal" (initializations that
 * leave the base as it was) and the other initializations' settings (loftq_config, eva_config,
 * corda_config, lora_ga_config).
 * Refused (exit 2, naming the field and its value): bias other than "none", any other field -- PEFT's
 * modules_to_save, layers_to_transform, layers_pattern, use_dora, lora_bias, target_parameters,
 * trainable_token_indices, layer_replication, ..., and fields of later PEFT versions -- unless its
 * value is null, false, {} or [] (PEFT's "off"); init_lora_weights that change the base weights
 * (pissa, olora, corda, loftq, lora_ga, mica).
 */
#ifndef SR__MERGE_CONFIG_H
#define SR__MERGE_CONFIG_H

#include <stddef.h>

#include "merge_match.h"

/* target_modules or exclude_modules: a list of names, or one expression (a string) */
typedef struct sr__merge_names {
    int set; /* 0: null or absent */
    char **names;
    size_t n;
    sr__merge_re *re;
    char *pattern; /* the string form */
} sr__merge_names;

typedef struct sr__merge_pattern { /* a rank_pattern or alpha_pattern entry */
    char *key;
    double value;
    sr__merge_re *re;
} sr__merge_pattern;

typedef struct sr__merge_cfg {
    double r, alpha;
    int fan_in_fan_out, rslora;
    sr__merge_names targets, excludes;
    sr__merge_pattern *ranks, *alphas;
    size_t nranks, nalphas;
} sr__merge_cfg;

/* Reads and checks `path`.  0, or the exit code (2: missing, unreadable as PEFT's, or asking for
   what merge does not do) after printing why, prefixed with `who` ("shardrun merge"); `doer` is what
   "does not do" an option ("shardrun merge", "LoRA training"). */
int sr__merge_cfg_read(const char *who, const char *doer, const char *path, sr__merge_cfg *c);
/* 1 when target_modules names `module` and exclude_modules does not; 0 when not; -1 when a
   pattern could not be matched (PCRE2's limit). */
int sr__merge_cfg_targets(const sr__merge_cfg *c, const char *module);
/* The rank and alpha PEFT gives `module`: the first rank_pattern / alpha_pattern key matching it
   (in *rkey / *akey, else NULL) or r / lora_alpha.  -1 when a pattern could not be matched. */
int sr__merge_cfg_module(const sr__merge_cfg *c, const char *module, double *r, double *alpha, const char **rkey,
                         const char **akey);
/* alpha / r, or alpha / sqrt(r) with use_rslora */
double sr__merge_cfg_scale(const sr__merge_cfg *c, double r, double alpha);
void sr__merge_cfg_free(sr__merge_cfg *c);

#endif
