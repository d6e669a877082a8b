#define _GNU_SOURCE
#include "output.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Longer lines are cut into pieces of this size, so one runaway line cannot grow the agent. */
#define SR_MAX_LINE 65536

static void tail_push(sr_tail *t, const char *line, size_t len) {
    enum { KEEP = 400 };
    free(t->lines[t->next]);
    t->lines[t->next] = strndup(line, len > KEEP ? KEEP : len);
    t->next = (t->next + 1) % SR_TAIL_LINES;
    if (t->count < SR_TAIL_LINES) t->count++;
}

static void emit(sr_relay *r, const char *line, size_t len) {
    char prefix[32];
    int pl = snprintf(prefix, sizeof prefix, "[rank%d]: ", r->rank);
    sr_buf b = {0};
    sr__buf_add(&b, prefix, (size_t)pl);
    sr__buf_add(&b, line, len);
    sr__buf_add(&b, "\n", 1);
    const char *p = b.s;
    size_t left = b.n;
    while (left) {
        ssize_t w = write(r->out_fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break; /* our own stdout is gone: keep supervising anyway */
        p += w, left -= (size_t)w;
    }
    sr__buf_free(&b);
    if (r->tail) tail_push(r->tail, line, len);
}

void sr__relay_feed(sr_relay *r, const char *data, size_t len) {
    sr__buf_add(&r->partial, data, len);
    size_t start = 0;
    for (size_t i = 0; i < r->partial.n; i++) {
        if (r->partial.s[i] == '\n' || i - start + 1 >= SR_MAX_LINE) {
            size_t end = r->partial.s[i] == '\n' ? i : i + 1;
            emit(r, r->partial.s + start, end - start);
            start = i + 1;
        }
    }
    memmove(r->partial.s, r->partial.s + start, r->partial.n - start);
    r->partial.n -= start;
    if (r->partial.s) r->partial.s[r->partial.n] = 0;
}

void sr__relay_flush(sr_relay *r) {
    if (r->partial.n) emit(r, r->partial.s, r->partial.n);
    r->partial.n = 0;
}

void sr__relay_free(sr_relay *r) { sr__buf_free(&r->partial); }

void sr__tail_free(sr_tail *t) {
    for (int i = 0; i < SR_TAIL_LINES; i++) free(t->lines[i]);
    memset(t, 0, sizeof *t);
}
