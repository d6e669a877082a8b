/*
 * The torch plugin: what torchrun gives each worker.  It writes the topology variables byte for
 * byte as torchrun (torch.distributed.run / the elastic agent) does, plus NODE_RANK.  The host
 * resolves the topology (job file, flags, cluster detection); this plugin only spells it.
 * Its init hook then creates the process group for main tasks, as torch's env:// init would
 * (exec: programs form their own, from the same variables).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardrun/plugin.h"

static const sr_var torch_writes[] = {
    {"RANK", "global rank: `GROUP_RANK * LOCAL_WORLD_SIZE + LOCAL_RANK`"},
    {"WORLD_SIZE", "workers over all nodes"},
    {"LOCAL_RANK", "rank on this node (always set: accelerate decides \"distributed\" from it)"},
    {"LOCAL_WORLD_SIZE", "workers on this node"},
    {"GROUP_RANK", "this node's index (torchrun's name)"},
    {"NODE_RANK", "this node's index (Lightning's and others' name)"},
    {"GROUP_WORLD_SIZE", "number of nodes"},
    {"ROLE_RANK", "same as RANK (one role)"},
    {"ROLE_WORLD_SIZE", "same as WORLD_SIZE (one role)"},
    {"ROLE_NAME", "`default`"},
    {"MASTER_ADDR", "`[shardrun] master_addr` (`localhost` with standalone)"},
    {"MASTER_PORT", "`[shardrun] master_port` (a free port when 0 or standalone)"},
    {"TORCHELASTIC_RUN_ID", "`[shardrun] run_id` (`none`, or a fresh uuid with standalone)"},
    {"TORCHELASTIC_RESTART_COUNT", "the job-wide attempt: `0`, then 1, 2, ... after each restart"},
    {"TORCHELASTIC_MAX_RESTARTS", "`[shardrun] max_restarts`"},
    {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "`1` unless already set"},
    {"OMP_NUM_THREADS", "`1` when unset and more than one worker runs on the node; an exported value is kept"},
    {NULL, NULL},
};

static const sr_key torch_keys[] = {
    {"backend", SR_KEY_ENUM, "auto", "auto|gloo|nccl", 0, 0, 0, NULL,
     "process-group backend; auto: nccl when a CUDA device is visible, else gloo"},
    {"transport", SR_KEY_ENUM, "auto", "auto|shm|tcp", 0, 0, 0, NULL,
     "how gloo groups talk: shm (shared memory) for a group whose ranks all share a host, shm inside each host and "
     "Gloo between hosts for a group that spans hosts with several ranks on one, Gloo's TCP for the others; "
     "tcp: Gloo for every group; auto: shm, or Gloo where shared memory cannot be set up; nccl ignores it"},
    {"timeout", SR_KEY_FLOAT, "1800", NULL, 0, 0, 0, NULL,
     "seconds a rendezvous or collective may wait for the other ranks before failing (torch's default: 1800)"},
    {NULL, 0, NULL, NULL, 0, 0, 0, NULL, NULL},
};

static int set_int(const sr_host_api *api, sr_host *h, const char *name, int v, const char *because) {
    char buf[24];
    snprintf(buf, sizeof buf, "%d", v);
    return api->env_set(h, name, buf, because);
}

static int torch_write_env(const sr_host_api *api, sr_host *h) {
    const sr_topology *t = api->topology(h);
    const char *const rank_why = "shardrun.node_rank,shardrun.nproc_per_node,local rank";
    int bad = 0;
    bad |= set_int(api, h, "RANK", t->rank, rank_why);
    bad |= set_int(api, h, "WORLD_SIZE", t->world_size, "shardrun.nnodes,shardrun.nproc_per_node");
    bad |= set_int(api, h, "LOCAL_RANK", t->local_rank, "local rank");
    bad |= set_int(api, h, "LOCAL_WORLD_SIZE", t->local_world_size, "shardrun.nproc_per_node");
    bad |= set_int(api, h, "GROUP_RANK", t->node_rank, "shardrun.node_rank");
    bad |= set_int(api, h, "NODE_RANK", t->node_rank, "shardrun.node_rank");
    bad |= set_int(api, h, "GROUP_WORLD_SIZE", t->nnodes, "shardrun.nnodes");
    bad |= set_int(api, h, "ROLE_RANK", t->rank, rank_why);
    bad |= set_int(api, h, "ROLE_WORLD_SIZE", t->world_size, "shardrun.nnodes,shardrun.nproc_per_node");
    bad |= api->env_set(h, "ROLE_NAME", "default", "torchrun's single role");
    bad |= api->env_set(h, "MASTER_ADDR", t->master_addr, "shardrun.master_addr");
    bad |= set_int(api, h, "MASTER_PORT", t->master_port, "shardrun.master_port");
    bad |= api->env_set(h, "TORCHELASTIC_RUN_ID", t->run_id, "shardrun.run_id");
    /* a host older than the restart fields has no restarts */
    int has_restarts = t->struct_size >= offsetof(sr_topology, max_restarts) + sizeof t->max_restarts;
    bad |= set_int(api, h, "TORCHELASTIC_RESTART_COUNT", has_restarts ? t->restart_count : 0,
                   "the job's restart count (shardrun.max_restarts)");
    bad |= set_int(api, h, "TORCHELASTIC_MAX_RESTARTS", has_restarts ? t->max_restarts : 0, "shardrun.max_restarts");
    if (!api->env_get(h, "TORCH_NCCL_ASYNC_ERROR_HANDLING"))
        bad |= api->env_set(h, "TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", "torchrun's default");
    if (t->local_world_size > 1 && !api->env_get(h, "OMP_NUM_THREADS"))
        bad |= api->env_set(h, "OMP_NUM_THREADS", "1", "unset and several workers share this node");
    return bad ? -1 : 0;
}

static int torch_validate(const sr_host_api *api, sr_host *h) {
    if (atof(api->get(h, "timeout")) <= 0) {
        api->reject(h, "timeout", "must be more than 0 seconds");
        return -1;
    }
    return 0;
}

static int torch_init(const sr_host_api *api, sr_host *h) {
    if (strcmp(api->task_kind(h), "main")) return 0;
    return api->init_process_group(h, api->get(h, "backend"), atof(api->get(h, "timeout")));
}

__attribute__((visibility("default"))) const sr_plugin shardrun_plugin = {
    .abi_version = SR_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(sr_plugin),
    .name = "torch",
    .version = "0.1.0",
    .description = "topology variables as torchrun writes them, and the process group",
    .requires = NULL,
    .keys = torch_keys,
    .writes = torch_writes,
    .validate = torch_validate,
    .write_env = torch_write_env,
    .init = torch_init,
};
