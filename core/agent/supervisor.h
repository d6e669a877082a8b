/*
 * The launcher/supervisor (agent side): forks this node's workers, each in its own process
 * group, relays their output line by line, and watches them.  The first failure (non-zero exit
 * or a signal) stops the rest: SIGTERM to every worker's process group, the grace period, then
 * SIGKILL; SIGINT/SIGTERM/SIGHUP to shardrun are forwarded the same way (SIGUSR1 counts as
 * SIGTERM: a model task's preemption, exit 143).  Nothing of the run
 * survives: workers die with the agent (PR_SET_PDEATHSIG) and orphans are reaped (subreaper).
 */
#ifndef SR__CORE_LAUNCHER_H
#define SR__CORE_LAUNCHER_H

#include "run/run.h"

/* Returns shardrun's exit code: 0 all succeeded (results printed, and written to results_path
   when given), 1 a worker failed, 128+N when stopped by signal N. */
int sr__launch(sr__run *run, const char *results_path);

#endif
