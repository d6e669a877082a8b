# An elastic job (nnodes = 2:3) on three nodes, each a network namespace on one switch, loses a node
# (node 3 stands in for node 2 after (a): a namespace just deleted is not made again):
# (a) node 2 vanishes after step 7 (every process in its namespace killed, the namespace deleted):
#     nodes 0 and 1 go on as a world of 2 from checkpoint-5 and finish; (b) node 3's shardrun gets
#     SIGTERM (a spot notice): every rank stops after the same step with a checkpoint, node 3 leaves
#     (exit 143), the others resume from that very step; (c) below the minimum: a job of 2 that
#     loses one waits rdzv_timeout for another, then ends naming what is missing and how to go on;
#     (d) node 0 vanishes: with the built-in store the others end (exit 1) with the sentence that
#     says why and what to do.  Nothing is left running in any namespace.
. "$(dirname "$0")/lib.sh"
node_job 20
nodes_up 4

# (a) node 2 vanishes after step 7.  Node 0's rank waits after its step 7 line until its agent stops
# it (SHARDRUN_DEBUG_PAUSE_AT), so the loss lands after step 7 however fast the steps are.
P=$(free_port_pair) OUT=$T/a
SHARDRUN_DEBUG_PAUSE_AT=0:7 start_world 3
wait_for "$T/n0.out" "step 7/20" 120 && pass || fail "the run reached step 7 ($(logs))"
expect_in "$(cat "$T/n2.err")" " of 3)" "node 2 took part in the first world"
r2=$(place_of 2)
node_gone 2
unset "pid[2]"
wait_node_for 0 120
wait_node_for 1 120
expect_eq "${rc[0]}/${rc[1]}" "0/0" "nodes 0 and 1 finish the run without node 2 ($(logs))"
# node 2's place in the first world was its slot (node 0 holds slot 0, the others arrive)
for n in 0 1; do
    expect_in "$(cat "$T/n$n.err")" "the job's nodes change: node $r2's shardrun (slot $r2) left the job" "node $n says node 2 left"
    expect_in "$(cat "$T/n$n.err")" " of 2, restart 1)" "node $n goes on in a world of 2"
done
expect_in "$(cat "$T/n0.out")" "[rank0]: shardrun: resumed from $T/a/checkpoint-5 at step 5" "the run resumes from checkpoint-5"
expect_in "$(cat "$T/n0.out")" "[rank0]: step 20/20" "the run reaches its last step"
[ -f "$T/a/checkpoint-20/model.safetensors" ] && pass || fail "the run's last checkpoint is written"
n=$(grep -c '"rank":' "$T/n0.out")
expect_eq "$n" 2 "the results list the 2 ranks of the last world"

# (b) a spot notice: the shardrun of node 3 (a fresh node: a namespace just deleted is not reused,
# its kernel side may still go away) gets SIGTERM after step 6
P=$(free_port_pair) OUT=$T/b
start_node 1 1 "$OUT"
start_node 3 2 "$OUT"
started 1
started 3
SHARDRUN_DEBUG_PAUSE_AT=0:6 start_node 0 0 "$OUT"
wait_for "$T/n0.out" "step 6/20" 120 && pass || fail "the run reached step 6 ($(logs))"
r3=$(place_of 3)
kill -TERM "${pid[3]}"
wait_node_for 3 60
wait_node_for 0 120
wait_node_for 1 120
expect_eq "${rc[0]}/${rc[1]}/${rc[3]}" "0/0/143" "node 3 leaves (143), nodes 0 and 1 finish ($(logs))"
expect_in "$(cat "$T/n3.err")" "this node left the elastic job (SIGTERM): every rank stopped after step 6 and $T/b/checkpoint-6 holds it" "node 3 says it left after a checkpoint"
expect_in "$(cat "$T/n0.err")" "node $r3's shardrun (slot $r3) received SIGTERM and leaves the job; every rank finishes its step and writes a checkpoint" "node 0 says why the nodes change"
expect_in "$(cat "$T/n0.out")" "[rank0]: shardrun: resumed from $T/b/checkpoint-6 at step 6" "no step is lost: the run resumes from the notice's checkpoint"
expect_in "$(cat "$T/n1.err")" " of 2, restart 1)" "node 1 goes on in a world of 2"

# (c) below the minimum: a world of 2 (nnodes = 2:3) loses node 1; no other comes within rdzv_timeout
P=$(free_port_pair) OUT=$T/c
start_node 1 1 "$T/c" # (its own rdzv_timeout the default: it waits for node 0, which may take seconds to start)
started 1
SHARDRUN_DEBUG_PAUSE_AT=0:6 start_node 0 0 "$T/c" --set shardrun.rdzv_timeout=3
wait_for "$T/n0.out" "step 6/20" 120 && pass || fail "the run reached step 6 ($(logs))"
kill -KILL "${pid[1]}"
wait "${pid[1]}" 2>/dev/null
unset "pid[1]"
t0=$(now_ms)
wait_node_for 0 60
ms=$(($(now_ms) - t0))
expect_eq "${rc[0]}" 1 "node 0 fails once it is alone below the minimum"
expect_in "$(cat "$T/n0.err")" "1 node left of the at least 2 of nnodes = 2:3, and no other joined within rdzv_timeout (3s)" "node 0 names what is missing"
expect_in "$(cat "$T/n0.err")" "to continue later, start 2 nodes with the same job file and --set task.resume_from_checkpoint=latest" "node 0 says how to go on"
[ "$ms" -lt 15000 ] && pass || fail "node 0 gave up after ${ms} ms (rdzv_timeout 3 s)"

# (d) node 0 vanishes: the built-in store goes with it
P=$(free_port_pair) OUT=$T/d
export SHARDRUN_HANG_TIMEOUT=5
start_node 1 1 "$OUT"
start_node 3 2 "$OUT"
started 1
started 3
SHARDRUN_DEBUG_PAUSE_AT=0:4 start_node 0 0 "$OUT"
unset SHARDRUN_HANG_TIMEOUT
wait_for "$T/n0.out" "step 4/20" 120 && pass || fail "the run reached step 4 ($(logs))"
node_gone 0
unset "pid[0]"
wait_node_for 1 60
wait_node_for 3 60
expect_eq "${rc[1]}/${rc[3]}" "1/1" "nodes 1 and 3 fail when node 0 vanished ($(logs))"
for n in 1 3; do
    expect_in "$(cat "$T/n$n.err")" "node 0's shardrun hosts an elastic job's rendezvous with the built-in store, the one node the job cannot lose" "node $n says why the job ends"
done
for i in 1 3; do
    left=$(ip netns pids "$(ns_of "$i")" | wc -l)
    expect_eq "$left" 0 "nothing left running in node $i's namespace"
done
done_checks
