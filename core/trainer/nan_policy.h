/*
 * [task] nan_policy: what the trainer does with an optimizer step whose loss (the mean over ranks
 * and micro-batches) or gradient norm (all-reduced) is NaN or infinite.  Both numbers are the same
 * bits on every rank (each backend folds in one order and hands every rank the result), so every
 * rank takes the same decision without a collective of its own.
 *
 *   stop (default)  the engine withholds the step's update (sr__optim.guard_nonfinite), rank 0 says
 *                   which step, its loss and grad norm, the last checkpoint and how to resume
 *                   from it, and every rank exits 1 before anything of the step is logged or saved.
 *   skip_step       the update is withheld (parameters and AdamW moments stay as they were, as for
 *                   an fp16 overflow), the step counts, rank 0 warns; after SR__NAN_MAX_SKIPPED_IN_A_ROW
 *                   such steps in a row the next one stops the run as stop does.
 *   warn            the update is applied as before, rank 0 warns; the run exits 1 when its final
 *                   loss is not finite.
 * An fp16 overflow the loss scaler skipped (grad_norm NaN, loss finite) is loss scaling at work,
 * not a non-finite step.
 *
 * Lifecycle (trainer.c): train_step sets the guard before sr__engine_step -> after each step
 * sr__nan_policy_after_step -> after the last step sr__nan_policy_finish.
 */
#ifndef SR__TRAINER_NAN_POLICY_H
#define SR__TRAINER_NAN_POLICY_H

#include "fsdp/engine.h"

/* skip_step: this many non-finite steps in a row are skipped; one more stops the run. */
#define SR__NAN_MAX_SKIPPED_IN_A_ROW 10

struct sr__trainer;

/* After the step global_step (its loss, its result): SR__EXIT_OK to go on (the step counts), or the
   exit code to stop with, after the message.  Collective when it stops (every rank calls it). */
int sr__nan_policy_after_step(struct sr__trainer *t, double loss, const sr__step_result *r);
/* After the last step and the results: rank 0's closing line when a step was not finite; SR__EXIT_OK,
   or SR__EXIT_FAILED when the final loss is not finite (warn). */
int sr__nan_policy_finish(struct sr__trainer *t);

#endif
