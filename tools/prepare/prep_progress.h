/*
 * The prepare command's progress: on a terminal (stderr), one line redrawn in place at most five
 * times a second: a bar, bytes read of the total, tokens, MB/s and the time left; otherwise (a log
 * file, a pipe, CI) a plain line every `every_s` seconds.  Either way a summary line at the end.
 *
 * Lifecycle: prep_progress_init -> prep_progress_update any number of times -> prep_progress_end.
 */
#ifndef PREP_PROGRESS_H
#define PREP_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef enum { PREP_PROGRESS_AUTO, PREP_PROGRESS_BAR, PREP_PROGRESS_LINES, PREP_PROGRESS_NONE } prep_progress_mode;

typedef struct {
    FILE *out;
    int bar; /* 1: redraw in place; 0: plain lines; -1: nothing */
    double start, last, every_s;
    uint64_t total_bytes;
    int drawn; /* a bar line is on screen (to end it with a newline before other output) */
} prep_progress;

double prep_now(void);
void prep_progress_init(prep_progress *p, prep_progress_mode mode, uint64_t total_bytes, double every_s);
/* bytes: input bytes tokenized so far; tokens: tokens written so far.  force: draw now. */
void prep_progress_update(prep_progress *p, uint64_t bytes, uint64_t tokens, int force);
/* Ends a bar line so that a message can follow it. */
void prep_progress_break(prep_progress *p);

#endif
