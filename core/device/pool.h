/*
 * The engine's thread pool: the CPU device's loops (AdamW, clipping norms, overflow checks, casts,
 * gradient accumulation, zeroing) spread over the cores.
 *
 * Lifecycle: a worker's start-up sets the thread count (sr__pool_set_threads: OMP_NUM_THREADS as
 * torch reads it, its first number, from the worker's settings, config/worker_settings.h; unset,
 * the count stays unset).  Nothing is started until the first loop big enough to share
 * (sr__pool_run with more than one part), which takes that count (unset: the CPUs this process may
 * run on) and starts that many threads minus one; the calling thread works too.  The threads sleep on a
 * condition variable between loops (they never spin, so they take nothing from the task's own
 * threads) and live until the process exits.  A child forked after that starts a pool of its own
 * at its first loop (pthread_atfork).
 *
 * Plain pthreads, not OpenMP: libshardrun must not load libgomp (docs/design-notes.md).
 *
 * Results never depend on the thread count: a loop is cut into parts that depend only on its
 * length (sr__pool_parts), each part's result goes to its own slot, and the caller combines the
 * slots in part order.  Which thread runs a part changes nothing.
 */
#ifndef SR__DEVICE_POOL_H
#define SR__DEVICE_POOL_H

#include <stddef.h>

/* Elements per part for a loop of n elements: at least SR__POOL_GRAIN, and few enough parts that a
   reduction's slots fit in SR__POOL_MAX_PARTS. */
#define SR__POOL_GRAIN 32768
#define SR__POOL_MAX_PARTS 4096
size_t sr__pool_grain(size_t n);

/* fn(arg, part) for every part in [0, nparts), on the pool's threads and the caller's; returns when
   all are done.  One part, a pool of one thread, or a call while another loop runs (another thread
   of the process): the parts run here, in order. */
typedef void (*sr__pool_fn)(void *arg, size_t part);
void sr__pool_run(size_t nparts, sr__pool_fn fn, void *arg);

/* The number of threads loops run on (the caller included); starts nothing. */
int sr__pool_threads(void);
/* The thread count to use from now on (the worker's start-up; tests) (before the first loop: the pool is then
   started with it; later: loops use at most the threads already started, at least 1). */
void sr__pool_set_threads(int n);

#endif
