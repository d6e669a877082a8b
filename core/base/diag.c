#define _GNU_SOURCE
#include "base/diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/log.h"

void sr__diag_add(sr_diag *d, const char *fmt, ...) {
    va_list ap;
    char *msg = NULL;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0) msg = NULL;
    va_end(ap);
    if (!msg) return;
    d->msgs = sr__realloc(d->msgs, (d->n + 1) * sizeof *d->msgs);
    d->msgs[d->n++] = msg;
}

void sr__diag_clear(sr_diag *d) {
    for (size_t i = 0; i < d->n; i++) free(d->msgs[i]);
    free(d->msgs);
    d->msgs = NULL;
    d->n = 0;
}

void sr__diag_flush(sr_diag *d) {
    enum { MAX_SHOWN = 20 };
    for (size_t i = 0; i < d->n; i++) {
        if (i < MAX_SHOWN) sr__log(SR_LOG_ERROR, "%s", d->msgs[i]);
        free(d->msgs[i]);
    }
    if (d->n > MAX_SHOWN) sr__log(SR_LOG_ERROR, "... and %zu more errors", d->n - MAX_SHOWN);
    free(d->msgs);
    d->msgs = NULL;
    d->n = 0;
}
