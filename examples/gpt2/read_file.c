/* gpt2 read_file: a whole file into memory (see read_file.h). */
#include "read_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *gpt2_read_file(const char *path, const char *what, size_t *len, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) return snprintf(err, errlen, "cannot read %s %s: %s", what, path, strerror(errno)), NULL;
    size_t n = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    for (size_t got = 1; buf && got;) {
        if (cap - n < 2) {
            char *b = realloc(buf, cap * 2);
            if (!b) free(buf);
            buf = b;
            cap *= 2;
            if (!buf) break;
        }
        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        snprintf(err, errlen, "cannot read %s %s: %s", what, path, buf ? "read error" : "out of memory");
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}
