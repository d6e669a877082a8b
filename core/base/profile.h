/*
 * The step profile's counters (SHARDRUN_PROFILE=1): seconds, operations, bytes and calls per class
 * of work, in this worker.
 *
 * Lifecycle: the worker's start-up turns it on (sr__prof_enable, from SHARDRUN_PROFILE in its
 * settings, config/worker_settings.h) before the task is loaded -> the task's kernels (sr_profile_kernel, shardrun/model.h)
 * and the engine (sr__prof_add) add to the counters as the steps run -> the trainer takes a
 * snapshot at each logging step and prints the difference (trainer/profile_table.c).
 *
 * The counters are plain globals touched only by the thread that runs the steps (the worker's
 * main thread): an engine call site costs one predictable branch on sr__prof.on when profiling is
 * off.  The first classes are the public sr_kernel_class values, the task's; the rest are the
 * engine's.
 */
#ifndef SR__BASE_PROFILE_H
#define SR__BASE_PROFILE_H

#include "shardrun/model.h"

typedef enum sr__prof_class {
    /* 0 .. SR_KERNEL_CLASSES-1: the task's kernels (sr_kernel_class) */
    SR__PROF_TASK = SR_KERNEL_CLASSES, /* all time inside the task's callbacks (forward, loss, backward) */
    SR__PROF_DATA,                     /* the task's batch(): loading a micro-batch */
    SR__PROF_OPTIM,                    /* AdamW */
    SR__PROF_CLIP,                     /* gradient norm and overflow checks */
    SR__PROF_CAST,                     /* the engine's casts, copies, zeroing and gradient accumulation */
    SR__PROF_COLL_WAIT,                /* waiting on collectives (bytes: those collectives' buffers) */
    SR__PROF_COLL_OVERLAP,             /* collectives in flight while this rank computed: from issue to wait */
    SR__PROF_CLASSES
} sr__prof_class;

typedef struct sr__prof_counts {
    double sec[SR__PROF_CLASSES], flops[SR__PROF_CLASSES], bytes[SR__PROF_CLASSES];
    long long calls[SR__PROF_CLASSES];
} sr__prof_counts;

typedef struct sr__prof_state {
    int on; /* SHARDRUN_PROFILE=1 */
    sr__prof_counts c;
} sr__prof_state;

extern sr__prof_state sr__prof;

/* Turns the profile on or off (the worker's start-up, before any step). */
void sr__prof_enable(int on);
/* sr__prof_now(): the clock, only when profiling (0 otherwise: no clock call) */
double sr__prof_now(void);
/* Adds the time since t0 (from sr__prof_now) to cls; no-op when off. */
void sr__prof_add(int cls, double t0, double flops, double bytes);
/* Adds seconds to cls; no-op when off. */
void sr__prof_add_sec(int cls, double sec, double flops, double bytes);

#endif
