/*
 * A worker's output as the agent relays it: bytes from a pipe become whole lines prefixed with
 * the rank ("[rank1]: ..."), written to the agent's own stdout or stderr in one write each; the
 * last lines are kept for the failure summary.
 */
#ifndef SR__CORE_OUTPUT_H
#define SR__CORE_OUTPUT_H

#include <stddef.h>

#include "base/strbuf.h"

#define SR__TAIL_LINES 10

typedef struct sr__tail {
    char *lines[SR__TAIL_LINES];
    int next, count;
} sr__tail;

typedef struct sr__relay {
    int rank;
    int out_fd;      /* where prefixed lines go */
    sr__buf partial; /* bytes after the last newline */
    sr__tail *tail;  /* shared by a worker's stdout and stderr */
    int tty;         /* out_fd is a terminal: a line redrawn with '\r' (a progress bar) is shown as
                       it changes; elsewhere only the text after a line's last '\r' is kept */
    int progress;    /* a redrawn line is on the screen, without its newline yet */
    int write_errno; /* the first failed write to out_fd (a full disk, a closed pipe), 0: none */
} sr__relay;

/* Feeds bytes read from the worker; emits every complete line. */
void sr__relay_feed(sr__relay *r, const char *data, size_t len);
/* Emits a last line without newline, if any (at EOF). */
void sr__relay_flush(sr__relay *r);
void sr__relay_free(sr__relay *r);

void sr__tail_free(sr__tail *t);

#endif
