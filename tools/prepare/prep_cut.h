/*
 * Where a long text may be cut so that both halves tokenize to exactly the ids of the whole: the
 * prepare command cuts documents longer than a chunk there, so that every thread gets work however
 * the input is shaped (one 10 GB text file, or a JSON Lines file of short documents).
 */
#ifndef PREP_CUT_H
#define PREP_CUT_H

#include <stddef.h>

/* A cut point p in (from, len) near `want` (the first one in the MiB from it, else the last one
   before it), or len when the text has none.  A cut point is a single newline between a printable
   ASCII character that is not a space and an ASCII letter ("end.\nNext"): under GPT-2's pattern, and
   under BLOOM's split, a piece ends right after that newline whether or not the text goes on
   (a whitespace run of one, followed by a letter, is a piece of its own; at the end of a text it
   is one too), and the letter starts a new one; byte-level tokens are cut anywhere. */
size_t prep_cut_point(const char *text, size_t len, size_t from, size_t want);

#endif
