# The global batch of an elastic run (docs/model-tasks.md, "The global batch in an elastic run"), on
# the GPT-2 tiny job of tests/restarts/lib.sh (global batch 8: 4 per device, accumulation 1, for 2
# ranks), one rank per node:
#  (a) the reference: a plain run of 2 ranks, not elastic: no elastic line, no membership entry;
#  (b) the same job elastic, nnodes = 1:2: node 0 starts alone (1 of 2 ranks: accumulation 2, the
#      same 8 samples a step), node 1 joins after step 3, every rank saves, and the job goes on on 2
#      nodes (accumulation 1) from checkpoint-3, a resharded resume without "instead of": every
#      step's loss and grad norm are (a)'s within RTOL, and log_history holds both memberships;
#  (d) a plain run of 2 ranks resumes from (b)'s checkpoint of 1 rank: the same global batch;
#  (c) two nodes of at most 3 (nnodes = 2:3): 1 x 3 / 2 does not divide, the accumulation is rounded
#      up to 2, a step takes 16 samples instead of 12: rank 0 warns, the entry records it.
. "$(dirname "$0")/../restarts/lib.sh"
export SHARDRUN_RDZV_TOKEN=elastic-batch-test
CHK="/usr/bin/python3 $SRC/tests/fsdp/check_records.py"
# The same samples make each step in (a) and (b); only the order of the sums differs (two
# micro-batches on one rank, or one on each of two ranks, and the resharded optimizer state).
# Measured on the 2-core development machine, 2026-11-29: losses equal to all 9 logged digits, grad
# norms within 1.03e-7 (relative); without the rule 1.3e-2 and 0.76.  The bound is the FSDP parity
# tests' (tests/fsdp/parity.sh).
RTOL=1e-5
# 192 samples: an epoch is 24 steps on 1 rank and on 2 (195 would pad differently: 24 and 25)
restart_job 10
sed -i "s/^logging_steps = 1$/&\nmax_train_samples = 192/" "$T/job.ini"
J=$T/job.ini

# (a)
run "$SHARDRUN" "$J" --set task.output_dir="$T/a"
expect_rc 0 "(a) the plain 2-rank run"
expect_in "$out" "batch 4 x 1 accumulation x 2 ranks = 8 per step" "(a) 8 samples a step"
expect_not_in "$out" "elastic" "(a) a run that is not elastic says nothing of it"
expect_eq "$($CHK membership "$T/a")" "" "(a) no membership entry in log_history"

# (b) node_start NODE ARGS...: an agent of the elastic job in the background (output in $T/nNODE.*)
node_start() {
    local node=$1
    shift
    "$SHARDRUN" "$J" --nproc-per-node 1 --master-addr 127.0.0.1 --master-port "$P" --set shardrun.rdzv_last_call=0 \
        "$@" >"$T/n$node.out" 2>"$T/n$node.err" &
    pid[$node]=$!
}
node_wait() { wait "${pid[$1]}"; rc[$1]=$?; }
P=$(free_port_pair)
# node 0's rank waits after step 3 until the join stops it: node 1 joins after step 3 however fast
SHARDRUN_DEBUG_PAUSE_AT=0:3 node_start 0 --nnodes 1:2 --set task.output_dir="$T/b"
wait_for "$T/n0.out" "step 3/10" 120 && pass || fail "(b) node 0 alone reached step 3 ($(cat "$T/n0.err"))"
node_start 1 --nnodes 1:2 --node-rank 1 --set task.output_dir="$T/b"
node_wait 0
node_wait 1
expect_eq "${rc[0]}/${rc[1]}" "0/0" "(b) both agents of the elastic job ($(cat "$T/n0.err" "$T/n1.err"))"
b=$(cat "$T/n0.out")
expect_in "$b" "[rank0]: shardrun: elastic: 1 node, 1 of 2 ranks: gradient_accumulation_steps 1 -> 2, the global batch stays 8 samples per step" "(b) alone: twice the accumulation, the same global batch"
expect_in "$b" "batch 4 x 2 accumulation x 1 rank = 8 per step" "(b) alone: the plan takes it"
expect_in "$(cat "$T/n0.err")" "a new node's shardrun (slot 1) joins the job" "(b) node 1 joins"
expect_in "$b" "[rank0]: shardrun: elastic: 2 nodes, 2 of 2 ranks: gradient_accumulation_steps 1, the global batch stays 8 samples per step" "(b) on both nodes: the job file's accumulation"
expect_in "$b" "[rank0]: shardrun: restart 1: resuming from this job's newest checkpoint, $T/b/checkpoint-3" "(b) the job resumes from the checkpoint of the join"
expect_in "$b" "was saved by 1 ranks and this run has 2 (a resharded resume)" "(b) a resharded resume"
expect_not_in "$b" "samples instead of" "(b) the global batch is kept: no other number of samples a step"
expect_not_in "$b" "warning" "(b) no warning"
r=$(/usr/bin/python3 "$SRC/tests/fsdp/compare_logs.py" "$T/b/train_log.jsonl" "$T/a/train_log.jsonl" $RTOL) &&
    pass || fail "(b) the losses of the uninterrupted 2-rank run: $r"
echo "(b) against (a): $r"
expect_eq "$($CHK membership "$T/b")" "step=0 world_size=1 nodes=1 gradient_accumulation_steps=2 global_batch=8 restart=0
step=3 world_size=2 nodes=2 gradient_accumulation_steps=1 global_batch=8 restart=1" "(b) log_history: each attempt's membership, HF's TrainerState loads it, the checkpoints hold it up to their step"
r=$($CHK svg "$T/b/loss.svg" "$T/b") && pass || fail "(b) loss.svg's points are log_history's losses: $r"
run "$SHARDRUN" plot "$T/b" --compare "$T/a" -o "$T/ab.svg"
expect_rc 0 "(b) shardrun plot draws the elastic run beside (a)"

# (d) a plain 2-rank run resumes from (b)'s checkpoint-3, which 1 rank trained with accumulation 2:
# the global batch is the same 8 (its membership entry says so): no "instead of"
run "$SHARDRUN" "$J" --set task.output_dir="$T/d" --set task.resume_from_checkpoint="$T/b/checkpoint-3" \
    --set task.max_steps=4
expect_rc 0 "(d) a plain run resumed from the elastic run's checkpoint"
expect_in "$out" "checkpoint-3 was saved by 1 ranks and this run has 2 (a resharded resume)" "(d) a resharded resume"
expect_not_in "$out" "samples instead of" "(d) the checkpoint's global batch is its membership's, 8"

# (c)
P=$(free_port_pair)
node_start 0 --nnodes 2:3 --set task.output_dir="$T/c" --set task.max_steps=2
node_start 1 --nnodes 2:3 --node-rank 1 --set task.output_dir="$T/c" --set task.max_steps=2
node_wait 0
node_wait 1
expect_eq "${rc[0]}/${rc[1]}" "0/0" "(c) two nodes of at most 3 ($(cat "$T/n0.err" "$T/n1.err"))"
c=$(cat "$T/n0.out")
expect_in "$c" "[rank0]: shardrun: warning: elastic: 2 nodes, 2 of 3 ranks: gradient_accumulation_steps 1 -> 2 (1 x 3 / 2, rounded up): a step takes 16 samples instead of the job file's 12, so a run resumed on 2 ranks no longer reproduces the uninterrupted one" "(c) the warning names both global batches and the world size"
expect_in "$c" "batch 4 x 2 accumulation x 2 ranks = 16 per step" "(c) the plan takes the rounded-up accumulation"
expect_eq "$(grep -c 'elastic:' <<<"$c")" "1" "(c) one line"
expect_eq "$($CHK membership "$T/c")" "step=0 world_size=2 nodes=2 gradient_accumulation_steps=2 global_batch=16 restart=0" "(c) the entry records the larger batch"
done_checks
