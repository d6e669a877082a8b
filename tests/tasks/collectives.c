#define _POSIX_C_SOURCE 200809L
/* Checks every collective x dtype x size against a locally computed expectation, on whatever
   world size it runs with; with 4 ranks also 2x2 sub-groups (HYBRID_SHARD's shard and replicate
   groups).  Values are small integers so fp16/bf16 sums are exact (up to a few dozen ranks: past
   2,048 fp16 holds no odd integer).  Every size ends with a barrier.
   [task] sizes = comma-separated element counts (default 0,1,7,1000,65537,1048576)
          dtypes = comma-separated dtype names (default every one: fp32,fp16,bf16,int32,int64)
          stall_rank = R: rank R sleeps instead of joining the first all_reduce (timeout tests)
          exit_rank = R: rank R exits (status 0, so the agent lets the others run on) instead of
                      joining it: the others must notice its death long before the timeout */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shardrun/half.h"
#include "shardrun/pg.h"
#include "shardrun/task.h"

static int failures, checks;

static double value(int rank, size_t i) { return (double)(rank + 1) * (double)(i % 7 + 1); }

static void put(void *buf, size_t i, sr_dtype dt, double v) {
    switch (dt) {
    case SR_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case SR_FLOAT16: ((uint16_t *)buf)[i] = sr_f32_to_f16((float)v); break;
    case SR_BFLOAT16: ((uint16_t *)buf)[i] = sr_f32_to_bf16((float)v); break;
    case SR_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case SR_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    }
}

static double get(const void *buf, size_t i, sr_dtype dt) {
    switch (dt) {
    case SR_FLOAT32: return ((const float *)buf)[i];
    case SR_FLOAT16: return sr_f16_to_f32(((const uint16_t *)buf)[i]);
    case SR_BFLOAT16: return sr_bf16_to_f32(((const uint16_t *)buf)[i]);
    case SR_INT32: return ((const int32_t *)buf)[i];
    case SR_INT64: return (double)((const int64_t *)buf)[i];
    }
    return 0;
}

/* op over ranks 0..n-1 of value(r, i), as the rounding of dtype would give it */
static double expect(int n, size_t i, sr_redop op, sr_dtype dt) {
    double s = 0, m = 0;
    for (int r = 0; r < n; r++) {
        s += value(r, i);
        m = value(r, i) > m ? value(r, i) : m;
    }
    double v = op == SR_SUM ? s : op == SR_MAX ? m : s / n;
    char tmp[8];
    put(tmp, 0, dt, v);
    return get(tmp, 0, dt);
}

static void check(int ok, const char *what, sr_dtype dt, size_t count, size_t at, double got, double want) {
    checks++;
    if (ok) return;
    if (failures++ < 10)
        printf("MISMATCH %s %s count=%zu at %zu: got %g want %g\n", what, sr_dtype_name(dt), count, at, got, want);
}

/* value(r, i) and so every expectation repeats with i % 7: the checks look them up in tables of
   7 (one per residue) rather than recomputing them for each of a million elements */
enum { PERIOD = 7 };

static int run(sr_pg *pg, sr_dtype dt, size_t count) {
    int r = sr_pg_rank(pg), n = sr_pg_size(pg);
    size_t es = sr_dtype_size(dt);
    unsigned char *a = malloc(count * n * es + 8), *b = malloc(count * n * es + 8), *c = malloc(count * es + 8);
    if (!a || !b || !c) {
        free(a), free(b), free(c);
        printf("error: out of memory for %zu elements\n", count * n);
        return 1;
    }
    static const sr_redop ops[] = {SR_SUM, SR_AVG, SR_MAX};
    static const char *const op_names[] = {"sum", "avg", "max"};
    double want[PERIOD];
    int bad = 0;
    for (int o = 0; o < 3 && !bad; o++) {
        sr_redop op = ops[o];
        if (op == SR_AVG && (dt == SR_INT32 || dt == SR_INT64)) continue;
        for (size_t k = 0; k < PERIOD; k++) want[k] = expect(n, k, op, dt);
        /* all_reduce: each rank holds value(r, i) */
        for (size_t i = 0; i < count; i++) put(a, i, dt, value(r, i));
        char what[64];
        snprintf(what, sizeof what, "all_reduce/%s", op_names[o]);
        sr_work *w;
        bad |= sr_pg_all_reduce(pg, a, count, dt, op, &w) || sr_work_wait(w);
        for (size_t i = 0; i < count && !bad; i++) {
            double got = get(a, i, dt);
            check(got == want[i % PERIOD], what, dt, count, i, got, want[i % PERIOD]);
        }
        /* reduce_scatter: rank r's chunk k holds value(r, k*count + i) */
        for (size_t i = 0; i < count * n; i++) put(b, i, dt, value(r, i));
        snprintf(what, sizeof what, "reduce_scatter/%s", op_names[o]);
        bad |= sr_pg_reduce_scatter(pg, b, c, count, dt, op, NULL);
        for (size_t i = 0; i < count && !bad; i++) {
            double got = get(c, i, dt), w_ = want[(r * count + i) % PERIOD];
            check(got == w_, what, dt, count, i, got, w_);
        }
    }
    /* all_gather: rank k contributes value(k, i), as dtype holds it */
    for (size_t i = 0; i < count; i++) put(c, i, dt, value(r, i));
    bad |= sr_pg_all_gather(pg, c, a, count, dt, NULL);
    for (int k = 0; k < n && !bad; k++) {
        for (size_t j = 0; j < PERIOD; j++) want[j] = (put(b, 0, dt, value(k, j)), get(b, 0, dt));
        for (size_t i = 0; i < count; i++) {
            double got = get(a, k * count + i, dt);
            check(got == want[i % PERIOD], "all_gather", dt, count, k * count + i, got, want[i % PERIOD]);
        }
    }
    /* broadcast from the last rank */
    for (size_t i = 0; i < count; i++) put(a, i, dt, r == n - 1 ? value(r, i) : -1);
    bad |= sr_pg_broadcast(pg, a, count, dt, n - 1, NULL);
    for (size_t i = 0; i < count && !bad; i++)
        check(get(a, i, dt) == value(n - 1, i), "broadcast", dt, count, i, get(a, i, dt), value(n - 1, i));
    bad |= sr_pg_barrier(pg, NULL);
    free(a), free(b), free(c);
    if (bad) printf("error: %s\n", sr_pg_error(pg));
    return bad;
}

/* HYBRID_SHARD's pattern: reduce-scatter in the node's shard group, then all-reduce the shard
   across the replicate group; the result is the world's reduce-scatter of the shard. */
static int hybrid(sr_pg *world, size_t count) {
    int r = sr_pg_rank(world);
    sr_pg *shard, *replicate;
    if (sr_pg_split(world, r / 2, r, &shard) || sr_pg_split(world, r % 2, r, &replicate)) {
        printf("split failed: %s\n", sr_pg_error(world));
        return 1;
    }
    checks++;
    if (sr_pg_size(shard) != 2 || sr_pg_rank(shard) != r % 2 || sr_pg_size(replicate) != 2 ||
        sr_pg_rank(replicate) != r / 2) {
        printf("split gave shard %d/%d replicate %d/%d\n", sr_pg_rank(shard), sr_pg_size(shard), sr_pg_rank(replicate),
               sr_pg_size(replicate));
        failures++;
        return 1;
    }
    printf("sub-groups: shard over %s, replicate over %s\n", sr_pg_transport(shard), sr_pg_transport(replicate));
    float *in = malloc(2 * count * sizeof *in), *out = malloc(count * sizeof *out);
    for (size_t i = 0; i < 2 * count; i++) in[i] = (float)value(r, i);
    sr_work *w1, *w2;
    int bad = sr_pg_reduce_scatter(shard, in, out, count, SR_FLOAT32, SR_SUM, &w1) || sr_work_wait(w1) ||
              sr_pg_all_reduce(replicate, out, count, SR_FLOAT32, SR_SUM, &w2) || sr_work_wait(w2);
    for (size_t i = 0; i < count && !bad; i++) {
        double want = 0;
        for (int k = 0; k < 4; k++) want += value(k, (size_t)(r % 2) * count + i);
        check(out[i] == want, "hybrid rs+ar", SR_FLOAT32, count, i, out[i], want);
    }
    /* a rank in no group */
    sr_pg *none = NULL;
    bad |= sr_pg_split(world, r == 0 ? -1 : 1, r, &none);
    checks++;
    if ((r == 0) != (none == NULL) || (none && sr_pg_size(none) != 3)) failures++;
    if (none) bad |= sr_pg_barrier(none, NULL);
    free(in), free(out);
    if (bad) printf("hybrid error: %s / %s\n", sr_pg_error(shard), sr_pg_error(replicate));
    return bad;
}

/* whether `name` is an item of the comma-separated `list` */
static int listed(const char *list, const char *name) {
    size_t len = strlen(name);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, name, len) && (p[len] == ',' || !p[len])) return 1;
    return 0;
}

static int collectives_main(sr_ctx *ctx, int argc, char **argv) {
    (void)argc, (void)argv;
    sr_pg *pg = sr_world(ctx);
    if (!pg) {
        printf("no process group\n");
        return 1;
    }
    long long stall, leave;
    if (sr_config_int(ctx, "stall_rank", -1, &stall) != 0 || sr_config_int(ctx, "exit_rank", -1, &leave) != 0) return 2;
    if (stall >= 0 || leave >= 0) {
        if (sr_rank(ctx) == leave) return 0;
        if (sr_rank(ctx) == stall) {
            sleep(30);
            return 0;
        }
        float x = 1;
        printf("joining all_reduce #1\n"); /* tests/cli/collectives.sh kills a rank waiting there */
        fflush(stdout);
        if (sr_pg_all_reduce(pg, &x, 1, SR_FLOAT32, SR_SUM, NULL) == 0) return 1;
        printf("all_reduce failed as it should: %s\n", sr_pg_error(pg));
        return 3;
    }
    printf("world over %s\n", sr_pg_transport(pg));
    const char *sizes = sr_config(ctx, "sizes"), *dtypes = sr_config(ctx, "dtypes");
    char *list = strdup(sizes ? sizes : "0,1,7,1000,65537,1048576");
    int bad = 0;
    for (char *tok = strtok(list, ","); tok && !bad; tok = strtok(NULL, ","))
        for (int dt = SR_FLOAT32; dt <= SR_INT64 && !bad; dt++)
            if (!dtypes || listed(dtypes, sr_dtype_name((sr_dtype)dt)))
                bad |= run(pg, (sr_dtype)dt, strtoull(tok, NULL, 10));
    free(list);
    if (!bad && sr_pg_size(pg) == 4) bad |= hybrid(pg, 1001);
    /* a misuse is an error, not a crash */
    long long x = 1;
    checks++;
    if (sr_pg_all_reduce(pg, &x, 1, SR_INT64, SR_AVG, NULL) == 0 ||
        !strstr(sr_pg_error(pg), "avg needs a floating-point dtype"))
        failures++;
    printf("collectives: %d checks, %d failed on rank %d of %d\n", checks, failures, sr_rank(ctx), sr_world_size(ctx));
    sr_report_int(ctx, "checks", checks);
    sr_report_int(ctx, "failures", failures);
    return bad || failures ? 1 : 0;
}

SR_MAIN_TASK("collectives", collectives_main);
