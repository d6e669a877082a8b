/* transformer dump: a minimal safetensors writer for 4-byte tensors (see dump.h). */
#define _POSIX_C_SOURCE 200809L
#include "dump.h"

#include "base/out_file.h"

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
    sr__out o;
    char why[4600];
    int ok = sr__out_open(&o, path, why, sizeof why) == 0;
    if (ok) {
        unsigned char le[8];
        for (int b = 0; b < 8; b++) le[b] = (unsigned char)((uint64_t)len >> (8 * b));
        ok = fwrite(le, 1, 8, o.f) == 8 && fwrite(h, 1, len, o.f) == len;
        for (int i = 0; ok && i < n; i++) ok = fwrite(t[i].data, 4, numel(&t[i]), o.f) == numel(&t[i]);
        if (!ok) snprintf(why, sizeof why, "cannot write %s: %s", path, strerror(errno)), sr__out_abort(&o);
        else ok = sr__out_close(&o, why, sizeof why) == 0;
    }
    if (!ok) fprintf(stderr, "gpt2: error: the dump: %s; check that its directory exists and is writable\n", why);
    free(h);
    return ok ? 0 : -1;
}
