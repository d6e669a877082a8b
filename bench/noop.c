/* noop: the smallest task that uses the process group, for measuring launch latency
   (bench/launch_vs_torchrun.sh).  Each rank passes one barrier in the world group the torch plugin
   initialised, reports ok=1 and returns, so a run's wall time is the launcher's own cost plus the
   group's rendezvous.  Fails when there is no world group (plugins = torch missing). */
#include <stdio.h>

#include "shardrun/pg.h"
#include "shardrun/task.h"

static int noop_main(sr_ctx *ctx, int argc, char **argv) {
    (void)argc, (void)argv;
    sr_pg *world = sr_world(ctx);
    if (!world) {
        fprintf(stderr, "noop: no process group (needs plugins = torch)\n");
        return 1;
    }
    if (sr_pg_barrier(world, NULL) != 0) {
        fprintf(stderr, "noop: barrier failed: %s\n", sr_pg_error(world));
        return 1;
    }
    sr_report_int(ctx, "ok", 1);
    return 0;
}

SR_MAIN_TASK("noop", noop_main);
