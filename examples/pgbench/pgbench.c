/* pgbench: a bandwidth self-test in the spirit of nccl-tests, run before trusting a cluster.
   For sizes from min_bytes to max_bytes (x2 each step) it times all-gather, reduce-scatter and
   all-reduce over the world group, prints size, time, algorithm and bus bandwidth (nccl-tests'
   definitions: size is the whole buffer - all-gather's output, reduce-scatter's input;
   busbw = algbw * (n-1)/n for both, * 2(n-1)/n for all-reduce), and checks every result.
   [task] min_bytes (1024), max_bytes (268435456), iters (5), warmup (1), ops (all) */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shardrun/pg.h"
#include "shardrun/task.h"

enum { AG, RS, AR };
static const char *const names[] = {"all_gather", "reduce_scatter", "all_reduce"};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static float value(int rank, size_t i) { return (float)((rank + 1) * (int)(i % 13 + 1)); }

static int launch(sr_pg *pg, int op, float *send, float *recv, size_t count) {
    int n = sr_pg_size(pg);
    switch (op) {
    case AG: return sr_pg_all_gather(pg, send, recv, count / n, SR_FLOAT32, NULL);
    case RS: return sr_pg_reduce_scatter(pg, send, recv, count / n, SR_FLOAT32, SR_SUM, NULL);
    default: return sr_pg_all_reduce(pg, send, count, SR_FLOAT32, SR_SUM, NULL);
    }
}

/* One untimed run on fresh data, checked element by element; returns the number of errors. */
static long verify(sr_pg *pg, int op, float *send, float *recv, size_t count) {
    int r = sr_pg_rank(pg), n = sr_pg_size(pg);
    size_t per = count / n;
    for (size_t i = 0; i < count; i++) send[i] = value(r, op == AG ? i % per : i);
    if (launch(pg, op, send, recv, count) != 0) return -1;
    long errors = 0;
    float rank_sum = (float)(n * (n + 1) / 2);
    for (size_t i = 0; i < (op == RS ? per : count); i++) {
        float want, got;
        if (op == AG) want = value((int)(i / per), i % per), got = recv[i];
        else if (op == RS) want = rank_sum * (float)((r * per + i) % 13 + 1), got = recv[i];
        else want = rank_sum * (float)(i % 13 + 1), got = send[i];
        errors += got != want;
    }
    return errors;
}

static int pgbench_main(sr_ctx *ctx, int argc, char **argv) {
    (void)argc, (void)argv;
    sr_pg *pg = sr_world(ctx);
    if (!pg) {
        fprintf(stderr, "pgbench needs a process group: add plugins = torch\n");
        return 2;
    }
    long long min_b, max_b, iters, warmup;
    if (sr_config_int(ctx, "min_bytes", 1024, &min_b) || sr_config_int(ctx, "max_bytes", 256LL << 20, &max_b) ||
        sr_config_int(ctx, "iters", 5, &iters) || sr_config_int(ctx, "warmup", 1, &warmup))
        return 2;
    const char *ops = sr_config(ctx, "ops");
    int r = sr_rank(ctx), n = sr_pg_size(pg);
    size_t max_count = (size_t)max_b / sizeof(float);
    float *send = malloc(max_count * sizeof(float) + 64), *recv = malloc(max_count * sizeof(float) + 64);
    for (size_t i = 0; i < max_count; i++) send[i] = value(r, i);
    if (r == 0)
        printf("# pgbench: %d ranks, %s, fp32, %lld iterations (+%lld warm-up)\n"
               "#%13s %12s %-15s %12s %12s %12s %8s\n",
               n, sr_pg_backend(pg), iters, warmup, "size(B)", "count", "op", "time(us)", "algbw(GB/s)", "busbw(GB/s)",
               "errors");
    long total_errors = 0;
    double best[3] = {0, 0, 0};
    for (int op = AG; op <= AR; op++) {
        if (ops && strcmp(ops, "all") && !strstr(ops, names[op])) continue;
        for (long long bytes = min_b; bytes <= max_b; bytes *= 2) {
            size_t count = (size_t)bytes / sizeof(float) / (size_t)n * (size_t)n; /* whole chunks per rank */
            if (count == 0) continue;
            for (long long i = 0; i < warmup; i++) launch(pg, op, send, recv, count);
            sr_pg_barrier(pg, NULL);
            double t0 = now_s();
            for (long long i = 0; i < iters; i++)
                if (launch(pg, op, send, recv, count) != 0) {
                    fprintf(stderr, "%s\n", sr_pg_error(pg));
                    return 1;
                }
            /* the slowest rank defines the time */
            float fdt = (float)((now_s() - t0) / (double)iters);
            if (sr_pg_all_reduce(pg, &fdt, 1, SR_FLOAT32, SR_MAX, NULL) != 0) {
                fprintf(stderr, "%s\n", sr_pg_error(pg));
                return 1;
            }
            double dmax = fdt;
            long errors = verify(pg, op, send, recv, count);
            long long e = errors;
            sr_pg_all_reduce(pg, &e, 1, SR_INT64, SR_SUM, NULL);
            total_errors += e;
            double size = (double)count * sizeof(float), algbw = size / dmax / 1e9;
            double busbw = algbw * (op == AR ? 2.0 * (n - 1) / n : (double)(n - 1) / n);
            if (n == 1) busbw = algbw;
            if (busbw > best[op]) best[op] = busbw;
            if (r == 0)
                printf(" %13.0f %12zu %-15s %12.1f %12.3f %12.3f %8lld\n", size, count, names[op], dmax * 1e6, algbw,
                       busbw, e);
            for (size_t i = 0; i < count; i++) send[i] = value(r, i); /* verify() overwrote it */
        }
    }
    if (r == 0) printf("# errors: %ld; best bus bandwidth (GB/s): all_gather %.3f, reduce_scatter %.3f, all_reduce %.3f\n",
                       total_errors, best[AG], best[RS], best[AR]);
    sr_report_int(ctx, "errors", total_errors);
    sr_report_num(ctx, "busbw_all_gather", best[AG]);
    sr_report_num(ctx, "busbw_reduce_scatter", best[RS]);
    sr_report_num(ctx, "busbw_all_reduce", best[AR]);
    free(send);
    free(recv);
    return total_errors ? 1 : 0;
}

SR_MAIN_TASK("pgbench", pgbench_main);
