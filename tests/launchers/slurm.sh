# shardrun under a real Slurm (slurmctld, slurmd and munged of our own, on loopback, in a temporary
# folder: slurm_cluster.sh), as a Slurm user starts it:
#   srun -N1 -n2 shardrun job.ini   two tasks on one node: per-process mode, ONE world of 2
#   srun -N1 -n1 shardrun job.ini   one task on the node: node mode, the job file's nproc_per_node
#                                   (2) workers, one world of 2
#   sbatch --wait script            shardrun called in a batch script, outside any step: node mode
#   srun -n2 ... --nproc-per-node 1 a per-process launcher with --nproc-per-node: exit 2, named
#   scancel --signal=TERM           a training batch job preempted: every rank writes a checkpoint
#                                   and the step exits 143 (Slurm signals the workers too)
#   scancel --signal=USR1           the same (Slurm's --signal=USR1@120 ahead of the time limit)
# A cluster that cannot start fails the test with the daemons' logs; it never skips.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/slurm_cluster.sh"
need_command srun slurm-wlm
need_command munged munge
HELLO=examples/hello/hello.ini # nproc_per_node = 2, master_port = 0; relative: run from $SRC
cd "$SRC" || exit 1

at_exit slurm_stop
if ! slurm_start; then
    fail "harness: the Slurm cluster did not start (logs above)"
    done_checks
    exit 1
fi
pids=$SLURM_PIDS
echo "slurm.sh: cluster up in $SLURM_DIR (node $SLURM_NODE, pids $pids)"

# the harness itself: a step runs here
run timeout -k 5 "$LAUNCH_TIMEOUT" srun -N1 -n2 hostname
expect_eq "$rc/$(count_lines .)" "0/2" "harness: srun -N1 -n2 hostname runs 2 tasks ($err)"

# a. two tasks on one node: per-process mode, one world of 2
run timeout -k 5 "$LAUNCH_TIMEOUT" srun -N1 -n2 "$SHARDRUN" "$HELLO"
expect_rc 0 "a. srun -N1 -n2 shardrun hello.ini"
expect_world "$out" "a. srun -N1 -n2" 2
expect_in "$(grep 'hello from rank 1 ' <<<"$out")" "(local rank 1 of 2, node 0 of 1)" "a. rank 1 is local rank 1 of 2 on the only node"

# b. one task on one node: node mode, the job file's nproc_per_node = 2 workers
run timeout -k 5 "$LAUNCH_TIMEOUT" srun -N1 -n1 "$SHARDRUN" "$HELLO"
expect_rc 0 "b. srun -N1 -n1 shardrun hello.ini"
expect_world "$out" "b. srun -N1 -n1" 2

# c. a batch script that calls shardrun outside any step: node mode
cat >"$T/batch.sh" <<EOF
#!/bin/bash
#SBATCH -N1 -n1
cd "$SRC" || exit 1
"$SHARDRUN" "$HELLO" --results "$T/b.json"
EOF
run timeout -k 5 "$LAUNCH_TIMEOUT" sbatch --wait -o "$T/b.out" -e "$T/b.err" "$T/batch.sh"
expect_rc 0 "c. sbatch --wait batch.sh (job output: $(cat "$T/b.out" "$T/b.err" 2>/dev/null | tail -5))"
if [ -f "$T/b.json" ]; then
    pass
    expect_eq "$(results_ranks "$T/b.json")" "[0, 1]" "c. the batch job's --results file holds ranks 0 and 1 once each"
else
    fail "c. the batch job wrote no $T/b.json"
fi
expect_world "$(cat "$T/b.out" 2>/dev/null)" "c. the batch job's output" 2

# d. tasks are the ranks: --nproc-per-node contradicts them
t0=$(now_ns)
run timeout -k 5 "$LAUNCH_TIMEOUT" srun -N1 -n2 "$SHARDRUN" "$HELLO" --nproc-per-node 1
ms=$(elapsed_ms "$t0")
expect_rc 2 "d. srun -n2 shardrun hello.ini --nproc-per-node 1"
expect_in "$err" "--nproc-per-node" "d. the error names the flag"
expect_in "$err" "Slurm" "d. the error names the launcher"
expect_eq "$(count_lines "hello from rank")" 0 "d. nothing ran"
[ "$ms" -lt 10000 ] && pass || fail "d. the error took ${ms} ms (limit 10000)"

# e. preemption: SIGTERM from Slurm to a training job's step (shardrun and, with
# proctrack/linuxproc, its workers too): a checkpoint of the step reached, exit 143
cat >"$T/preempt.sh" <<EOF
#!/bin/bash
#SBATCH -N1 -n1
cd "$SRC" || exit 1
srun -N1 -n1 "$SHARDRUN" examples/toy/toy_fsdp.ini --set task.max_steps=1000000 --set task.logging_steps=1 \
    --set task.output_dir="$T/toy"
echo "srun exit code \$?"
EOF
jobid=$(sbatch --parsable -o "$T/p.out" -e "$T/p.err" "$T/preempt.sh")
for _ in $(seq 1 1500); do grep -q "step 5/" "$T/p.out" 2>/dev/null && break; sleep 0.02; done
expect_in "$(cat "$T/p.out" 2>/dev/null)" "step 5/" "e. the batch job trains (job $jobid: $(tail -3 "$T/p.err" 2>/dev/null))"
scancel --signal=TERM "$jobid"
for _ in $(seq 1 600); do [ -z "$(squeue -h -j "$jobid" 2>/dev/null)" ] && break; sleep 0.1; done
expect_eq "$(squeue -h -j "$jobid" 2>/dev/null)" "" "e. the preempted job ended"
expect_in "$(cat "$T/p.out")" "srun exit code 143" "e. the preempted step exits 143"
expect_in "$(cat "$T/p.err")" "preempted by SIGTERM: every rank stopped after step" "e. shardrun says where the checkpoint is"
step=$(sed -n 's/.*every rank stopped after step \([0-9]*\) and.*/\1/p' "$T/p.err")
[ -n "$step" ] && [ -f "$T/toy/checkpoint-$step/model.safetensors" ] && pass || fail "e. checkpoint-$step was written: $(ls "$T/toy" 2>&1)"

# f. the same with SIGUSR1 (what `#SBATCH --signal=USR1@120` sends ahead of the time limit): taken
# as SIGTERM's preemption, the same checkpoint and exit 143, not 138
sed -i "s|$T/toy\"|$T/toy_usr1\"|" "$T/preempt.sh"
jobid=$(sbatch --parsable -o "$T/u.out" -e "$T/u.err" "$T/preempt.sh")
for _ in $(seq 1 1500); do grep -q "step 5/" "$T/u.out" 2>/dev/null && break; sleep 0.02; done
expect_in "$(cat "$T/u.out" 2>/dev/null)" "step 5/" "f. the batch job trains (job $jobid: $(tail -3 "$T/u.err" 2>/dev/null))"
scancel --signal=USR1 "$jobid"
for _ in $(seq 1 600); do [ -z "$(squeue -h -j "$jobid" 2>/dev/null)" ] && break; sleep 0.1; done
expect_eq "$(squeue -h -j "$jobid" 2>/dev/null)" "" "f. the job signalled with SIGUSR1 ended"
expect_in "$(cat "$T/u.out")" "srun exit code 143" "f. the step exits 143 ($(tail -3 "$T/u.err"))"
expect_in "$(cat "$T/u.err")" "preempted by SIGUSR1: every rank stopped after step" "f. shardrun says where the checkpoint is"
step=$(sed -n 's/.*every rank stopped after step \([0-9]*\) and.*/\1/p' "$T/u.err")
[ -n "$step" ] && [ -f "$T/toy_usr1/checkpoint-$step/model.safetensors" ] && pass ||
    fail "f. checkpoint-$step was written: $(ls "$T/toy_usr1" 2>&1)"

# the harness again: the cluster stops cleanly, exactly its own processes
slurm_stop
for p in $pids; do
    [ ! -e "/proc/$p" ] && pass || fail "harness: Slurm/munge daemon pid $p survived slurm_stop"
done
done_checks
