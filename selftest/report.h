/*
 * selftest lines: what each check of the selftest task found, one line per check, written by
 * every rank to its own file (DIR/lines.rankR.tsv) that `shardrun selftest` reads, merges over
 * ranks and prints.
 *
 * Lifecycle: st_report_open() once per rank -> st_line() per check -> st_report_close().
 *
 * A line is tab-separated: PASS|FAIL|SKIP, group, name, detail, metrics ("key=number ..." or empty).
 * Details never hold tabs or newlines (they are replaced).
 */
#ifndef SELFTEST_REPORT_H
#define SELFTEST_REPORT_H

#include <stdio.h>

typedef struct st_report {
    FILE *f;
    int lines, failed;
} st_report;

/* 0, or -1 after printing why */
int st_report_open(st_report *r, const char *path);
/* Records one check; metrics may be NULL.  Returns pass. */
int st_line(st_report *r, int pass, const char *group, const char *name, const char *metrics, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Records a check that could not run here (SKIP: not a failure, and not a pass). */
void st_skip(st_report *r, const char *group, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* 0, or -1 when the file could not be written completely */
int st_report_close(st_report *r);

#endif
