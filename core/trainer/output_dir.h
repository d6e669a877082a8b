/*
 * output_dir before any work: it can be created and written (a probe file is created and
 * removed); which of its checkpoint-N folders belong to another training run than the one this
 * run continues (trainer/resume.c refuses those, or removes them under overwrite_output_dir); and
 * removing a checkpoint folder so that a half-removed one never looks complete.
 * Nothing here prints: a failure fills err[] (naming output_dir and what to change) and returns -1.
 */
#ifndef SR__TRAINER_OUTPUT_DIR_H
#define SR__TRAINER_OUTPUT_DIR_H

#include <stddef.h>

/* Creates output_dir and its parents and checks that this user can write in it.  0, -1 (err says
   why), or -2 when memory ran out (err says so). */
int sr__output_dir_prepare(const char *dir, char *err, size_t errlen);

/* The checkpoint-N folders of dir that do not belong to the training run `lineage` (NULL: a new
   run, to which none belongs): their names in *names (a NULL-terminated array: free each name
   and the array) and their count in *n.  Each is a checkpoint another run wrote and finished
   with: this run holds the folder's lock (output_lock.h), so no run still writes there.  0, or -1
   when dir cannot be listed, holds a name that is not a checkpoint name shardrun writes
   (fsdp/ckpt_dir.h), or a checkpoint-N folder whose trainer_state.json cannot be read (not
   provably a checkpoint: never another run's to remove). */
int sr__output_dir_others(const char *dir, const char *lineage, char ***names, size_t *n, char *err, size_t errlen);

/* Removes dir/name (a checkpoint folder): renamed to name.deleting first (no checkpoint name), then
   its files.  A folder another process removed meanwhile is not an error.  0 or -1. */
int sr__output_dir_remove(const char *dir, const char *name, char *err, size_t errlen);

#endif
