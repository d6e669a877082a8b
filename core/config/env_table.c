#include "config/env_table.h"

#include <limits.h>
#include <string.h>

#include "config/enums.h"
#include "config/value.h"

#define NOLIM 0, 0
const sr_key sr__shardrun_keys[] = {
    {"task", SR_KEY_STRING, NULL, NULL, 0, NOLIM, NULL,
     "the task: a .so path (relative to the job file), a bare name looked up in tasks_path, "
     "or exec:PROGRAM ARGS... (required)"},
    {"plugins", SR_KEY_LIST, NULL, NULL, 0, NOLIM, NULL, "plugins in execution order, e.g. torch,accelerate"},
    {"nproc_per_node", SR_KEY_INT, "1", NULL, 0, 1, 4096, NULL,
     "worker processes on this node (torchrun --nproc-per-node)"},
    {"nnodes", SR_KEY_INT, "1", NULL, SR__KEY_INT_RANGE, 1, 65536, NULL,
     "number of nodes (torchrun --nnodes); MIN:MAX makes the job elastic: it starts with MIN to MAX nodes, and "
     "nodes may leave and join while it runs (docs/elastic.md)"},
    {"node_rank", SR_KEY_INT, "0", NULL, 0, 0, 65535, NULL,
     "this node's index, 0..nnodes-1 (torchrun --node-rank); in an elastic job 0 marks the node that hosts the "
     "rendezvous and any other value the others, whose place is given at each membership change"},
    {"master_addr", SR_KEY_STRING, "127.0.0.1", NULL, 0, NOLIM, NULL,
     "address of node 0, where rank 0's rendezvous lives (torchrun --master-addr)"},
    {"master_port", SR_KEY_INT, "29500", NULL, 0, 0, 65535, NULL,
     "port of rank 0's rendezvous; 0 picks a free port (single node only)"},
    {"rdzv_port", SR_KEY_INT, "0", NULL, 0, 0, 65535, NULL,
     "port of the rendezvous store node 0's shardrun hosts (never MASTER_PORT); 0: a free port on one node, "
     "master_port + 1 across nodes"},
    {"rdzv_timeout", SR_KEY_FLOAT, "300", NULL, 0, NOLIM, NULL,
     "seconds the other nodes' shardrun waits for node 0's store to answer"},
    {"rdzv_last_call", SR_KEY_FLOAT, "30", NULL, 0, NOLIM, NULL,
     "elastic jobs (nnodes = MIN:MAX): once MIN nodes are there, seconds to wait for more, up to MAX, before the "
     "world is formed (torchrun's last_call_timeout)"},
    {"rdzv_backend", SR_KEY_ENUM, "builtin", SR__RDZV_BACKEND_CHOICES, 0, NOLIM, NULL,
     "where agents meet (torchrun --rdzv-backend): builtin, a store node 0's shardrun hosts (node 0's loss ends the "
     "job); etcd, an etcd cluster at rdzv_endpoint: any node, node 0 too, may leave an elastic job "
     "(docs/elastic.md)"},
    {"rdzv_endpoint", SR_KEY_STRING, NULL, NULL, 0, NOLIM, NULL,
     "rdzv_backend = etcd: the etcd members' client addresses, host:port[,host:port...] (torchrun "
     "--rdzv-endpoint); the job's keys live under /shardrun/<run_id>/"},
    {"elastic_join", SR_KEY_ENUM, "now", SR__ELASTIC_JOIN_CHOICES, 0, NOLIM, NULL,
     "elastic jobs: when a node that arrives while the job runs is taken in: now (every rank finishes its step and "
     "writes a checkpoint, and the job goes on with the new node from that step) or next_save (once the job's next "
     "periodic checkpoint, save_steps, is written; no extra checkpoint, the steps trained after it are done again; "
     "needs a model task that saves periodically) (docs/elastic.md)"},
    {"hang_timeout", SR_KEY_FLOAT, "300", NULL, 0, NOLIM, NULL,
     "seconds without progress after which the run is declared hung: ranks wait in a collective another rank has "
     "not entered, or no rank moved (step, phase, collective); the agent that sees it names the rank behind (host, "
     "pid, process state) and where every rank is, then fails the run (exit 1) or restarts it (max_restarts); "
     "0: no hang verdict (docs/clusters.md, hangs)"},
    {"metrics_port", SR_KEY_INT, "0", NULL, 0, 0, 65535, NULL,
     "port of this node's Prometheus endpoint, GET /metrics (step, loss, tokens/s, step time, memory, checkpoints, "
     "restarts, hangs); 0: none; a port in use fails the run before any worker starts (docs/clusters.md)"},
    {"standalone", SR_KEY_BOOL, "false", NULL, 0, NOLIM, NULL,
     "single node, free port on localhost, fresh run id (torchrun --standalone)"},
    {"run_id", SR_KEY_STRING, "none", NULL, 0, NOLIM, NULL,
     "TORCHELASTIC_RUN_ID given to workers (torchrun --rdzv-id); standalone generates one; with rdzv_backend = "
     "etcd, the job's name in etcd (none: a digest of the job's definition, the same on every node)"},
    {"shutdown_grace", SR_KEY_FLOAT, "2", NULL, 0, NOLIM, NULL,
     "seconds between SIGTERM and SIGKILL when a run is stopped"},
    {"max_restarts", SR_KEY_INT, "0", NULL, 0, 0, 1000, NULL,
     "times the whole job is started again after a rank failed once training had begun (torchrun "
     "--max-restarts, counted for the job, not per node); a model task resumes from its newest checkpoint"},
    {"restart_delay", SR_KEY_FLOAT, "0", NULL, 0, NOLIM, NULL, "seconds to wait before a restart"},
    {"preempt_grace", SR_KEY_FLOAT, "60", NULL, 0, NOLIM, NULL,
     "seconds a model task may take, after SIGTERM to shardrun, to finish its step and write a checkpoint "
     "before it is killed (a second SIGTERM kills at once)"},
    {"log_level", SR_KEY_ENUM, "info", SR__LOG_LEVEL_CHOICES, 0, NOLIM, NULL,
     "what the agent logs to stderr (debug shows which plugin set each variable)"},
    {"plugin_path", SR_KEY_PATH_LIST, NULL, NULL, 0, NOLIM, NULL,
     "colon-separated folders searched for shardrun_NAME.so before the built-in folders (relative ones: to the "
     "job file's folder)"},
    {"tasks_path", SR_KEY_PATH_LIST, NULL, NULL, 0, NOLIM, NULL,
     "colon-separated folders searched for NAME.so when task is a bare name (relative ones: to the job file's "
     "folder)"},
    {NULL, 0, NULL, NULL, 0, NOLIM, NULL, NULL},
};

const sr_key sr__plugin_host_keys[] = {
    {"path", SR_KEY_PATH, NULL, NULL, 0, NOLIM, NULL,
     "the plugin's .so (relative to the job file), instead of a search"},
    {NULL, 0, NULL, NULL, 0, NOLIM, NULL, NULL},
};

const sr_var sr__host_reads[] = {
    {"RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT",
     "cluster detection 1: a torchrun-style launcher already started this process as one worker"},
    {"SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID, SLURM_NNODES, SLURM_JOB_NODELIST, SLURM_STEP_ID",
     "cluster detection 2: Slurm. Inside an srun step with more tasks than nodes each task is one "
     "worker; with one task per node shardrun starts nproc_per_node workers per node. The first "
     "host of SLURM_JOB_NODELIST is the master"},
    {"OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_SIZE",
     "cluster detection 3: Open MPI (mpirun started one process per worker)"},
    {"PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS", "cluster detection 4: MPICH/PMI (one process per worker)"},
    {"SHARDRUN_RDZV_TOKEN",
     "the rendezvous store's token when several agents (nodes) share a run: the same secret on every node; "
     "under Slurm `slurm-$SLURM_JOB_ID` is used when unset; a single-node run makes a fresh one"},
    {"GLOO_SOCKET_IFNAME", "the network interface Gloo uses across nodes (default: this host's name)"},
    {"SHARDRUN_HOST_ID",
     "added to the host identity each worker publishes: ranks with different values never share memory (the shm "
     "transport counts them as other hosts); for tests, or hosts whose ranks cannot share /dev/shm"},
    {"ACCELERATE_USE_FSDP, ACCELERATE_MIXED_PRECISION, FSDP_VERSION, FSDP_SHARDING_STRATEGY, "
     "FSDP_RESHARD_AFTER_FORWARD, "
     "FSDP_AUTO_WRAP_POLICY, FSDP_TRANSFORMER_CLS_TO_WRAP, FSDP_MIN_NUM_PARAMS, FSDP_BACKWARD_PREFETCH, "
     "FSDP_FORWARD_PREFETCH, FSDP_STATE_DICT_TYPE, FSDP_OFFLOAD_PARAMS, FSDP_SYNC_MODULE_STATES, "
     "FSDP_CPU_RAM_EFFICIENT_LOADING, FSDP_ACTIVATION_CHECKPOINTING, FSDP_IGNORED_MODULES",
     "read back by the FSDP engine in each worker of a model task, with accelerate's rules: names case-insensitive, "
     "strategy digits 1-5, str_to_bool spellings, a bad value is an error before the first step. Unset: "
     "FULL_SHARD, NO_WRAP, no prefetch, FULL_STATE_DICT (SHARDED with version 2), sync_module_states true. Without "
     "ACCELERATE_USE_FSDP=true a model task trains replicated (gradients all-reduced) and no FSDP_* variable is read. "
     "FSDP_IGNORED_MODULES is "
     "refused (not supported by the engine yet)"},
    {"SHARDRUN_PROFILE",
     "1: the step profile (0: none; any other value is refused). Rank 0 of a model task prints, at every logging step "
     "and at the end, where the "
     "optimizer steps went (GEMM, attention, softmax/cross-entropy, norms/activations, optimizer, clipping, "
     "casts/copies, collectives waited on and overlapped, data) in ms, % of the step and GFLOP/s or GB/s, and "
     "every rank reports it in its results (profile_*_ms); docs/model-tasks.md (The step profile). Kernels are timed "
     "one by one "
     "(on a GPU each is waited for), so a profiled step is a little slower"},
    {"SHARDRUN_DEBUG_OFFLOAD_STAGING",
     "testing aid: 1 makes FSDP_OFFLOAD_PARAMS=true take the GPU's path on a CPU (shards in one allocation, "
     "gathers and reductions through staging copies), so the tests check it without a GPU (0: off)"},
    {"SHARDRUN_SELFTEST_DUT",
     "testing aid: a library whose selftest_dut_device() and selftest_dut_kernels() replace the tables "
     "`shardrun selftest` checks against the CPU's (tests/selftest/broken_kernels.c: deliberately broken "
     "kernels the selftest must fail on)"},
    {"SHARDRUN_DEBUG_PG_FAULT",
     "testing aid: a deliberate bug in one collective, which `shardrun selftest` must fail on, naming it "
     "(tests/cli/selftest_faults.sh): shm_reduce_scatter_index (ranks above 0 of the shared-memory "
     "reduce-scatter fold the wrong slice) or gloo_avg_divisor (Gloo's TCP averages divide by the group size + 1). "
     "Never set it for a real run: its results are wrong on purpose"},
    {"SHARDRUN_DEBUG_SAVE_DELAY_MS",
     "testing aid: milliseconds the checkpoint writer sleeps after each unit, so a test can kill a run in the "
     "middle of a save"},
    {"SHARDRUN_DEBUG_ALLOC_SITES, SHARDRUN_DEBUG_ALLOC_FAIL_SITE",
     "testing aid of the sanitizer build (SHARDRUN_SANITIZE=ON; other builds refuse them): SITES=FILE appends to "
     "FILE each allocation site (core/base/alloc.h: PATH:LINE and its function) a process reaches, once; "
     "FAIL_SITE=PATH:LINE makes that site's first allocation in each process fail, as if memory ran out "
     "(tests/cli/alloc_failures.sh fails every site a command reaches, one by one)"},
    {"SHARDRUN_JOB_ID",
     "set by shardrun in every worker (not read from your environment): one launch of the job, a random id from "
     "node 0's shardrun, the same on every node and in every restart. Every checkpoint records it; a model task "
     "that shardrun restarted resumes only from a checkpoint of its own launch, never from an older run's left in "
     "output_dir"},
    {"SHARDRUN_ELASTIC_RANKS",
     "set by shardrun in every worker of an elastic run (nnodes = MIN:MAX; not read from your environment): the "
     "ranks the job file's batch keys describe, MAX x nproc_per_node. A model task keeps the global batch "
     "(per_device_train_batch_size x gradient_accumulation_steps x these ranks) on any membership by scaling "
     "gradient_accumulation_steps, rounded up (with a warning) when it does not divide (docs/model-tasks.md, \"The "
     "global batch in an elastic run\"); each attempt's membership is a log_history entry of trainer_state.json"},
    {"SHARDRUN_REQUEUE_KEY",
     "set by shardrun in every worker under Slurm (not read from your environment): `slurm-<SLURM_JOB_ID>-<digest "
     "of the job's configuration>`, the same for a requeued job as before the requeue. Every checkpoint records it; "
     "a requeued model task (SLURM_RESTART_COUNT > 0) resumes from the newest checkpoint with its key, never from "
     "another run's in the same allocation or one with another configuration"},
    {"SHARDRUN_DEBUG_KILL_AT",
     "testing aid: RANK:STEP makes that rank of a model task kill itself with SIGKILL right after optimizer step "
     "STEP of the job's first attempt (RANK:STEP:every: of every attempt; RANK:STEP:stop: stops it with SIGSTOP "
     "instead, a hang for the hang watchdog), so the restart tests lose a rank at a known step"},
    {"SHARDRUN_DEBUG_PAUSE_AT",
     "testing aid: RANK:STEP makes that rank of a model task wait, right after optimizer step STEP of the job's "
     "first attempt (RANK:STEP@N: of attempt N; up to 4 such, separated by commas) was logged (its line flushed), "
     "until it is asked to stop (SIGTERM or SIGUSR1; at most 120 s, "
     "then it says the pause ran out and goes on); the other ranks wait for it where every rank agrees whether to "
     "stop, so a preemption test's signal stops the run after exactly that step however fast the steps are"},
    {NULL, NULL},
};

const sr_key *sr__find_key(const sr_key *keys, const char *name) {
    for (const sr_key *k = keys; k && k->name; k++)
        if (strcmp(k->name, name) == 0) return k;
    return NULL;
}
