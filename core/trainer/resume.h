/*
 * Which checkpoint a run starts from, and whether it may, decided before the task's model is built
 * (docs/clusters.md "What a resume keeps"):
 *   - a restart (shardrun's own, max_restarts; or a Slurm requeue, SLURM_RESTART_COUNT) takes the
 *     newest checkpoint its own job wrote (SHARDRUN_JOB_ID, or SHARDRUN_REQUEUE_KEY under Slurm);
 *     with none yet it starts as the first attempt did, under the same checks as a new run;
 *   - resume_from_checkpoint = latest takes the checkpoint-N of output_dir with the largest N, and
 *     says which run and launch wrote it; a folder must exist and be a shardrun checkpoint
 *     (configuration errors, exit 2);
 *   - the step inside a checkpoint is the truth: a checkpoint-N folder holding another step is
 *     refused, and so is a name shardrun does not write (checkpoint-0012);
 *   - the settings the checkpoint was trained with ([task] keys, mixed precision) are compared with
 *     this run's: the schedule and bookkeeping keys may change, the world size may change (a
 *     resharded resume) and max_steps/num_train_epochs may (the schedule is recomputed), each with a
 *     note; any other difference is refused, naming the key and both values, unless
 *     [task] resume_allow_changes lists it (or says all);
 *   - output_dir may hold checkpoints of the training run being continued only (run_id); another
 *     run's are refused, or removed before step 0 with overwrite_output_dir = true;
 *   - a checkpoint at or past the run's last step leaves nothing to train: refused.
 */
#ifndef SR__TRAINER_RESUME_H
#define SR__TRAINER_RESUME_H

#include "trainer/trainer_internal.h"

/* After the arguments are read, before the model is built: sets t->resume_dir, t->resume_step,
   t->ts.run_id and t->settings (what checkpoints record).  An exit code. */
int sr__resume_choose(sr__trainer *t);
/* After the run is planned: a resumed step at or past total_steps is refused.  An exit code. */
int sr__resume_check_plan(const sr__trainer *t);
/* After the task's create(): records the data it said it trains on (sr_data_identity) in what
   checkpoints write, and refuses a resume from a checkpoint trained on other data unless
   resume_allow_changes lists data.  An exit code. */
int sr__resume_data(sr__trainer *t);
/* Once the engine exists: a note when the checkpoint was saved under another sharding strategy. */
void sr__resume_note_strategy(const sr__trainer *t);
/* How many times this job was started again (shardrun's restarts or Slurm's requeues). */
int sr__resume_restarts(const sr__trainer *t);
/* After the task's create(): every name in [task] resume_allow_changes (the list, or NULL) must be
   a [task] key of this run (the trainer's, one the task read, or one set), mixed_precision, data,
   or all.  0, or -1 after naming each unknown one with the nearest name. */
int sr__resume_check_allow_names(const sr_ctx *ctx, const char *list);

#endif
