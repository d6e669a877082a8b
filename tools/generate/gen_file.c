/* gen file: a model.safetensors or FULL checkpoint folder, read for generation (see gen_file.h). */
#define _POSIX_C_SOURCE 200809L
#include "gen_file.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fail.h"
#include "base/hash64.h"
#include "ckpt/file_check.h"
#include "ckpt/tensor_hash.h"
#include "io/safetensors.h"

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
    "Generation reads whole models: a FULL_STATE_DICT checkpoint (its model.safetensors) or a HuggingFace "            \
    "model.safetensors. Save FULL checkpoints with [accelerate] fsdp.state_dict_type = FULL_STATE_DICT, or convert "   \
    "this one: resume from it for one more step with that setting, e.g. build/shardrun JOB --set "                     \
    "task.resume_from_checkpoint=%s --set accelerate.fsdp.state_dict_type=FULL_STATE_DICT --set task.max_steps=N+1, "  \
    "and generate from the checkpoint-N+1 it writes"

/* A folder without model.safetensors: say what it is instead. */
static int folder_problem(const char *dir, char *err, size_t errlen) {
    char name[256];
    find_named(dir, "shard-", ".safetensors", name, sizeof name);
    if (name[0])
        return sr__fail(err, errlen,
                        "%s is a SHARDED_STATE_DICT checkpoint (%s holds one rank's slice of the flat "
                        "parameters, not a model). " SHARDED_HOWTO,
                        dir, name, dir);
    find_named(dir, "", ".distcp", name, sizeof name);
    if (name[0] || exists(dir, ".metadata"))
        return sr__fail(err, errlen,
                        "%s is a PyTorch distributed (DCP) checkpoint (%s), not a model.safetensors; convert "
                        "it in Python: torch.distributed.checkpoint.format_utils.dcp_to_torch_save, then save the "
                        "model's state_dict with safetensors.torch.save_file as model.safetensors",
                        dir, name[0] ? name : ".metadata");
    if (exists(dir, "pytorch_model.bin"))
        return sr__fail(err, errlen,
                        "%s has pytorch_model.bin but no model.safetensors; convert it in Python: "
                        "safetensors.torch.save_file(torch.load('pytorch_model.bin'), 'model.safetensors')",
                        dir);
    return sr__fail(err, errlen,
                    "%s has no model.safetensors; name a checkpoint-N folder written with "
                    "fsdp.state_dict_type = FULL_STATE_DICT, or a model.safetensors file",
                    dir);
}

/* The tensor called name, or without a leading "transformer."; marked used.  NULL if neither. */
static const sr__st_tensor *find(const gen_file *f, const char *name, const void **data) {
    const sr__st_file *st = f->st;
    const sr__st_tensor *t = sr__st_find(st, name, data);
    if (!t && !strncmp(name, "transformer.", 12)) t = sr__st_find(st, name + 12, data);
    if (t)
        for (size_t i = 0; i < sr__st_count(st); i++)
            if (sr__st_at(st, i) == t) f->used[i] = 1;
    return t;
}

/* A shardrun checkpoint file lists a hash of every tensor's bytes: check them all (~1/10 s per GB),
   so a damaged checkpoint is refused instead of generating nonsense. */
static int check_hashes(const gen_file *g, const sr__st_file *f, char *err, size_t errlen) {
    for (size_t i = 0; i < sr__st_count(f); i++) {
        const sr__st_tensor *t = sr__st_at(f, i);
        const void *data;
        sr__st_find(f, t->name, &data);
        char hex[17];
        const char *want = sr__ckpt_tensor_hash(f, t->name);
        if (!want)
            return sr__fail(err, errlen,
                            "%s says it is a shardrun checkpoint but has no \"hash:%s\" entry: the file was "
                            "altered; use another checkpoint",
                            g->file, t->name);
        if (sr__ckpt_hash_check(want, sr__hash64(data, (size_t)t->nbytes, 0), hex) != 0)
            return sr__fail(err, errlen,
                            "%s: the data of tensor \"%s\" does not match its hash (%s, expected %s): the file "
                            "is damaged; use another checkpoint",
                            g->file, t->name, hex, want);
    }
    return 0;
}

static int open_file(const char *path, gen_file *g, char *err, size_t errlen) {
    struct stat st;
    if (stat(path, &st) != 0)
        return sr__fail(err, errlen, "%s: %s; name a checkpoint-N folder (FULL_STATE_DICT) or a model.safetensors file",
                        path, strerror(errno));
    if (is_dir(path)) {
        snprintf(g->dir, sizeof g->dir, "%s", path);
        if (!exists(path, "model.safetensors")) return folder_problem(path, err, errlen);
        snprintf(g->file, sizeof g->file, "%s/model.safetensors", path);
    } else {
        snprintf(g->file, sizeof g->file, "%s", path);
        snprintf(g->dir, sizeof g->dir, "%s", path);
        char *slash = strrchr(g->dir, '/');
        if (slash) *slash = 0;
        else snprintf(g->dir, sizeof g->dir, ".");
    }
    char why[1024];
    sr__st_file *f = sr__st_open(g->file, why, sizeof why);
    if (!f) return sr__fail(err, errlen, "%s; name an intact model.safetensors (or its checkpoint folder)", why);
    g->st = f;
    const char *fmt = sr__st_metadata(f, "format"), *role = sr__st_metadata(f, "file");
    if ((fmt && !strncmp(fmt, "shardrun-sharded", 16)) || (role && !strcmp(role, "shard")))
        return sr__fail(err, errlen,
                        "%s is one rank's file of a SHARDED_STATE_DICT checkpoint, not a model. " SHARDED_HOWTO,
                        g->file, g->dir);
    if (role && !strcmp(role, "optimizer"))
        return sr__fail(err, errlen, "%s is a checkpoint's optimizer state; name model.safetensors (or the folder)",
                        g->file);
    const char *ck = sr__st_metadata(f, "shardrun_checkpoint"), *gs = sr__st_metadata(f, "global_step");
    g->step = ck && gs ? atoll(gs) : -1;
    if (ck && strcmp(ck, "3")) /* the format's version: its hashes are XXH3 (docs/checkpoint-format.md) */
        return sr__fail(
            err, errlen,
            "%s is shardrun checkpoint format %s; this generator checks format 3 only "
            "(XXH3 hashes; format 2 used an earlier shardrun's own hash, which this version no longer has): "
            "use the generator of the shardrun that wrote it",
            g->file, ck);
    if (ck && check_hashes(g, f, err, errlen) != 0) return -1;
    /* the tokenizer and config.json it lists (fsdp/ckpt_files.h): read by the generator next */
    char fwhy[9000];
    if (ck && !strcmp(role ? role : "", "model") && sr__ckpt_check_files(f, g->dir, fwhy, sizeof fwhy) != 0)
        return sr__fail(err, errlen, "%s", fwhy);
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
    if (!(g->used = calloc(nt ? nt : 1, sizeof *g->used))) return sr__fail(err, errlen, "out of memory"), -2;
    return 0;
}

int gen_file_open(const char *path, gen_file *f, char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    f->step = -1;
    int rc = open_file(path, f, err, errlen);
    if (rc) gen_file_close(f);
    return rc;
}

int gen_file_shape(const gen_file *f, const char *name, int64_t shape[4]) {
    const void *data;
    const sr__st_tensor *t = sr__st_find(f->st, name, &data);
    if (!t && !strncmp(name, "transformer.", 12)) t = sr__st_find(f->st, name + 12, &data);
    if (!t) return 0;
    for (int i = 0; i < 4; i++) shape[i] = i < t->ndim ? t->shape[i] : 0;
    return t->ndim;
}

const char *gen_file_meta(const gen_file *f, const char *key) { return sr__st_metadata(f->st, key); }

const char *gen_file_name(const gen_file *f, size_t i) {
    return i < sr__st_count(f->st) ? sr__st_at(f->st, i)->name : NULL;
}

int gen_file_take(gen_file *g, const char *name, int64_t d0, int64_t d1, const float **dst, const char *model,
                  const char *family, char *err, size_t errlen) {
    const void *data;
    const sr__st_tensor *t = find(g, name, &data);
    const int ndim = d1 ? 2 : 1;
    char want[64], have[64];
    int64_t shape[2] = {d0, d1};
    if (!t)
        return sr__fail(err, errlen, "%s has no tensor %s (nor %s): not a %s", g->file, name,
                        strncmp(name, "transformer.", 12) ? name : name + 12, family);
    if (t->ndim != ndim || t->shape[0] != d0 || (ndim == 2 && t->shape[1] != d1))
        return sr__fail(err, errlen, "%s: tensor %s has shape %s; %s has %s", g->file, t->name,
                        sr__st_shape_str(have, sizeof have, t->ndim, t->shape), model,
                        sr__st_shape_str(want, sizeof want, ndim, shape));
    size_t n = (size_t)d0 * (size_t)(ndim == 2 ? d1 : 1);
    for (size_t i = 0; g->merged && i < sr__st_count(g->st); i++) /* a LoRA checkpoint's merged weight */
        if (sr__st_at(g->st, i) == t && g->merged[i]) return *dst = g->merged[i], 0;
    /* F32 is used in place when aligned (a tensor after an odd count of 2-byte elements is not) */
    if (t->dtype == SR_FLOAT32 && (uintptr_t)data % sizeof(float) == 0) {
        *dst = data;
        return 0;
    }
    float *cvt = malloc(n * sizeof *cvt);
    float **grown = realloc(g->owned, (size_t)(g->nowned + 1) * sizeof *grown);
    if (grown) g->owned = grown;
    if (!cvt || !grown) {
        free(cvt);
        return sr__fail(err, errlen, "out of memory converting %s of %s to fp32", t->name, g->file), -2;
    }
    g->owned[g->nowned++] = cvt;
    if (sr__st_to_f32(t, data, 0, n, cvt) != 0)
        return sr__fail(err, errlen, "%s: tensor %s is %s, not a floating-point type", g->file, t->name,
                        sr__st_dtype_name(t->dtype));
    *dst = cvt;
    return 0;
}

int gen_file_check_used(const gen_file *g, int (*ignorable)(const char *name), const char *family_short,
                        const char *family, char *err, size_t errlen) {
    size_t nt = sr__st_count(g->st);
    for (size_t i = 0; i < nt; i++) {
        const char *name = sr__st_at(g->st, i)->name;
        if (!g->used[i] && !(ignorable && ignorable(name)))
            return sr__fail(err, errlen, "%s has a tensor %s does not: %s (%zu tensors in all); not a %s", g->file,
                            family_short, name, nt, family);
    }
    return 0;
}

void gen_file_close(gen_file *f) {
    for (size_t i = 0; f->merged && i < sr__st_count(f->st); i++) free(f->merged[i]);
    free(f->merged), f->merged = NULL;
    for (int i = 0; i < f->nowned; i++) free(f->owned[i]);
    free(f->owned);
    free(f->used);
    if (f->st) sr__st_close(f->st);
    f->owned = NULL, f->used = NULL, f->st = NULL, f->nowned = 0;
}

/* The text of dir/config.json (or of dir itself when it names a .json file) into buf; 0 or -1. */
static int config_text(const char *dir, char *buf, size_t len) {
    char p[4200];
    size_t n = strlen(dir);
    if (n > 5 && !strcmp(dir + n - 5, ".json")) snprintf(p, sizeof p, "%s", dir);
    else snprintf(p, sizeof p, "%s/config.json", dir);
    FILE *f = fopen(p, "r");
    if (!f) return -1;
    n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = 0;
    return 0;
}

/* after "key" and the colon, or NULL */
static const char *value_of(const char *buf, const char *key) {
    char k[128];
    snprintf(k, sizeof k, "\"%s\"", key);
    const char *p = strstr(buf, k);
    if (!p) return NULL;
    p += strlen(k);
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ':') p++;
    return p;
}

int gen_recorded_heads(const gen_file *f, const char *config, const char **from) {
    const char *meta = gen_file_meta(f, "n_head");
    if (meta && atoi(meta) > 0) return *from = "the file's n_head metadata", atoi(meta);
    int cfg = gen_config_int(config ? config : f->dir, "n_head");
    if (cfg > 0) *from = "config.json";
    return cfg > 0 ? cfg : 0;
}

int gen_layer_of(const char *name) {
    if (!strncmp(name, "transformer.", 12)) name += 12;
    if (strncmp(name, "h.", 2) || name[2] < '0' || name[2] > '9') return -1;
    char *end;
    long i = strtol(name + 2, &end, 10);
    return *end == '.' && i < 100000 ? (int)i : -1;
}

int gen_config_int(const char *dir, const char *key) {
    static char buf[65536];
    if (config_text(dir, buf, sizeof buf) != 0) return 0;
    const char *v = value_of(buf, key);
    long n = v ? strtol(v, NULL, 10) : 0;
    return n > 0 && n < 100000 ? (int)n : 0;
}

int gen_config_str(const char *dir, const char *key, char *str, size_t len) {
    static char buf[65536];
    if (config_text(dir, buf, sizeof buf) != 0) return 0;
    const char *v = value_of(buf, key);
    if (v && *v == '[') /* "architectures": ["X"]: its first */
        for (v++; *v == ' ' || *v == '\n' || *v == '\r' || *v == '\t';) v++;
    if (!v || *v != '"') return 0;
    const char *end = strchr(v + 1, '"');
    if (!end) return 0;
    snprintf(str, len, "%.*s", (int)(end - v - 1), v + 1);
    return 1;
}
