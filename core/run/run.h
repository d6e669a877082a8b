/*
 * One run, as the agent prepared it: the resolved configuration, the loaded plugins, the layout
 * and the task.  sr__run_prepare() does every check that can fail before a worker starts; the
 * launcher and the dry run only read it.
 */
#ifndef SR__CORE_RUN_H
#define SR__CORE_RUN_H

#include <stddef.h>

#include "base/log.h"
#include "config/env_block.h"
#include "config/job.h"
#include "config/shardrun_settings.h"
#include "plugin/loader.h"
#include "run/layout.h"
#include "run/task_spec.h"
#include "store/rdzv.h"

typedef struct sr__run {
    sr__job cfg;
    sr__loaded_plugin *plugins;
    size_t nplugins;
    sr__layout layout;
    sr__task_spec task;
    sr__shardrun_settings settings; /* [shardrun], typed: durations, restarts, log level, metrics port */
    int model_task;                 /* the task is a model task: SIGTERM asks for a checkpoint (preemption) */
    sr__rdzv rdzv;           /* the agent's side of the rendezvous; workers reach the store at its host/port/token */
    int stdout_tty;          /* in a worker: the agent's stdout is a terminal (progress bars are drawn) */
    char *fingerprint;       /* what defines the run as this agent sees it (sr__run_prepare_rdzv) */
    sr__rdzv_args rdzv_args; /* what the rendezvous was prepared with (an etcd job's new leader meets again) */
    char etcd_job[96];       /* rdzv_backend = etcd: the job's name there */
} sr__run;

typedef struct sr__run_args {
    const char *job;
    int nextra; /* arguments after `--` */
    char *const *extra;
} sr__run_args;

/* Reads, resolves and validates everything.  On failure prints every error and returns -1
   (callers exit 2); the caller has already added command-line overrides to run->cfg. */
int sr__run_prepare(sr__run *run, const sr__run_args *args);
void sr__run_free(sr__run *run);

/* Decides the rendezvous from the layout and [shardrun] keys and starts or reaches the store
   (store/rdzv.h).  Errors go to the run's diag; 0, SR__RDZV_UNREACHABLE (node 0 never answered:
   the run failed, exit 1) or -1 (a configuration error, exit 2). */
int sr__run_prepare_rdzv(sr__run *run);
/* An elastic job: the layout's nnodes and node_rank become the current attempt's (the rendezvous
   gives them at every attempt); nothing otherwise. */
void sr__run_apply_world(sr__run *run);
/* Runs every plugin's validate hook (agent). */
int sr__run_validate_plugins(sr__run *run);
/* Builds the environment block one worker receives (plugins' write_env in job-file order).
   Returns 0, or -1 with errors in diag. */
int sr__run_build_env(sr__run *run, int local_rank, sr__env_block *block, sr__diag *diag);
/* Runs the plugins' init hooks in a worker whose environment is applied. */
int sr__run_plugins_init(sr__run *run, int local_rank);
void sr__run_plugins_finish(sr__run *run, int local_rank, int status);

#endif
