/*
 * Collected configuration errors: the agent gathers every problem it finds while reading the
 * job file, overrides and plugins, then prints them together (one screen at most) and exits 2.
 */
#ifndef SR_CORE_DIAG_H
#define SR_CORE_DIAG_H

#include <stddef.h>
#include <stdio.h>

typedef struct sr_diag {
    char **msgs;
    size_t n;
} sr_diag;

void sr__diag_add(sr_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "shardrun: error: ..." lines (at most 20, then a count) and frees them. */
void sr__diag_flush(sr_diag *d, FILE *out);

#endif
