/*
 * The global batch of an elastic run (nnodes = MIN:MAX): the job file's batch keys describe MAX
 * nodes, SHARDRUN_ELASTIC_RANKS = MAX x nproc_per_node ranks (config/worker_settings.h), while the
 * run has the current membership's WORLD_SIZE ranks.  The global batch the job file describes,
 *     G = per_device_train_batch_size x gradient_accumulation_steps x elastic_ranks,
 * is kept on W ranks by accumulating gradient_accumulation_steps x elastic_ranks / W micro-batches
 * per step.  When W does not divide gradient_accumulation_steps x elastic_ranks the accumulation is
 * rounded up, and a step takes per_device_train_batch_size x accumulation x W samples, more than G:
 * the run says so (docs/model-tasks.md, "The global batch in an elastic run").
 *
 * Lifecycle (worker, trainer.c's set-up): sr__elastic_batch_rule once, before the resume checks and
 * the plan, when SHARDRUN_ELASTIC_RANKS is set; from then on the run uses the accumulation it
 * returns everywhere the job file's would be used.  Pure: no I/O, no allocation.
 */
#ifndef SR__TRAINER_ELASTIC_BATCH_H
#define SR__TRAINER_ELASTIC_BATCH_H

#include <stddef.h>

typedef struct sr__elastic_batch {
    long long accum;        /* the effective gradient_accumulation_steps (at most INT_MAX) */
    long long global_batch; /* per_device_train_batch_size x accum x world_size: samples per step */
    long long job_batch;    /* what the job file describes: per device x its accumulation x elastic_ranks */
    int kept;               /* global_batch == job_batch (the accumulation divided exactly) */
} sr__elastic_batch;

/* The rule for `world_size` ranks of an elastic run of `elastic_ranks`.  0 with *out; or -1 with
   why[] when an argument is below 1, world_size exceeds elastic_ranks, or a product leaves its range
   (the accumulation an int, the batches a long long). */
int sr__elastic_batch_rule(long long per_device, long long accum, long long elastic_ranks, long long world_size,
                           sr__elastic_batch *out, char *why, size_t whylen);

#endif
