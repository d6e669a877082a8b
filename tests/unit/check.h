/* Minimal assertions for the unit tests: count, report, exit non-zero on any failure. */
#ifndef SR_TEST_CHECK_H
#define SR_TEST_CHECK_H
#include <stdio.h>
#include <string.h>

static int check_failures, check_count;
#define CHECK(cond)                                                                        \
    do {                                                                                   \
        check_count++;                                                                     \
        if (!(cond)) {                                                                     \
            check_failures++;                                                              \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);       \
        }                                                                                  \
    } while (0)
#define CHECK_STR(a, b)                                                                    \
    do {                                                                                   \
        const char *a_ = (a), *b_ = (b);                                                   \
        check_count++;                                                                     \
        if (!a_ || !b_ || strcmp(a_, b_)) {                                                \
            check_failures++;                                                              \
            fprintf(stderr, "%s:%d: \"%s\" != \"%s\"\n", __FILE__, __LINE__, a_ ? a_ : "(null)", \
                    b_ ? b_ : "(null)");                                                   \
        }                                                                                  \
    } while (0)
#define CHECK_DONE()                                                                       \
    (printf("%d checks, %d failed\n", check_count, check_failures), check_failures ? 1 : 0)
#endif
