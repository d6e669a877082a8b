/*
 * A model task's own [task] keys are known only to its create(), so the agent asks it, for a run
 * before the rendezvous and any worker, and for `shardrun env`.  A child process applies the rank's environment (final, as in a worker),
 * loads the task, runs create() and destroy() without a process group, and checks that every
 * [task] key was read by the task or the trainer: a misspelt key fails the dry run (exit 2)
 * as it fails the real run before its first step.
 */
#ifndef SR__AGENT_KEY_PROBE_H
#define SR__AGENT_KEY_PROBE_H

#include "config/env_block.h"
#include "run/run.h"

/* 0 when the keys are all read (or the task is not a model task), else SR__EXIT_CONFIG after the
   child printed why. */
int sr__probe_model_keys(sr__run *run, int local_rank, const sr__env_block *env);
/* The same for a run, before its rendezvous: with the environment of this agent's first rank. */
int sr__probe_run_keys(sr__run *run);

#endif
