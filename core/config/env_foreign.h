/*
 * FSDP_* and ACCELERATE_* variables in the agent's environment.  A plugin's final names
 * (FSDP_SHARDING_STRATEGY) override the job file when exported, so a misspelt one
 * (FSDP_SHARDNG_STRATEGY, ACCELERATE_MIXED_PRECISON) would silently leave the job file's value in
 * force.  Each such variable is one of:
 *  - a name a loaded plugin writes or reads (`used`): fine;
 *  - one accelerate itself reads but shardrun does not use (ACCELERATE_USE_DEEPSPEED,
 *    ACCELERATE_GRADIENT_ACCUMULATION_STEPS): a warning, since it has no effect on the run;
 *  - anything else: a configuration error, with the nearest known name when one is close.
 * Lifecycle: none; errors go to diag, warnings to the log, before any worker starts.
 */
#ifndef SR__CONFIG_ENV_FOREIGN_H
#define SR__CONFIG_ENV_FOREIGN_H

#include <stddef.h>

#include "base/diag.h"

void sr__env_foreign_check(const char *const *used, size_t nused, sr__diag *diag);

#endif
