/*
 * The step profile's table (SHARDRUN_PROFILE=1): where the optimizer steps went, by class of work.
 *
 * Lifecycle: the trainer calls sr__profile_step_begin/_end around each optimizer step (only the
 * steps count: evaluation, checkpoints and the log do not), sr__profile_print at each logging step
 * (the steps since the last table; rank 0) and once at the end for the whole run (without its first
 * step, which pays for first touches of memory, unless it is the only one), and
 * sr__profile_report with the results.  Nothing happens when profiling is off.
 */
#ifndef SR__TRAINER_PROFILE_TABLE_H
#define SR__TRAINER_PROFILE_TABLE_H

#include "base/profile.h"
#include "shardrun/task.h"

typedef struct sr__step_profile {
    sr__prof_counts before;   /* the counters when the current step began */
    sr__prof_counts win, run; /* since the last table; the whole run but its first step */
    sr__prof_counts first;    /* the run's first step */
    double first_sec;
    long long first_step;
    double win_sec, run_sec;                              /* step time */
    long long win_steps, run_steps, win_first, run_first; /* steps, and the first one (1-based) */
    int warm;                                             /* a step was done: the run's table starts at the next one */
} sr__step_profile;

void sr__profile_step_begin(sr__step_profile *p);
/* step: the 1-based number of the step just done; seconds: its time */
void sr__profile_step_end(sr__step_profile *p, long long step, double seconds);
/* Prints the window's table (whole_run: the run's) on stdout; then the window starts again. */
void sr__profile_print(sr__step_profile *p, int whole_run);
/* profile_<class>_ms (per step) and the rates, this rank's, the run's table. */
void sr__profile_report(const sr__step_profile *p, sr_ctx *ctx);

#endif
