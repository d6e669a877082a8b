/* Files named by glob patterns (base/glob_each.h). */
#include "base/glob_each.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

/* The next pattern of *p into out (room for it is sized by the caller), base_dir's glob characters
   escaped before a relative one; 0 at the end of the list. */
static int next_pattern(const char **p, const char *base_dir, char *out) {
    const char *s = *p;
    while (*s && strchr(" \t\r\n", *s)) s++;
    if (!*s) return 0;
    size_t k = 0;
    if (base_dir && *s != '/') {
        for (const char *b = base_dir; *b; b++) {
            if (strchr("*?[\\", *b)) out[k++] = '\\';
            out[k++] = *b;
        }
        out[k++] = '/';
    }
    for (; *s && !strchr(" \t\r\n", *s); s++) {
        if (*s == '\\' && s[1]) out[k++] = *s++; /* kept for glob(3), which reads it as "literal" */
        out[k++] = *s;
    }
    out[k] = 0;
    *p = s;
    return 1;
}

/* A pattern without wildcards names one file: the file itself, its escapes removed (in place). */
static int literal(char *pat) {
    for (const char *s = pat; *s; s++) {
        if (*s == '*' || *s == '?' || *s == '[') return 0;
        if (*s == '\\' && s[1]) s++;
    }
    char *o = pat;
    for (const char *s = pat; *s; s++) {
        if (*s == '\\' && s[1]) s++;
        *o++ = *s;
    }
    *o = 0;
    return 1;
}

int sr__glob_each(const char *patterns, const char *base_dir, const char *noun, int (*fn)(const char *path, void *ctx),
                  void *ctx, char *err, size_t errlen) {
    /* a pattern is at most the whole list, after base_dir escaped (each character doubled at most) */
    size_t room = strlen(patterns) + (base_dir ? 2 * strlen(base_dir) + 1 : 0) + 1;
    char *pat = sr__malloc(room);
    if (!pat) {
        snprintf(err, errlen, "out of memory listing the %ss", noun);
        return -1;
    }
    const char *p = patterns;
    int n = 0, rc = 0;
    while (!rc && next_pattern(&p, base_dir, pat)) {
        n++;
        glob_t g;
        int r = glob(pat, GLOB_ERR, NULL, &g);
        if (r == GLOB_NOMATCH && literal(pat)) { /* the caller says why it cannot be read */
            rc = fn(pat, ctx);
            continue;
        }
        if (r != 0) {
            if (r == GLOB_NOMATCH) snprintf(err, errlen, "%s: no such %s (the pattern matches no file)", pat, noun);
            else
                snprintf(err, errlen, "%s: cannot list the matches: %s", pat,
                         r == GLOB_NOSPACE ? "out of memory" : strerror(errno));
            if (r != GLOB_NOSPACE) globfree(&g);
            rc = -1;
            break;
        }
        for (size_t i = 0; i < g.gl_pathc && !rc; i++) rc = fn(g.gl_pathv[i], ctx);
        globfree(&g);
    }
    free(pat);
    return rc ? -1 : n;
}
