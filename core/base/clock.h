/*
 * The one clock for durations: seconds on CLOCK_MONOTONIC (never steps back when the wall clock is
 * set), for timeouts, deadlines and the trainer's step times.  Only differences mean anything.
 *
 * clock_gettime is POSIX: a file including this defines _POSIX_C_SOURCE (or _GNU_SOURCE) before
 * its first #include, as the build is -std=c11 without extensions.
 */
#ifndef SR__BASE_CLOCK_H
#define SR__BASE_CLOCK_H

#include <time.h>

#ifndef CLOCK_MONOTONIC
#error "base/clock.h needs clock_gettime: define _POSIX_C_SOURCE 200809L (or _GNU_SOURCE) before the first #include"
#endif

static inline double sr__now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
