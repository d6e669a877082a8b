/*
 * selftest's table (see selftest.h): one line per check, merged over the ranks that ran it.
 * Lifecycle: sr__selftest_lines l = {0}; sr__selftest_add(&l, ...) for every check of every rank;
 * read l.v[0..l.n); sr__selftest_lines_free(&l).  Nothing here prints.
 */
#ifndef SR__AGENT_SELFTEST_LINES_H
#define SR__AGENT_SELFTEST_LINES_H

#include <stddef.h>

/* One merged line: the same check over every rank that ran it. */
typedef struct sr__selftest_line {
    char half[8];   /* "cpu", "gpu" */
    char status[8]; /* "PASS", "FAIL", "SKIP" (could not run here: no failure, no pass) */
    char *group, *name, *detail, *metrics;
    int ranks;
} sr__selftest_line;

typedef struct sr__selftest_lines {
    sr__selftest_line *v;
    size_t n, cap;
    int lost; /* checks that found no memory to be kept: each counts as failed */
} sr__selftest_lines;

/* Adds (or merges into the line of the same half, group and name) one check; out of memory, counts
   it in l->lost instead. */
void sr__selftest_add(sr__selftest_lines *l, const char *half, const char *status, const char *group, const char *name,
                      const char *detail, const char *metrics);

/* Frees what the lines hold (l itself is the caller's). */
void sr__selftest_lines_free(sr__selftest_lines *l);

#endif
