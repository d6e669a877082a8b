/* hello: the smallest main task.  Each rank prints where it sits and the FSDP environment the
   accelerate plugin wrote for it, all-reduces its rank over the process group the torch plugin
   created, checks the sum, and reports a result. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardrun/pg.h"
#include "shardrun/task.h"

extern char **environ;

static int by_string(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int hello_main(sr_ctx *ctx, int argc, char **argv) {
    (void)argc, (void)argv;
    const char *greeting = sr_config(ctx, "greeting");
    printf("%s from rank %d of %d (local rank %d of %d, node %d of %d)\n", greeting ? greeting : "hello", sr_rank(ctx),
           sr_world_size(ctx), sr_local_rank(ctx), sr_local_world_size(ctx), sr_node_rank(ctx), sr_num_nodes(ctx));
    size_t n = 0;
    for (char **e = environ; *e; e++) n++;
    char **fsdp = calloc(n + 1, sizeof *fsdp);
    size_t k = 0;
    for (char **e = environ; *e; e++)
        if (!strncmp(*e, "FSDP_", 5) || !strncmp(*e, "ACCELERATE_", 11)) fsdp[k++] = *e;
    qsort(fsdp, k, sizeof *fsdp, by_string);
    for (size_t i = 0; i < k; i++) printf("  %s\n", fsdp[i]);
    sr_pg *world = sr_world(ctx);
    if (world) {
        long long sum = sr_rank(ctx), n = sr_world_size(ctx);
        if (sr_pg_all_reduce(world, &sum, 1, SR_INT64, SR_SUM, NULL) != 0) {
            fprintf(stderr, "all_reduce failed: %s\n", sr_pg_error(world));
            free(fsdp);
            return 1;
        }
        printf("all_reduce of ranks over %s: %lld (expected %lld)\n", sr_pg_backend(world), sum, n * (n - 1) / 2);
        if (sum != n * (n - 1) / 2) {
            free(fsdp);
            return 1;
        }
        sr_report_int(ctx, "rank_sum", sum);
    }
    sr_report_str(ctx, "sharding_strategy",
                  getenv("FSDP_SHARDING_STRATEGY") ? getenv("FSDP_SHARDING_STRATEGY") : "none");
    sr_report_int(ctx, "fsdp_vars", (long long)k);
    free(fsdp);
    return 0;
}

SR_MAIN_TASK("hello", hello_main);
