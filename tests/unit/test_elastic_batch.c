/* The global batch of an elastic run (core/trainer/elastic_batch.h): the accumulation that keeps the
   job file's global batch on fewer ranks, rounded up when it does not divide, its bounds; and
   SHARDRUN_ELASTIC_RANKS as a worker reads it (core/config/worker_settings.c). */
#include <limits.h>
#include <string.h>

#include "config/worker_settings.h"
#include "trainer/elastic_batch.h"
#include "check.h"

static sr__elastic_batch rule(long long bs, long long accum, long long e, long long w, int *rc) {
    sr__elastic_batch b = {-1, -1, -1, -1};
    char why[256] = "";
    *rc = sr__elastic_batch_rule(bs, accum, e, w, &b, why, sizeof why);
    if (*rc) printf("  refused: %s\n", why);
    return b;
}

static void dividing(void) {
    int rc;
    /* all the ranks the job file describes: the job file's accumulation */
    sr__elastic_batch b = rule(4, 2, 4, 4, &rc);
    CHECK(rc == 0 && b.accum == 2 && b.global_batch == 32 && b.job_batch == 32 && b.kept);
    /* half of them: twice the accumulation, the same global batch */
    b = rule(4, 1, 2, 1, &rc);
    CHECK(rc == 0 && b.accum == 2 && b.global_batch == 8 && b.job_batch == 8 && b.kept);
    /* the docs' example: 2 of 3 ranks, 2 -> 3 */
    b = rule(4, 2, 3, 2, &rc);
    CHECK(rc == 0 && b.accum == 3 && b.global_batch == 24 && b.job_batch == 24 && b.kept);
    /* one rank of 8: every micro-batch of the 8 */
    b = rule(2, 3, 8, 1, &rc);
    CHECK(rc == 0 && b.accum == 24 && b.global_batch == 48 && b.kept);
    /* 6 of 8 ranks with accumulation 3: 3 x 8 / 6 = 4 exactly */
    b = rule(1, 3, 8, 6, &rc);
    CHECK(rc == 0 && b.accum == 4 && b.global_batch == 24 && b.job_batch == 24 && b.kept);
}

static void rounded_up(void) {
    int rc;
    /* 2 of 3 ranks with accumulation 1: 1.5 -> 2, 16 samples a step instead of 12 */
    sr__elastic_batch b = rule(4, 1, 3, 2, &rc);
    CHECK(rc == 0 && b.accum == 2 && b.global_batch == 16 && b.job_batch == 12 && !b.kept);
    /* 3 of 4 ranks with accumulation 1: 4/3 -> 2, 6 a step instead of 4 */
    b = rule(1, 1, 4, 3, &rc);
    CHECK(rc == 0 && b.accum == 2 && b.global_batch == 6 && b.job_batch == 4 && !b.kept);
    /* 5 of 8 with accumulation 2: 16/5 -> 4 (ceil, not round: 3.2 -> 4) */
    b = rule(3, 2, 8, 5, &rc);
    CHECK(rc == 0 && b.accum == 4 && b.global_batch == 60 && b.job_batch == 48 && !b.kept);
    /* never fewer samples than the job file's: the accumulation is rounded up, never down */
    for (long long e = 1; e <= 24; e++)
        for (long long w = 1; w <= e; w++)
            for (long long a = 1; a <= 5; a++) {
                b = rule(3, a, e, w, &rc);
                CHECK(rc == 0 && b.job_batch == 3 * a * e && b.global_batch >= b.job_batch &&
                      b.global_batch - b.job_batch < 3 * w && b.kept == ((a * e) % w == 0) &&
                      b.global_batch == 3 * b.accum * w);
            }
}

static void bounds(void) {
    int rc;
    /* more ranks than the largest membership: refused, never a smaller accumulation */
    rule(4, 1, 2, 3, &rc);
    CHECK(rc == -1);
    rule(0, 1, 2, 2, &rc);
    CHECK(rc == -1);
    rule(4, 1, 0, 1, &rc);
    CHECK(rc == -1);
    rule(4, 1, 2, 0, &rc);
    CHECK(rc == -1);
    /* the largest keys (2^20 each) on 2^20 ranks: G = 2^60 fits 64 bits; on one rank the
       accumulation, 2^40, is no int */
    sr__elastic_batch b = rule(1LL << 20, 1LL << 20, 1LL << 20, 1LL << 20, &rc);
    CHECK(rc == 0 && b.accum == 1LL << 20 && b.global_batch == 1LL << 60 && b.kept);
    rule(1LL << 20, 1LL << 20, 1LL << 20, 1, &rc);
    CHECK(rc == -1);
    /* with SHARDRUN_ELASTIC_RANKS = INT_MAX, G = 2^40 x INT_MAX does not fit */
    rule(1LL << 20, 1LL << 20, INT_MAX, INT_MAX, &rc);
    CHECK(rc == -1);
    /* a product past 64 bits is refused, not wrapped */
    rule(LLONG_MAX / 2, 3, 4, 4, &rc);
    CHECK(rc == -1);
    rule(1, LLONG_MAX / 2, 3, 3, &rc);
    CHECK(rc == -1);
    /* ceil without overflow near the top: micro-batches = LLONG_MAX - 1 does not wrap */
    rule(1, LLONG_MAX / 2, 2, 3, &rc);
    CHECK(rc == -1);
    /* the accumulation at INT_MAX exactly is taken */
    b = rule(1, INT_MAX, 2, 2, &rc);
    CHECK(rc == 0 && b.accum == INT_MAX && b.kept);
}

static const char *elastic_value;
static const char *lookup(const char *name) { return strcmp(name, "SHARDRUN_ELASTIC_RANKS") ? NULL : elastic_value; }

static int read_ranks(const char *v, int *ranks) {
    sr__worker_settings s;
    sr__diag d = {0};
    elastic_value = v;
    int rc = sr__worker_settings_parse(&s, lookup, 0, &d);
    *ranks = s.elastic_ranks;
    for (size_t i = 0; i < d.kept; i++) printf("  rejected: %s\n", d.msgs[i]);
    int n = (int)d.n;
    sr__diag_clear(&d);
    sr__worker_settings_free(&s);
    return rc == 0 && n == 0 ? 0 : -1;
}

static void settings(void) {
    int r = -1;
    CHECK(read_ranks(NULL, &r) == 0 && r == 0);
    CHECK(read_ranks("", &r) == 0 && r == 0);
    CHECK(read_ranks("1", &r) == 0 && r == 1);
    CHECK(read_ranks("16", &r) == 0 && r == 16);
    CHECK(read_ranks("2147483647", &r) == 0 && r == INT_MAX);
    const char *bad[] = {"0", "-2", "+2", " 2", "2 ", "2x", "1.5", "2147483648", "99999999999999999999", NULL};
    for (int i = 0; bad[i]; i++) { CHECK(read_ranks(bad[i], &r) == -1 && r == 0); }
}

int main(void) {
    dividing();
    rounded_up();
    bounds();
    settings();
    return CHECK_DONE();
}
