# Restarts across two agents on loopback (two "nodes", one GPT-2 rank each): a rank killed on node 1
# restarts the job on both nodes; node 1's agent killed outright and started again rejoins and the
# job continues; one that never comes back fails the run within rdzv_timeout, naming it; a second
# agent for a node that is still running is refused.  Every finished run ends byte for byte where
# an uninterrupted one ends.
. "$(dirname "$0")/lib.sh"
export SHARDRUN_RDZV_TOKEN=restart-nodes-test
node_job 30

# start_node NODE OUTDIR [ARGS...]: that node's agent in the background (output in $T/nNODE.*)
start_node() {
    local node=$1 dir=$2
    shift 2
    "$SHARDRUN" "$J" --nnodes 2 --node-rank "$node" --nproc-per-node 1 --master-addr 127.0.0.1 --master-port "$P" \
        --set task.output_dir="$dir" --set shardrun.max_restarts=1 "$@" >"$T/n$node.out" 2>"$T/n$node.err" &
    pid[$node]=$!
}
wait_node() { wait "${pid[$1]}"; rc[$1]=$?; }

# the uninterrupted run on two nodes
P=$(free_port_pair)
start_node 0 "$T/ref"
start_node 1 "$T/ref"
wait_node 0
wait_node 1
expect_eq "${rc[0]}/${rc[1]}" "0/0" "the uninterrupted two-node run ($(cat "$T/n0.err" "$T/n1.err"))"

# (b) node 1's worker (rank 1) killed after step 7: both agents restart, the job completes
P=$(free_port_pair)
export SHARDRUN_DEBUG_KILL_AT=1:7
start_node 0 "$T/b"
start_node 1 "$T/b"
wait_node 0
wait_node 1
unset SHARDRUN_DEBUG_KILL_AT
expect_eq "${rc[0]}/${rc[1]}" "0/0" "both agents succeed after node 1's rank was killed ($(cat "$T/n0.err" "$T/n1.err"))"
for n in 0 1; do
    expect_in "$(cat "$T/n$n.err")" "restarting the job (restart 1 of max_restarts 1): rank 1 (node 1) was killed by signal SIGKILL (9) after step 7" "node $n restarts, naming node 1's rank"
    expect_in "$(cat "$T/n$n.err")" "started 1 worker (rank $n of 2, restart 1)" "node $n starts its worker again"
done
expect_in "$(cat "$T/n0.out")" "[rank0]: shardrun: resumed from $T/b/checkpoint-5 at step 5" "the job resumes from checkpoint-5"
expect_same_file "$T/b/checkpoint-30/model.safetensors" "$T/ref/checkpoint-30/model.safetensors" "(b) the final model.safetensors"

# (f) node 1's agent SIGKILLed after step 8 and started again: it rejoins, the job continues.  Node
# 0's rank waits after its step 8 line (SHARDRUN_DEBUG_PAUSE_AT) until its agent stops it, so the
# kill lands after step 8 however fast the steps are, and only node 0's agent can see what happened
# (rank 1 waits for rank 0 where the ranks agree whether to stop; rank 0 is in no collective)
P=$(free_port_pair)
SHARDRUN_DEBUG_PAUSE_AT=0:8 start_node 0 "$T/f"
start_node 1 "$T/f"
wait_for "$T/n0.out" "step 8/30" 120 && pass || fail "the run reached step 8 ($(cat "$T/n0.err"))"
kill -KILL "${pid[1]}"
wait "${pid[1]}" 2>/dev/null
sleep 0.5
start_node 1 "$T/f"
wait_node 0
wait_node 1
expect_eq "${rc[0]}/${rc[1]}" "0/0" "both agents succeed after node 1's agent was killed and started again ($(cat "$T/n0.err" "$T/n1.err"))"
expect_in "$(cat "$T/n0.err")" "restarting the job (restart 1 of max_restarts 1): node 1's shardrun (agent 1) went away before the run ended" "node 0 restarts when node 1's agent went away"
expect_in "$(cat "$T/n1.err")" "started 1 worker (rank 1 of 2, restart 1)" "the new agent of node 1 joins the restart"
expect_in "$(cat "$T/n0.out")" "[rank0]: shardrun: resumed from $T/f/checkpoint-5 at step 5" "the job resumes from checkpoint-5"
expect_same_file "$T/f/checkpoint-30/model.safetensors" "$T/ref/checkpoint-30/model.safetensors" "(f) the final model.safetensors"

# node 1's agent killed and never started again: node 0 fails within rdzv_timeout, naming node 1
P=$(free_port_pair)
SHARDRUN_DEBUG_PAUSE_AT=0:3 start_node 0 "$T/g" --set shardrun.rdzv_timeout=3
start_node 1 "$T/g" --set shardrun.rdzv_timeout=3
wait_for "$T/n0.out" "step 3/30" 120 && pass || fail "the run reached step 3"
kill -KILL "${pid[1]}"
t0=$(date +%s%N)
wait_node 0
ms=$((($(date +%s%N) - t0) / 1000000))
expect_eq "${rc[0]}" "1" "node 0 fails when node 1 does not come back"
expect_in "$(cat "$T/n0.err")" "node 1's shardrun (agent 1) went away and did not come back within rdzv_timeout (3s)" "node 0 names the missing node"
[ "$ms" -lt 10000 ] && pass || fail "node 0 gave up after ${ms} ms (rdzv_timeout 3 s)"

# three nodes: rank 1 (node 1) killed after step 3, and node 2's agent killed while the job waits to
# restart: node 0 calls the restart off after rdzv_timeout, naming node 2; node 1 (whose rank
# failed) hears it and fails too, with its summary (no crash)
P=$(free_port_pair)
for n in 0 1 2; do
    SHARDRUN_DEBUG_KILL_AT=1:3 "$SHARDRUN" "$J" --nnodes 3 --node-rank $n --nproc-per-node 1 --master-addr 127.0.0.1 \
        --master-port "$P" --set task.output_dir="$T/three" --set shardrun.max_restarts=2 --set shardrun.restart_delay=2 \
        --set shardrun.rdzv_timeout=5 >"$T/n$n.out" 2>"$T/n$n.err" &
    pid[$n]=$!
done
wait_for "$T/n2.err" "restarting the job" 120 && pass || fail "the three-node job restarts"
kill -KILL "${pid[2]}"
wait "${pid[2]}" 2>/dev/null
wait_node 0
wait_node 1
expect_eq "${rc[0]}/${rc[1]}" "1/1" "node 0 and node 1 fail when node 2 does not come back ($(cat "$T/n1.err"))"
for n in 0 1; do
    expect_in "$(cat "$T/n$n.err")" "node 2's shardrun (agent 2) went away and did not come back within rdzv_timeout (5s)" "node $n names node 2"
done
expect_in "$(cat "$T/n0.err")" "restart 1 called off: node 2's shardrun" "node 0 lists the restart that was called off"

# a second agent for node 1 while node 1's first one runs: refused, and the run goes on
P=$(free_port_pair)
start_node 0 "$T/h"
start_node 1 "$T/h"
wait_for "$T/n0.out" "step 2/30" 120 && pass || fail "the run reached step 2"
run "$SHARDRUN" "$J" --nnodes 2 --node-rank 1 --nproc-per-node 1 --master-addr 127.0.0.1 --master-port "$P" \
    --set task.output_dir="$T/h" --set shardrun.max_restarts=1
expect_rc 2 "a second agent for node 1"
expect_in "$err" "node 1's shardrun (agent 1) is already part of this run" "the second agent is told why"
wait_node 0
wait_node 1
expect_eq "${rc[0]}/${rc[1]}" "0/0" "the run goes on ($(cat "$T/n0.err" "$T/n1.err"))"
done_checks
