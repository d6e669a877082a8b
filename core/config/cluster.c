#include "config/cluster.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "config/value.h"

/* What a launcher may say, bounded by what the job file's keys allow (nproc_per_node <= 4096,
   nnodes <= 65536): a value beyond them is a mistake, and products of them stay within an int. */
enum { MAX_LOCAL = 4096, MAX_NODES = 65536, MAX_WORLD = MAX_LOCAL * MAX_NODES };

/* The first problem found; later ones are not recorded (the first one is the one to fix). */
__attribute__((format(printf, 2, 3))) static void bad(sr__cluster *c, const char *fmt, ...) {
    if (c->error[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->error, sizeof c->error, fmt, ap);
    va_end(ap);
}

/* Reads an integer variable that must lie in [lo, hi] (`what` names it for the message): 1 when
   present and valid, 0 when absent, -1 when malformed or out of range (c->error says which,
   with the value and what was expected). */
static int get_int(const char *(*ge)(const char *), sr__cluster *c, const char *name, long long lo, long long hi,
                   const char *what, int *out) {
    const char *v = ge(name);
    long long x;
    if (!v) return 0;
    if (sr__parse_int(v, &x) != 0 || x < lo || x > hi) {
        bad(c, "%s=\"%.64s\" is not %s (a whole number from %lld to %lld)", name, v, what, lo, hi);
        return -1;
    }
    *out = (int)x;
    return 1;
}

/* rank < size, for two variables read from the launcher. */
static int check_below(sr__cluster *c, const char *rank_v, int r, const char *size_v, int w) {
    if (r < w) return 0;
    bad(c, "%s=%d is not below %s=%d (ranks count from 0)", rank_v, r, size_v, w);
    return -1;
}

/* The local layout of a per-process launcher: `lw` processes on each of w / lw nodes. */
static int check_local(sr__cluster *c, const char *size_v, int w, const char *lsize_v, int lw) {
    if (lw > w) {
        bad(c, "%s=%d is larger than %s=%d", lsize_v, lw, size_v, w);
        return -1;
    }
    if (w % lw) {
        bad(c, "%s=%d is not a multiple of %s=%d: shardrun needs the same number of workers on every node", size_v, w,
            lsize_v, lw);
        return -1;
    }
    return 0;
}

static int check_addr(sr__cluster *c, const char *name, const char *v) {
    if (*v && strlen(v) < sizeof c->master_addr && !strpbrk(v, " \t\n")) return 0;
    bad(c, "%s=\"%.64s\" is not a host name or address", name, v);
    return -1;
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

static int detect_torchrun(sr__cluster *c, const char *(*ge)(const char *)) {
    int r = 0, w = 0, lr = 0, lw = 0, gr = 0, port = 0;
    const char *need[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK"};
    const char *set[3], *unset[3];
    int ns = 0, nu = 0;
    for (int i = 0; i < 3; i++) {
        if (ge(need[i])) set[ns++] = need[i];
        else unset[nu++] = need[i];
    }
    if (!ns) return 0;
    if (nu) {
        /* not torchrun (which sets all three); another launcher may still be detected */
        if (ns == 2)
            snprintf(c->partial, sizeof c->partial, "%s and %s are set but %s is not", set[0], set[1], unset[0]);
        else snprintf(c->partial, sizeof c->partial, "%s is set but %s and %s are not", set[0], unset[0], unset[1]);
        return 0;
    }
    c->source = c->launcher = "torchrun";
    c->vars = "RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE";
    if (ge("TORCHELASTIC_RUN_ID")) snprintf(c->job_id, sizeof c->job_id, "torchrun-%s", ge("TORCHELASTIC_RUN_ID"));
    if (get_int(ge, c, "RANK", 0, MAX_WORLD - 1, "a rank", &r) < 0 ||
        get_int(ge, c, "WORLD_SIZE", 1, MAX_WORLD, "a number of processes", &w) < 0 ||
        get_int(ge, c, "LOCAL_RANK", 0, MAX_LOCAL - 1, "a local rank", &lr) < 0)
        return 1;
    int has_lw = get_int(ge, c, "LOCAL_WORLD_SIZE", 1, MAX_LOCAL, "a number of processes per node", &lw);
    int has_gr = get_int(ge, c, "GROUP_RANK", 0, MAX_NODES - 1, "a node rank", &gr);
    if (has_lw < 0 || has_gr < 0 || get_int(ge, c, "MASTER_PORT", 1, 65535, "a TCP port", &port) < 0) return 1;
    if (ge("MASTER_ADDR") && check_addr(c, "MASTER_ADDR", ge("MASTER_ADDR")) < 0) return 1;
    if (check_below(c, "RANK", r, "WORLD_SIZE", w) < 0) return 1;
    if (has_lw) {
        if (check_below(c, "LOCAL_RANK", lr, "LOCAL_WORLD_SIZE", lw) < 0 ||
            check_local(c, "WORLD_SIZE", w, "LOCAL_WORLD_SIZE", lw) < 0)
            return 1;
    } else {
        /* without LOCAL_WORLD_SIZE assume a single node */
        if (lr >= w) {
            bad(c, "LOCAL_RANK=%d is not below WORLD_SIZE=%d (without LOCAL_WORLD_SIZE every rank is on one node)", lr,
                w);
            return 1;
        }
        if (w > MAX_LOCAL) {
            bad(c,
                "WORLD_SIZE=%d without LOCAL_WORLD_SIZE means %d processes on one node, more than %d; set "
                "LOCAL_WORLD_SIZE",
                w, w, MAX_LOCAL);
            return 1;
        }
        lw = w;
    }
    c->per_process = 1;
    c->rank = r, c->world_size = w, c->local_rank = lr, c->local_world_size = lw;
    c->nnodes = w / lw;
    c->node_rank = has_gr ? gr : r / lw;
    if (c->node_rank >= c->nnodes) {
        bad(c, "GROUP_RANK=%d is not below the number of nodes, %d (WORLD_SIZE=%d / LOCAL_WORLD_SIZE=%d)", gr,
            c->nnodes, w, lw);
        return 1;
    }
    c->master_port = port;
    if (ge("MASTER_ADDR")) snprintf(c->master_addr, sizeof c->master_addr, "%s", ge("MASTER_ADDR"));
    return 1;
}

static int detect_slurm(sr__cluster *c, const char *(*ge)(const char *)) {
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
    int has_ntasks = get_int(ge, c, ntasks_var, 1, MAX_WORLD, "a number of tasks", &ntasks);
    if (get_int(ge, c, "SLURM_PROCID", 0, MAX_WORLD - 1, "a task rank", &procid) < 0 || has_ntasks < 0 ||
        get_int(ge, c, "SLURM_LOCALID", 0, MAX_LOCAL - 1, "a local task rank", &localid) < 0 ||
        get_int(ge, c, "SLURM_NODEID", 0, MAX_NODES - 1, "a node rank", &nodeid) < 0 ||
        get_int(ge, c, nnodes_var, 1, MAX_NODES, "a number of nodes", &nnodes) < 0)
        return 1;
    if (check_below(c, "SLURM_NODEID", nodeid, nnodes_var, nnodes) < 0) return 1;
    if (has_ntasks && check_below(c, "SLURM_PROCID", procid, ntasks_var, ntasks) < 0) return 1;
    c->node_rank = nodeid;
    c->nnodes = nnodes;
    const char *list = ge("SLURM_STEP_NODELIST") ? ge("SLURM_STEP_NODELIST") : ge("SLURM_JOB_NODELIST");
    if (list && sr__slurm_first_host(list, c->master_addr, sizeof c->master_addr) != 0) {
        bad(c, "cannot read the first host of the Slurm node list \"%s\"", list);
        return 1;
    }
    /* In a batch script (no step) shardrun is one process on the first node: node mode. */
    if (ge("SLURM_STEP_ID") && ntasks > c->nnodes) {
        c->per_process = 1;
        c->rank = procid, c->world_size = ntasks, c->local_rank = localid;
        if (ntasks % c->nnodes) {
            bad(c, "Slurm step has %d tasks on %d nodes: shardrun needs the same number of tasks on every node", ntasks,
                c->nnodes);
            return 1;
        }
        c->local_world_size = ntasks / c->nnodes;
        if (c->local_world_size > MAX_LOCAL) {
            bad(c, "Slurm step has %d tasks per node, more than %d", c->local_world_size, MAX_LOCAL);
            return 1;
        }
        if (localid >= c->local_world_size) {
            bad(c, "SLURM_LOCALID=%d is not below the step's tasks per node, %d (%s=%d / %s=%d)", localid,
                c->local_world_size, ntasks_var, ntasks, nnodes_var, nnodes);
            return 1;
        }
    }
    return 1;
}

static int detect_mpi(sr__cluster *c, const char *(*ge)(const char *), const char *source, const char *launcher,
                      const char *vars, const char *rank_v, const char *size_v, const char *lrank_v,
                      const char *lsize_v, const char *job_v) {
    int r = 0, w = 0, lr = 0, lw = 0;
    if (!ge(rank_v) || !ge(size_v)) return 0;
    c->source = source;
    c->launcher = launcher;
    c->vars = vars;
    if (job_v && ge(job_v)) snprintf(c->job_id, sizeof c->job_id, "%s-%s", source, ge(job_v));
    if (get_int(ge, c, rank_v, 0, MAX_WORLD - 1, "a rank", &r) < 0 ||
        get_int(ge, c, size_v, 1, MAX_WORLD, "a number of processes", &w) < 0 ||
        check_below(c, rank_v, r, size_v, w) < 0)
        return 1;
    int hl = get_int(ge, c, lrank_v, 0, MAX_LOCAL - 1, "a local rank", &lr);
    int hs = get_int(ge, c, lsize_v, 1, MAX_LOCAL, "a number of processes per node", &lw);
    if (hl < 0 || hs < 0) return 1;
    if (hl != hs) {
        bad(c, "%s is set but %s is not: the launcher sets both or neither", hl ? lrank_v : lsize_v,
            hl ? lsize_v : lrank_v);
        return 1;
    }
    if (hl) {
        if (check_below(c, lrank_v, lr, lsize_v, lw) < 0 || check_local(c, size_v, w, lsize_v, lw) < 0) return 1;
    } else {
        /* no local info: a single node */
        if (w > MAX_LOCAL) {
            bad(c, "%s=%d without %s means %d processes on one node, more than %d", size_v, w, lsize_v, w, MAX_LOCAL);
            return 1;
        }
        lr = r, lw = w;
    }
    c->per_process = 1;
    c->rank = r, c->world_size = w, c->local_rank = lr, c->local_world_size = lw;
    c->node_rank = r / lw;
    c->nnodes = w / lw;
    return 1;
}

void sr__cluster_detect(sr__cluster *c, const char *(*ge)(const char *)) {
    memset(c, 0, sizeof *c);
    int found =
        detect_torchrun(c, ge) || detect_slurm(c, ge) ||
        /* Open MPI's job id is shared by every process of one mpirun; MPICH's Hydra exposes none */
        detect_mpi(c, ge, "Open MPI", "Open MPI",
                   "OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_SIZE",
                   "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                   "OMPI_COMM_WORLD_LOCAL_SIZE",
                   ge("OMPI_MCA_ess_base_jobid") ? "OMPI_MCA_ess_base_jobid" : "PMIX_NAMESPACE") ||
        detect_mpi(c, ge, "PMI", "MPICH (PMI)", "PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS", "PMI_RANK",
                   "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", NULL);
    if (found) c->partial[0] = 0; /* a launcher was found: stray torchrun-style variables are not one */
    /* read by each worker of a model task (how often Slurm requeued the job), checked here once */
    int restarts;
    get_int(ge, c, "SLURM_RESTART_COUNT", 0, 1 << 30, "a count of restarts", &restarts);
}
