#define _GNU_SOURCE
#include "base/strbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

void sr__buf_add(sr__buf *b, const char *data, size_t len) {
    if (b->oom) return;
    if (len > SIZE_MAX / 2 - b->n - 1) {
        b->oom = 1;
        return;
    }
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->n + len + 1 > cap) cap *= 2;
        char *s = sr__realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s, b->cap = cap;
    }
    memcpy(b->s + b->n, data, len);
    b->n += len;
    b->s[b->n] = 0;
}

void sr__buf_printf(sr__buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *tmp = b->oom ? NULL : sr__vfmt(fmt, ap);
    va_end(ap);
    if (!tmp) {
        b->oom = 1;
        return;
    }
    sr__buf_add(b, tmp, strlen(tmp));
    free(tmp);
}

void sr__buf_json_str(sr__buf *b, const char *t) {
    sr__buf_add(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)t; *p; p++) {
        char esc[8];
        switch (*p) {
        case '"': sr__buf_add(b, "\\\"", 2); break;
        case '\\': sr__buf_add(b, "\\\\", 2); break;
        case '\n': sr__buf_add(b, "\\n", 2); break;
        case '\t': sr__buf_add(b, "\\t", 2); break;
        case '\r': sr__buf_add(b, "\\r", 2); break;
        default:
            if (*p < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", *p);
                sr__buf_add(b, esc, 6);
            } else {
                sr__buf_add(b, (const char *)p, 1);
            }
        }
    }
    sr__buf_add(b, "\"", 1);
}

void sr__buf_free(sr__buf *b) {
    free(b->s);
    b->s = NULL;
    b->n = b->cap = 0;
    b->oom = 0;
}
