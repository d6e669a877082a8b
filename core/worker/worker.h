/*
 * One worker process, after the launcher forked it: the plugins write the environment, the host
 * applies it once, the plugins' init hooks run, then the task is loaded and run.  Never returns.
 */
#ifndef SR__CORE_WORKER_H
#define SR__CORE_WORKER_H

#include "run/run.h"

/* results_fd: where this rank's JSON result goes (close-on-exec, so exec tasks drop it). */
_Noreturn void sr__worker_run(sr__run *run, int local_rank, int results_fd);

#endif
