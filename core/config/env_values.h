/*
 * The values of the SHARDRUN_* variables shardrun reads that are not keys (SHARDRUN_PROFILE and the
 * SHARDRUN_DEBUG_* testing aids, core/config/env_table.c), and the names of SHARDRUN_TASK_*
 * variables.  Each reader takes only the values it knows and ignores the rest; so a misspelt value
 * (SHARDRUN_PROFILE=yes) or a variable with no key name (SHARDRUN_TASK_=1) would silently do
 * nothing.  Checked once in the agent, before any worker starts: a configuration error (exit 2).
 *
 * Lifecycle: none; sr__env_values_check() reads the environment and adds one message per variable
 * at fault to diag.
 */
#ifndef SR__CONFIG_ENV_VALUES_H
#define SR__CONFIG_ENV_VALUES_H

#include "base/diag.h"

void sr__env_values_check(sr__diag *diag);

#endif
