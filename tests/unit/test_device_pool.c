/* The engine's thread pool (core/device/pool.h) and the CPU device's loops on it: the same bits at
   1, 2 and 3 threads for AdamW, sumsq, nonfinite, casts, accumulate and zero, on lengths around the
   part size; the parts really run on several threads; a loop called while another runs (another
   thread) runs on its caller, and both finish; a forked child's loops finish on a fresh pool. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "device/device.h"
#include "device/pool.h"

static const sr__device *cpu;

typedef struct outputs {
    float *param, *m, *v, *acc, *back;
    uint16_t *bf16, *f16;
    unsigned char *zeroed;
    double sumsq;
    int nonfinite, nonfinite_mid, nonfinite_last;
} outputs;

static unsigned long long rng = 88172645463325252ULL;
static float uniform(void) { /* xorshift64 in [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* Runs every loop on inputs derived from seed, n elements, with the pool at `threads`. */
static void run_all(outputs *o, size_t n, int threads) {
    sr__pool_set_threads(threads);
    rng = 88172645463325252ULL ^ n;
    float *g = malloc((n + 1) * sizeof *g);
    o->param = malloc((n + 1) * sizeof(float)), o->m = malloc((n + 1) * sizeof(float));
    o->v = malloc((n + 1) * sizeof(float)), o->acc = malloc((n + 1) * sizeof(float));
    o->back = malloc((n + 1) * sizeof(float));
    o->bf16 = malloc((n + 1) * 2), o->f16 = malloc((n + 1) * 2);
    o->zeroed = malloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        g[i] = uniform() * 3.0f;
        o->param[i] = uniform(), o->m[i] = uniform() * 0.1f, o->v[i] = fabsf(uniform()) * 0.01f;
        o->acc[i] = uniform();
        o->zeroed[i] = 0xab;
    }
    sr__adamw_args a = {1e-3, 0.9, 0.999, 1e-8, 0.01, 1, 0.5f};
    for (int step = 0; step < 3; step++) cpu->adamw(o->param, g, o->m, o->v, n, &a);
    o->sumsq = cpu->sumsq(g, n);
    cpu->cast(o->bf16, SR_BFLOAT16, g, SR_FLOAT32, n);
    cpu->cast(o->f16, SR_FLOAT16, g, SR_FLOAT32, n);
    cpu->cast(o->back, SR_FLOAT32, o->bf16, SR_BFLOAT16, n);
    cpu->accumulate(o->acc, o->f16, SR_FLOAT16, n);
    cpu->accumulate(o->acc, g, SR_FLOAT32, n);
    cpu->zero(o->zeroed, n);
    o->nonfinite = cpu->nonfinite(g, n);
    if (n) {
        float keep = g[n / 2];
        g[n / 2] = NAN;
        o->nonfinite_mid = cpu->nonfinite(g, n);
        g[n / 2] = keep;
        g[n - 1] = INFINITY;
        o->nonfinite_last = cpu->nonfinite(g, n);
    }
    free(g);
}

static void free_outputs(outputs *o) {
    free(o->param), free(o->m), free(o->v), free(o->acc), free(o->back), free(o->bf16), free(o->f16), free(o->zeroed);
}

static int same(const void *a, const void *b, size_t bytes) { return bytes == 0 || memcmp(a, b, bytes) == 0; }

static void test_same_bits(void) {
    const size_t sizes[] = {0,
                            1,
                            7,
                            SR__POOL_GRAIN - 1,
                            SR__POOL_GRAIN,
                            SR__POOL_GRAIN + 1,
                            3 * SR__POOL_GRAIN + 17,
                            10 * SR__POOL_GRAIN + 5};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t n = sizes[s];
        outputs ref, o;
        run_all(&ref, n, 1);
        for (int threads = 2; threads <= 3; threads++) {
            run_all(&o, n, threads);
            CHECK(same(o.param, ref.param, n * 4) && same(o.m, ref.m, n * 4) && same(o.v, ref.v, n * 4));
            CHECK(memcmp(&o.sumsq, &ref.sumsq, sizeof o.sumsq) == 0);
            CHECK(same(o.bf16, ref.bf16, n * 2) && same(o.f16, ref.f16, n * 2) && same(o.back, ref.back, n * 4));
            CHECK(same(o.acc, ref.acc, n * 4));
            CHECK(o.nonfinite == 0 && ref.nonfinite == 0);
            CHECK(n == 0 || (o.nonfinite_mid == 1 && o.nonfinite_last == 1));
            free_outputs(&o);
        }
        for (size_t i = 0; i < n; i++)
            if (ref.zeroed[i]) {
                CHECK(!"zero left a byte");
                break;
            }
        free_outputs(&ref);
    }
    /* sumsq of 1..N is exact (integers below 2^53), whatever the parts */
    size_t N = 5 * SR__POOL_GRAIN + 3;
    float *x = malloc(N * sizeof *x);
    for (size_t i = 0; i < N; i++) x[i] = (float)(i % 1000);
    double want = 0;
    for (size_t i = 0; i < N; i++) want += (double)x[i] * x[i];
    for (int threads = 1; threads <= 3; threads++) {
        sr__pool_set_threads(threads);
        CHECK(cpu->sumsq(x, N) == want);
    }
    free(x);
}

/* ---- the pool itself ---------------------------------------------------------------------------- */

static pthread_t seen[64];
static void record_thread(void *arg, size_t part) {
    (void)arg;
    nanosleep(&(struct timespec){0, 1000000}, NULL); /* 1 ms: every helper wakes in time to take parts */
    seen[part] = pthread_self();
}

static int distinct_threads(size_t parts) {
    int d = 0;
    for (size_t i = 0; i < parts; i++) {
        int fresh = 1;
        for (size_t j = 0; j < i; j++)
            if (pthread_equal(seen[i], seen[j])) fresh = 0;
        d += fresh;
    }
    return d;
}

static void test_threads_used(void) {
    sr__pool_set_threads(3);
    CHECK(sr__pool_threads() == 3);
    sr__pool_run(64, record_thread, NULL);
    int d = distinct_threads(64);
    CHECK(d >= 2 && d <= 3);
    sr__pool_set_threads(1);
    sr__pool_run(64, record_thread, NULL);
    CHECK(distinct_threads(64) == 1 && pthread_equal(seen[0], pthread_self()));
    CHECK(sr__pool_grain(1) == SR__POOL_GRAIN);
    CHECK(sr__pool_grain((size_t)SR__POOL_GRAIN * SR__POOL_MAX_PARTS * 3) == (size_t)SR__POOL_GRAIN * 3);
}

static long long counts[2][256];
static void count_part(void *arg, size_t part) {
    long long *c = arg;
    c[part]++;
    for (volatile int i = 0; i < 20000; i++) {}
}
static void *other_caller(void *arg) {
    (void)arg;
    for (int r = 0; r < 50; r++) sr__pool_run(256, count_part, counts[1]);
    return NULL;
}

static void test_two_callers(void) {
    sr__pool_set_threads(3);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, other_caller, NULL) == 0);
    for (int r = 0; r < 50; r++) sr__pool_run(256, count_part, counts[0]);
    pthread_join(t, NULL);
    int ok = 1;
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < 256; p++) ok &= counts[k][p] == 50;
    CHECK(ok); /* every part of every loop ran exactly once */
}

/* A child forked after the pool started has no pool threads: its loops must still finish (and use
   a fresh pool), not wait for threads that do not exist. */
static void test_fork(void) {
    sr__pool_set_threads(3);
    sr__pool_run(64, record_thread, NULL); /* the pool runs */
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20); /* a hang kills the child: the check below fails */
        static long long c[256];
        for (int r = 0; r < 5; r++) sr__pool_run(256, count_part, c);
        int ok = 1;
        for (int p = 0; p < 256; p++) ok &= c[p] == 5;
        sr__pool_run(64, record_thread, NULL);
        _exit(ok && distinct_threads(64) >= 2 ? 0 : 1);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void) {
    char err[256];
    cpu = sr__device_get("cpu", err, sizeof err);
    CHECK(cpu != NULL);
    if (!cpu) return CHECK_DONE();
    test_same_bits();
    test_threads_used();
    test_two_callers();
    test_fork();
    return CHECK_DONE();
}
