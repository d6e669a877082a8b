/* The index of a SHARDED checkpoint, parsed once (see ckpt_index.h). */
#include "fsdp/ckpt_index.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

/* "N N N" (units) or "N N N rest" (parameters): exact decimal fields separated by one space. */
static int fields(const char *s, long long *v, int n, const char **rest) {
    for (int i = 0; i < n; i++) {
        char *end;
        if (*s < '0' || *s > '9') return -1;
        v[i] = strtoll(s, &end, 10);
        if (v[i] < 0 || (*end != ' ' && !(*end == 0 && !rest && i == n - 1))) return -1;
        s = *end ? end + 1 : end;
    }
    if (rest) *rest = s;
    return rest || !*s ? 0 : -1;
}

int sr__ckpt_index_parse(const sr__st_file *f, sr__ckpt_index *ix, char *why, size_t len) {
    memset(ix, 0, sizeof *ix);
    size_t nm = sr__st_metadata_count(f);
    long long v[3];
    for (size_t i = 0; i < nm; i++) { /* the units first: parameters refer to them */
        const sr__st_kv *kv = sr__st_metadata_at(f, i);
        if (strncmp(kv->key, "unit:", 5)) continue;
        long long u;
        if (fields(kv->key + 5, &u, 1, NULL) != 0 || u >= 1 << 24 || fields(kv->value, v, 3, NULL) != 0 || v[2] == 0 ||
            v[0] > v[1]) {
            snprintf(why, len, "\"%s\" = \"%s\" is not \"unit:U\" = \"numel padded shard\"", kv->key, kv->value);
            return sr__ckpt_index_free(ix), -1;
        }
        if (u >= ix->nunits) {
            sr__ckpt_unit *g = sr__realloc(ix->units, (size_t)(u + 1) * sizeof *g);
            if (!g) return snprintf(why, len, "out of memory"), sr__ckpt_index_free(ix), -1;
            memset(g + ix->nunits, 0, (size_t)(u + 1 - ix->nunits) * sizeof *g);
            ix->units = g, ix->nunits = (int)u + 1;
        }
        ix->units[u] = (sr__ckpt_unit){(size_t)v[0], (size_t)v[1], (size_t)v[2], 1};
    }
    ix->params = sr__calloc(nm + 1, sizeof *ix->params);
    if (!ix->params) return snprintf(why, len, "out of memory"), sr__ckpt_index_free(ix), -1;
    for (size_t i = 0; i < nm; i++) {
        const sr__st_kv *kv = sr__st_metadata_at(f, i);
        const char *shape;
        if (strncmp(kv->key, "param:", 6)) continue;
        int ok = fields(kv->value, v, 3, &shape) == 0 && v[0] < ix->nunits && ix->units[v[0]].present;
        if (ok) ok = (size_t)v[1] <= ix->units[v[0]].numel && (size_t)v[2] <= ix->units[v[0]].numel - (size_t)v[1];
        if (!ok) {
            snprintf(why, len, "\"%s\" = \"%s\" is not \"unit offset numel shape\" within one of its units", kv->key,
                     kv->value);
            return sr__ckpt_index_free(ix), -1;
        }
        ix->params[ix->nparams++] = (sr__ckpt_param){kv->key + 6, shape, (int)v[0], (size_t)v[1], (size_t)v[2]};
    }
    return 0;
}

const sr__ckpt_param *sr__ckpt_index_find(const sr__ckpt_index *ix, const char *name) {
    for (size_t i = 0; i < ix->nparams; i++)
        if (!strcmp(ix->params[i].name, name)) return &ix->params[i];
    return NULL;
}

void sr__ckpt_index_free(sr__ckpt_index *ix) {
    free(ix->units), free(ix->params);
    memset(ix, 0, sizeof *ix);
}
