#define _GNU_SOURCE
#include "base/diag.h"

#include <stdarg.h>
#include <stdlib.h>

void sr__diag_add(sr_diag *d, const char *fmt, ...) {
    va_list ap;
    char *msg = NULL;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0) msg = NULL;
    va_end(ap);
    if (!msg) return;
    d->msgs = realloc(d->msgs, (d->n + 1) * sizeof *d->msgs);
    d->msgs[d->n++] = msg;
}

void sr__diag_flush(sr_diag *d, FILE *out) {
    enum { MAX_SHOWN = 20 };
    for (size_t i = 0; i < d->n; i++) {
        if (i < MAX_SHOWN) fprintf(out, "shardrun: error: %s\n", d->msgs[i]);
        free(d->msgs[i]);
    }
    if (d->n > MAX_SHOWN) fprintf(out, "shardrun: ... and %zu more errors\n", d->n - MAX_SHOWN);
    free(d->msgs);
    d->msgs = NULL;
    d->n = 0;
}
