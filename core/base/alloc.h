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

#include <stdlib.h>

#ifdef SR_ALLOC_FAULTS
/* 1 when this allocation is the one to fail (counts it). */
int sr__alloc_fault(void);
#else
static inline int sr__alloc_fault(void) { return 0; }
#endif

static inline void *sr__malloc(size_t n) { return sr__alloc_fault() ? NULL : malloc(n); }
static inline void *sr__calloc(size_t n, size_t size) { return sr__alloc_fault() ? NULL : calloc(n, size); }
static inline void *sr__realloc(void *p, size_t n) { return sr__alloc_fault() ? NULL : realloc(p, n); }
char *sr__strdup(const char *s);
/* At most n bytes of s, and a terminating 0. */
char *sr__strndup(const char *s, size_t n);

/* Makes room for `need` elements of `size` bytes in *p, which holds *cap (doubling, from 8).  0, or
   -1 when out of memory (or the size overflows), *p and *cap unchanged. */
int sr__grow(void **p, size_t *cap, size_t need, size_t size);

#endif
