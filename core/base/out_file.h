/*
 * out_file: how every file a user names as an output is written (--results, plot -o, the trainer's
 * records, gpt2_generate --logits), so that writing one never destroys something else.
 *
 * What the path names decides how it is written:
 *   - nothing yet, or a regular file: a temporary in the same folder, fsync'ed, then renamed over
 *     it (a reader never sees half a file; an existing file keeps its permissions).  A symbolic
 *     link to a regular file: its target is written that way, and the link stays a link.
 *   - a character device (/dev/null, a terminal), a FIFO, a socket, or one of this process's
 *     open files (/dev/stdout, /dev/fd/N, /proc/self/fd/N): opened and written in place, never
 *     replaced (this process's own descriptor is written through a copy of it, at its offset).
 *   - a folder, a block device, an empty name, a name ending in '/': refused.
 *
 * Lifecycle: sr__out_check() before any work (also refuses an output that is one of the command's
 * inputs: the same file, by device and inode, whatever path leads to it) -> the work ->
 * sr__out_open() -> fprintf/fwrite to o.f -> sr__out_close() (or sr__out_abort()); or
 * sr__out_write() for text already in memory.
 *
 * The error rule of base/: these never print; they fill why[] (naming the path) and return -1.
 */
#ifndef SR__BASE_OUT_FILE_H
#define SR__BASE_OUT_FILE_H

#include <stddef.h>
#include <stdio.h>

typedef struct sr__out {
    FILE *f; /* where the text goes, between sr__out_open and sr__out_close */
    /* the helper's own */
    char *target;     /* the resolved file replaced at the end; NULL when written in place */
    char *tmp;        /* the temporary written first */
    const char *path; /* as the user gave it (messages) */
} sr__out;

/* Whether `path` can be written, before any work: 0, or -1 with why[].  inputs[0 .. ninputs): the
   files the command reads (NULL entries and files that do not exist are skipped); an output that is
   one of them is refused. */
int sr__out_check(const char *path, const char *const *inputs, int ninputs, char *why, size_t len);

/* Opens the output (see above).  0, or -1 with why[]. */
int sr__out_open(sr__out *o, const char *path, char *why, size_t len);
/* Flushes and closes it: the temporary is synced and renamed over the target.  0, or -1 with why[]
   (the temporary removed, the target untouched). */
int sr__out_close(sr__out *o, char *why, size_t len);
/* Closes it without replacing anything (an error while writing it). */
void sr__out_abort(sr__out *o);

/* open + data[0 .. n) + close. */
int sr__out_write(const char *path, const void *data, size_t n, char *why, size_t len);

#endif
