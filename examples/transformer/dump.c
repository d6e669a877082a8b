/* transformer dump: a minimal safetensors writer for 4-byte tensors (see dump.h). */
#define _POSIX_C_SOURCE 200809L
#include "dump.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t numel(const tf_dump_tensor *t) {
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
    return n;
}

int tf_dump_write(const char *path, const tf_dump_tensor *t, int n) {
    /* header: {"name":{"dtype":"F32","shape":[..],"data_offsets":[a,b]},...}, padded with spaces to 8 */
    size_t cap = 256 + (size_t)n * 160, len = 0, off = 0;
    char *h = malloc(cap);
    if (!h) return -1;
    len += (size_t)snprintf(h + len, cap - len, "{");
    for (int i = 0; i < n; i++) {
        size_t bytes = numel(&t[i]) * 4;
        len += (size_t)snprintf(h + len, cap - len, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", i ? "," : "", t[i].name,
                                t[i].dtype);
        for (int d = 0; d < t[i].ndim; d++)
            len += (size_t)snprintf(h + len, cap - len, "%s%lld", d ? "," : "", (long long)t[i].shape[d]);
        len += (size_t)snprintf(h + len, cap - len, "],\"data_offsets\":[%zu,%zu]}", off, off + bytes);
        off += bytes;
    }
    len += (size_t)snprintf(h + len, cap - len, "}");
    while (len % 8) h[len++] = ' ';
    size_t plen = strlen(path) + 5;
    char *tmp = malloc(plen);
    if (!tmp) {
        free(h);
        return -1;
    }
    snprintf(tmp, plen, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    int ok = f != NULL;
    if (ok) {
        unsigned char le[8];
        for (int b = 0; b < 8; b++) le[b] = (unsigned char)((uint64_t)len >> (8 * b));
        ok = fwrite(le, 1, 8, f) == 8 && fwrite(h, 1, len, f) == len;
        for (int i = 0; ok && i < n; i++) ok = fwrite(t[i].data, 4, numel(&t[i]), f) == numel(&t[i]);
        ok = fclose(f) == 0 && ok;
    }
    if (ok) ok = rename(tmp, path) == 0;
    if (!ok) {
        fprintf(stderr, "gpt2: error: cannot write the dump %s: %s; check that its directory exists and is writable\n",
                path, strerror(errno));
        remove(tmp);
    }
    free(tmp);
    free(h);
    return ok ? 0 : -1;
}
