/* gpt2 weights: a model.safetensors or FULL checkpoint folder, read for generation (see gpt2_weights.h). */
#define _POSIX_C_SOURCE 200809L
#include "gpt2_weights.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/hash64.h"
#include "io/safetensors.h"
#include "gpt2_sizes.h"

static const char *const BLOCK_NAMES[GPT2_BLOCK_PARAMS] = {
    "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias",
    "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight",    "mlp.c_fc.bias",    "mlp.c_proj.weight",  "mlp.c_proj.bias",
};

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}
static int exists(const char *dir, const char *name) {
    char p[4200];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0;
}

/* The first file in dir whose name starts with prefix and ends with suffix, into out ("" if none). */
static void find_named(const char *dir, const char *prefix, const char *suffix, char *out, size_t len) {
    out[0] = 0;
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name), lp = strlen(prefix), ls = strlen(suffix);
        if (n >= lp + ls && !strncmp(e->d_name, prefix, lp) && !strcmp(e->d_name + n - ls, suffix) &&
            (!out[0] || strcmp(e->d_name, out) < 0))
            snprintf(out, len, "%s", e->d_name);
    }
    closedir(d);
}

#define SHARDED_HOWTO                                                                                                  \
    "gpt2_generate reads whole models: a FULL_STATE_DICT checkpoint (its model.safetensors) or a HuggingFace "         \
    "model.safetensors. Save FULL checkpoints with [accelerate] fsdp.state_dict_type = FULL_STATE_DICT, or convert "   \
    "this one: resume from it for one more step with that setting, e.g. build/shardrun JOB --set "                     \
    "task.resume_from_checkpoint=%s --set accelerate.fsdp.state_dict_type=FULL_STATE_DICT --set task.max_steps=N+1, "  \
    "and generate from the checkpoint-N+1 it writes"

/* A folder without model.safetensors: say what it is instead. */
static int folder_problem(const char *dir, char *err, size_t errlen) {
    char name[256];
    find_named(dir, "shard-", ".safetensors", name, sizeof name);
    if (name[0])
        return fail(err, errlen,
                    "%s is a SHARDED_STATE_DICT checkpoint (%s holds one rank's slice of the flat "
                    "parameters, not a model). " SHARDED_HOWTO,
                    dir, name, dir);
    find_named(dir, "", ".distcp", name, sizeof name);
    if (name[0] || exists(dir, ".metadata"))
        return fail(err, errlen,
                    "%s is a PyTorch distributed (DCP) checkpoint (%s), not a model.safetensors; convert "
                    "it in Python: torch.distributed.checkpoint.format_utils.dcp_to_torch_save, then save the "
                    "model's state_dict with safetensors.torch.save_file as model.safetensors",
                    dir, name[0] ? name : ".metadata");
    if (exists(dir, "pytorch_model.bin"))
        return fail(err, errlen,
                    "%s has pytorch_model.bin but no model.safetensors; convert it in Python: "
                    "safetensors.torch.save_file(torch.load('pytorch_model.bin'), 'model.safetensors')",
                    dir);
    return fail(err, errlen,
                "%s has no model.safetensors; name a checkpoint-N folder written with "
                "fsdp.state_dict_type = FULL_STATE_DICT, or a model.safetensors file",
                dir);
}

/* The tensor called name, with or without HF's "transformer." prefix; NULL if neither. */
static const sr__st_tensor *find(const sr__st_file *f, const char *name, const void **data, int *used, size_t n) {
    const sr__st_tensor *t = sr__st_find(f, name, data);
    if (!t && !strncmp(name, "transformer.", 12)) t = sr__st_find(f, name + 12, data);
    if (t)
        for (size_t i = 0; i < n; i++)
            if (sr__st_at(f, i) == t) used[i] = 1;
    return t;
}

/* "h.<i>." (after an optional "transformer.") -> i, else -1 */
static int layer_of(const char *name) {
    if (!strncmp(name, "transformer.", 12)) name += 12;
    if (strncmp(name, "h.", 2) || name[2] < '0' || name[2] > '9') return -1;
    char *end;
    long i = strtol(name + 2, &end, 10);
    return *end == '.' && i < 100000 ? (int)i : -1;
}

/* HF's attention mask buffers, which older files carry */
static int ignorable(const char *name) {
    size_t n = strlen(name);
    return layer_of(name) >= 0 && ((n > 10 && !strcmp(name + n - 10, ".attn.bias")) ||
                                   (n > 17 && !strcmp(name + n - 17, ".attn.masked_bias")));
}

/* n_head from an HF config.json in dir: its "n_head" member (0 when absent or unreadable) */
static int config_json_heads(const char *dir) {
    char p[4200], buf[65536];
    snprintf(p, sizeof p, "%s/config.json", dir);
    FILE *f = fopen(p, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *k = strstr(buf, "\"n_head\"");
    if (!k) return 0;
    k += 8;
    while (*k == ' ' || *k == '\t' || *k == '\n' || *k == '\r' || *k == ':') k++;
    long v = strtol(k, NULL, 10);
    return v > 0 && v < 100000 ? (int)v : 0;
}

static int pick_heads(gpt2_weights *w, const gpt2_weights_opts *o, const sr__st_file *f, char *err, size_t errlen) {
    const char *meta = sr__st_metadata(f, "n_head");
    int cfg = config_json_heads(w->dir);
    if (o->n_head > 0) {
        w->NH = o->n_head;
        snprintf(w->heads_from, sizeof w->heads_from, "--n-head");
    } else if (o->size) {
        const gpt2_size *s = gpt2_size_named(o->size);
        if (s) w->NH = s->n_head;
        snprintf(w->heads_from, sizeof w->heads_from, "--size %s", o->size);
    } else if (meta && atoi(meta) > 0) {
        w->NH = atoi(meta);
        snprintf(w->heads_from, sizeof w->heads_from, "the file's n_head metadata");
    } else if (cfg > 0) {
        w->NH = cfg;
        snprintf(w->heads_from, sizeof w->heads_from, "config.json");
    } else {
        for (int i = 0; i < GPT2_NSIZES; i++)
            if (GPT2_SIZES[i].n_embd == w->C) {
                w->NH = GPT2_SIZES[i].n_head;
                snprintf(w->heads_from, sizeof w->heads_from, "GPT-2's for n_embd %d; --n-head to change", w->C);
            }
        if (!w->NH)
            return fail(err, errlen,
                        "%s: n_embd is %d, which is no GPT-2 size's, and nothing says how many attention "
                        "heads the model has (no n_head metadata, no config.json); give --n-head N",
                        w->file, w->C);
    }
    if (w->C % w->NH)
        return fail(err, errlen,
                    "%s: n_embd %d is not a multiple of n_head %d (from %s); give the n_head the model "
                    "was trained with (--n-head N)",
                    w->file, w->C, w->NH, w->heads_from);
    return 0;
}

/* --size against the shapes: every figure that differs, in one message */
static int check_size(const gpt2_weights *w, const char *size, char *err, size_t errlen) {
    const gpt2_size *s = gpt2_size_named(size);
    if (!s)
        return fail(err, errlen,
                    "--size %s is not a GPT-2 size; use tiny, gpt2, gpt2-medium, gpt2-large or gpt2-xl, "
                    "or leave it out to take the file's shapes",
                    size);
    char diff[512] = "";
    size_t n = 0;
#define DIFF(what, want, have)                                                                                         \
    if ((want) && (want) != (have))                                                                                    \
    n += (size_t)snprintf(diff + n, sizeof diff - n, "%s%s %d in --size, %d in the file", n ? "; " : "", what, want,   \
                          have)
    DIFF("n_layer", s->n_layer, w->L);
    DIFF("n_embd", s->n_embd, w->C);
    DIFF("n_positions (context)", s->n_positions, w->P);
    DIFF("vocab_size", s->vocab_size, w->V);
#undef DIFF
    if (n)
        return fail(err, errlen,
                    "%s is not a %s model: %s. Leave --size out to take the file's shapes, or name "
                    "the checkpoint of that size",
                    w->file, size, diff);
    return 0;
}

/* A shardrun checkpoint file lists a hash of every tensor's bytes: check them all (~1/10 s per GB),
   so a damaged checkpoint is refused instead of generating nonsense. */
static int check_hashes(const gpt2_weights *w, const sr__st_file *f, char *err, size_t errlen) {
    for (size_t i = 0; i < sr__st_count(f); i++) {
        const sr__st_tensor *t = sr__st_at(f, i);
        const void *data;
        sr__st_find(f, t->name, &data);
        char key[600], hex[17];
        snprintf(key, sizeof key, "hash:%s", t->name);
        const char *want = sr__st_metadata(f, key);
        if (!want)
            return fail(err, errlen,
                        "%s says it is a shardrun checkpoint but has no \"%s\" entry: the file was "
                        "altered; use another checkpoint",
                        w->file, key);
        if (strcmp(sr__hash64_hex(sr__hash64(data, (size_t)t->nbytes, 0), hex), want))
            return fail(err, errlen,
                        "%s: the data of tensor \"%s\" does not match its hash (%s, expected %s): the file "
                        "is damaged; use another checkpoint",
                        w->file, t->name, hex, want);
    }
    return 0;
}

/* Points *dst at tensor name's fp32 data, converting when the file stores another float type. */
static int take(gpt2_weights *w, const sr__st_file *f, const char *name, int ndim, int64_t d0, int64_t d1,
                const float **dst, int *used, char *err, size_t errlen) {
    const void *data;
    const sr__st_tensor *t = find(f, name, &data, used, sr__st_count(f));
    char want[64], have[64];
    int64_t shape[2] = {d0, d1};
    if (!t)
        return fail(err, errlen, "%s has no tensor %s (nor %s): not a GPT-2 LM model (HF's GPT2LMHeadModel names)",
                    w->file, name, strncmp(name, "transformer.", 12) ? name : name + 12);
    if (t->ndim != ndim || t->shape[0] != d0 || (ndim == 2 && t->shape[1] != d1))
        return fail(err, errlen, "%s: tensor %s has shape %s; a GPT-2 with n_embd %d, vocab %d, context %d has %s",
                    w->file, t->name, sr__st_shape_str(have, sizeof have, t->ndim, t->shape), w->C, w->V, w->P,
                    sr__st_shape_str(want, sizeof want, ndim, shape));
    size_t n = (size_t)d0 * (size_t)(ndim == 2 ? d1 : 1);
    /* F32 is used in place when aligned (a tensor after an odd count of 2-byte elements is not) */
    if (t->dtype == SR_FLOAT32 && (uintptr_t)data % sizeof(float) == 0) {
        *dst = data;
        return 0;
    }
    float *cvt = malloc(n * sizeof *cvt);
    float **grown = realloc(w->owned, (size_t)(w->nowned + 1) * sizeof *grown);
    if (grown) w->owned = grown;
    if (!cvt || !grown) {
        free(cvt);
        return fail(err, errlen, "out of memory converting %s of %s to fp32", t->name, w->file), -2;
    }
    w->owned[w->nowned++] = cvt;
    if (sr__st_to_f32(t, data, 0, n, cvt) != 0)
        return fail(err, errlen, "%s: tensor %s is %s, not a floating-point type", w->file, t->name,
                    sr__st_dtype_name(t->dtype));
    *dst = cvt;
    return 0;
}

static int load(const char *path, const gpt2_weights_opts *o, gpt2_weights *w, char *err, size_t errlen) {
    struct stat st;
    if (stat(path, &st) != 0)
        return fail(err, errlen, "%s: %s; name a checkpoint-N folder (FULL_STATE_DICT) or a model.safetensors file",
                    path, strerror(errno));
    if (is_dir(path)) {
        snprintf(w->dir, sizeof w->dir, "%s", path);
        if (!exists(path, "model.safetensors")) return folder_problem(path, err, errlen);
        snprintf(w->file, sizeof w->file, "%s/model.safetensors", path);
    } else {
        snprintf(w->file, sizeof w->file, "%s", path);
        snprintf(w->dir, sizeof w->dir, "%s", path);
        char *slash = strrchr(w->dir, '/');
        if (slash) *slash = 0;
        else snprintf(w->dir, sizeof w->dir, ".");
    }
    char why[1024];
    sr__st_file *f = sr__st_open(w->file, why, sizeof why);
    if (!f) return fail(err, errlen, "%s; name an intact model.safetensors (or its checkpoint folder)", why);
    w->st = f;
    const char *fmt = sr__st_metadata(f, "format"), *role = sr__st_metadata(f, "file");
    if ((fmt && !strncmp(fmt, "shardrun-sharded", 16)) || (role && !strcmp(role, "shard")))
        return fail(err, errlen,
                    "%s is one rank's file of a SHARDED_STATE_DICT checkpoint, not a model. " SHARDED_HOWTO, w->file,
                    w->dir);
    if (role && !strcmp(role, "optimizer"))
        return fail(err, errlen, "%s is a checkpoint's optimizer state; name model.safetensors (or the folder)",
                    w->file);
    const char *ck = sr__st_metadata(f, "shardrun_checkpoint"), *gs = sr__st_metadata(f, "global_step");
    w->step = ck && gs ? atoll(gs) : -1;
    if (ck && strcmp(ck, "3")) /* the format's version: its hashes are XXH3 (docs/checkpoint-format.md) */
        return fail(err, errlen,
                    "%s is shardrun checkpoint format %s; this gpt2_generate checks format 3 only "
                    "(XXH3 hashes; format 2 used an earlier shardrun's own hash, which this version no longer has): "
                    "use the gpt2_generate of the shardrun that wrote it",
                    w->file, ck);
    if (ck && check_hashes(w, f, err, errlen) != 0) return -1;
    if (!ck) { /* bring every page of the mapped file in now (the hashes did for a checkpoint), so the
                  first token does not pay for the page faults */
        volatile unsigned char sink = 0;
        for (size_t i = 0; i < sr__st_count(f); i++) {
            const sr__st_tensor *t = sr__st_at(f, i);
            const unsigned char *d;
            sr__st_find(f, t->name, (const void **)&d);
            for (uint64_t b = 0; b < t->nbytes; b += 4096) sink ^= d[b];
        }
        (void)sink;
    }

    size_t nt = sr__st_count(f);
    int *used = calloc(nt ? nt : 1, sizeof *used);
    if (!used) return fail(err, errlen, "out of memory"), -2;
    int rc = -1;
    /* the configuration, from the shapes */
    const void *data;
    const sr__st_tensor *wte = find(f, "transformer.wte.weight", &data, used, nt),
                        *wpe = find(f, "transformer.wpe.weight", &data, used, nt);
    if (!wte || !wpe || wte->ndim != 2 || wpe->ndim != 2 || wte->shape[1] != wpe->shape[1]) {
        fail(err, errlen,
             "%s has no transformer.wte.weight [vocab, n_embd] and transformer.wpe.weight [context, "
             "n_embd] (with or without the \"transformer.\" prefix): not a GPT-2 model",
             w->file);
        goto out;
    }
    w->V = (int)wte->shape[0], w->C = (int)wte->shape[1], w->P = (int)wpe->shape[0];
    for (size_t i = 0; i < nt; i++) {
        int l = layer_of(sr__st_at(f, i)->name);
        if (l + 1 > w->L) w->L = l + 1;
    }
    if (w->L == 0) {
        fail(err, errlen, "%s has no transformer.h.0.* tensors: not a GPT-2 model", w->file);
        goto out;
    }
    if (o->size && check_size(w, o->size, err, errlen) != 0) goto out;
    if (pick_heads(w, o, f, err, errlen) != 0) goto out;
    if (!(w->block = calloc((size_t)w->L * GPT2_BLOCK_PARAMS, sizeof *w->block))) {
        rc = -2;
        fail(err, errlen, "out of memory");
        goto out;
    }
    const int C = w->C;
    const int64_t dims[GPT2_BLOCK_PARAMS][2] = {{C, 0}, {C, 0}, {C, 3 * C}, {3 * C, 0}, {C, C},     {C, 0},
                                                {C, 0}, {C, 0}, {C, 4 * C}, {4 * C, 0}, {4 * C, C}, {C, 0}};
    int r = take(w, f, "transformer.wte.weight", 2, w->V, C, &w->wte, used, err, errlen);
    if (!r) r = take(w, f, "transformer.wpe.weight", 2, w->P, C, &w->wpe, used, err, errlen);
    for (int l = 0; !r && l < w->L; l++)
        for (int p = 0; !r && p < GPT2_BLOCK_PARAMS; p++) {
            char name[128];
            snprintf(name, sizeof name, "transformer.h.%d.%s", l, BLOCK_NAMES[p]);
            r = take(w, f, name, dims[p][1] ? 2 : 1, dims[p][0], dims[p][1], &w->block[l * GPT2_BLOCK_PARAMS + p], used,
                     err, errlen);
        }
    if (!r) r = take(w, f, "transformer.ln_f.weight", 1, C, 0, &w->lnf_w, used, err, errlen);
    if (!r) r = take(w, f, "transformer.ln_f.bias", 1, C, 0, &w->lnf_b, used, err, errlen);
    w->head = w->wte;
    if (!r && sr__st_find(f, "lm_head.weight", &data))
        r = take(w, f, "lm_head.weight", 2, w->V, C, &w->head, used, err, errlen);
    if (r) {
        rc = r;
        goto out;
    }
    for (size_t i = 0; i < nt; i++)
        if (!used[i] && !ignorable(sr__st_at(f, i)->name)) {
            fail(err, errlen, "%s has a tensor GPT-2 does not: %s (%zu tensors in all); not a GPT-2 LM model", w->file,
                 sr__st_at(f, i)->name, nt);
            goto out;
        }
    rc = 0;
out:
    free(used);
    return rc;
}

int gpt2_weights_load(const char *path, const gpt2_weights_opts *o, gpt2_weights *w, char *err, size_t errlen) {
    memset(w, 0, sizeof *w);
    int rc = load(path, o, w, err, errlen);
    if (rc) gpt2_weights_free(w);
    return rc;
}

void gpt2_weights_free(gpt2_weights *w) {
    for (int i = 0; i < w->nowned; i++) free(w->owned[i]);
    free(w->owned);
    free(w->block);
    if (w->st) sr__st_close(w->st);
    w->owned = NULL, w->block = NULL, w->st = NULL, w->nowned = 0;
}
