/*
 * LoRA adapters folded into their base weights, as HF PEFT's merge_and_unload does: W + scale * B A
 * (transposed for fan_in_fan_out, GPT-2's Conv1D [in, out] weights), with each module's r and alpha
 * (rank_pattern, alpha_pattern: merge_config.h) and scale = alpha / r (/ sqrt(r) with use_rslora),
 * in double, stored fp32.  One code for `shardrun merge` (merge_main.c, which writes the result) and
 * for generation from a LoRA checkpoint (tools/generate/gen_lora.c, which keeps it in memory), so
 * the two compute the same weights bit for bit.
 *
 * Lifecycle: sr__merge_open() reads adapter_config.json, opens the adapter file
 * ("base_model.model.<path>.lora_A.weight" [r, in], "lora_B.weight" [out, r]) and the base (its own
 * lora_* tensors, a checkpoint's copy of the adapters, are skipped) and checks, before any work, that
 * the config and the tensors agree (each adapter pair on a module target_modules names, of the
 * module's rank and the weight's shape; each weight target_modules names adapted) ->
 * sr__merge_compute() -> sr__merge_close().  Problems are printed to stderr, prefixed with `who`.
 */
#ifndef SR__MERGE_LORA_H
#define SR__MERGE_LORA_H

#include <stddef.h>

#include "io/safetensors.h"
#include "merge_config.h"

#define SR__MERGE_PREFIX "base_model.model." /* PEFT's names in adapter_model.safetensors */

typedef struct sr__merge_mod { /* one adapted module */
    char *module;              /* its path, "transformer.h.0.attn.c_attn" */
    const sr__st_tensor *A, *B;
    const void *da, *db;
    double r, alpha, scale;
    const char *rkey, *akey; /* the rank_pattern / alpha_pattern keys that gave r, alpha (or NULL) */
} sr__merge_mod;

typedef struct sr__merge_job {
    const char *who;     /* "shardrun merge": the messages' prefix */
    const char *nothing; /* what a refused result means: "nothing was written" (the default) */
    const char *ad_path, *base_path, *cfg_path;
    sr__merge_cfg cfg;
    sr__st_file *ad, *bf; /* the adapters, the base */
    sr__merge_mod *mods;
    size_t nmods;
    int *which; /* per base tensor: 1 + its index in mods, or 0 */
} sr__merge_job;

/* 1 when `name` is a lora_A or lora_B tensor */
int sr__merge_is_lora(const char *name);
/* Reads and checks the three files.  0, or 2 after printing why (the job is then to be closed too). */
int sr__merge_open(sr__merge_job *jb, const char *who, const char *cfg_path, const char *ad_path,
                   const char *base_path);
/* The base's tensors but its lora_* ones, in its order, as fp32 in vals[i] (malloc'ed) with their
   descriptions in t[i] (dtype F32), the adapted ones merged; with `adapted_only`, the others are
   left out.  Both arrays hold room for every base tensor.  Every value is checked finite.  0, or 2
   after saying why (vals[0 .. *nout) are the caller's to free either way). */
int sr__merge_compute(sr__merge_job *jb, int adapted_only, sr__st_tensor *t, float **vals, size_t *nout);
void sr__merge_close(sr__merge_job *jb);

#endif
