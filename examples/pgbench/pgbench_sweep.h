/*
 * One point of a process-group bandwidth sweep, in the spirit of nccl-tests: shared by
 * examples/pgbench (the task) and `shardrun selftest` (its bandwidth lines), so both time and
 * check the same way.
 *
 * Lifecycle: none; pgb_measure() allocates its buffers with the caller's memory functions (host
 * memory for gloo, device memory for nccl), runs warm-up, timed and checked operations, frees.
 *
 * Definitions (nccl-tests'): size is the whole buffer -- all-gather's output, reduce-scatter's
 * input, all-reduce's buffer; algbw = size / time; busbw = algbw * (n-1)/n for all-gather and
 * reduce-scatter, * 2(n-1)/n for all-reduce (= algbw on one rank).  The time is the slowest rank's
 * mean over the timed iterations.
 */
#ifndef PGBENCH_SWEEP_H
#define PGBENCH_SWEEP_H

#include <stddef.h>

#include "shardrun/pg.h"

typedef enum pgb_op { PGB_ALL_GATHER = 0, PGB_REDUCE_SCATTER, PGB_ALL_REDUCE, PGB_NOPS } pgb_op;

/* "all_gather", "reduce_scatter", "all_reduce" */
extern const char *const pgb_op_names[PGB_NOPS];

/* Where the buffers live.  Copies return 0 or -1. */
typedef struct pgb_mem {
    void *(*alloc)(size_t bytes); /* NULL when out of memory */
    void (*free)(void *p);
    int (*to_device)(void *dst, const void *host_src, size_t bytes);
    int (*to_host)(void *host_dst, const void *src, size_t bytes);
} pgb_mem;

/* plain host memory (malloc, memcpy): what gloo works on */
extern const pgb_mem pgb_host_mem;

typedef struct pgb_point {
    size_t count;        /* fp32 elements of the whole buffer */
    double bytes;        /* count * 4 */
    double time_s;       /* the slowest rank's mean time per operation */
    double algbw, busbw; /* GB/s (1e9 bytes) */
    long long errors;    /* wrong elements of the checked run, summed over ranks */
} pgb_point;

/* Bus bandwidth from algorithm bandwidth on n ranks. */
double pgb_busbw(pgb_op op, double algbw, int n);

/* Measures op on `count` fp32 elements (a multiple of the group's size): `warmup` untimed runs,
   `iters` timed ones, then one run on fresh data checked element by element on every rank.
   Collective over the group.  0, or -1 (out of memory, or the group failed: sr_pg_error()). */
int pgb_measure(sr_pg *pg, const pgb_mem *mem, pgb_op op, size_t count, int iters, int warmup, pgb_point *out);

#endif
