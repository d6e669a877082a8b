#define _GNU_SOURCE
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"

int sr__log_level = SR_LOG_INFO;

void sr__vlog_as(int level, const char *who, const char *fmt, va_list ap) {
    static const char *const names[] = {"error: ", "warning: ", "", "debug: "};
    if (level > sr__log_level) return;
    /* Out of memory, the message is still printed, cut to the fixed buffers: it may be the one
       that says memory ran out. */
    char *msg = NULL, *line = NULL, msg_fixed[1024], line_fixed[1200];
    va_list again;
    va_copy(again, ap);
    if (!(msg = sr__vfmt(fmt, ap))) vsnprintf(msg_fixed, sizeof msg_fixed, fmt, again);
    va_end(again);
    const char *text = msg ? msg : msg_fixed;
    line = sr__fmt("shardrun%s%s: %s%s\n", who ? " " : "", who ? who : "", names[level & 3], text);
    int n = line ? (int)strlen(line) : -1;
    if (!line) {
        n = snprintf(line_fixed, sizeof line_fixed, "shardrun%s%s: %s%s\n", who ? " " : "", who ? who : "",
                     names[level & 3], text);
        if (n >= (int)sizeof line_fixed) line_fixed[sizeof line_fixed - 2] = '\n', n = (int)sizeof line_fixed - 1;
    }
    const char *out = line ? line : line_fixed;
    /* one write: the agent relays a worker's stderr line by line, and other threads may log too */
    if (n > 0) {
        fflush(stderr);
        for (ssize_t off = 0, w; off < n; off += w)
            if ((w = write(STDERR_FILENO, out + off, (size_t)(n - off))) <= 0) break;
    }
    free(line);
    free(msg);
}

void sr__log(int level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sr__vlog_as(level, NULL, fmt, ap);
    va_end(ap);
}
