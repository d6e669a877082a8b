/* The allocation helpers (base/alloc.h): sr__grow, and the test-only fault injection. */
#define _GNU_SOURCE
#include "base/alloc.h"

#include <stdint.h>
#include <string.h>

/* The functions behind the macros of the same names (alloc.h), for a caller without a site. */
char *(sr__strdup)(const char *s) { return sr__strndup_at(s, (size_t)-1, __FILE__, __LINE__, __func__); }
char *(sr__strndup)(const char *s, size_t n) { return sr__strndup_at(s, n, __FILE__, __LINE__, __func__); }
int(sr__grow)(void **p, size_t *cap, size_t need, size_t size) {
    return sr__grow_at(p, cap, need, size, __FILE__, __LINE__, __func__);
}

char *sr__strndup_at(const char *s, size_t n, const char *file, int line, const char *func) {
    size_t len = strnlen(s, n);
    char *d = sr__malloc_at(len + 1, file, line, func);
    if (d) memcpy(d, s, len), d[len] = 0;
    return d;
}

int sr__grow_at(void **p, size_t *cap, size_t need, size_t size, const char *file, int line, const char *func) {
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 8;
    while (n < need) {
        if (n > SIZE_MAX / 2) return -1;
        n *= 2;
    }
    if (size && n > SIZE_MAX / size) return -1;
    void *q = sr__realloc_at(*p, n * size, file, line, func);
    if (!q) return -1;
    *p = q, *cap = n;
    return 0;
}

#ifdef SR__ALLOC_FAULTS
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

/* Nothing here allocates (it runs inside the allocator's callers, in any thread, and in a child
   forked while another thread was here): the variables are read once, the sites this process
   reached are a fixed table of 64-bit keys inserted by compare-and-swap, and each new line is
   one write(2) with O_APPEND, so processes sharing the file never interleave a line. */
#define SITE_SLOTS 16384
static const char *sites_file; /* SHARDRUN_DEBUG_ALLOC_SITES, or NULL */
static char fail_file[256];    /* SHARDRUN_DEBUG_ALLOC_FAIL_SITE's path, "" for none */
static long fail_line;
static atomic_int failed; /* this process made its failure (inherited across fork) */
static _Atomic uint64_t seen[SITE_SLOTS];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void read_vars(void) {
    const char *v = getenv("SHARDRUN_DEBUG_ALLOC_SITES");
    sites_file = v && *v ? v : NULL;
    v = getenv("SHARDRUN_DEBUG_ALLOC_FAIL_SITE");
    const char *colon = v ? strrchr(v, ':') : NULL;
    char *end = NULL;
    long line = colon ? strtol(colon + 1, &end, 10) : 0;
    /* env_values.c refused a malformed value before any work; here it only fails nothing */
    if (colon && colon > v && (size_t)(colon - v) < sizeof fail_file && end && !*end && line > 0) {
        memcpy(fail_file, v, (size_t)(colon - v));
        fail_file[colon - v] = 0;
        fail_line = line;
    }
}

/* Appends "file:line func\n" to the sites file. */
static void note(const char *file, int line, const char *func) {
    char text[600];
    int n = snprintf(text, sizeof text, "%s:%d %s\n", file, line, func);
    if (n <= 0 || (size_t)n >= sizeof text) return;
    int fd = open(sites_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    ssize_t w = write(fd, text, (size_t)n);
    (void)w; /* a site not written is a site the sweep does not fail: nothing to tell here */
    close(fd);
}

/* 1 the first time this process reaches file:line (a site is one string literal and one line, but
   the same file's literal may sit at different addresses: the key hashes the text). */
static int first_time(const char *file, int line) {
    uint64_t key = 1469598103934665603ULL; /* FNV-1a */
    for (const char *c = file; *c; c++) key = (key ^ (unsigned char)*c) * 1099511628211ULL;
    key = ((key ^ (uint64_t)line) * 1099511628211ULL) | 1; /* never 0, an empty slot */
    for (size_t i = 0, s = key % SITE_SLOTS; i < SITE_SLOTS; i++, s = (s + 1) % SITE_SLOTS) {
        uint64_t cur = atomic_load(&seen[s]);
        if (cur == key) return 0;
        if (cur == 0) {
            uint64_t empty = 0;
            if (atomic_compare_exchange_strong(&seen[s], &empty, key)) return 1;
            if (empty == key) return 0; /* another thread just took it for the same site */
        }
    }
    return 0; /* a full table: more sites than any command reaches, none recorded */
}

int sr__alloc_fault(const char *file, int line, const char *func) {
    pthread_once(&once, read_vars);
    if (fail_line) {
        if (line != fail_line || strcmp(file, fail_file) != 0 || atomic_exchange(&failed, 1)) return 0;
        if (sites_file) note(file, line, func);
        return 1;
    }
    if (sites_file && first_time(file, line)) note(file, line, func);
    return 0;
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
