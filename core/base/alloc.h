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
 * Fault injection (tests only): a build configured with SHARDRUN_SANITIZE=ON defines SR_ALLOC_FAULTS,
 * and there
 * SR_TEST_FAIL_ALLOC=N makes the Nth allocation through these helpers (counted in
 * each process from its start; a forked worker goes on from its agent's count) return NULL, once.
 * SR_TEST_FAIL_ALLOC_TRACE=1 also prints where that allocation was asked for.
 * (Not SHARDRUN_*: the run refuses variables of that prefix it does not know.)  tests/cli/alloc_failures.sh
 * sweeps N.  Elsewhere the helpers are the plain calls, inlined: release
 * builds neither read the variable nor count.
 */
#ifndef SR_BASE_ALLOC_H
#define SR_BASE_ALLOC_H

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>

/* On a function whose result must be looked at (an allocation: NULL is its error): ignoring it is a
   warning, an error in the -Werror builds.  Holding it and never testing it is not caught here:
   review, and tests/cli/idiom.sh for the calls that bypass these helpers. */
#define SR__MUST_USE __attribute__((warn_unused_result))

#ifdef SR_ALLOC_FAULTS
/* 1 when this allocation is the one to fail (counts it). */
int sr__alloc_fault(void);
#else
static inline int sr__alloc_fault(void) { return 0; }
#endif

SR__MUST_USE static inline void *sr__malloc(size_t n) { return sr__alloc_fault() ? NULL : malloc(n); }
SR__MUST_USE static inline void *sr__calloc(size_t n, size_t size) {
    return sr__alloc_fault() ? NULL : calloc(n, size);
}
SR__MUST_USE static inline void *sr__realloc(void *p, size_t n) { return sr__alloc_fault() ? NULL : realloc(p, n); }
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
SR__MUST_USE static inline void *sr__aligned_alloc(size_t align, size_t size) {
    if (size > SIZE_MAX - (align - 1)) return NULL;
    size = size ? (size + align - 1) / align * align : align;
    return sr__alloc_fault() ? NULL : aligned_alloc(align, size);
}

/* A new formatted string, to free (asprintf's, through sr__malloc); NULL when memory is exhausted. */
SR__MUST_USE char *sr__fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
SR__MUST_USE char *sr__vfmt(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif
