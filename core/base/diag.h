/*
 * Collected configuration errors: the agent gathers every problem it finds while reading the
 * job file, overrides and plugins (sr__diag_add, in any layer), then the run prints them together
 * (sr__diag_flush, one screen at most) and exits SR__EXIT_CONFIG.  An error whose message finds no
 * memory still counts (n), and the flush says so.
 */
#ifndef SR__BASE_DIAG_H
#define SR__BASE_DIAG_H

#include <stddef.h>

typedef struct sr__diag {
    char **msgs;
    size_t n;         /* errors added */
    size_t kept, cap; /* msgs[0 .. kept): their messages; fewer than n when memory ran out */
} sr__diag;

void sr__diag_add(sr__diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Logs them as errors (base/log.h; at most 20, then a count) and frees them. */
void sr__diag_flush(sr__diag *d);
/* Frees them without printing. */
void sr__diag_clear(sr__diag *d);

#endif
