/*
 * The checkpoint-N folders of an output_dir: which names are checkpoint names, what each folder's
 * trainer_state.json says about who wrote it (its identity), and the newest one a job wrote.
 *
 * Names.  shardrun writes checkpoint-N with N the optimizer step in plain decimal: no sign, no
 * leading zero, at most 18 digits.  A folder named checkpoint-N.tmp (a save in progress or cut
 * short), checkpoint-N.old or checkpoint-N.deleting is not a checkpoint.  A folder that looks like
 * a checkpoint name but is not one shardrun writes (checkpoint-0012, a step past 10^18) is reported,
 * never silently read as another step.
 *
 * Identity (stateful_callbacks.shardrun of trainer_state.json): the step inside (the truth, which
 * the name must agree with), the run it continues (run_id: the launch that started the run from
 * scratch, kept by every resume, so that checkpoints of one training run share it however often it
 * was stopped and resumed), the launch that wrote it (job_id), the Slurm requeue key, the world
 * size, the mixed precision and the [task] settings it was trained with.
 *
 * Nothing here prints: a failure fills why[] and returns -1.
 */
#ifndef SR__FSDP_CKPT_DIR_H
#define SR__FSDP_CKPT_DIR_H

#include <stddef.h>

/* Largest step a checkpoint name may carry: 18 decimal digits always fit a long long. */
#define SR__CKPT_MAX_NAME_DIGITS 18

typedef struct sr__ckpt_entry {
    char *name;     /* "checkpoint-N" (the folder's own name) */
    long long step; /* N */
} sr__ckpt_entry;

typedef struct sr__ckpt_kv {
    char *key, *value;
} sr__ckpt_kv;

typedef struct sr__ckpt_ident {
    long long step; /* global_step */
    int world_size; /* 0: not recorded */
    char run_id[80], job_id[80], requeue_key[96], mixed_precision[16];
    char sharding_strategy[32]; /* "" when not recorded */
    char data_identity[256];    /* the data it was trained on (sr_data_identity); "" when not recorded */
    int has_settings;           /* the checkpoint recorded its [task] settings */
    sr__ckpt_kv *settings;      /* [task] key -> value, as the run that wrote it resolved them */
    size_t nsettings;
} sr__ckpt_ident;

/* What the base name `name` is: N for "checkpoint-N" written as shardrun writes it; -1 when it is
   not of the form checkpoint-<digits> (other names, checkpoint-N.tmp); -2 when it is of that form
   but not a name shardrun writes (leading zeros, too many digits). */
long long sr__ckpt_name_step(const char *name);

/* The checkpoint-N folders of dir, by step: 0 with *out (NULL when none; a missing dir has none),
   or -1 with why[] naming a folder whose name is not one shardrun writes, or the dir that cannot
   be read. */
int sr__ckpt_list(const char *dir, sr__ckpt_entry **out, size_t *n, char *why, size_t len);
void sr__ckpt_list_free(sr__ckpt_entry *l, size_t n);

/* Reads dir/trainer_state.json's identity.  0, or -1 with why[] (missing, not JSON, no
   stateful_callbacks.shardrun.global_step).  Free with sr__ckpt_ident_free in either case. */
int sr__ckpt_ident_read(const char *dir, sr__ckpt_ident *id, char *why, size_t len);
void sr__ckpt_ident_free(sr__ckpt_ident *id);
/* The run a checkpoint belongs to: run_id, or for a checkpoint of an older shardrun without one,
   the launch that wrote it ("" when neither is known). */
const char *sr__ckpt_lineage(const sr__ckpt_ident *id);
/* The value recorded for [task] key, or NULL. */
const char *sr__ckpt_setting(const sr__ckpt_ident *id, const char *key);

/* output_dir/checkpoint-N (a new string) with the largest N whose trainer_state.json has `member`
   ("job_id" or "requeue_key") equal to `value`: what a restarted or requeued job wrote itself.
   NULL when there is none, value is empty, or output_dir cannot be listed; NULL with *oom set, after
   saying so, when memory ran out before the search could tell. */
char *sr__ckpt_latest_of_job(const char *output_dir, const char *member, const char *value, int *oom);

#endif
