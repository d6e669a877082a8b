/*
 * The task context (sr_ctx of shardrun/task.h) inside a worker: created after the environment
 * is applied, handed to the task's main(), and turned into this rank's JSON result at the end.
 */
#ifndef SR__CORE_CTX_H
#define SR__CORE_CTX_H

#include "shardrun/plugin.h"
#include "shardrun/task.h"
#include "config/env_table.h"
#include "shardrun/data.h"
#include "config/job.h"

/* NULL when memory is exhausted. */
sr_ctx *sr__ctx_new(const sr_topology *topo, sr__job *cfg);
/* {"rank": R, "exit_code": C, <reported values>} */
char *sr__ctx_result_json(const sr_ctx *ctx, int exit_code);
/* Frees the context (the worker itself exits without: it _exits after the result). */
void sr__ctx_free(sr_ctx *ctx);
/* Whether this worker's stdout reaches a terminal through the agent's relay. */
void sr__ctx_set_tty(sr_ctx *ctx, int tty);
int sr__ctx_tty(const sr_ctx *ctx);
/* After a model task's create(): every [task] key of the job must have been read (by the task or
   the trainer, through sr_config*), so a misspelt key is an error rather than silently unused.
   0, or -1 after naming each unread key and where it was set. */
int sr__ctx_check_task_keys(const sr_ctx *ctx, const char *task_name, const sr_key *runtime_keys);
/* A main task returned: tells the agent which [task] keys it never read (SR__PROGRESS_UNREAD). */
void sr__ctx_send_unread(const sr_ctx *ctx);
/* The i-th [task] key read through sr_config*() so far (by the task or the trainer); NULL after the
   last. */
const char *sr__ctx_asked_key(const sr_ctx *ctx, size_t i);
/* 1 when memory ran out recording a key read (warned once): the keys above may miss some. */
int sr__ctx_asked_short(const sr_ctx *ctx);
/* Where [task] key's value was set ("job.ini:12", "command line --set ...", "environment ..."), or
   NULL when it was not. */
const char *sr__ctx_task_where(const sr_ctx *ctx, const char *key);
/* The i-th [task] key that has a value (job file, override or default), with *value; NULL after
   the last.  What a checkpoint records of the run's configuration (trainer/resume.c). */
const char *sr__ctx_task_setting(const sr_ctx *ctx, size_t i, const char **value);

/* What the task said it trains on (sr_data_identity): the identity line or NULL, and *detail. */
const char *sr__ctx_data_identity(const sr_ctx *ctx, const char **detail);

#endif
