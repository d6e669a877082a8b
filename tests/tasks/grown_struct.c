/* A main task built against a (future) task.h whose sr_task gained a field at its end: the
   struct is larger than this shardrun's, which must still run it (append-only growth). */
#include <stdio.h>

#include "shardrun/task.h"

static int grown_main(sr_ctx *ctx, int argc, char **argv) {
    (void)argc, (void)argv;
    printf("grown struct task ran on rank %d\n", sr_rank(ctx));
    return 0;
}

struct grown_task {
    sr_task v2;
    void *appended_later; /* what a newer header would add */
};

__attribute__((visibility("default"))) const struct grown_task shardrun_task = {
    {SR_TASK_ABI_VERSION, sizeof(struct grown_task), SR_TASK_MAIN, "grown", grown_main, 0}, 0};
