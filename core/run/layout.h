/*
 * The layout of a run: how many nodes and workers, which of them this agent starts, where
 * rank 0's rendezvous lives.  Resolved once by the agent from the [shardrun] settings and cluster
 * detection (sr__layout_resolve), then turned into each worker's sr_topology.
 */
#ifndef SR__CORE_LAYOUT_H
#define SR__CORE_LAYOUT_H

#include "shardrun/plugin.h"
#include "config/job.h"

typedef struct sr__layout {
    int nproc_per_node, nnodes, node_rank;
    char *master_addr;
    int master_port;
    char *run_id;
    int first_local, spawn_count; /* local ranks this agent starts */
    const char *cluster_source;   /* NULL when no cluster launcher was detected */
    const char *launcher;         /* its name for messages ("Open MPI"), or NULL */
    int per_process;              /* a launcher started this process as one rank */
    char launcher_job_id[128];    /* what every process of that launch shares, or "" */
    int max_restarts;             /* [shardrun] max_restarts */
    /* an elastic job (nnodes = MIN:MAX): nnodes and node_rank above are those of the current
       membership (the rendezvous gives them at every attempt; nnodes_max until the first);
       node_rank 0 as given marks the node that hosts the rendezvous */
    int elastic, nnodes_min, nnodes_max;
    int elastic_host;  /* node_rank was 0: this node hosts the rendezvous (node_rank is then 0 until
                         the first world gives every node its place) */
    int restart_count; /* the job-wide attempt the workers about to start belong to */
    /* rdzv_backend = etcd: agents meet in etcd (an elastic job, whatever nnodes says: N is N:N); the
       node that wins the election hosts the workers' store, and master_addr becomes its address at
       every attempt.  NULL with the built-in store */
    char *etcd_endpoints;
} sr__layout;

/* Applies cluster detection to unset [shardrun] keys, standalone, free ports.  Errors go to
   cfg->diag. */
void sr__layout_resolve(sr__job *cfg, sr__layout *out);
void sr__layout_topology(const sr__layout *l, int local_rank, sr_topology *out);
void sr__layout_free(sr__layout *l);

/* A free TCP port on this host (what torchrun does for --standalone), or -1. */
int sr__free_port(void);

#endif
