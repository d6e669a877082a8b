/*
 * `shardrun selftest`: the runtime's own check of a machine, with no job file.
 *
 * Lifecycle: sr__cmd_selftest() parses its flags -> for each half (CPU always; GPU when a CUDA
 * device is visible or --gpu asks for it) runs the selftest task (examples/selftest.so) as an
 * ordinary run of a job it writes into a temporary folder, then the FSDP step comparison
 * (selftest_fsdp.c: GPT-2 runs whose checkpoints are compared) -> merges every rank's lines,
 * prints PASS/FAIL per line and a verdict, writes --results FILE -> removes the folder.
 */
#ifndef SR_AGENT_SELFTEST_H
#define SR_AGENT_SELFTEST_H

#include <stddef.h>

#include "base/strbuf.h"

/* One merged line: the same check over every rank that ran it. */
typedef struct sr_st_line {
    char half[8];  /* "cpu", "gpu" */
    char status[8]; /* "PASS", "FAIL", "SKIP" (could not run here: no failure, no pass) */
    char *group, *name, *detail, *metrics;
    int ranks;
} sr_st_line;

typedef struct sr_st_lines {
    sr_st_line *v;
    size_t n, cap;
} sr_st_lines;

/* Adds (or merges into the line of the same half, group and name) one check. */
void sr__st_add(sr_st_lines *l, const char *half, const char *status, const char *group, const char *name,
                const char *detail, const char *metrics);

/* Sub-runs: `shardrun JOB` with output to LOG, env_set (NAME=VALUE, or NULL) added to its
   environment.  Returns its exit code (128+N for a signal), or -1 when it could not start. */
int sr__st_subrun(const char *job, const char *log, const char *env_set, char *const *passthrough);
/* The signal that stopped the selftest (SIGINT, SIGTERM, SIGHUP during a sub-run), or 0. */
int sr__st_stopped(void);
/* The last lines of a log, indented, on stderr (what a failed sub-run said). */
void sr__st_show_log(const char *log);

typedef struct sr_st_fsdp {
    const char *dir;         /* the temporary folder */
    const char *half;        /* "cpu" or "gpu" */
    const char *backend;     /* of the runs under test: gloo or nccl */
    int nproc;               /* their ranks */
    int quick;
    char *const *passthrough; /* cluster flags for every sub-run */
} sr_st_fsdp;

/* Tolerances of an FSDP step comparison.  fp32 on both sides differs by summation order only
   (~1e-7 relative); bf16 compute on the device against fp32 on the CPU by bf16's rounding (2^-8)
   through the model, so there only a coarse bound holds: it catches a wrong kernel, not a drift. */
typedef struct sr_st_tols {
    double loss_rtol, norm_rtol;
    double tensor_rtol; /* |g - g_ref| / |g_ref| over each tensor (L2) */
    double elem_atol;   /* each element: |g - g_ref| <= elem_atol * max|g_ref| of its tensor (0: not checked) */
} sr_st_tols;

typedef struct sr_st_diff {
    size_t tensors, elements, bad_tensors, bad_elems;
    double worst_rel; /* the largest per-tensor relative L2 difference */
    char worst[200], first_bad[300];
} sr_st_diff;

/* Every gradient of a run against the reference's, from FULL_STATE_DICT checkpoints: the initial
   weights p0, the reference's and the run's after one step of AdamW with learning rate 1 and
   epsilon 1, which moves each parameter by d = -g / (|g| + 1).  Fills d; 0, or -1 with why in err
   (a file unreadable, tensors missing or of another size). */
int sr__st_compare_grads(const char *p0, const char *ref, const char *run, const sr_st_tols *t, sr_st_diff *d,
                         char *err, size_t errlen);

/* One FSDP step of a small GPT-2: FULL_SHARD on nproc ranks of `backend`, with and without
   offload, against the same step on one CPU rank; adds its lines. */
void sr__st_fsdp(sr_st_lines *l, const sr_st_fsdp *f);

int sr__cmd_selftest(int argc, char **argv);

#endif
