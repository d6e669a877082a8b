/* The trainer's pieces that decide what a step computes: the learning-rate schedules (checked
   against transformers' formulas, worked by hand) and the DistributedSampler-style split. */
#include <math.h>
#include <stdlib.h>

#include "trainer/sampler.h"
#include "trainer/train_args.h"
#include "check.h"

static int near(double a, double b) { return fabs(a - b) <= 1e-12 * (fabs(b) > 1 ? fabs(b) : 1); }

static void schedules(void) {
    sr__train_args a = {0};
    a.learning_rate = 1e-3;
    a.warmup_steps = 4;
    /* get_linear_schedule_with_warmup: step/warmup, then (total - step) / (total - warmup) */
    a.lr_scheduler_type = SR__SCHED_LINEAR;
    CHECK(near(sr__lr_at(&a, 0, 20), 0.0));
    CHECK(near(sr__lr_at(&a, 1, 20), 0.25e-3));
    CHECK(near(sr__lr_at(&a, 4, 20), 1e-3));
    CHECK(near(sr__lr_at(&a, 12, 20), 0.5e-3));
    CHECK(near(sr__lr_at(&a, 19, 20), 1e-3 / 16));
    CHECK(near(sr__lr_at(&a, 20, 20), 0.0));
    /* get_cosine_schedule_with_warmup (0.5 cycles): 0.5 * (1 + cos(pi * progress)) */
    a.lr_scheduler_type = SR__SCHED_COSINE;
    CHECK(near(sr__lr_at(&a, 2, 20), 0.5e-3));
    CHECK(near(sr__lr_at(&a, 4, 20), 1e-3));
    CHECK(near(sr__lr_at(&a, 12, 20), 0.5e-3));
    CHECK(near(sr__lr_at(&a, 8, 20), 1e-3 * 0.5 * (1 + cos(3.14159265358979323846 * 0.25))));
    a.lr_scheduler_type = SR__SCHED_CONSTANT_WARMUP;
    CHECK(near(sr__lr_at(&a, 3, 20), 0.75e-3));
    CHECK(near(sr__lr_at(&a, 15, 20), 1e-3));
    a.lr_scheduler_type = SR__SCHED_CONSTANT;
    CHECK(near(sr__lr_at(&a, 0, 20), 1e-3));
    /* no warmup: the first step has the full rate */
    a.warmup_steps = 0;
    a.lr_scheduler_type = SR__SCHED_LINEAR;
    CHECK(near(sr__lr_at(&a, 0, 10), 1e-3));
    CHECK(near(sr__lr_at(&a, 5, 10), 0.5e-3));
}

/* Every epoch: ranks take disjoint strided shares of one permutation, padded by wrapping to a
   multiple of the ranks, each ceil(n / ranks) long; a new permutation each epoch, the same one
   whenever the epoch is asked for again (a resumed run needs no sampler state). */
static void sampler(int64_t n, int ranks) {
    int64_t per = (n + ranks - 1) / ranks, *seen = calloc((size_t)n, sizeof *seen);
    int64_t *first = calloc((size_t)(per * ranks), sizeof *first), *buf = calloc((size_t)per, sizeof *buf);
    for (int epoch = 0; epoch < 2; epoch++) {
        for (int64_t i = 0; i < n; i++) seen[i] = 0;
        int same_as_epoch0 = 1;
        for (int r = 0; r < ranks; r++) {
            sr__sampler s;
            CHECK(sr__sampler_init(&s, n, ranks, r, 42) == 0);
            CHECK(s.per_rank == per);
            CHECK(sr__sampler_take(&s, epoch, 0, per, buf) == per);
            for (int64_t k = 0; k < per; k++) {
                CHECK(buf[k] >= 0 && buf[k] < n);
                seen[buf[k]]++;
                if (epoch == 0) first[r * per + k] = buf[k];
                else same_as_epoch0 &= first[r * per + k] == buf[k];
            }
            /* pieces taken in any order agree with the whole */
            int64_t piece[3];
            int64_t got = sr__sampler_take(&s, epoch, per - 2, 3, piece);
            CHECK(got == (per >= 2 ? 2 : per));
            if (per >= 2) CHECK(piece[0] == buf[per - 2] && piece[1] == buf[per - 1]);
            CHECK(sr__sampler_take(&s, 1 - epoch, 0, 1, piece) == 1); /* another epoch in between */
            CHECK(sr__sampler_take(&s, epoch, 0, 1, piece) == 1 && piece[0] == buf[0]);
            sr__sampler_free(&s);
        }
        int64_t pad = per * ranks - n, twice = 0, missing = 0;
        for (int64_t i = 0; i < n; i++) twice += seen[i] == 2, missing += seen[i] == 0;
        CHECK(missing == 0);                             /* every sample is trained on */
        CHECK(twice == pad);                             /* only the padding repeats */
        if (epoch == 1 && n > 3) CHECK(!same_as_epoch0); /* reshuffled */
    }
    free(seen), free(first), free(buf);
}

/* A permutation that cannot be allocated is reported (the trainer turns it into "out of memory
   for ..."), not written through a NULL pointer. */
static void sampler_oom(void) {
    sr__sampler s;
    CHECK(sr__sampler_init(&s, (int64_t)1 << 62, 2, 0, 1) == -1);
    CHECK(s.perm == NULL);
    sr__sampler_free(&s);
    CHECK(sr__sampler_init(&s, 5, 2, 1, 1) == 0);
    sr__sampler_free(&s);
}

int main(void) {
    schedules();
    sampler_oom();
    sampler(240, 1);
    sampler(240, 4);
    sampler(241, 4);
    sampler(10, 3);
    return CHECK_DONE();
}
