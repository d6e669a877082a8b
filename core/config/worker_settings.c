/* A worker's settings, read once from its environment (config/worker_settings.h). */
#define _GNU_SOURCE
#include "config/worker_settings.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sr__worker_settings S;
static int S_ready; /* S holds the load's settings, or an empty environment's */

/* RANK:STEP and what follows it (the agent checked the shape, config/env_values.c). */
static void debug_at(const char *v, struct sr__debug_at *at, int suffixes) {
    int end = 0;
    memset(at, 0, sizeof *at);
    if (!v || sscanf(v, "%d:%lld%n", &at->rank, &at->step, &end) != 2) return;
    at->every = !strcmp(v + end, ":every");
    at->stop = !strcmp(v + end, ":stop");
    /* PAUSE_AT takes no suffix; KILL_AT ignores one it does not know, as it always did */
    at->set = suffixes || !v[end];
}

/* OMP_NUM_THREADS as torch reads it: the first number of a list ("4,2": the outer level) */
static int omp_threads(const char *v) {
    if (!v || !*v) return 0;
    char *end;
    long n = strtol(v, &end, 10);
    return end != v && n >= 1 ? (n > 1 << 20 ? 1 << 20 : (int)n) : 0;
}

/* SHARDRUN_ELASTIC_RANKS: a whole number from 1, within an int (0: unset or empty).  The agent sets
   it, so a bad value is a bug of the agent's, reported like a bad variable of the user's. */
static int elastic_ranks(const char *v, sr__diag *diag) {
    if (!v || !*v) return 0;
    long long n = 0;
    const char *p = v;
    for (; *p >= '0' && *p <= '9' && n <= INT_MAX; p++) n = n * 10 + (*p - '0');
    if (*p || n < 1 || n > INT_MAX) {
        sr__diag_add(diag,
                     "environment variable SHARDRUN_ELASTIC_RANKS=%s: expected the ranks of an elastic run's "
                     "largest membership, a whole number from 1 to %d; shardrun sets it in every worker of an "
                     "elastic run (docs/environment.md): a value it did not set is a bug to report",
                     v, INT_MAX);
        return -1;
    }
    return (int)n;
}

static const char *or_empty(const char *v) { return v ? v : ""; }

int sr__worker_settings_parse(sr__worker_settings *s, const char *(*get)(const char *name), int model_task,
                              sr__diag *diag) {
    memset(s, 0, sizeof *s);
    s->job_id = or_empty(get("SHARDRUN_JOB_ID"));
    s->requeue_key = or_empty(get("SHARDRUN_REQUEUE_KEY"));
    /* checked by the agent's cluster detection (config/cluster.c): a count from 0 */
    const char *slurm = get("SLURM_RESTART_COUNT");
    s->slurm_restarts = slurm && atoi(slurm) > 0 ? atoi(slurm) : 0;
    s->elastic_ranks = elastic_ranks(get("SHARDRUN_ELASTIC_RANKS"), diag);
    int bad = s->elastic_ranks < 0;
    if (bad) s->elastic_ranks = 0;
    s->gloo_iface = get("GLOO_SOCKET_IFNAME");
    s->host_id = or_empty(get("SHARDRUN_HOST_ID"));
    s->cuda_visible_devices = get("CUDA_VISIBLE_DEVICES");
    s->omp_threads = omp_threads(get("OMP_NUM_THREADS"));
    const char *profile = get("SHARDRUN_PROFILE");
    s->profile = profile && !strcmp(profile, "1");
    s->pg_fault = get("SHARDRUN_DEBUG_PG_FAULT");
    const char *staging = get("SHARDRUN_DEBUG_OFFLOAD_STAGING");
    s->offload_staging = staging && !strcmp(staging, "1");
    const char *delay = get("SHARDRUN_DEBUG_SAVE_DELAY_MS");
    s->save_delay_ms = delay ? atol(delay) : 0;
    s->kill_at_text = get("SHARDRUN_DEBUG_KILL_AT");
    debug_at(s->kill_at_text, &s->kill_at, 1);
    s->pause_at_text = get("SHARDRUN_DEBUG_PAUSE_AT");
    s->npause = 0;
    for (const char *v = s->pause_at_text; v && *v && s->npause < SR__PAUSE_MAX;) { /* "R:S[@A],..." */
        struct sr__debug_at *at = &s->pause_at[s->npause];
        int end = 0;
        memset(at, 0, sizeof *at);
        if (sscanf(v, "%d:%lld%n", &at->rank, &at->step, &end) != 2) break;
        if (v[end] == '@') at->attempt = atoi(v + end + 1);
        else if (v[end] && v[end] != ',') break; /* no other suffix (the agent refused one already) */
        at->set = 1;
        s->npause++;
        v = strchr(v, ',');
        v = v ? v + 1 : NULL;
    }
    if (!model_task) {
        sr__fsdp_config_defaults(&s->fsdp);
        return bad ? -1 : 0;
    }
    return sr__fsdp_config_parse(&s->fsdp, get, diag) != 0 || bad ? -1 : 0;
}

void sr__worker_settings_free(sr__worker_settings *s) { sr__fsdp_config_free(&s->fsdp); }

static const char *from_environment(const char *name) { return getenv(name); }
static const char *from_nothing(const char *name) { return (void)name, NULL; }

int sr__worker_settings_load(int model_task, sr__diag *diag) {
    sr__worker_settings_free(&S);
    int rc = sr__worker_settings_parse(&S, from_environment, model_task, diag);
    S.loaded = 1;
    S_ready = 1;
    return rc;
}

const sr__worker_settings *sr__worker_settings_get(void) {
    if (!S_ready) {
        sr__diag none = {0};
        sr__worker_settings_parse(&S, from_nothing, 0, &none); /* defaults only: nothing to report */
        S_ready = 1;
    }
    return &S;
}
