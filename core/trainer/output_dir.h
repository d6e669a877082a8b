/*
 * output_dir, checked before any work: it can be created and written (a probe file is created
 * and removed), and it does not hold an earlier run's checkpoint-N folders that this run would
 * overwrite (and whose train_log.jsonl it would restart) unless the job says which it wants:
 * resume_from_checkpoint (continue that run) or overwrite_output_dir = true (start again).
 * Called by the trainer in every worker before the task's model is built; pure enough (no
 * printing) for the agent to call before it starts any worker.
 */
#ifndef SR_TRAINER_OUTPUT_DIR_H
#define SR_TRAINER_OUTPUT_DIR_H

#include <stddef.h>

/* 0, or -1 with the reason in err (naming output_dir and what to change).  resume: the run
   resumes from a checkpoint; overwrite: overwrite_output_dir = true. */
int sr__output_dir_check(const char *dir, int resume, int overwrite, char *err, size_t errlen);

#endif
