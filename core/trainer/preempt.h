/*
 * Preemption in a model task's worker: a plain SIGTERM or SIGUSR1 (the agent passing on its own,
 * or Slurm/a cloud signalling every process of the job; Slurm's --signal=USR1@120 sends SIGUSR1)
 * asks the run to stop after the current optimizer step with a checkpoint; a SIGTERM the agent
 * queued with SR__STOP_NOW_VALUE (base/progress.h) stops the worker at once, as the default action
 * would.
 *
 * Lifecycle (worker, trainer): sr__preempt_install() before set-up -> after every optimizer step
 * sr__preempt_agreed() (collective: every rank learns whether any rank was asked, so all stop
 * after the same step) -> the trainer writes its checkpoint and exits 143 (also for SIGUSR1: the exit of a preemption).
 */
#ifndef SR__TRAINER_PREEMPT_H
#define SR__TRAINER_PREEMPT_H

#include "fsdp/engine.h"

void sr__preempt_install(void);
/* Collective over the world: 1 when any rank was asked to stop, 0 when none, -1 when the
   collective failed. */
int sr__preempt_agreed(sr__engine *e);
/* The signal that asked this rank to stop, for messages: SIGTERM when this rank only followed
   another one's request. */
int sr__preempt_signal(void);

/* Testing aid (SHARDRUN_DEBUG_KILL_AT=RANK:STEP[:every|:stop]): this rank dies by SIGKILL after that
   step of the first attempt (of every attempt with :every; stops itself with SIGSTOP with :stop). */
void sr__debug_kill_at(int rank, int restart_count, long long step);
/* Testing aid (SHARDRUN_DEBUG_PAUSE_AT=RANK:STEP[@ATTEMPT][,...]), called after the step's log line: this rank of the
   first attempt flushes its output and waits (at most 120 s) until it is asked to stop, so the
   next sr__preempt_agreed() stops every rank after exactly that step however fast the steps are. */
void sr__debug_pause_at(int rank, int restart_count, long long step);

#endif
