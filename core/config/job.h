/*
 * The job file and its overrides.
 *
 * Lifecycle (agent): sr__config_load()       reads the INI (inih) and the command-line overrides
 *                 -> sr__config_resolve()     once per declared section: every key gets its value
 *                                             by precedence command line > environment > job file
 *                                             > default, with the place it came from
 *                 -> sr__config_resolve_free() for the free-form [task] section
 *                 -> sr__config_check_leftovers() unknown sections/overrides, stray SHARDRUN_*
 * Errors are collected in cfg->diag; the caller prints them and exits 2.
 */
#ifndef SR__CORE_CONFIG_H
#define SR__CORE_CONFIG_H

#include <stddef.h>

#include "shardrun/plugin.h"
#include "base/diag.h"

typedef enum sr__from {
    SR__FROM_DEFAULT = 0,
    SR__FROM_CLUSTER, /* cluster detection (set by the topology step) */
    SR__FROM_FILE,
    SR__FROM_ENV, /* SHARDRUN_<SECTION>_<KEY> or the key's final variable name */
    SR__FROM_CLI
} sr__from;

typedef struct sr__setting {
    char *section, *key;
    char *value; /* canonical spelling; NULL when unset */
    sr__from from;
    char *where; /* "job.ini:12", "SHARDRUN_NNODES", "--set torch.x=1", "default", ... */
} sr__setting;

typedef struct sr__raw {
    char *section, *key, *value;
    int line;
    int used;
} sr__raw;

typedef struct sr__override {
    char *section, *key, *value;
    char *flag; /* how it was given, for messages: "--set a.b=c", "--nnodes" */
    int used;
} sr__override;

/* A hash index of (section, key) -> position in an array (raw or set): open addressing, linear
   probing, slots hold position + 1 (0: empty).  Keeps reading and resolving linear in the number
   of keys. */
typedef struct sr__key_index {
    size_t *slot;
    size_t cap; /* a power of two, or 0 */
} sr__key_index;

/* The most a job file may hold: a job file is a few dozen lines; this refuses a wrong file (a
   data file, /dev/zero) before it is read into memory. */
#define SR__JOB_FILE_MAX ((long long)4 << 20)

typedef struct sr__job {
    char *path; /* job file as given */
    char *dir;  /* absolute folder of the job file */
    sr__raw *raw;
    size_t nraw, rawcap;
    sr__override *cli;
    size_t ncli;
    sr__setting *set;
    size_t nset, setcap;
    sr__key_index raw_idx, set_idx;
    char **sections; /* sections resolved so far */
    size_t nsections;
    sr__diag diag;
} sr__job;

/* Reads the job file; syntax errors go to cfg->diag.  Returns 0 when the file could be read; -1
   (with the reason in cfg->diag) when it cannot be, is not a regular file (a directory, a device,
   a pipe) or is larger than SR__JOB_FILE_MAX. */
int sr__config_load(sr__job *cfg, const char *path);
/* Adds a command-line override ("section.key=value" from --set, or a torchrun flag). */
void sr__config_add_override(sr__job *cfg, const char *section, const char *key, const char *value, const char *flag);
/* Parses "section.key=value"; -1 when malformed. */
int sr__config_add_set(sr__job *cfg, const char *spec);

typedef const char *(*sr__key_normalizer)(const char *key, char *buf, size_t len);
void sr__config_resolve(sr__job *cfg, const char *section, const sr_key *keys, const sr_key *extra_key,
                        sr__key_normalizer norm);
/* Resolves one key ahead of its section (no unknown-key checks). */
void sr__config_resolve_key(sr__job *cfg, const char *section, const sr_key *key);
void sr__config_resolve_free(sr__job *cfg, const char *section);
void sr__config_check_leftovers(sr__job *cfg, const char *const *known_sections, size_t n);

sr__setting *sr__config_get(sr__job *cfg, const char *section, const char *key);
/* A path made absolute (a new string): "~" or "~/..." under the user's home ($HOME, else the
   password database's), a relative one against the job file's folder when it came from the file
   (`from`), against the working directory otherwise. */
char *sr__config_absolute(const sr__job *cfg, sr__from from, const char *p);
/* Whether path p starts with the user's home ("~" or "~/..."). */
int sr__config_names_home(const char *p);
/* Whether the path setting s changes when made absolute (sr__config_absolute): under the home, or
   relative and written in the job file.  The trainer (sr_config_path) and the agent (the
   output_dir lock) resolve a path key the same way through it. */
int sr__config_path_moves(const sr__job *cfg, const sr__setting *s);
const char *sr__config_value(sr__job *cfg, const char *section, const char *key);

void sr__config_free(sr__job *cfg);

/* Whether the variable NAME (its first len characters) is one the host reads by name outside the
   keys (sr__host_reads: SHARDRUN_RDZV_TOKEN, the SHARDRUN_DEBUG_* testing aids, ...), so that a
   check for stray SHARDRUN_* variables does not call it ignored. */
int sr__config_is_host_var(const char *name, size_t len);

#endif
