#define _GNU_SOURCE
#include "base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int sr__log_level = SR_LOG_INFO;

void sr__vlog_as(int level, const char *who, const char *fmt, va_list ap) {
    static const char *const names[] = {"error: ", "warning: ", "", "debug: "};
    if (level > sr__log_level) return;
    char *msg = NULL, *line = NULL;
    if (vasprintf(&msg, fmt, ap) < 0) msg = NULL;
    int n = asprintf(&line, "shardrun%s%s: %s%s\n", who ? " " : "", who ? who : "", names[level & 3],
                     msg ? msg : "(out of memory formatting a message)");
    /* one write: the agent relays a worker's stderr line by line, and other threads may log too */
    if (n > 0) {
        fflush(stderr);
        for (ssize_t off = 0, w; off < n; off += w)
            if ((w = write(STDERR_FILENO, line + off, (size_t)(n - off))) <= 0) break;
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
