/*
 * selftest's FSDP step comparison (see selftest.h and selftest_fsdp.c): GPT-2 runs whose
 * checkpoints are compared gradient by gradient.
 */
#ifndef SR__AGENT_SELFTEST_FSDP_H
#define SR__AGENT_SELFTEST_FSDP_H

#include <stddef.h>

#include "cli/selftest_lines.h"

typedef struct sr__selftest_fsdp_args {
    const char *dir;     /* the temporary folder */
    const char *half;    /* "cpu" or "gpu" */
    const char *backend; /* of the runs under test: gloo or nccl */
    int nproc;           /* their ranks */
    int quick;
    char *const *passthrough; /* cluster flags for every sub-run */
} sr__selftest_fsdp_args;

/* Tolerances of an FSDP step comparison.  fp32 on both sides differs by summation order only
   (~1e-7 relative); bf16 compute on the device against fp32 on the CPU by bf16's rounding (2^-8)
   through the model, so there only a coarse bound holds: it catches a wrong kernel, not a drift. */
typedef struct sr__selftest_tols {
    double loss_rtol, norm_rtol;
    double tensor_rtol; /* |g - g_ref| / |g_ref| over each tensor (L2) */
    double elem_atol;   /* each element: |g - g_ref| <= elem_atol * max|g_ref| of its tensor (0: not checked) */
} sr__selftest_tols;

typedef struct sr__selftest_diff {
    size_t tensors, elements, bad_tensors, bad_elems;
    double worst_rel; /* the largest per-tensor relative L2 difference */
    char worst[200], first_bad[300];
} sr__selftest_diff;

/* Every gradient of a run against the reference's, from FULL_STATE_DICT checkpoints: the initial
   weights p0, the reference's and the run's after one step of AdamW with learning rate 1 and
   epsilon 1, which moves each parameter by d = -g / (|g| + 1).  Fills d; 0, or -1 with why in err
   (a file unreadable, tensors missing or of another size). */
int sr__selftest_compare_grads(const char *p0, const char *ref, const char *run, const sr__selftest_tols *t,
                               sr__selftest_diff *d, char *err, size_t errlen);

/* One FSDP step of a small GPT-2: FULL_SHARD on nproc ranks of `backend`, with and without
   offload, against the same step on one CPU rank; adds its lines. */
void sr__selftest_fsdp(sr__selftest_lines *l, const sr__selftest_fsdp_args *f);

#endif
