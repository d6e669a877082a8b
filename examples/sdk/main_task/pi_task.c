/* pi_task: a main task built outside shardrun's tree (Makefile + pkg-config).  Each rank integrates
   its share of 4/(1+x^2) over [0, 1] with the midpoint rule; an all-reduce over the world group the
   torch plugin created adds the shares (as fixed-point integers); every rank checks the sum against pi and reports it. */
#include <math.h>
#include <stdio.h>

#include <shardrun/pg.h>
#include <shardrun/task.h>

static int pi_main(sr_ctx *ctx, int argc, char **argv) {
    (void)argc, (void)argv;
    long long intervals;
    if (sr_config_int(ctx, "intervals", 1000000, &intervals) != 0 || intervals < 1) {
        fprintf(stderr, "pi_task: [task] intervals must be a positive integer\n");
        return 2;
    }
    int rank = sr_rank(ctx), ranks = sr_world_size(ctx);
    double h = 1.0 / (double)intervals, sum = 0;
    for (long long i = rank; i < intervals; i += ranks) {
        double x = h * ((double)i + 0.5);
        sum += 4.0 / (1.0 + x * x);
    }
    /* the shares add up exactly as fixed-point integers (fp32 would lose the digits we check) */
    long long fixed = llround(sum * h * 1e15);
    sr_pg *world = sr_world(ctx);
    if (sr_pg_all_reduce(world, &fixed, 1, SR_INT64, SR_SUM, NULL) != 0) {
        fprintf(stderr, "pi_task: all_reduce failed: %s\n", sr_pg_error(world));
        return 1;
    }
    sum = (double)fixed / 1e15;
    double err = fabs(sum - M_PI);
    if (rank == 0) printf("pi is about %.12f over %d ranks (error %.2e)\n", sum, ranks, err);
    sr_report_num(ctx, "pi", sum);
    return err < 1e-9 ? 0 : 1;
}

SR_MAIN_TASK("pi_task", pi_main);
