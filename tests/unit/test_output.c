/* The agent's relay of worker output: whole lines get the rank prefix; a line redrawn with '\r'
   (the trainer's progress bar) is shown as it changes on a terminal, and elsewhere only its final
   text is kept.  And a rank's result JSON: shortest round-trip numbers, null for NaN and infinity
   with their names listed in "nonfinite". */
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent/output.h"
#include "task/ctx.h"
#include "check.h"

static void result_json(void) {
    sr_topology topo = {.struct_size = sizeof topo, .rank = 3, .world_size = 4};
    sr__job cfg = {0};
    sr_ctx *ctx = sr__ctx_new(&topo, &cfg);
    sr_report_num(ctx, "train_runtime", 0.011761408);
    sr_report_num(ctx, "final_loss", NAN);
    sr_report_num(ctx, "grad", INFINITY);
    sr_report_int(ctx, "steps", 7);
    CHECK(sr_report_num(ctx, "nonfinite", 1) == -1); /* reserved */
    char *j = sr__ctx_result_json(ctx, 0);
    CHECK_STR(j, "{\"rank\": 3, \"exit_code\": 0, \"train_runtime\": 0.011761408, \"final_loss\": null, "
                 "\"grad\": null, \"steps\": 7, \"nonfinite\": [\"final_loss\", \"grad\"]}");
    free(j);
    sr_report_num(ctx, "final_loss", 2.5); /* reported again, finite: no longer listed */
    sr_report_num(ctx, "grad", 1);
    j = sr__ctx_result_json(ctx, 1);
    CHECK_STR(j, "{\"rank\": 3, \"exit_code\": 1, \"train_runtime\": 0.011761408, \"final_loss\": 2.5, "
                 "\"grad\": 1, \"steps\": 7}");
    free(j);
    sr__ctx_free(ctx);
}

/* Feeds the pieces to a relay writing into a pipe; returns what came out. */
static const char *relay(int tty, const char *const *pieces, int n) {
    static char out[4096];
    int p[2];
    if (pipe(p) != 0) return "";
    sr__tail tail = {0};
    sr__relay r = {.rank = 1, .out_fd = p[1], .tail = &tail, .tty = tty};
    for (int i = 0; i < n; i++) sr__relay_feed(&r, pieces[i], strlen(pieces[i]));
    sr__relay_flush(&r);
    close(p[1]);
    ssize_t k = read(p[0], out, sizeof out - 1);
    out[k > 0 ? k : 0] = 0;
    close(p[0]);
    sr__relay_free(&r);
    sr__tail_free(&tail);
    return out;
}

int main(void) {
    result_json();
    const char *plain[] = {"hel", "lo\nwor", "ld\n"};
    CHECK_STR(relay(0, plain, 3), "[rank1]: hello\n[rank1]: world\n");
    CHECK_STR(relay(1, plain, 3), "[rank1]: hello\n[rank1]: world\n");

    /* a progress bar redrawn twice, then a log line replacing it */
    const char *bar[] = {"\r[#..] 1/3", "\r[##.] 2/3", "\rstep 2 loss 1.5\n"};
    CHECK_STR(relay(0, bar, 3), "[rank1]: step 2 loss 1.5\n");
    CHECK_STR(relay(1, bar, 3),
              "\r\033[K[rank1]: [#..] 1/3\r\033[K[rank1]: [##.] 2/3\r\033[K[rank1]: step 2 loss 1.5\n");

    /* a bar left on screen at the end of the output becomes a line of its own */
    const char *left[] = {"\r[###] 3/3"};
    CHECK_STR(relay(0, left, 1), "[rank1]: [###] 3/3\n");
    return CHECK_DONE();
}
