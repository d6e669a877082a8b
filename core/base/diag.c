#define _GNU_SOURCE
#include "base/diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/strbuf.h"

void sr__diag_add(sr__diag *d, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *msg = sr__vfmt(fmt, ap);
    va_end(ap);
    d->n++; /* an error even when its message finds no memory */
    if (!msg) return;
    if (d->kept < d->n - 1 || sr__grow((void **)&d->msgs, &d->cap, d->kept + 1, sizeof *d->msgs) != 0) {
        free(msg); /* keeps the messages in order: none after one that was lost */
        return;
    }
    d->msgs[d->kept++] = msg;
}

void sr__diag_clear(sr__diag *d) {
    for (size_t i = 0; i < d->kept; i++) free(d->msgs[i]);
    free(d->msgs);
    d->msgs = NULL;
    d->n = d->kept = d->cap = 0;
}

void sr__diag_flush(sr__diag *d) {
    enum { MAX_SHOWN = 20 };
    size_t shown = d->kept < MAX_SHOWN ? d->kept : MAX_SHOWN;
    for (size_t i = 0; i < shown; i++) sr__log(SR_LOG_ERROR, "%s", d->msgs[i]);
    if (d->kept < d->n)
        sr__log(SR_LOG_ERROR, "... and %zu more errors (shardrun ran out of memory for their messages)", d->n - shown);
    else if (d->n > shown) sr__log(SR_LOG_ERROR, "... and %zu more errors", d->n - shown);
    sr__diag_clear(d);
}
