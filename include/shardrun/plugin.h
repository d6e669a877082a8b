/*
 * shardrun plugin ABI.
 *
 * Lifecycle of a plugin (the hooks run in this order; any hook may be NULL):
 *
 *   agent   dlopen -> read `shardrun_plugin` -> check abi_version and struct_size
 *           -> host resolves the plugin's section against `keys` (unknown key = error)
 *           -> validate()            once, before any worker starts; report with api->reject()
 *   worker  write_env()              once per worker (and per rank in `shardrun env`), in the
 *                                    order the job file lists the plugins; the host applies the
 *                                    resulting block to the process once, after every plugin ran
 *           -> init()                after the environment is applied, before the task is loaded
 *                                    (torch: the process group, through api->init_process_group)
 *           -> (task runs)
 *           -> finish(status)        after the task, before the worker exits
 *
 * A plugin links against nothing of the host: everything it needs comes through the
 * sr_host_api table passed to each hook.  Plugins never call setenv(): they write into the
 * host-owned environment block through api->env_set(), so the host can log, explain and apply it.
 */
#ifndef SHARDRUN_PLUGIN_H
#define SHARDRUN_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bump on any incompatible change of sr_plugin or sr_host_api. */
#define SR_PLUGIN_ABI_VERSION 1u
/* The one symbol a plugin exports: `const sr_plugin shardrun_plugin = {...};` */
#define SR_PLUGIN_SYMBOL "shardrun_plugin"

typedef enum sr_key_type {
    SR_KEY_STRING = 1, /* any non-empty text */
    SR_KEY_BOOL,       /* y yes t true on 1 / n no f false off 0, any case; handed over as true|false */
    SR_KEY_INT,        /* decimal integer within [min, max] */
    SR_KEY_ENUM,       /* one of `choices` ("A|B|C"), any case; handed over as spelled in choices */
    SR_KEY_LIST,       /* comma-separated, items trimmed; handed over joined by "," without spaces */
    SR_KEY_PATH,       /* relative paths resolve against the job file's folder */
    SR_KEY_FLOAT,      /* decimal number >= 0 */
    SR_KEY_PATH_LIST   /* colon-separated paths, each relative one resolved against the job file's folder */
} sr_key_type;

/* SR_KEY_ENUM: the digits 1..n are accepted for the n choices, in order. */
#define SR_KEY_ENUM_DIGITS 0x1u

/* One key of a plugin's INI section.  An array of these ends with an entry whose name is NULL. */
typedef struct sr_key {
    const char *name; /* canonical spelling, e.g. "fsdp.sharding_strategy" */
    sr_key_type type;
    const char *def;     /* default as text; NULL: unset unless given */
    const char *choices; /* SR_KEY_ENUM: "A|B|C" */
    unsigned flags;      /* SR_KEY_ENUM_DIGITS */
    long long min, max;  /* SR_KEY_INT bounds (inclusive) */
    const char *env;     /* the variable this key ends up in (its "final name"), or NULL. A value
                            the user exported under that name overrides the job file. */
    const char *doc;     /* one line for --help, `shardrun plugins` and the README */
} sr_key;

/* Where the workers of a run sit.  In validate(), rank/local_rank are -1. */
typedef struct sr_topology {
    uint32_t struct_size;
    int rank, world_size;
    int local_rank, local_world_size;
    int node_rank, nnodes;
    const char *master_addr;
    int master_port;
    const char *run_id;
    /* appended (read them only when struct_size reaches them): the job-wide attempt, 0 for the
       first start, and [shardrun] max_restarts */
    int restart_count, max_restarts;
} sr_topology;

typedef enum sr_log_level { SR_LOG_ERROR = 0, SR_LOG_WARN, SR_LOG_INFO, SR_LOG_DEBUG } sr_log_level;

typedef struct sr_host sr_host; /* opaque, owned by the host */

typedef struct sr_host_api {
    uint32_t abi_version;
    uint32_t struct_size;
    void (*log)(sr_host *h, sr_log_level level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
    /* Resolved value of a key of this plugin's section (after overrides and defaults), in the
       canonical spelling of its type; NULL when unset. */
    const char *(*get)(sr_host *h, const char *key);
    /* Non-zero when the key was given (job file, environment or command line), 0 for a default. */
    int (*given)(sr_host *h, const char *key);
    /* Report a validation error about `key` (NULL: the section).  The host prefixes where the
       value came from (file:line, variable or flag).  validate() should then return non-zero. */
    void (*reject)(sr_host *h, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
    const sr_topology *(*topology)(sr_host *h);
    /* The worker's environment as it stands: what earlier plugins wrote, else what the worker
       inherited.  NULL when unset. */
    const char *(*env_get)(sr_host *h, const char *name);
    /* Write a variable into the block.  `because` names the key of this plugin's section the
       value derives from ("fsdp.version"), a qualified key ("shardrun.nnodes"), or is free text;
       `shardrun env --explain` shows it.  Returns 0, or -1 for an invalid name or empty value. */
    int (*env_set)(sr_host *h, const char *name, const char *value, const char *because);
    int (*env_unset)(sr_host *h, const char *name, const char *because);
    /* init hook: what this worker runs, "main" (a task .so) or "exec" (a program). */
    const char *(*task_kind)(sr_host *h);
    /* init hook: meets every rank through shardrun's store and creates this worker's world
       process group; backend "gloo", "nccl" or "auto" (nccl when a CUDA device is visible).
       Returns 0, or -1 after printing why (the worker then fails). */
    int (*init_process_group)(sr_host *h, const char *backend, double timeout_s);
} sr_host_api;

/* A variable a plugin writes without a key of its own (for the reference and `shardrun plugins`). */
typedef struct sr_var {
    const char *name;
    const char *doc;
} sr_var;

typedef int (*sr_plugin_hook)(const sr_host_api *api, sr_host *h);

typedef struct sr_plugin {
    uint32_t abi_version; /* SR_PLUGIN_ABI_VERSION */
    uint32_t struct_size; /* sizeof(sr_plugin) */
    const char *name;     /* the name job files use in `plugins = ...` */
    const char *version;
    const char *description;
    const char *requires; /* comma-separated plugin names that must be listed too, or NULL */
    const sr_key *keys;   /* NULL-name terminated; `path` is the host's and must not be declared */
    const sr_var *writes; /* NULL-name terminated: variables written that no key names, or NULL */
    /* Optional: map an accepted alias of a key to its canonical name (write into buf and return
       it), or return `key` unchanged. */
    const char *(*normalize_key)(const char *key, char *buf, size_t len);
    sr_plugin_hook validate;
    sr_plugin_hook write_env;
    sr_plugin_hook init;
    void (*finish)(const sr_host_api *api, sr_host *h, int status);
} sr_plugin;

#ifdef __cplusplus
}
#endif
#endif
