#include "config/cluster.h"

#include <stdio.h>
#include <string.h>

#include "config/value.h"

/* Reads an integer variable; 1 when present and valid, 0 when absent, -1 when malformed. */
static int get_int(const char *(*ge)(const char *), sr_cluster *c, const char *name, int *out) {
    const char *v = ge(name);
    long long x;
    if (!v) return 0;
    if (sr__parse_int(v, &x) != 0 || x < 0 || x > 1 << 30) {
        snprintf(c->error, sizeof c->error, "%s=\"%s\" is not a non-negative integer", name, v);
        return -1;
    }
    *out = (int)x;
    return 1;
}

int sr__slurm_first_host(const char *list, char *out, size_t len) {
    size_t i = 0, o = 0;
    while (list[i] && list[i] != ',' && list[i] != '[') {
        if (o + 1 >= len) return -1;
        out[o++] = list[i++];
    }
    if (o == 0) return -1;
    if (list[i] == '[') {
        i++;
        /* copy the first number of the first range, keeping its zero padding */
        size_t start = o;
        while (list[i] >= '0' && list[i] <= '9') {
            if (o + 1 >= len) return -1;
            out[o++] = list[i++];
        }
        if (o == start || (list[i] != '-' && list[i] != ',' && list[i] != ']')) return -1;
        if (!strchr(list + i, ']')) return -1;
    }
    out[o] = 0;
    return 0;
}

static int detect_torchrun(sr_cluster *c, const char *(*ge)(const char *)) {
    int r = 0, w = 0, lr = 0, lw = 0, gr = 0, port = 0;
    if (!ge("RANK") || !ge("WORLD_SIZE") || !ge("LOCAL_RANK")) return 0;
    c->source = c->launcher = "torchrun";
    c->vars = "RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE";
    if (ge("TORCHELASTIC_RUN_ID")) snprintf(c->job_id, sizeof c->job_id, "torchrun-%s", ge("TORCHELASTIC_RUN_ID"));
    if (get_int(ge, c, "RANK", &r) < 0 || get_int(ge, c, "WORLD_SIZE", &w) < 0 ||
        get_int(ge, c, "LOCAL_RANK", &lr) < 0)
        return 1;
    int has_lw = get_int(ge, c, "LOCAL_WORLD_SIZE", &lw);
    int has_gr = get_int(ge, c, "GROUP_RANK", &gr);
    if (has_lw < 0 || has_gr < 0 || get_int(ge, c, "MASTER_PORT", &port) < 0) return 1;
    if (has_lw == 0) lw = w; /* without LOCAL_WORLD_SIZE assume a single node */
    c->per_process = 1;
    c->rank = r, c->world_size = w, c->local_rank = lr, c->local_world_size = lw;
    c->node_rank = has_gr ? gr : (lw ? r / lw : 0);
    c->nnodes = lw ? (w + lw - 1) / lw : 1;
    c->master_port = port;
    if (ge("MASTER_ADDR")) snprintf(c->master_addr, sizeof c->master_addr, "%s", ge("MASTER_ADDR"));
    return 1;
}

static int detect_slurm(sr_cluster *c, const char *(*ge)(const char *)) {
    int procid = 0, ntasks = 0, localid = 0, nodeid = 0, nnodes = 0;
    if (!ge("SLURM_PROCID") || !ge("SLURM_NNODES") || !ge("SLURM_NODEID")) return 0;
    c->source = c->launcher = "Slurm";
    c->vars = "SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID, SLURM_NODEID, SLURM_STEP_NUM_NODES";
    if (ge("SLURM_JOB_ID"))
        snprintf(c->job_id, sizeof c->job_id, "slurm-%s.%s", ge("SLURM_JOB_ID"),
                 ge("SLURM_STEP_ID") ? ge("SLURM_STEP_ID") : "batch");
    /* Inside an srun step the STEP_ counts describe the step; outside (a batch script) the job. */
    const char *ntasks_var = ge("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
    const char *nnodes_var = ge("SLURM_STEP_NUM_NODES") ? "SLURM_STEP_NUM_NODES" : "SLURM_NNODES";
    if (get_int(ge, c, "SLURM_PROCID", &procid) < 0 || get_int(ge, c, ntasks_var, &ntasks) < 0 ||
        get_int(ge, c, "SLURM_LOCALID", &localid) < 0 || get_int(ge, c, "SLURM_NODEID", &nodeid) < 0 ||
        get_int(ge, c, nnodes_var, &nnodes) < 0)
        return 1;
    c->node_rank = nodeid;
    c->nnodes = nnodes ? nnodes : 1;
    const char *list = ge("SLURM_STEP_NODELIST") ? ge("SLURM_STEP_NODELIST") : ge("SLURM_JOB_NODELIST");
    if (list && sr__slurm_first_host(list, c->master_addr, sizeof c->master_addr) != 0) {
        snprintf(c->error, sizeof c->error, "cannot read the first host of the Slurm node list \"%s\"", list);
        return 1;
    }
    /* In a batch script (no step) shardrun is one process on the first node: node mode. */
    if (ge("SLURM_STEP_ID") && ntasks > c->nnodes) {
        c->per_process = 1;
        c->rank = procid, c->world_size = ntasks, c->local_rank = localid;
        if (ntasks % c->nnodes) {
            snprintf(c->error, sizeof c->error,
                     "Slurm step has %d tasks on %d nodes: shardrun needs the same number of tasks on every node",
                     ntasks, c->nnodes);
            return 1;
        }
        c->local_world_size = ntasks / c->nnodes;
    }
    return 1;
}

static int detect_mpi(sr_cluster *c, const char *(*ge)(const char *), const char *source, const char *launcher,
                      const char *vars, const char *rank_v, const char *size_v, const char *lrank_v,
                      const char *lsize_v, const char *job_v) {
    int r = 0, w = 0, lr = 0, lw = 0;
    if (!ge(rank_v) || !ge(size_v)) return 0;
    c->source = source;
    c->launcher = launcher;
    c->vars = vars;
    if (job_v && ge(job_v)) snprintf(c->job_id, sizeof c->job_id, "%s-%s", source, ge(job_v));
    if (get_int(ge, c, rank_v, &r) < 0 || get_int(ge, c, size_v, &w) < 0) return 1;
    int hl = get_int(ge, c, lrank_v, &lr), hs = get_int(ge, c, lsize_v, &lw);
    if (hl < 0 || hs < 0) return 1;
    if (!hl || !hs || lw == 0) lr = r, lw = w; /* no local info: a single node */
    c->per_process = 1;
    c->rank = r, c->world_size = w, c->local_rank = lr, c->local_world_size = lw;
    c->node_rank = r / lw;
    c->nnodes = (w + lw - 1) / lw;
    return 1;
}

void sr__cluster_detect(sr_cluster *c, const char *(*ge)(const char *)) {
    memset(c, 0, sizeof *c);
    if (detect_torchrun(c, ge) || detect_slurm(c, ge) ||
        /* Open MPI's job id is shared by every process of one mpirun; MPICH's Hydra exposes none */
        detect_mpi(c, ge, "Open MPI", "Open MPI",
                   "OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_SIZE",
                   "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                   "OMPI_COMM_WORLD_LOCAL_SIZE", ge("OMPI_MCA_ess_base_jobid") ? "OMPI_MCA_ess_base_jobid" : "PMIX_NAMESPACE") ||
        detect_mpi(c, ge, "PMI", "MPICH (PMI)", "PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS", "PMI_RANK",
                   "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", NULL))
        return;
}
