#define _DEFAULT_SOURCE
/* A main task that hangs one rank, for the hang watchdog's tests (tests/hang/): every rank
   all-reduces a counter `rounds` times; rank `hang_rank` (default 1), before round `hang_at`
   (default 20), does what [task] how says instead of joining it:
     loop   spins in a loop that never ends (a bug of the task)
     sleep  sleeps without end (a rank blocked outside any collective)
   The other ranks wait in the all_reduce it never enters.  Without hang_rank every rank finishes.
   hang_rank = all: every rank does it (none waits in a collective); [task] progress = 1: every
   rank calls sr_progress() once per round. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shardrun/pg.h"
#include "shardrun/task.h"

static int key_int(sr_ctx *ctx, const char *key, int dflt) {
    const char *v = sr_config(ctx, key);
    return v ? atoi(v) : dflt;
}

static int hang_main(sr_ctx *ctx, int argc, char **argv) {
    (void)argc, (void)argv;
    sr_pg *pg = sr_world(ctx);
    int rounds = key_int(ctx, "rounds", 40), hang_rank = key_int(ctx, "hang_rank", 1), at = key_int(ctx, "hang_at", 20);
    const char *hr = sr_config(ctx, "hang_rank");
    if (hr && !strcmp(hr, "all")) hang_rank = sr_rank(ctx);
    int progress = key_int(ctx, "progress", 0);
    const char *how = sr_config(ctx, "how") ? sr_config(ctx, "how") : "loop";
    for (int i = 0; i < rounds; i++) {
        if (progress) sr_progress(ctx);
        if (i == at && sr_rank(ctx) == hang_rank) {
            printf("rank %d hangs before round %d (%s)\n", hang_rank, i, how);
            fflush(stdout);
            if (!strcmp(how, "sleep"))
                while (1) pause();
            volatile unsigned long spin = 0;
            while (1) spin++;
        }
        float x = 1;
        if (sr_pg_all_reduce(pg, &x, 1, SR_FLOAT32, SR_SUM, NULL) != 0) {
            printf("all_reduce failed: %s\n", sr_pg_error(pg));
            return 1;
        }
        usleep(10000);
    }
    printf("hang: %d rounds done\n", rounds);
    return 0;
}

SR_MAIN_TASK("hang", hang_main);
