/* transformer lora: a PEFT adapter folder to start from ([task] init_adapters), its
   adapter_config.json checked against the run's lora_* keys (see lora.h, tf_lora_check_peft).  The
   trainer reads the tensors (core/fsdp/weights.c); this says, before any work, when the folder's
   adapters would compute something else under this run's keys. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lora.h"
#include "merge_config.h"

/* 0, or -1 after naming the field of adapter_config.json, its value and the key to set */
static int check_module(const tf_lora *l, const sr__merge_cfg *c, const char *prefix, const char *cfg, const char *path,
                        int targeted) {
    int tg = sr__merge_cfg_targets(c, path);
    if (tg < 0) {
        fprintf(stderr, "%s: error: [task] init_adapters: %s: PCRE2 gave up matching %s (its match limit)\n", prefix,
                cfg, path);
        return -1;
    }
    if (tg != targeted) {
        fprintf(stderr,
                "%s: error: [task] init_adapters: %s's target_modules %s %s, which lora_target_modules = %s %s; "
                "set lora_target_modules to the names in the file's target_modules\n",
                prefix, cfg, tg ? "adapts" : "does not adapt", path, l->target_list, targeted ? "adapts" : "does not");
        return -1;
    }
    if (!targeted) return 0;
    double r, alpha;
    const char *rkey, *akey;
    if (sr__merge_cfg_module(c, path, &r, &alpha, &rkey, &akey) != 0) {
        fprintf(stderr, "%s: error: [task] init_adapters: %s: PCRE2 gave up matching %s (its match limit)\n", prefix,
                cfg, path);
        return -1;
    }
    if (r != l->r) {
        fprintf(stderr,
                "%s: error: [task] init_adapters: %s gives %s rank %g (%s%s%s), this run lora_r = %d; set lora_r = "
                "%g%s\n",
                prefix, cfg, path, r, rkey ? "rank_pattern[\"" : "r", rkey ? rkey : "", rkey ? "\"]" : "", l->r, r,
                rkey ? " (one rank for every module: training has no rank_pattern)" : "");
        return -1;
    }
    if (alpha != l->alpha) {
        fprintf(stderr,
                "%s: error: [task] init_adapters: %s gives %s lora_alpha %g (%s%s%s), this run %g: the adapters "
                "would be scaled otherwise than they were trained; set lora_alpha = %g%s\n",
                prefix, cfg, path, alpha, akey ? "alpha_pattern[\"" : "lora_alpha", akey ? akey : "", akey ? "\"]" : "",
                l->alpha, alpha, akey ? " (one alpha for every module: training has no alpha_pattern)" : "");
        return -1;
    }
    return 0;
}

int tf_lora_check_peft(const tf_lora *l, const char *prefix, const char *dir, const char *blocks) {
    char cfg[4200], who[300], path[512];
    snprintf(cfg, sizeof cfg, "%s/adapter_config.json", dir);
    snprintf(who, sizeof who, "%s: error: [task] init_adapters", prefix);
    sr__merge_cfg c;
    int rc = sr__merge_cfg_read(who, "LoRA training", cfg, &c) ? -1 : 0;
    if (!rc && c.rslora) {
        fprintf(stderr,
                "%s: error: [task] init_adapters: %s has use_rslora true (scale alpha / sqrt(r)); training scales "
                "by lora_alpha / lora_r only, so these adapters would compute something else\n",
                prefix, cfg);
        rc = -1;
    }
    for (int b = 0; !rc && b < l->L; b++)
        for (int k = 0; !rc && k < l->nlin; k++) {
            snprintf(path, sizeof path, "%s.%d.%s", blocks, b, l->names[k]);
            rc = check_module(l, &c, prefix, cfg, path, !!(l->block_targets[b] & (1u << k)));
        }
    sr__merge_cfg_free(&c);
    return rc;
}
