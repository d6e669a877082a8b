#define _GNU_SOURCE
#include "config/env_foreign.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "config/value.h"

extern char **environ;

/* The FSDP_* and ACCELERATE_* variables accelerate (1.x, src/accelerate) reads from the
   environment; a name ending in '_' stands for every name it begins.  Those shardrun's plugins
   write are among them; the others change nothing in a shardrun run. */
static const char *const ACCELERATE_READS[] = {
    "ACCELERATE_ALLOW_CP_STANDALONE",
    "ACCELERATE_BYPASS_DEVICE_MAP",
    "ACCELERATE_CONFIG_DS_FIELDS",
    "ACCELERATE_CPU_AFFINITY",
    "ACCELERATE_DEBUG_MODE",
    "ACCELERATE_DEBUG_RDV_FILE",
    "ACCELERATE_DEEPSPEED_CONFIG_FILE",
    "ACCELERATE_DEEPSPEED_MOE_LAYER_CLS_NAMES",
    "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE",
    "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_NVME_PATH",
    "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE",
    "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_NVME_PATH",
    "ACCELERATE_DEEPSPEED_ZERO3_INIT",
    "ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL",
    "ACCELERATE_DEEPSPEED_ZERO_STAGE",
    "ACCELERATE_DOWNCAST_BF16",
    "ACCELERATE_DYNAMO_BACKEND",
    "ACCELERATE_DYNAMO_MODE",
    "ACCELERATE_DYNAMO_USE_DYNAMIC",
    "ACCELERATE_DYNAMO_USE_FULLGRAPH",
    "ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION",
    "ACCELERATE_ENABLE_RICH",
    "ACCELERATE_FP8_",
    "ACCELERATE_GRADIENT_ACCUMULATION_STEPS",
    "ACCELERATE_GRADIENT_CLIPPING",
    "ACCELERATE_INIT_INCLUDE_BUFFERS",
    "ACCELERATE_IN_TPU_POD",
    "ACCELERATE_LOG_LEVEL",
    "ACCELERATE_MIXED_PRECISION",
    "ACCELERATE_NUM_PROCESSES",
    "ACCELERATE_SAGEMAKER_DISTRIBUTED_TYPE",
    "ACCELERATE_TORCH_DEVICE",
    "ACCELERATE_USE_CPU",
    "ACCELERATE_USE_DEEPSPEED",
    "ACCELERATE_USE_FSDP",
    "ACCELERATE_USE_MEGATRON_LM",
    "ACCELERATE_USE_PARALLELISM_CONFIG",
    "ACCELERATE_USE_SAGEMAKER",
    "FSDP_ACTIVATION_CHECKPOINTING",
    "FSDP_AUTO_WRAP_POLICY",
    "FSDP_BACKWARD_PREFETCH",
    "FSDP_CPU_RAM_EFFICIENT_LOADING",
    "FSDP_FORWARD_PREFETCH",
    "FSDP_IGNORED_MODULES",
    "FSDP_MIN_NUM_PARAMS",
    "FSDP_OFFLOAD_PARAMS",
    "FSDP_RESHARD_AFTER_FORWARD",
    "FSDP_SHARDING_STRATEGY",
    "FSDP_STATE_DICT_TYPE",
    "FSDP_SYNC_MODULE_STATES",
    "FSDP_TRANSFORMER_CLS_TO_WRAP",
    "FSDP_USE_ORIG_PARAMS",
    "FSDP_VERSION",
};
#define NREADS (sizeof ACCELERATE_READS / sizeof *ACCELERATE_READS)

static int matches(const char *known, const char *name) {
    size_t n = strlen(known);
    return known[n - 1] == '_' ? !strncmp(name, known, n) && name[n] : !strcmp(name, known);
}

static int listed(const char *const *names, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (names[i] && matches(names[i], name)) return 1;
    return 0;
}

static void check_one(const char *name, const char *const *used, size_t nused, sr__diag *diag) {
    if (listed(used, nused, name)) return;
    if (listed(ACCELERATE_READS, NREADS, name)) {
        sr__log(SR_LOG_WARN,
                "environment variable %s is one accelerate reads, not one shardrun uses in this run: it changes "
                "nothing here (`shardrun plugins` lists the variables each plugin uses)",
                name);
        return;
    }
    const char **cands = sr__malloc((nused + NREADS) * sizeof *cands);
    size_t n = 0;
    for (size_t i = 0; cands && i < nused; i++)
        if (used[i]) cands[n++] = used[i];
    for (size_t i = 0; cands && i < NREADS; i++)
        if (ACCELERATE_READS[i][strlen(ACCELERATE_READS[i]) - 1] != '_') cands[n++] = ACCELERATE_READS[i];
    const char *best = cands ? sr__closest(name, cands, n) : NULL;
    sr__diag_add(diag,
                 "environment variable %s is no variable shardrun or accelerate reads%s%s%s: fix its name or unset it "
                 "(`shardrun plugins` lists the variables shardrun uses)",
                 name, best ? " (did you mean " : "", best ? best : "", best ? "?)" : "");
    free(cands);
}

void sr__env_foreign_check(const char *const *used, size_t nused, sr__diag *diag) {
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, "FSDP_", 5) && strncmp(*e, "ACCELERATE_", 11)) continue;
        const char *eq = strchr(*e, '=');
        char *name = eq ? sr__strndup(*e, (size_t)(eq - *e)) : NULL;
        if (!name) {
            sr__diag_add(diag, "out of memory checking the environment's FSDP_* and ACCELERATE_* variables");
            return;
        }
        check_one(name, used, nused, diag);
        free(name);
    }
}
