/* `shardrun env JOB.ini --rank R [--explain]`: exactly the variables rank R receives from
   shardrun, sorted, one NAME=VALUE per line; --explain adds who set each and why. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/key_probe.h"
#include "base/alloc.h"
#include "base/log.h"
#include "run/run.h"

int sr__cmd_env(sr__run *run, const sr__run_args *args, int rank, int explain) {
    if (sr__run_prepare(run, args) != 0) return SR__EXIT_CONFIG;
    sr__layout *l = &run->layout;
    int world = l->nnodes * l->nproc_per_node;
    if (rank < 0) rank = l->node_rank * l->nproc_per_node + l->first_local;
    if (rank >= world) {
        sr__log(SR_LOG_ERROR, "--rank %d: this run has ranks 0..%d (nnodes %d x nproc_per_node %d)", rank, world - 1,
                l->nnodes, l->nproc_per_node);
        return SR__EXIT_CONFIG;
    }
    int node = rank / l->nproc_per_node;
    if (node != l->node_rank) {
        /* show another node's rank: that node's agent would have node_rank = node */
        sr__setting *s = sr__config_get(&run->cfg, "shardrun", "node_rank");
        char v[32], where[64];
        snprintf(v, sizeof v, "%d", node);
        snprintf(where, sizeof where, "--rank %d", rank);
        free(s->value), free(s->where);
        s->value = sr__strdup(v);
        s->where = sr__strdup(where);
        if (!s->value || !s->where) {
            sr__log(SR_LOG_ERROR, "out of memory for node_rank = %d (%s)", node, where);
            return SR__EXIT_FAILED;
        }
        l->node_rank = node;
    }
    sr__env_block b = {0};
    if (sr__run_build_env(run, rank % l->nproc_per_node, &b, &run->cfg.diag) != 0) {
        sr__diag_flush(&run->cfg.diag);
        sr__env_block_free(&b);
        return SR__EXIT_CONFIG;
    }
    /* a model task's own [task] keys: only its create() knows them */
    if (sr__probe_model_keys(run, rank % l->nproc_per_node, &b) != 0) {
        sr__env_block_free(&b);
        return SR__EXIT_CONFIG;
    }
    sr__env_block_sort(&b);
    for (size_t i = 0; i < b.n; i++) {
        const sr__env_entry *e = &b.v[i];
        if (!e->value && !explain) continue; /* an unset is not a line of NAME=VALUE */
        if (explain)
            printf("%s%s%s%s\t# %s: %s\n", e->value ? "" : "unset ", e->name, e->value ? "=" : "",
                   e->value ? e->value : "", e->setter, e->because && *e->because ? e->because : "(no reason given)");
        else printf("%s=%s\n", e->name, e->value);
    }
    sr__env_block_free(&b);
    return 0;
}
