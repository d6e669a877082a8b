/*
 * What `[shardrun] task` names: a task .so (path or bare name) or an exec: program, checked by
 * the agent before any worker starts (file found, ABI header read without loading the code).
 */
#ifndef SR__CORE_TASK_SPEC_H
#define SR__CORE_TASK_SPEC_H

#include "config/job.h"

typedef enum { SR__TASK_SO = 1, SR__TASK_EXEC } sr__task_type;

typedef struct sr__task_spec {
    sr__task_type type;
    unsigned kind; /* SR__TASK_SO: sr_task_kind from the ABI header */
    char *path;    /* the .so, or the program as found */
    char **argv;   /* NULL-terminated: argv[0] is path; then the exec words; then the `--` args */
    int argc;
} sr__task_spec;

/* extra: arguments after `--` on the command line. Errors go to cfg->diag. */
int sr__task_spec_resolve(sr__job *cfg, int nextra, char *const *extra, sr__task_spec *out);
void sr__task_spec_free(sr__task_spec *t);
/* A model task's trainer arguments in [task] (trainer/train_args.h sr__trainer_keys) are checked by the
   agent, so a bad one is reported with its file and line before any worker starts. */
int sr__task_spec_check_trainer_keys(sr__job *cfg);

/* Splits a command line into words: whitespace separates, '...' and "..." quote, \ escapes.
   Returns a NULL-terminated array, or NULL with an error message for an unterminated quote. */
char **sr__split_words(const char *s, int *count, char *err, size_t errlen);

#endif
