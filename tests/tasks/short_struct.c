/* A main task whose sr_task stops before `model`, a field this shardrun reads: refused. */
#include <stddef.h>

#include "shardrun/task.h"

static int short_main(sr_ctx *ctx, int argc, char **argv) {
    (void)ctx, (void)argc, (void)argv;
    return 0;
}

__attribute__((visibility("default"))) const sr_task shardrun_task = {
    SR_TASK_ABI_VERSION, (uint32_t)offsetof(sr_task, model), SR_TASK_MAIN, "short", short_main, 0};
