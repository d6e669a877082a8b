/* Checking the task's files a FULL checkpoint lists (file_check.h); the writing is the engine's
   (fsdp/ckpt_files.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash64.h"
#include "base/strbuf.h"
#include "ckpt/file_check.h"

/* dir/name's bytes hashed: 0 with *h, or -1 with errno */
static int hash_file(const char *path, uint64_t *h) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    sr__hash64_state st;
    sr__hash64_init(&st, 0);
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) sr__hash64_update(&st, buf, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        errno = EIO;
        return -1;
    }
    *h = sr__hash64_final(&st);
    return 0;
}

int sr__ckpt_check_files(const sr__st_file *f, const char *dir, char *why, size_t len) {
    size_t n = sr__st_metadata_count(f);
    const size_t pre = strlen(SR__CKPT_FILE_KEY);
    for (size_t i = 0; i < n; i++) {
        const sr__st_kv *kv = sr__st_metadata_at(f, i);
        if (strncmp(kv->key, SR__CKPT_FILE_KEY, pre)) continue;
        const char *name = kv->key + pre;
        char *path = sr__fmt("%s/%s", dir, name), hex[17];
        uint64_t h = 0;
        int rc = !path ? -2 : strchr(name, '/') || !*name ? -3 : hash_file(path, &h);
        if (rc == -2) snprintf(why, len, "out of memory");
        else if (rc == -3)
            snprintf(why, len,
                     "%s/model.safetensors lists a file \"%s\" that is no plain file name: the header is damaged", dir,
                     name);
        else if (rc != 0)
            snprintf(why, len,
                     "%s: %s; the checkpoint's model.safetensors lists it (hash %s) as part of the checkpoint: "
                     "restore it from a copy of the checkpoint (or use another checkpoint)",
                     path, strerror(errno), kv->value);
        else if (strcmp(sr__hash64_hex(h, hex), kv->value)) {
            snprintf(why, len,
                     "%s was changed or damaged after the checkpoint was written: its XXH3-64 is %s, "
                     "model.safetensors records %s; restore it from a copy of the checkpoint (or use another "
                     "checkpoint)",
                     path, hex, kv->value);
            rc = -1;
        }
        free(path);
        if (rc != 0) return -1;
    }
    return 0;
}
