/*
 * Cluster detection: what the launching environment says about the topology when the job file
 * and the command line do not.  Order: torchrun-style variables, Slurm, Open MPI, MPICH/PMI.
 * Called once by the agent while it resolves the [shardrun] section.
 */
#ifndef SR__CONFIG_CLUSTER_H
#define SR__CONFIG_CLUSTER_H

#include <stddef.h>

typedef struct sr__cluster {
    const char *source;   /* "torchrun", "Slurm", "Open MPI", "PMI"; NULL: nothing detected */
    const char *launcher; /* its name for messages: "torchrun", "Slurm", "Open MPI", "MPICH (PMI)" */
    const char *vars;     /* the variables the layout was read from, for messages */
    char job_id[128];     /* an id every process of the launch shares ("" when the launcher
                                exposes none): the rendezvous port and token derive from it */
    int per_process;      /* the launcher started one process per worker: spawn no more */
    int rank, world_size; /* per_process only */
    int local_rank;       /* per_process only */
    int local_world_size; /* workers per node (per_process), else 0 = unknown */
    int node_rank, nnodes;
    char master_addr[256]; /* "" when unknown */
    int master_port;       /* 0 when unknown */
    char error[512];       /* non-empty: a variable is malformed, out of range or inconsistent with
                                another (names it, its value and what was expected) */
    char partial[160];     /* some of RANK, WORLD_SIZE, LOCAL_RANK set but not all, and no launcher
                                detected: what is set and what is missing ("" otherwise) */
} sr__cluster;

/* Reads `getenv_fn` (getenv in production; tests pass their own).  Every variable it reads is
   checked (numbers, ranges, rank below size, local layouts that divide the world), so that what
   it returns can be used without further checks when c->error is empty. */
void sr__cluster_detect(sr__cluster *c, const char *(*getenv_fn)(const char *name));

/* First host of a Slurm hostlist: "gpu[07-09,12],cpu1" -> "gpu07".  -1 when malformed. */
int sr__slurm_first_host(const char *list, char *out, size_t len);

#endif
