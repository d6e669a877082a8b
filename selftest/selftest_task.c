/*
 * selftest: the task `shardrun selftest` runs in every worker (core/cli/selftest_cmd.c writes
 * its job file).  It checks, on the device this run computes on, core's device table and the
 * GPT-2 kernel table against the CPU's, the GEMMs against cblas_sgemm, and the world group's
 * collectives and bandwidth; each rank writes its lines to LINES.rankR.tsv for the agent to merge.
 *
 * [task] lines (path prefix, required; relative to the working directory, which the agent sets, so
 * the key is the same on every node), quick (0/1), parts ("device,kernels,math,large,pg": which checks).
 * A failed check is a line, not an exit code: the task exits 0 once its lines are written, so no
 * rank is stopped half-way by another's failure; 1 only when it could not check at all.
 */
#include <stdio.h>
#include <string.h>

#include "checks.h"
#include "shardrun/task.h"

static int selftest_main(sr_ctx *ctx, int argc, char **argv) {
    (void)argc, (void)argv;
    const char *lines = sr_config(ctx, "lines"), *parts = sr_config(ctx, "parts");
    long long quick = 0;
    if (!lines || sr_config_int(ctx, "quick", 0, &quick) != 0) {
        fprintf(stderr, "selftest: [task] lines is required (shardrun selftest writes this job)\n");
        return 2;
    }
    if (!parts) parts = "device,kernels,math,large,pg";
    sr_pg *pg = sr_world(ctx);
    char path[4200], err[4600] = "";
    snprintf(path, sizeof path, "%s.rank%d.tsv", lines, sr_rank(ctx));
    st_report r;
    if (st_report_open(&r, path) != 0) return 1;
    st_dut d;
    if (st_dut_load(&d, pg, err, sizeof err) != 0) {
        st_line(&r, 0, "setup", "device under test", NULL, "%s", err);
        st_report_close(&r);
        return 0;
    }
    /* each GPU is checked by its own rank; the CPU (or a test table) once, by rank 0 */
    int mine = !strcmp(d.label, "cuda") || sr_rank(ctx) == 0;
    if (mine)
        st_line(&r, 1, "setup", "device under test", NULL, "%s, on rank %d (local rank %d)", d.label, sr_rank(ctx),
                sr_local_rank(ctx));
    if (mine && strstr(parts, "device")) st_check_device(&r, &d, (int)quick);
    if (mine && strstr(parts, "kernels")) st_check_kernels(&r, &d, (int)quick);
    if (mine && strstr(parts, "math")) st_check_math(&r, &d);
    /* past 2^31 bytes on a GPU; on the CPU the same chunked code on 2 chunks and a bit (CI runs it) */
    if (mine && !quick && strstr(parts, "large"))
        st_check_large(&r, &d, !strcmp(d.label, "cuda") ? ((size_t)1 << 29) + 3 : ((size_t)2 << 22) + 5);
    if (strstr(parts, "pg")) {
        if (!pg) st_line(&r, 0, "collective", "world group", NULL, "no process group (the job needs plugins = torch)");
        else st_check_pg(&r, &d, pg, (int)quick);
    }
    sr_report_int(ctx, "checks", r.lines);
    sr_report_int(ctx, "failed", r.failed);
    return st_report_close(&r) == 0 ? 0 : 1;
}

SR_MAIN_TASK("selftest", selftest_main);
