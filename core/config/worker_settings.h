/*
 * A worker's settings: every variable of the environment contract a worker of a task (.so) acts
 * on, read from its environment once, typed and checked, then read from here by the engine, the
 * trainer, the process groups' creation (run/host.c) and the CPU pool's set-up.  No other file
 * under core/ reads a worker's environment (tests/cli/settings_once.sh keeps it so).
 *
 * Lifecycle (worker): worker/worker.c applies the environment the agent built, sets
 * SHARDRUN_JOB_ID, SHARDRUN_REQUEUE_KEY and SHARDRUN_ELASTIC_RANKS, then calls sr__worker_settings_load() once, before the
 * plugins' init hooks and the task; a bad value is a configuration error (the messages in diag,
 * exit 2) before any work.  Afterwards sr__worker_settings_get() returns them to any layer that may
 * include config/; the layers below it (pg, device, base) receive the values they need as
 * arguments.  Until the load (the agent, unit tests) sr__worker_settings_get() returns the defaults
 * of an empty environment.
 *
 * Strings point into the process's environment, which nothing changes after the load.
 */
#ifndef SR__CONFIG_WORKER_SETTINGS_H
#define SR__CONFIG_WORKER_SETTINGS_H

#include "base/diag.h"
#include "config/fsdp_settings.h"

/* SHARDRUN_DEBUG_PAUSE_AT's most entries */
#define SR__PAUSE_MAX 4

typedef struct sr__worker_settings {
    int loaded; /* sr__worker_settings_load ran */
    /* this launch, set by shardrun in every worker */
    const char *job_id;      /* SHARDRUN_JOB_ID ("" unset) */
    const char *requeue_key; /* SHARDRUN_REQUEUE_KEY ("" outside Slurm) */
    int slurm_restarts;      /* SLURM_RESTART_COUNT: how often Slurm requeued the job (0 unset) */
    /* SHARDRUN_ELASTIC_RANKS, set in every worker of an elastic run (nnodes = MIN:MAX): the ranks
       the job file's batch keys describe, MAX nodes x nproc_per_node (0: not an elastic run) */
    int elastic_ranks;
    /* where this rank runs and talks */
    const char *gloo_iface;           /* GLOO_SOCKET_IFNAME (NULL unset or empty) */
    const char *host_id;              /* SHARDRUN_HOST_ID, added to the host identity ("" unset) */
    const char *cuda_visible_devices; /* CUDA_VISIBLE_DEVICES (NULL unset) */
    int omp_threads;                  /* OMP_NUM_THREADS's first number, as torch reads it (0: unset or none) */
    int profile;                      /* SHARDRUN_PROFILE=1: the step profile */
    /* a model task's FSDP configuration (FSDP_*, ACCELERATE_*); the defaults for other tasks */
    sr__fsdp_config fsdp;
    /* testing aids (their values were checked by the agent, config/env_values.c) */
    const char *pg_fault;      /* SHARDRUN_DEBUG_PG_FAULT (NULL unset) */
    int offload_staging;       /* SHARDRUN_DEBUG_OFFLOAD_STAGING=1 */
    long save_delay_ms;        /* SHARDRUN_DEBUG_SAVE_DELAY_MS */
    const char *kill_at_text;  /* SHARDRUN_DEBUG_KILL_AT as written (NULL unset) */
    const char *pause_at_text; /* SHARDRUN_DEBUG_PAUSE_AT as written (NULL unset) */
    struct sr__debug_at {
        int set, rank;
        long long step;
        int every, stop; /* ":every" (every attempt), ":stop" (SIGSTOP, not SIGKILL): KILL_AT only */
        int attempt;     /* PAUSE_AT: "@ATTEMPT", the attempt it pauses in (0: the first) */
    } kill_at, pause_at[SR__PAUSE_MAX];
    int npause; /* entries of pause_at */
} sr__worker_settings;

/* Reads and checks the environment once (`model_task`: the FSDP variables too, which only the
   engine of a model task reads).  0, or -1 with one message per bad value in diag. */
int sr__worker_settings_load(int model_task, sr__diag *diag);
/* The settings read by the load (or an empty environment's before it); never NULL. */
const sr__worker_settings *sr__worker_settings_get(void);

/* The same reading from any lookup (tests pass their own); free with sr__worker_settings_free. */
int sr__worker_settings_parse(sr__worker_settings *s, const char *(*get)(const char *name), int model_task,
                              sr__diag *diag);
void sr__worker_settings_free(sr__worker_settings *s);

#endif
