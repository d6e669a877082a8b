/*
 * The error idiom of functions that report into a caller's buffer:
 *
 *     int read_thing(const char *path, char *err, size_t errlen) {
 *         if (!f) return sr__fail(err, errlen, "cannot open %s: %s", path, strerror(errno));
 *
 * Writes the message (cut to errlen; nothing when err is NULL or errlen 0) and returns -1.  Inline
 * in this header, so that the programs that compile parts of core/ in (the tasks, shardrun_generate,
 * shardrun_merge) have it without another source file.
 */
#ifndef SR__BASE_FAIL_H
#define SR__BASE_FAIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

__attribute__((format(printf, 3, 4))) static inline int sr__fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

#endif
