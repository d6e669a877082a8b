#!/usr/bin/env bash
# The FSDP strategy study of an HPC workshop, in one command, for the model task a job file names:
# one run after the other on this machine (CPU, Gloo),
#   1. 1 rank without FSDP (accelerate's use_fsdp = false: replicated training, the job's fsdp.*
#      keys left out),
#   2. 1 rank with FSDP (FULL_SHARD),
#   3. 2 ranks x {FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD} x {CPU offload off, on}; HYBRID_SHARD
#      as 2 nodes x 1 rank: two shardrun agents on loopback (nnodes 2, node_rank 0 and 1, one master
#      port), so it shards within a node (1 rank) and replicates across the two,
#   4. examples/pgbench on 2 ranks at one large size (--pg-bytes, default 64 MiB) over the job's
#      [torch] settings (Gloo): bus bandwidth of all-gather, reduce-scatter and all-reduce
#      (nccl-tests' busbw), one thread's memcpy and an 8-byte all-reduce's latency.
# The job is used as it is (its model, data, wrap policy, batch, ...), with these overrides on every
# training run: task.max_steps (--steps), task.logging_steps = 1, task.eval_strategy = steps and
# task.eval_steps = max_steps (one evaluation, after the last step: the job needs eval data, e.g.
# validation_split_percentage), task.save_steps = 0 and task.save_final = false (no checkpoints),
# task.output_dir (a folder per run under --out), accelerate.use_fsdp, fsdp.sharding_strategy and
# fsdp.offload_params; --batch, --max-length, --wrap and every --set as given.  The module class
# FSDP wraps comes from the job file (fsdp.transformer_layer_cls_to_wrap) or --wrap: never assumed.
#   numbers:  step time: the median over steps 2..N of rank 0's step times (SHARDRUN_PROFILE=1
#             prints each step's; the first step, which warms up, is left out); samples/s: the
#             samples per optimizer step (the trainer's "= K per step") / that median; HF's
#             train_samples_per_second (the whole run: first step and final evaluation included)
#             is in the CSV; memory per rank: the largest over the ranks of the results' peak_mem_gb
#             (the engine: its persistent fp32 parameter, gradient and AdamW shards plus its pool
#             of gathered units and full gradients) and peak_rss_gb (the process); eval loss: the
#             results' eval_loss after the last step (the same on every rank); load: the CPU time
#             other processes used during the run, in cores (bench/load_meter.py).
#   threads:  OMP_NUM_THREADS = 2 for 1-rank runs and 1 per rank for 2-rank runs (--threads 2,1):
#             both fill the 2 cores of the machine this was written on.
#   offload:  on a CPU, FSDP_OFFLOAD_PARAMS moves nothing (shards and optimizer state already live
#             in host memory; the engine says so); --offload-staging sets SHARDRUN_DEBUG_OFFLOAD_STAGING=1
#             on the offload runs, so they take the GPU's path (host shards, staging copies) on the CPU.
#   checks:   every run exits 0 (the study fails with the run's log path otherwise); its results
#             list every rank (0..N-1), world_size N, exit_code 0, fsdp_enabled and the strategy it
#             asked for (DDP without FSDP), global_step and eval_step = N steps, one eval_loss on
#             every rank; rank 0's log names the strategy (and "shard group 1, replicas 2" for
#             HYBRID_SHARD on 2 nodes), wrapped units > 0, the offload message exactly when offload
#             is on, one step time per step after the first; cpu_threads (when the task reports it)
#             = OMP_NUM_THREADS; the eval losses of the runs at one world size agree within 1e-4
#             (relative; 2e-2 with mixed precision): same data, batch and seed, so the same model;
#             pgbench reports no errors on any rank.
#   output:   in --out (default: a new temporary folder, printed at the end): fsdp_study.md (the
#             header, the table, pgbench's line, the load; also printed), fsdp_study.csv (one row per
#             training run), fsdp_study.svg (bench/fsdp_study_plot.py: step time and memory per rank
#             by configuration), and runs/ID/ (each run's command, log, results JSON, output_dir).
# Usage: bench/fsdp_study.sh MODEL_JOB.ini [--build DIR] [--steps N] [--batch N] [--max-length N]
#            [--out DIR] [--set SECTION.KEY=VALUE]... [--only ID[,ID...]] [--wrap CLASS]
#            [--threads ONE,TWO] [--pg-bytes N] [--offload-staging] [--title TEXT] [--list]
#        bench/fsdp_study.sh --help      (the run IDs: --list; --only takes shell patterns of them)
#        exits 0 when every run passed its checks, 1 when one failed, 2 for a bad command line.
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/fsdp_study.py" "$@"
