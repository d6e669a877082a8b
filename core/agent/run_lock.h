/*
 * The output folder's lock for a run (trainer/output_lock.h): taken by the agent holding rank 0
 * of a model task with [task] output_dir, once per launch, after the rendezvous is prepared (the
 * lock names the launch) and before any worker starts; released when the launch ends.
 */
#ifndef SR__AGENT_RUN_LOCK_H
#define SR__AGENT_RUN_LOCK_H

#include "run/run.h"
#include "trainer/output_lock.h"

/* 0 with *out (NULL when this agent locks nothing), or SR__EXIT_CONFIG (SR__EXIT_FAILED when memory
   ran out) after printing why. */
int sr__run_lock_take(sr__run *run, sr__output_lock **out);
/* Releases it; a run whose lock was taken over meanwhile fails: code becomes SR__EXIT_FAILED when
   it was SR__EXIT_OK.  Returns the exit code. */
int sr__run_lock_release(sr__output_lock *l, int code);

#endif
