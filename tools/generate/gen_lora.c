/* gen lora: a LoRA checkpoint's adapters merged in memory for generation (see gen_lora.h). */
#define _POSIX_C_SOURCE 200809L
#include "gen_lora.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "io/safetensors.h"
#include "merge_lora.h"

static int exists(const char *dir, const char *name, char *path, size_t len) {
    struct stat st;
    snprintf(path, len, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

int gen_lora_adapter_only(const char *path, char *err, size_t errlen) {
    struct stat st;
    char p[4200];
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode) || exists(path, "model.safetensors", p, sizeof p) ||
        !exists(path, "adapter_config.json", p, sizeof p))
        return 0;
    snprintf(err, errlen,
             "%s holds LoRA adapters (adapter_config.json, as PEFT's save_pretrained writes them) but not the "
             "model they adapt (model.safetensors); fold them into their base first: shardrun merge %s --base "
             "BASE/model.safetensors -o merged.safetensors, then generate from merged.safetensors",
             path, path);
    return -1;
}

int gen_lora_apply(gen_file *f, char *what, size_t whatlen, char *err, size_t errlen) {
    const sr__st_file *st = f->st;
    size_t nt = sr__st_count(st), nlora = 0;
    const char *one = NULL;
    for (size_t i = 0; i < nt; i++)
        if (sr__merge_is_lora(sr__st_at(st, i)->name)) nlora++, one = one ? one : sr__st_at(st, i)->name;
    if (!nlora) return 0;
    char cfg[4200], ad[4200];
    int have_cfg = exists(f->dir, "adapter_config.json", cfg, sizeof cfg),
        have_ad = exists(f->dir, "adapter_model.safetensors", ad, sizeof ad);
    if (!have_cfg || !have_ad) {
        snprintf(err, errlen,
                 "%s holds %zu LoRA adapter tensors (%s, ...) but %s has no %s to say how to apply them; name the "
                 "whole checkpoint folder of the LoRA run (FULL_STATE_DICT, which writes both), or fold the "
                 "adapters in first with shardrun merge CHECKPOINT_DIR and generate from its merged/model.safetensors",
                 f->file, nlora, one, f->dir, have_cfg ? "adapter_model.safetensors" : "adapter_config.json");
        return -1;
    }
    sr__merge_job jb;
    int rc = sr__merge_open(&jb, "LoRA merge", cfg, ad, f->file);
    jb.nothing = "nothing was generated";
    sr__st_tensor *t = rc ? NULL : sr__calloc(nt ? nt : 1, sizeof *t);
    float **vals = rc ? NULL : sr__calloc(nt ? nt : 1, sizeof *vals);
    float **merged = rc ? NULL : sr__calloc(nt ? nt : 1, sizeof *merged);
    size_t nout = 0;
    if (!rc && (!t || !vals || !merged)) rc = -2;
    if (!rc && sr__merge_compute(&jb, 1, t, vals, &nout) != 0) rc = 2;
    for (size_t k = 0; !rc && k < nout; k++) /* into the file's order */
        for (size_t i = 0; i < nt; i++)
            if (!strcmp(sr__st_at(st, i)->name, t[k].name)) merged[i] = vals[k], vals[k] = NULL;
    if (!rc) {
        double lo = INFINITY, hi = 0;
        for (size_t i = 0; i < jb.nmods; i++) lo = fmin(lo, jb.mods[i].scale), hi = fmax(hi, jb.mods[i].scale);
        char sc[64];
        if (lo == hi) snprintf(sc, sizeof sc, "scale %g", lo);
        else snprintf(sc, sizeof sc, "scales %g to %g", lo, hi);
        snprintf(what, whatlen, "LoRA adapters (%s) merged in memory into %zu weights, %s", ad, nout, sc);
        for (size_t i = 0; i < nt; i++)
            if (sr__merge_is_lora(sr__st_at(st, i)->name)) f->used[i] = 1; /* folded in: not left unread */
        f->merged = merged, merged = NULL;
    } else if (rc == -2) {
        snprintf(err, errlen, "out of memory merging the LoRA adapters of %s", f->file);
    } else {
        snprintf(err, errlen,
                 "the LoRA adapters beside %s cannot be applied (above); shardrun merge %s would refuse them too",
                 f->file, f->dir);
        rc = -1;
    }
    for (size_t k = 0; vals && k < nout; k++) free(vals[k]);
    free(vals), free(t), free(merged);
    sr__merge_close(&jb);
    return rc;
}
