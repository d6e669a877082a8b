/*
 * Memory, the one way libshardrun and the shardrun binary take it (CONTRIBUTING.md, "Out of memory",
 * has the policy).  Every allocation under core/ goes through these helpers, so that a test can fail
 * any one of them:
 *
 *     double *v = sr__calloc(n, sizeof *v);
 *     if (!v) return snprintf(err, errlen, "out of memory for %zu values (%zu bytes)", n, n * sizeof *v), -1;
 *     if (sr__grow((void **)&items, &cap, nitems + 1, sizeof *items) != 0) goto oom;   (never x = realloc(x, ..))
 *
 * Contract: like malloc, calloc, realloc and strdup: NULL when memory is exhausted (sr__realloc and
 * sr__grow then leave the old block to the caller, who still frees it).  None prints, none aborts.
 *
 * Fault injection (tests only).  Each helper is also a macro that passes its call site (__FILE__,
 * __LINE__: "core/run/run.c:88", the build maps the source tree's prefix away; and __func__) to an
 * sr__*_at function; the plain functions stay callable as (sr__malloc)(n).  A build configured
 * with SHARDRUN_SANITIZE=ON defines SR__ALLOC_FAULTS, and there
 *     SHARDRUN_DEBUG_ALLOC_SITES=FILE  appends to FILE each site ("path:line function", one a line)
 *                                      where the process asks for memory, the first time it does
 *     SHARDRUN_DEBUG_ALLOC_FAIL_SITE=path:line  makes that site's first allocation in each process
 *                                      return NULL (a forked worker inherits its agent's: a site the
 *                                      agent already failed before the fork is not failed again);
 *                                      with SHARDRUN_DEBUG_ALLOC_SITES, FILE then gets only a line
 *                                      for each failure made, so a test knows the site was reached
 * tests/cli/alloc_failures.sh records the sites a command reaches and fails each in turn.  Other
 * builds compile the helpers to the plain calls (the site arguments unused): they neither read
 * the variables nor record anything, and config/env_values.c refuses the variables there.
 */
#ifndef SR__BASE_ALLOC_H
#define SR__BASE_ALLOC_H

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>

/* On a function whose result must be looked at (an allocation: NULL is its error): ignoring it is a
   warning, an error in the -Werror builds.  Holding it and never testing it is not caught here:
   review, and tests/cli/idiom.sh for the calls that bypass these helpers. */
#define SR__MUST_USE __attribute__((warn_unused_result))

#ifdef SR__ALLOC_FAULTS
/* 1 when the allocation asked for at file:line, in function func, is the one to fail (records the
   site). */
int sr__alloc_fault(const char *file, int line, const char *func);
#else
static inline int sr__alloc_fault(const char *file, int line, const char *func) {
    return (void)file, (void)line, (void)func, 0;
}
#endif

SR__MUST_USE static inline void *sr__malloc_at(size_t n, const char *file, int line, const char *func) {
    return sr__alloc_fault(file, line, func) ? NULL : malloc(n);
}
SR__MUST_USE static inline void *sr__calloc_at(size_t n, size_t size, const char *file, int line, const char *func) {
    return sr__alloc_fault(file, line, func) ? NULL : calloc(n, size);
}
SR__MUST_USE static inline void *sr__realloc_at(void *p, size_t n, const char *file, int line, const char *func) {
    return sr__alloc_fault(file, line, func) ? NULL : realloc(p, n);
}
SR__MUST_USE char *sr__strndup_at(const char *s, size_t n, const char *file, int line, const char *func);
SR__MUST_USE int sr__grow_at(void **p, size_t *cap, size_t need, size_t size, const char *file, int line,
                             const char *func);

SR__MUST_USE static inline void *sr__malloc(size_t n) { return sr__malloc_at(n, __FILE__, __LINE__, __func__); }
SR__MUST_USE static inline void *sr__calloc(size_t n, size_t size) {
    return sr__calloc_at(n, size, __FILE__, __LINE__, __func__);
}
SR__MUST_USE static inline void *sr__realloc(void *p, size_t n) {
    return sr__realloc_at(p, n, __FILE__, __LINE__, __func__);
}
SR__MUST_USE char *sr__strdup(const char *s);
/* At most n bytes of s, and a terminating 0. */
SR__MUST_USE char *sr__strndup(const char *s, size_t n);

/* Makes room for `need` elements of `size` bytes in *p, which holds *cap (doubling, from 8).  0, or
   -1 when out of memory (or the size overflows), *p and *cap unchanged. */
SR__MUST_USE int sr__grow(void **p, size_t *cap, size_t need, size_t size);

/* aligned_alloc's, through the same fault injection: `size` bytes at a multiple of `align` (a
   power of two); size is rounded up to a multiple of align, as aligned_alloc requires.  NULL when
   memory is exhausted or the rounding overflows.  Freed with free().  Inline, like the others, so
   that the code compiled into the tasks (core/device/cpu.c) needs nothing more. */
SR__MUST_USE static inline void *sr__aligned_alloc_at(size_t align, size_t size, const char *file, int line,
                                                      const char *func) {
    if (size > SIZE_MAX - (align - 1)) return NULL;
    size = size ? (size + align - 1) / align * align : align;
    return sr__alloc_fault(file, line, func) ? NULL : aligned_alloc(align, size);
}
SR__MUST_USE static inline void *sr__aligned_alloc(size_t align, size_t size) {
    return sr__aligned_alloc_at(align, size, __FILE__, __LINE__, __func__);
}

/* A new formatted string, to free (asprintf's, through sr__malloc); NULL when memory is exhausted. */
SR__MUST_USE char *sr__fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
SR__MUST_USE char *sr__vfmt(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* The call sites (above: the functions, for a caller that takes their address). */
#define sr__malloc(n) sr__malloc_at((n), __FILE__, __LINE__, __func__)
#define sr__calloc(n, size) sr__calloc_at((n), (size), __FILE__, __LINE__, __func__)
#define sr__realloc(p, n) sr__realloc_at((p), (n), __FILE__, __LINE__, __func__)
#define sr__strdup(s) sr__strndup_at((s), (size_t)-1, __FILE__, __LINE__, __func__)
#define sr__strndup(s, n) sr__strndup_at((s), (n), __FILE__, __LINE__, __func__)
#define sr__grow(p, cap, need, size) sr__grow_at((p), (cap), (need), (size), __FILE__, __LINE__, __func__)
#define sr__aligned_alloc(align, size) sr__aligned_alloc_at((align), (size), __FILE__, __LINE__, __func__)

#endif
