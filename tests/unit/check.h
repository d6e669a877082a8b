/* Minimal assertions for the unit tests: count, report, exit non-zero on any failure. */
#ifndef SR__TEST_CHECK_H
#define SR__TEST_CHECK_H
#include <stdio.h>
#include <string.h>

static int check_failures, check_count;
#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        check_count++;                                                                                                 \
        if (!(cond)) {                                                                                                 \
            check_failures++;                                                                                          \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                                   \
        }                                                                                                              \
    } while (0)
#define CHECK_STR(a, b)                                                                                                \
    do {                                                                                                               \
        const char *a_ = (a), *b_ = (b);                                                                               \
        check_count++;                                                                                                 \
        if (!a_ || !b_ || strcmp(a_, b_)) {                                                                            \
            check_failures++;                                                                                          \
            fprintf(stderr, "%s:%d: \"%s\" != \"%s\"\n", __FILE__, __LINE__, a_ ? a_ : "(null)", b_ ? b_ : "(null)");  \
        }                                                                                                              \
    } while (0)
/* An operation that had to fail did, with a message `err` that starts with `prefix` (the file it
   names) and contains `want`; `what` describes the input for the failure message.  A message that
   passes is printed without its first `strip` characters (a temporary directory). */
static inline void check_rejected(int succeeded, const char *err, const char *prefix, const char *want,
                                  const char *what, const char *file, int line, size_t strip) {
    check_count++;
    if (succeeded || strncmp(err, prefix, strlen(prefix)) || !strstr(err, want)) {
        check_failures++;
        fprintf(stderr, "%s:%d: %s: want an error with \"%s\", got %s\n", file, line, what, want,
                succeeded ? "success" : err);
    } else {
        printf("  rejected: %s\n", err + strip);
    }
}
#define CHECK_DONE() (printf("%d checks, %d failed\n", check_count, check_failures), check_failures ? 1 : 0)
#endif
