/*
 * shardrun task ABI.
 *
 * Lifecycle of a task, in each worker process:
 *
 *   plugins write the environment (applied once)  ->  plugins' init hooks (torch: the world
 *   process group, which the task gets with sr_world(ctx) from shardrun/pg.h)
 *   -> the task .so is dlopen'ed (never before: its constructors already see the final env)
 *   -> `shardrun_task` is checked (abi_version, struct_size, kind)
 *   -> main(ctx, argc, argv) runs; argv[0] is the task path, the rest is what follows `--`
 *      on the shardrun command line
 *   -> values reported with sr_report_*() travel to the agent, which prints one JSON object per
 *      rank at the end of the run, whether it succeeded or failed (with each rank's exit_code)
 *   -> the worker exits with main's return value (0 = success)
 *
 * The agent checks the file and the symbol before any worker starts, and loads the task once in a
 * short-lived child process (dlopen with RTLD_NOW) so that an undefined symbol or a missing library
 * is reported before any worker starts; the agent process itself never runs task code.
 * A task never calls exit() for the runtime: it returns.  An *exec task* (`task = exec:PROG ARGS`)
 * needs none of this: PROG is started with the prepared environment.
 */
#ifndef SHARDRUN_TASK_H
#define SHARDRUN_TASK_H

#include <stdint.h>

#include "shardrun/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 2: sr_task gained `model` (model tasks, shardrun/model.h) */
#define SR_TASK_ABI_VERSION 2u
#define SR_TASK_SYMBOL "shardrun_task"

typedef struct sr_ctx sr_ctx;
struct sr_model_ops;

typedef enum sr_task_kind {
    SR_TASK_MAIN = 1, /* main(ctx, argc, argv) with the process group ready */
    SR_TASK_MODEL = 2 /* layers only: shardrun's FSDP engine and trainer run it (shardrun/model.h) */
} sr_task_kind;

typedef struct sr_task {
    uint32_t abi_version; /* SR_TASK_ABI_VERSION */
    uint32_t struct_size; /* sizeof(sr_task) */
    uint32_t kind;        /* sr_task_kind */
    const char *name;
    int (*main)(sr_ctx *ctx, int argc, char **argv); /* main tasks */
    const struct sr_model_ops *model;                /* model tasks */
} sr_task;

/* Defines the exported symbol for a main task. */
#define SR_MAIN_TASK(task_name, main_fn)                                                                               \
    __attribute__((visibility("default")))                                                                             \
    const sr_task shardrun_task = {SR_TASK_ABI_VERSION, sizeof(sr_task), SR_TASK_MAIN, (task_name), (main_fn), 0}

/* Topology of this worker. */
SR_API int sr_rank(const sr_ctx *ctx);
SR_API int sr_world_size(const sr_ctx *ctx);
SR_API int sr_local_rank(const sr_ctx *ctx);
SR_API int sr_local_world_size(const sr_ctx *ctx);
SR_API int sr_node_rank(const sr_ctx *ctx);
SR_API int sr_num_nodes(const sr_ctx *ctx);
/* How many times shardrun has started this job again after a failure ([shardrun] max_restarts):
   0 in the first attempt.  The same number as TORCHELASTIC_RESTART_COUNT.  A main task that keeps
   its own checkpoints resumes from them when it is > 0 (a model task's trainer does so itself). */
SR_API int sr_restart_count(const sr_ctx *ctx);

/* The job file's [task] section, after overrides (`--set task.KEY=V`, SHARDRUN_TASK_KEY). */
SR_API const char *sr_config(const sr_ctx *ctx, const char *key); /* NULL when absent */
/* Typed reads: return 0 and store the value (or `def` when absent); on a malformed value print
   an error naming the key and return -1. */
SR_API int sr_config_int(const sr_ctx *ctx, const char *key, long long def, long long *out);
SR_API int sr_config_double(const sr_ctx *ctx, const char *key, double def, double *out);
SR_API int sr_config_bool(const sr_ctx *ctx, const char *key, int def, int *out);
/* Paths: a relative path written in the job file is relative to the job file's folder, one given
   on the command line (--set) or in the environment (SHARDRUN_TASK_KEY) to the current folder
   (docs/sdk.md); "~" and "~/..." are under the user's home ($HOME), as HF's TrainingArguments
   expands output_dir.  sr_config_path: the value of `key` resolved that way (NULL when absent; valid as
   long as the ctx).  sr_config_base_dir: the folder a relative value of `key` is relative to (the
   job file's, or "."), for a key that holds several paths or patterns. */
SR_API const char *sr_config_path(const sr_ctx *ctx, const char *key);
SR_API const char *sr_config_base_dir(const sr_ctx *ctx, const char *key);

/* Progress, for the hang watchdog ([shardrun] hang_timeout, docs/clusters.md "Hangs").  A main task
   calls it at least once per hang_timeout while it works, e.g. once per iteration of its loop:
   once any rank of the run has called it, the run hangs when for hang_timeout seconds no rank
   called it nor entered or left a collective (every rank stuck outside a collective: pause(), a
   dead NFS mount).  A main task that never calls it is named only by the collectives it waits in.
   A few stores to memory the agent shares, no system call; a model task's trainer marks its own
   progress and need not call it. */
SR_API void sr_progress(sr_ctx *ctx);

/* Named results, printed by the agent as one JSON object per rank.  Reporting a name again
   replaces the earlier value.  Names may not be "rank" or "exit_code" (the host's). */
SR_API int sr_report_num(sr_ctx *ctx, const char *name, double value);
SR_API int sr_report_int(sr_ctx *ctx, const char *name, long long value);
SR_API int sr_report_str(sr_ctx *ctx, const char *name, const char *value);
SR_API int sr_report_bool(sr_ctx *ctx, const char *name, int value);

#ifdef __cplusplus
}
#endif
#endif
