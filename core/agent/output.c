#define _GNU_SOURCE
#include "agent/output.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"

/* Longer lines are cut into pieces of this size, so one runaway line cannot grow the agent. */
#define SR__MAX_LINE 65536

static void tail_push(sr__tail *t, const char *line, size_t len) {
    enum { KEEP = 400 };
    char *copy = sr__strndup(line, len > KEEP ? KEEP : len);
    if (!copy)
        return; /* out of memory: the tail (what a failure report quotes) misses this line, relayed all the same */
    free(t->lines[t->next]);
    t->lines[t->next] = copy;
    t->next = (t->next + 1) % SR__TAIL_LINES;
    if (t->count < SR__TAIL_LINES) t->count++;
}

/* 0, or the errno of a failed write (the run goes on: supervising matters more; the supervisor
   fails the run at the end, so lost output never looks like success). */
static int write_all(int fd, const char *p, size_t left) {
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w < 0 ? errno : EIO;
        p += w, left -= (size_t)w;
    }
    return 0;
}

/* The text a terminal would end up showing: what follows the line's last carriage return. */
static const char *after_cr(const char *line, size_t *len) {
    for (size_t i = *len; i > 0; i--)
        if (line[i - 1] == '\r') {
            *len -= i;
            return line + i;
        }
    return line;
}

static void emit_raw(sr__relay *r, const char *line, size_t len, int newline) {
    char prefix[48];
    /* on a terminal a progress line still on screen is erased first (\r, erase to end of line) */
    int pl =
        snprintf(prefix, sizeof prefix, "%s[rank%d]: ", r->tty && (r->progress || !newline) ? "\r\033[K" : "", r->rank);
    sr__buf b = {0};
    sr__buf_add(&b, prefix, (size_t)pl);
    sr__buf_add(&b, line, len);
    if (newline) sr__buf_add(&b, "\n", 1);
    int e = write_all(r->out_fd, b.s, b.n);
    if (e && !r->write_errno) r->write_errno = e;
    sr__buf_free(&b);
    r->progress = !newline;
}

static void emit(sr__relay *r, const char *line, size_t len) {
    line = after_cr(line, &len);
    emit_raw(r, line, len, 1);
    if (r->tail) tail_push(r->tail, line, len);
}

void sr__relay_feed(sr__relay *r, const char *data, size_t len) {
    sr__buf_add(&r->partial, data, len);
    size_t start = 0;
    for (size_t i = 0; i < r->partial.n; i++) {
        if (r->partial.s[i] == '\n' || i - start + 1 >= SR__MAX_LINE) {
            size_t end = r->partial.s[i] == '\n' ? i : i + 1;
            emit(r, r->partial.s + start, end - start);
            start = i + 1;
        }
    }
    /* a line being redrawn with '\r' (a progress bar): on a terminal show its current state now;
       only the text after the last '\r' is kept (and printed when the newline comes) */
    for (size_t i = r->partial.n; i > start; i--)
        if (r->partial.s[i - 1] == '\r') {
            if (r->tty) emit_raw(r, r->partial.s + i, r->partial.n - i, 0);
            start = i - 1;
            break;
        }
    memmove(r->partial.s, r->partial.s + start, r->partial.n - start);
    r->partial.n -= start;
    if (r->partial.s) r->partial.s[r->partial.n] = 0;
}

void sr__relay_flush(sr__relay *r) {
    if (r->partial.n) emit(r, r->partial.s, r->partial.n);
    r->partial.n = 0;
}

void sr__relay_free(sr__relay *r) { sr__buf_free(&r->partial); }

void sr__tail_free(sr__tail *t) {
    for (int i = 0; i < SR__TAIL_LINES; i++) free(t->lines[i]);
    memset(t, 0, sizeof *t);
}
