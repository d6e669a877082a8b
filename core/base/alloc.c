/* The allocation helpers (base/alloc.h): sr__grow, and the test-only fault injection. */
#define _GNU_SOURCE
#include "base/alloc.h"

#include <stdint.h>
#include <string.h>

char *sr__strdup(const char *s) { return sr__strndup(s, strlen(s)); }

char *sr__strndup(const char *s, size_t n) {
    size_t len = strnlen(s, n);
    char *d = sr__malloc(len + 1);
    if (d) memcpy(d, s, len), d[len] = 0;
    return d;
}

int sr__grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 8;
    while (n < need) {
        if (n > SIZE_MAX / 2) return -1;
        n *= 2;
    }
    if (size && n > SIZE_MAX / size) return -1;
    void *q = sr__realloc(*p, n * size);
    if (!q) return -1;
    *p = q, *cap = n;
    return 0;
}

#ifdef SR_ALLOC_FAULTS
#include <execinfo.h>
#include <pthread.h>
#include <stdatomic.h>

static atomic_long count;
static long fail_at; /* the allocation to fail (1 is the first), 0 for none */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void read_fail_at(void) {
    const char *v = getenv("SR_TEST_FAIL_ALLOC");
    char *end = NULL;
    long n = v ? strtol(v, &end, 10) : 0;
    fail_at = v && *v && end && !*end && n > 0 ? n : 0;
}

int sr__alloc_fault(void) {
    pthread_once(&once, read_fail_at);
    if (!fail_at || atomic_fetch_add(&count, 1) + 1 != fail_at) return 0;
    if (getenv("SR_TEST_FAIL_ALLOC_TRACE")) { /* where the failed allocation was asked for */
        void *at[24];
        backtrace_symbols_fd(at, backtrace(at, 24), 2);
    }
    return 1;
}
#endif

/* The formatter (alloc.h): here, beside sr__malloc, so that every program compiling this file in has it. */
#include <stdio.h>

char *sr__vfmt(const char *fmt, va_list ap) {
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *s = n < 0 ? NULL : sr__malloc((size_t)n + 1);
    if (s) vsnprintf(s, (size_t)n + 1, fmt, again);
    va_end(again);
    return s;
}

char *sr__fmt(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = sr__vfmt(fmt, ap);
    va_end(ap);
    return s;
}
