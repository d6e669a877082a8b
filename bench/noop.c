/* noop: the smallest possible main task, for measuring launch latency (bench/launch_vs_torchrun.sh).
   Each rank reports ok=1 and returns, so a run's wall time is the launcher's own cost. */
#include "shardrun/task.h"

static int noop_main(sr_ctx *ctx, int argc, char **argv) {
    (void)argc, (void)argv;
    sr_report_int(ctx, "ok", 1);
    return 0;
}

SR_MAIN_TASK("noop", noop_main);
