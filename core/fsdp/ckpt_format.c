/* What the checkpoint format fixes: names and the digests of names (see ckpt_format.h). */
#include "fsdp/ckpt_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash64.h"
#include "base/strbuf.h"
#include "fsdp/engine_internal.h"

const char *const sr__ckpt_kind[SR__CKPT_KINDS] = {"param", "exp_avg", "exp_avg_sq"};

float *sr__ckpt_kind_shard(struct sr__uslot *s, int kind) {
    return kind == SR__CKPT_PARAM ? s->master : kind == SR__CKPT_EXP_AVG ? s->exp_avg : s->exp_avg_sq;
}

char *sr__ckpt_shard_name(char *buf, size_t len, int rank, int nshards) {
    snprintf(buf, len, "shard-%05d-of-%05d.safetensors", rank, nshards);
    return buf;
}

int sr__ckpt_shard_name_parse(const char *name, int *rank, int *nshards) {
    int end = 0;
    return sscanf(name, "shard-%5d-of-%5d.safetensors%n", rank, nshards, &end) == 2 && end && !name[end];
}

int sr__ckpt_is_hash_key(const char *key) { return !strncmp(key, "hash:", 5) || !strcmp(key, "index_hash"); }

uint64_t sr__ckpt_index_hash(const sr__st_kv *kv, size_t n) {
    sr__hash64_state h;
    sr__hash64_init(&h, 0);
    for (size_t i = 0; i < n; i++) {
        if (sr__ckpt_is_hash_key(kv[i].key)) continue;
        sr__hash64_update(&h, kv[i].key, strlen(kv[i].key) + 1);
        sr__hash64_update(&h, kv[i].value, strlen(kv[i].value) + 1);
    }
    return sr__hash64_final(&h);
}

void sr__ckpt_model_digest(const sr_model *m, char out[17]) {
    uint64_t d = 0;
    for (int i = 0; i < m->nparams; i++) {
        const sr__param *p = &m->params[i];
        char shape[160];
        const char *tied = p->tied_to >= 0 ? m->params[p->tied_to].name : "";
        sr__st_shape_str(shape, sizeof shape, p->ndim, p->shape);
        /* the hash of "name\nshape\ntied", streamed: nothing to allocate */
        sr__hash64_state st;
        sr__hash64_init(&st, 0);
        sr__hash64_update(&st, p->name, strlen(p->name));
        sr__hash64_update(&st, "\n", 1);
        sr__hash64_update(&st, shape, strlen(shape));
        sr__hash64_update(&st, "\n", 1);
        sr__hash64_update(&st, tied, strlen(tied));
        d += sr__hash64_final(&st);
    }
    sr__hash64_hex(d, out);
}
