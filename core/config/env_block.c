#define _GNU_SOURCE
#include "config/env_block.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

static char *dup_or_null(const char *s) { return s ? sr__strdup(s) : NULL; }

static void entry_free(sr__env_entry *e) { free(e->name), free(e->value), free(e->setter), free(e->because); }

int sr__env_block_set(sr__env_block *b, const char *name, const char *value, const char *setter, const char *because) {
    sr__env_entry n = {sr__strdup(name), dup_or_null(value), dup_or_null(setter), dup_or_null(because)};
    sr__env_entry *e = (sr__env_entry *)sr__env_block_find(b, name);
    if (!n.name || (value && !n.value) || (setter && !n.setter) || (because && !n.because) ||
        (!e && sr__grow((void **)&b->v, &b->cap, b->n + 1, sizeof *b->v) != 0)) {
        entry_free(&n);
        return -1;
    }
    if (e) entry_free(e);
    else e = &b->v[b->n++];
    *e = n;
    return 0;
}

const sr__env_entry *sr__env_block_find(const sr__env_block *b, const char *name) {
    for (size_t i = 0; i < b->n; i++)
        if (strcmp(b->v[i].name, name) == 0) return &b->v[i];
    return NULL;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const sr__env_entry *)a)->name, ((const sr__env_entry *)b)->name);
}

void sr__env_block_sort(sr__env_block *b) {
    if (b->n) qsort(b->v, b->n, sizeof *b->v, by_name);
}

int sr__env_block_apply(const sr__env_block *b) {
    for (size_t i = 0; i < b->n; i++) {
        int rc = b->v[i].value ? setenv(b->v[i].name, b->v[i].value, 1) : unsetenv(b->v[i].name);
        if (rc != 0) return -1;
    }
    return 0;
}

void sr__env_block_free(sr__env_block *b) {
    for (size_t i = 0; i < b->n; i++) entry_free(&b->v[i]);
    free(b->v);
    b->v = NULL;
    b->n = b->cap = 0;
}
