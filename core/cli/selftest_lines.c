/* selftest's merged lines (see selftest_lines.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/selftest_lines.h"
#include "base/alloc.h"

void sr__selftest_add(sr__selftest_lines *l, const char *half, const char *status, const char *group, const char *name,
                      const char *detail, const char *metrics) {
    int pass = !strcmp(status, "PASS");
    for (size_t i = 0; i < l->n; i++) {
        sr__selftest_line *x = &l->v[i];
        if (strcmp(x->half, half) || strcmp(x->group, group) || strcmp(x->name, name)) continue;
        x->ranks++;
        if (!pass && strcmp(x->status, "FAIL")) { /* the first failure (or skip) tells */
            snprintf(x->status, sizeof x->status, "%s", status);
            char *d = sr__strdup(detail);
            if (!d) {
                l->lost++;
                return;
            }
            free(x->detail);
            x->detail = d;
        }
        return;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        sr__selftest_line *v = sr__realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->lost++;
            return;
        }
        l->v = v, l->cap = cap;
    }
    sr__selftest_line *x = &l->v[l->n];
    memset(x, 0, sizeof *x);
    snprintf(x->half, sizeof x->half, "%s", half);
    snprintf(x->status, sizeof x->status, "%s", !strcmp(status, "SKIP") ? "SKIP" : pass ? "PASS" : "FAIL");
    x->group = sr__strdup(group), x->name = sr__strdup(name), x->detail = sr__strdup(detail);
    x->metrics = sr__strdup(metrics ? metrics : "");
    x->ranks = 1;
    if (!x->group || !x->name || !x->detail || !x->metrics) {
        free(x->group), free(x->name), free(x->detail), free(x->metrics);
        l->lost++;
        return;
    }
    l->n++;
}

void sr__selftest_lines_free(sr__selftest_lines *l) {
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].group), free(l->v[i].name), free(l->v[i].detail), free(l->v[i].metrics);
    free(l->v);
}
