/*
 * The model a task described in create(): modules in forward order and their parameters.
 * Built through shardrun/model.h's sr_model_* calls, then read by the wrap policy and the engine.
 */
#ifndef SR__FSDP_MODEL_DESC_H
#define SR__FSDP_MODEL_DESC_H

#include <stddef.h>
#include <stdint.h>

#include "shardrun/model.h"

#define SR__MAX_DIMS 4

typedef struct sr__param {
    char *name;
    int ndim;
    int64_t shape[SR__MAX_DIMS];
    size_t numel;
    sr_init init;
    unsigned flags;
    int module;  /* declaring module */
    int tied_to; /* -1, or the parameter whose storage this name shares */
    /* set by the wrap policy (owners only) */
    int unit;
    size_t offset; /* element offset in the unit's flat buffer */
} sr__param;

typedef struct sr__module {
    char *name, *cls;
    int *params; /* indices into model->params, in the module's call order */
    int nparams;
    int unit; /* set by the wrap policy */
} sr__module;

/* A file FULL checkpoints hold beside the weights (sr_model_file): its name and bytes */
typedef struct sr__model_file {
    char *name;
    void *data;
    size_t size;
} sr__model_file;

struct sr_model {
    sr__module *mods;
    int nmods;
    sr__param *params;
    int nparams;
    int errors;                            /* declaration errors already printed */
    sr_model_eval eval;                    /* sr_model_eval_data(); num_samples NULL: no eval data */
    char *adapter_prefix, *adapter_config; /* sr_model_adapter(); NULL: no adapter files */
    sr__model_file *files;                 /* sr_model_file(), in declaration order */
    int nfiles;
};

sr_model *sr__model_new(void);
void sr__model_free(sr_model *m);
/* model_files.c: frees m->files */
void sr__model_files_free(sr_model *m);
/* Whether name is one of the checkpoint's own files (or an adapter's), which sr_model_file refuses */
int sr__ckpt_own_name(const char *name);
/* Owner of parameter i (itself, or the parameter it is tied to). */
int sr__param_owner(const sr_model *m, int i);
/* Parameters a model has (tied names counted once), frozen ones included. */
size_t sr__model_numel(const sr_model *m);
/* Whether parameter i is frozen (SR_PARAM_FROZEN on its owner: a tied name follows its target). */
int sr__param_frozen(const sr_model *m, int i);
/* Elements of the frozen parameters (tied names counted once); sr__model_numel() minus it trains. */
size_t sr__model_frozen_numel(const sr_model *m);
/* [task] freeze: `patterns` (comma-separated fnmatch globs on the full dotted names; NULL: none) set
   SR_PARAM_FROZEN on every parameter one matches (a tied name freezes its target).  A pattern that
   matches nothing, or a model left with nothing to train (patterns or the task's own flags), is
   printed; -1 then, else 0. */
int sr__model_freeze(sr_model *m, const char *patterns, const char *task);
/* Checks the finished description (at least one module and one parameter); prints why not. */
int sr__model_check(const sr_model *m, const char *task);

#endif
