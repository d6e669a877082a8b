/*
 * The shardrun command line as a function: the `shardrun` executable is main() calling it.
 *
 * Lifecycle: sr_main() parses argv (`shardrun JOB.ini [--set ...] [-- TASK ARGS]`, `shardrun env`,
 * ...), runs the agent (and, in the processes it forks, the workers) and returns the exit status.
 * Call it once per process, from main(): it owns the process (signals, children, stdout).
 */
#ifndef SHARDRUN_MAIN_H
#define SHARDRUN_MAIN_H

#include "shardrun/api.h"

#ifdef __cplusplus
extern "C" {
#endif

SR_API int sr_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
