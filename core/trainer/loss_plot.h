/*
 * The loss plot: train loss (and eval loss) against step, for one run or several on one chart
 * (`shardrun plot`), as a self-contained SVG a browser shows.  Each curve is a <polyline> whose
 * points are the log_history values themselves ("step,loss ..."), written as trainer_state.json
 * writes them, placed on the chart by a transform: a reader can take the numbers back from it.
 * Called by the trainer (rank 0, output_dir/loss.svg at each save and at the end) and by the agent.
 */
#ifndef SR__TRAINER_LOSS_PLOT_H
#define SR__TRAINER_LOSS_PLOT_H

#include <stddef.h>

#include "trainer/records.h"

typedef struct sr__plot_run {
    const char *name; /* the legend's label */
    const sr__history *h;
} sr__plot_run;

/* Writes the chart to `path` (base/out_file.h: a file through a temporary and a rename, a device or
   FIFO in place).  0, or -1 with why[]. */
int sr__loss_svg_write(const char *path, const sr__plot_run *runs, int n, char *why, size_t len);

#endif
