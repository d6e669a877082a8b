/*
 * The [shardrun] section's numbers and enumerations, typed: read once from the resolved section
 * (whose key table, config/env_table.c, already checked each value's type and spelling), with the
 * ranges the run needs checked here.  The run and the supervisor read these fields; nothing parses
 * a [shardrun] value again.  (The topology keys -- nnodes, node_rank, master_addr, ports -- are the
 * layout's, run/layout.h, which merges them with cluster detection.)
 *
 * Lifecycle (agent): run/run.c resolves the section -> sr__shardrun_log_level() at once (so that
 * the plugins' loading already logs at that level) -> the layout -> sr__shardrun_settings_read();
 * errors go to cfg->diag (exit 2, before any worker starts).
 */
#ifndef SR__CONFIG_SHARDRUN_SETTINGS_H
#define SR__CONFIG_SHARDRUN_SETTINGS_H

#include "shardrun/plugin.h"
#include "config/enums.h"
#include "config/job.h"

typedef struct sr__shardrun_settings {
    sr_log_level log_level;
    /* seconds, from 0 to 1e9 */
    double shutdown_grace; /* between SIGTERM and SIGKILL when a run is stopped */
    double preempt_grace;  /* a model task's time to checkpoint after SIGTERM to the agent */
    double restart_delay;  /* before a restart */
    double rdzv_timeout;   /* how long other nodes wait for node 0's store */
    double rdzv_last_call; /* elastic: once MIN nodes joined, how long to wait for more */
    double hang_timeout;   /* without progress, a hang; 0: no hang verdict */
    int max_restarts;
    sr__elastic_join elastic_join; /* elastic: when an arriving node is taken in */
    int metrics_port;              /* 0: no Prometheus endpoint */
} sr__shardrun_settings;

/* [shardrun] log_level, resolved. */
sr_log_level sr__shardrun_log_level(sr__job *cfg);
/* Every field from the resolved section (log_level too); problems go to cfg->diag. */
void sr__shardrun_settings_read(sr__job *cfg, sr__shardrun_settings *s);

#endif
