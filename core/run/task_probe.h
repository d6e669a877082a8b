/*
 * Loading a task the way a worker will, before any worker starts: a forked child dlopen()s the
 * task with RTLD_NOW (every symbol resolved at once, as the worker's loader would find them) and
 * exits; the agent reads why it failed.  An undefined symbol, a missing library or a constructor
 * that crashes is then one configuration error naming the task, instead of a failure in every
 * worker after the run started.  The task's code runs in that short-lived child only: the agent
 * itself never loads a task (plugins write the workers' environment before any task code loads).
 */
#ifndef SR__RUN_TASK_PROBE_H
#define SR__RUN_TASK_PROBE_H

#include <stddef.h>

/* 0 when `path` loads; -1 with what the loader said in err (or how the child ended). */
int sr__task_probe_load(const char *path, char *err, size_t errlen);

#endif
