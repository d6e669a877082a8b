/* A checkpoint tensor's data against its "hash:NAME" entry (tensor_hash.h). */
#include "ckpt/tensor_hash.h"

#include <string.h>

#include "base/hash64.h"

#define HASH_KEY "hash:"

const char *sr__ckpt_tensor_hash(const sr__st_file *f, const char *name) {
    /* the entries in turn, not a "hash:NAME" key built for the lookup: nothing to allocate */
    const size_t pre = strlen(HASH_KEY);
    for (size_t i = 0; i < sr__st_metadata_count(f); i++) {
        const sr__st_kv *kv = sr__st_metadata_at(f, i);
        if (!strncmp(kv->key, HASH_KEY, pre) && !strcmp(kv->key + pre, name)) return kv->value;
    }
    return NULL;
}

int sr__ckpt_hash_check(const char *want, uint64_t got, char hex[17]) {
    sr__hash64_hex(got, hex);
    return want && !strcmp(hex, want) ? 0 : -1;
}
