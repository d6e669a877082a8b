/* pgbench: a bandwidth self-test in the spirit of nccl-tests, run before trusting a cluster.
   For sizes from min_bytes to max_bytes (x2 each step) it times all-gather, reduce-scatter and
   all-reduce over the world group, prints size, time, algorithm and bus bandwidth and checks every
   result (pgbench_sweep.c: the same measurement `shardrun selftest` reports).  Host buffers: gloo,
   over either transport ([torch] transport = shm | tcp).  Then, in the same run, the yardsticks:
   one thread's memcpy of the largest size on rank 0 (the others wait in a barrier), the bus
   bandwidths at that size as fractions of it, and the latency of an 8-byte all-reduce.
   [task] min_bytes (1024), max_bytes (268435456), iters (5), warmup (1), ops (all),
          latency_iters (2000; 0: no latency line) */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pgbench_sweep.h"
#include "shardrun/task.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One thread's memcpy of `bytes` on rank 0 in GB/s (best of `iters`), the others waiting in a
   barrier; 0 on the others; -1 when the group failed. */
static double memcpy_gbs(sr_pg *pg, size_t bytes, int iters) {
    double best = 0;
    if (sr_pg_rank(pg) == 0) {
        char *a = malloc(bytes), *b = malloc(bytes);
        if (a && b) {
            memset(a, 1, bytes), memset(b, 2, bytes); /* pages in place before timing */
            for (int i = 0; i < iters; i++) {
                double t0 = now_s();
                memcpy(i % 2 ? a : b, i % 2 ? b : a, bytes);
                double dt = now_s() - t0;
                if (dt > 0 && bytes / dt / 1e9 > best) best = bytes / dt / 1e9;
            }
        }
        free(a), free(b);
    }
    return sr_pg_barrier(pg, NULL) ? -1 : best;
}

/* Mean microseconds of an 8-byte (2 x fp32) sum all-reduce over `iters` calls, the slowest rank's. */
static double latency_us(sr_pg *pg, int iters) {
    float v[2] = {1, 2};
    for (int i = 0; i < 20; i++)
        if (sr_pg_all_reduce(pg, v, 2, SR_FLOAT32, SR_SUM, NULL)) return -1;
    if (sr_pg_barrier(pg, NULL)) return -1;
    double t0 = now_s();
    for (int i = 0; i < iters; i++)
        if (sr_pg_all_reduce(pg, v, 2, SR_FLOAT32, SR_MAX, NULL)) return -1;
    float us = (float)((now_s() - t0) / iters * 1e6);
    return sr_pg_all_reduce(pg, &us, 1, SR_FLOAT32, SR_MAX, NULL) ? -1 : us;
}

static int pgbench_main(sr_ctx *ctx, int argc, char **argv) {
    (void)argc, (void)argv;
    sr_pg *pg = sr_world(ctx);
    if (!pg) {
        fprintf(stderr, "pgbench needs a process group: add plugins = torch\n");
        return 2;
    }
    if (strcmp(sr_pg_backend(pg), "gloo")) {
        fprintf(stderr, "pgbench works on host buffers (gloo); on GPUs run `shardrun selftest`, whose bandwidth "
                        "lines measure the same on device buffers\n");
        return 2;
    }
    long long min_b, max_b, iters, warmup, lat_iters;
    if (sr_config_int(ctx, "min_bytes", 1024, &min_b) || sr_config_int(ctx, "max_bytes", 256LL << 20, &max_b) ||
        sr_config_int(ctx, "iters", 5, &iters) || sr_config_int(ctx, "warmup", 1, &warmup) ||
        sr_config_int(ctx, "latency_iters", 2000, &lat_iters))
        return 2;
    const char *ops = sr_config(ctx, "ops");
    int r = sr_rank(ctx), n = sr_pg_size(pg);
    if (r == 0)
        printf("# pgbench: %d ranks, %s over %s, fp32, %lld iterations (+%lld warm-up)\n"
               "#%13s %12s %-15s %12s %12s %12s %8s\n",
               n, sr_pg_backend(pg), sr_pg_transport(pg), iters, warmup, "size(B)", "count", "op", "time(us)",
               "algbw(GB/s)", "busbw(GB/s)", "errors");
    long long total_errors = 0;
    double best[PGB_NOPS] = {0, 0, 0}, last[PGB_NOPS] = {0, 0, 0}; /* last: at the largest size */
    for (int op = 0; op < PGB_NOPS; op++) {
        if (ops && strcmp(ops, "all") && !strstr(ops, pgb_op_names[op])) continue;
        for (long long bytes = min_b; bytes <= max_b; bytes *= 2) {
            size_t count = (size_t)bytes / sizeof(float) / (size_t)n * (size_t)n; /* whole chunks per rank */
            if (count == 0) continue;
            pgb_point p;
            if (pgb_measure(pg, &pgb_host_mem, (pgb_op)op, count, (int)iters, (int)warmup, &p) != 0) {
                fprintf(stderr, "%s\n", sr_pg_error(pg)[0] ? sr_pg_error(pg) : "pgbench: out of memory");
                return 1;
            }
            total_errors += p.errors;
            if (p.busbw > best[op]) best[op] = p.busbw;
            last[op] = p.busbw;
            if (r == 0)
                printf(" %13.0f %12zu %-15s %12.1f %12.3f %12.3f %8lld\n", p.bytes, count, pgb_op_names[op],
                       p.time_s * 1e6, p.algbw, p.busbw, p.errors);
        }
    }
    if (r == 0)
        printf("# errors: %lld; best bus bandwidth (GB/s): all_gather %.3f, reduce_scatter %.3f, all_reduce %.3f\n",
               total_errors, best[PGB_ALL_GATHER], best[PGB_REDUCE_SCATTER], best[PGB_ALL_REDUCE]);
    long long largest = min_b;
    while (largest * 2 <= max_b) largest *= 2;
    double mc = memcpy_gbs(pg, (size_t)largest, iters > 3 ? (int)iters : 3);
    double lat = lat_iters > 0 ? latency_us(pg, (int)lat_iters) : 0;
    if (mc < 0 || lat < 0) {
        fprintf(stderr, "%s\n", sr_pg_error(pg));
        return 1;
    }
    if (r == 0 && mc > 0)
        printf("# memcpy, one thread, %lld bytes: %.3f GB/s; bus bandwidth at that size / memcpy: all_gather %.2f, "
               "reduce_scatter %.2f, all_reduce %.2f\n",
               largest, mc, last[PGB_ALL_GATHER] / mc, last[PGB_REDUCE_SCATTER] / mc, last[PGB_ALL_REDUCE] / mc);
    if (r == 0 && lat_iters > 0)
        printf("# latency: 8-byte all_reduce over %s, mean of %lld: %.2f us\n", sr_pg_transport(pg), lat_iters, lat);
    sr_report_int(ctx, "errors", total_errors);
    sr_report_num(ctx, "busbw_all_gather", best[PGB_ALL_GATHER]);
    sr_report_num(ctx, "busbw_reduce_scatter", best[PGB_REDUCE_SCATTER]);
    sr_report_num(ctx, "busbw_all_reduce", best[PGB_ALL_REDUCE]);
    if (r == 0) sr_report_num(ctx, "memcpy_gbs", mc);
    if (lat_iters > 0) sr_report_num(ctx, "latency_us_all_reduce_8B", lat);
    return total_errors ? 1 : 0;
}

SR_MAIN_TASK("pgbench", pgbench_main);
