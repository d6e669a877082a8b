/*
 * shardrun_merge (`shardrun merge`): folds the LoRA adapters of a FULL checkpoint into its base
 * weights, as HF PEFT's merge_and_unload does, and writes an ordinary model.safetensors -- the
 * model's own names and shapes, no adapters -- that loads as init_weights (or in HF) with LoRA off.
 *
 *   shardrun merge CHECKPOINT_DIR [-o OUT.safetensors] [--base BASE.safetensors]
 *
 * Reads CHECKPOINT_DIR/adapter_config.json (PEFT's LoraConfig: merge_config.h says which fields it
 * applies and which it refuses) and adapter_model.safetensors ("base_model.model.<path>.lora_A.weight"
 * [r, in], "lora_B.weight" [out, r]); the base is BASE, or the checkpoint's model.safetensors (its
 * lora_* tensors dropped).  Each adapted weight becomes W + scale * B A (transposed for
 * fan_in_fan_out, GPT-2's Conv1D [in, out] weights), with the module's r and alpha (rank_pattern,
 * alpha_pattern) and scale = alpha / r (/ sqrt(r) with use_rslora), in double, stored fp32; every
 * other tensor is copied as fp32.  OUT defaults to CHECKPOINT_DIR/merged/model.safetensors
 * (merge_out.h: never written through a link).
 *
 * Every check comes before the work: the destination, the config, both files, that the config and
 * the tensors agree (each adapter pair on a module target_modules names, of the module's rank and
 * the weight's shape; each weight target_modules names adapted); then the result must be finite
 * before anything is written.  Exit 0; 2 (bad arguments, files or config, a result that is not
 * finite; nothing written); 1 (the output could not be written).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "io/safetensors.h"
#include "merge_lora.h"
#include "merge_out.h"

static void usage(FILE *f) {
    fprintf(f, "usage: shardrun merge CHECKPOINT_DIR [-o OUT.safetensors] [--base BASE.safetensors]\n"
               "  folds CHECKPOINT_DIR's LoRA adapters (adapter_model.safetensors, adapter_config.json) into the\n"
               "  base weights (BASE, or the checkpoint's model.safetensors) and writes a model.safetensors that\n"
               "  loads with LoRA off (default OUT: CHECKPOINT_DIR/merged/model.safetensors)\n");
}

int main(int argc, char **argv) {
    const char *dir = NULL, *out = NULL, *base = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(argv[i], "--base") && i + 1 < argc) {
            base = argv[++i];
        } else if (argv[i][0] == '-' || dir) {
            fprintf(stderr, "shardrun merge: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else {
            dir = argv[i];
        }
    }
    if (!dir) {
        usage(stderr);
        return 2;
    }
    char cfg_path[4096], ad_path[4096], base_path[4096], out_path[4096], folder[4096], err[1024];
    snprintf(cfg_path, sizeof cfg_path, "%s/adapter_config.json", dir);
    snprintf(ad_path, sizeof ad_path, "%s/adapter_model.safetensors", dir);
    snprintf(base_path, sizeof base_path, "%s", base ? base : "");
    if (!base) snprintf(base_path, sizeof base_path, "%s/model.safetensors", dir);
    snprintf(folder, sizeof folder, "%s/merged", dir);
    if (out) snprintf(out_path, sizeof out_path, "%s", out);
    else snprintf(out_path, sizeof out_path, "%s/merged/model.safetensors", dir);
    sr__merge_dest dest = {.path = out_path, .folder = out ? NULL : folder};
    const char *inputs[] = {cfg_path, ad_path, base_path};
    if (sr__merge_dest_check(&dest, inputs, 3, err, sizeof err) != 0) {
        fprintf(stderr, "shardrun merge: %s\n", err);
        return 2;
    }
    sr__merge_job jb;
    int rc = sr__merge_open(&jb, "shardrun merge", cfg_path, ad_path, base_path);
    size_t nb = !rc ? sr__st_count(jb.bf) : 0, nout = 0;
    sr__st_tensor *t = rc ? NULL : sr__calloc(nb ? nb : 1, sizeof *t);
    float **vals = rc ? NULL : sr__calloc(nb ? nb : 1, sizeof *vals);
    if (!rc && (!t || !vals)) rc = 2, fprintf(stderr, "shardrun merge: out of memory\n");
    if (!rc) rc = sr__merge_compute(&jb, 0, t, vals, &nout);
    if (!rc && sr__merge_dest_write(&dest, t, vals, nout, err, sizeof err) != 0) {
        fprintf(stderr, "shardrun merge: %s\n", err);
        rc = 1;
    }
    if (!rc) {
        double lo = INFINITY, hi = 0;
        for (size_t i = 0; i < jb.nmods; i++) lo = fmin(lo, jb.mods[i].scale), hi = fmax(hi, jb.mods[i].scale);
        printf("shardrun merge: wrote %s: %zu tensors, %zu adapted weights (", out_path, nout, jb.nmods);
        if (lo == hi) printf("scale %g)\n", lo);
        else printf("scales %g to %g)\n", lo, hi);
    }
    for (size_t i = 0; vals && i < nout; i++) free(vals[i]);
    free(vals), free(t);
    sr__merge_close(&jb);
    return rc;
}
