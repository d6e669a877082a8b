/* A task built for a task ABI this shardrun does not speak. */
#include "shardrun/task.h"

static int old_main(sr_ctx *ctx, int argc, char **argv) {
    (void)ctx, (void)argc, (void)argv;
    return 0;
}

__attribute__((visibility("default")))
const sr_task shardrun_task = {7, sizeof(sr_task), SR_TASK_MAIN, "old", old_main, 0};
