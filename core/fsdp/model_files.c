/* The files a task asks every FULL checkpoint to hold beside the weights (shardrun/model.h,
   sr_model_file): read once, in create(), so each checkpoint gets the bytes the run trained with. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/log.h"
#include "fsdp/model_desc.h"

/* A task's file is at most this large: a tokenizer.json is tens of MiB at most (Qwen's: 11 MiB) */
#define SR__MODEL_FILE_MAX (512ll << 20)

void sr__model_files_free(sr_model *m) {
    for (int i = 0; i < m->nfiles; i++) free(m->files[i].name), free(m->files[i].data);
    free(m->files);
    m->files = NULL, m->nfiles = 0;
}

int sr__ckpt_own_name(const char *name) {
    static const char *const own[] = {"model.safetensors", "optimizer.safetensors", "trainer_state.json"};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++)
        if (!strcmp(name, own[i])) return 1;
    return !strncmp(name, "adapter_", 8) || !strncmp(name, "shard-", 6);
}

static int refuse(sr_model *m, const char *name, const char *why) {
    sr__log(SR_LOG_ERROR, "model description: sr_model_file(\"%s\"): %s", name ? name : "(null)", why);
    m->errors++;
    return -1;
}

/* Adds name with data (taken). */
static int add(sr_model *m, const char *name, void *data, size_t size) {
    sr__model_file *g = sr__realloc(m->files, (size_t)(m->nfiles + 1) * sizeof *g);
    char *n = sr__strdup(name);
    if (!g || !n) {
        if (g) m->files = g;
        free(n), free(data);
        return refuse(m, name, "out of memory");
    }
    m->files = g;
    g[m->nfiles++] = (sr__model_file){n, data, size};
    return 0;
}

static int check_name(sr_model *m, const char *name) {
    if (!name || !*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
        return refuse(m, name, "the name must be a plain file name (no '/'), as in tokenizer.json");
    if (sr__ckpt_own_name(name))
        return refuse(m, name,
                      "that is a checkpoint's own file (model.safetensors, optimizer.safetensors, "
                      "trainer_state.json, adapter_*, shard-*); name the file otherwise");
    for (int i = 0; i < m->nfiles; i++)
        if (!strcmp(m->files[i].name, name)) return refuse(m, name, "declared twice; each name once");
    return 0;
}

int sr_model_file_data(sr_model *m, const char *name, const void *data, size_t size) {
    if (!m) return -1;
    if (check_name(m, name) != 0) return -1;
    if (!data && size) return refuse(m, name, "NULL data");
    void *copy = sr__malloc(size + 1);
    if (!copy) return refuse(m, name, "out of memory");
    if (size) memcpy(copy, data, size);
    return add(m, name, copy, size);
}

int sr_model_file(sr_model *m, const char *name, const char *path) {
    if (!m) return -1;
    if (check_name(m, name) != 0) return -1;
    char why[4400];
    FILE *f = path ? fopen(path, "rb") : NULL;
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > SR__MODEL_FILE_MAX) {
        if (!path) snprintf(why, sizeof why, "NULL path");
        else if (!f || errno) snprintf(why, sizeof why, "cannot read %s: %s", path, strerror(errno));
        else snprintf(why, sizeof why, "%s is not a regular file of at most %lld bytes", path, SR__MODEL_FILE_MAX);
        if (f) fclose(f);
        return refuse(m, name, why);
    }
    size_t size = (size_t)st.st_size;
    char *data = sr__malloc(size + 1);
    size_t got = data ? fread(data, 1, size, f) : 0;
    int more = data && fgetc(f) != EOF; /* grew since fstat: not the file that was measured */
    int err = ferror(f);
    fclose(f);
    if (!data || got != size || more || err) {
        free(data);
        snprintf(why, sizeof why, "cannot read %s whole%s", path,
                 data ? " (it changed while being read)" : ": out of memory");
        return refuse(m, name, why);
    }
    return add(m, name, data, size);
}
