/* selftest lines (see report.h) */
#include "report.h"

#include <stdarg.h>
#include <string.h>

int st_report_open(st_report *r, const char *path) {
    memset(r, 0, sizeof *r);
    r->f = fopen(path, "w");
    if (!r->f) {
        perror(path);
        return -1;
    }
    return 0;
}

static void clean(char *s) {
    for (; *s; s++)
        if (*s == '\t' || *s == '\n' || *s == '\r') *s = ' ';
}

int st_line(st_report *r, int pass, const char *group, const char *name, const char *metrics, const char *fmt, ...) {
    char detail[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    clean(detail);
    r->lines++;
    r->failed += !pass;
    if (r->f) {
        fprintf(r->f, "%s\t%s\t%s\t%s\t%s\n", pass ? "PASS" : "FAIL", group, name, detail, metrics ? metrics : "");
        fflush(r->f); /* what was checked before a crash is kept */
    }
    return pass;
}

void st_skip(st_report *r, const char *group, const char *name, const char *fmt, ...) {
    char detail[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    clean(detail);
    r->lines++;
    if (r->f) {
        fprintf(r->f, "SKIP\t%s\t%s\t%s\t\n", group, name, detail);
        fflush(r->f);
    }
}

int st_report_close(st_report *r) {
    int rc = 0;
    if (r->f) rc = (ferror(r->f) | fclose(r->f)) ? -1 : 0;
    r->f = NULL;
    return rc;
}
