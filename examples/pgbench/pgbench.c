/* pgbench: a bandwidth self-test in the spirit of nccl-tests, run before trusting a cluster.
   For sizes from min_bytes to max_bytes (x2 each step) it times all-gather, reduce-scatter and
   all-reduce over the world group, prints size, time, algorithm and bus bandwidth and checks every
   result (pgbench_sweep.c: the same measurement `shardrun selftest` reports).  Host buffers: gloo.
   [task] min_bytes (1024), max_bytes (268435456), iters (5), warmup (1), ops (all) */
#include <stdio.h>
#include <string.h>

#include "pgbench_sweep.h"
#include "shardrun/task.h"

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
    long long min_b, max_b, iters, warmup;
    if (sr_config_int(ctx, "min_bytes", 1024, &min_b) || sr_config_int(ctx, "max_bytes", 256LL << 20, &max_b) ||
        sr_config_int(ctx, "iters", 5, &iters) || sr_config_int(ctx, "warmup", 1, &warmup))
        return 2;
    const char *ops = sr_config(ctx, "ops");
    int r = sr_rank(ctx), n = sr_pg_size(pg);
    if (r == 0)
        printf("# pgbench: %d ranks, %s, fp32, %lld iterations (+%lld warm-up)\n"
               "#%13s %12s %-15s %12s %12s %12s %8s\n",
               n, sr_pg_backend(pg), iters, warmup, "size(B)", "count", "op", "time(us)", "algbw(GB/s)", "busbw(GB/s)",
               "errors");
    long long total_errors = 0;
    double best[PGB_NOPS] = {0, 0, 0};
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
            if (r == 0)
                printf(" %13.0f %12zu %-15s %12.1f %12.3f %12.3f %8lld\n", p.bytes, count, pgb_op_names[op],
                       p.time_s * 1e6, p.algbw, p.busbw, p.errors);
        }
    }
    if (r == 0)
        printf("# errors: %lld; best bus bandwidth (GB/s): all_gather %.3f, reduce_scatter %.3f, all_reduce %.3f\n",
               total_errors, best[PGB_ALL_GATHER], best[PGB_REDUCE_SCATTER], best[PGB_ALL_REDUCE]);
    sr_report_int(ctx, "errors", total_errors);
    sr_report_num(ctx, "busbw_all_gather", best[PGB_ALL_GATHER]);
    sr_report_num(ctx, "busbw_reduce_scatter", best[PGB_REDUCE_SCATTER]);
    sr_report_num(ctx, "busbw_all_reduce", best[PGB_ALL_REDUCE]);
    return total_errors ? 1 : 0;
}

SR_MAIN_TASK("pgbench", pgbench_main);
