# An elastic job takes nodes in while it runs, each node a network namespace on one switch:
# (a) nnodes = 3:4 started on three nodes; a fourth started after step 7 waits, every rank stops after
#     the same step with a checkpoint, and the job goes on with four from that very step;
# (b) a node that comes back after it was declared gone is not mixed into the running world: it
#     waits, and is taken in at the next membership change (its own), from a checkpoint of that step.
# Nothing is left running in any namespace.
. "$(dirname "$0")/lib.sh"
node_job 20
nodes_up 4

# (a) a fourth node joins after step 7 (node 0's rank waits there until its agent stops it)
P=$(free_port_pair) OUT=$T/a
NNODES=3:4 # the world forms once the three are there (and rdzv_last_call passed)
SHARDRUN_DEBUG_PAUSE_AT=0:7 start_world 3
wait_for "$T/n0.out" "step 7/20" 120 && pass || fail "the run reached step 7 ($(logs))"
expect_in "$(cat "$T/n0.err")" "started 1 worker (rank 0 of 3)" "the first world has the three nodes there (rdzv_last_call)"
start_node 3 3 "$T/a"
for n in 0 1 2 3; do wait_node_for "$n" 120; done
expect_eq "${rc[0]}/${rc[1]}/${rc[2]}/${rc[3]}" "0/0/0/0" "the four nodes finish the run ($(logs))"
expect_in "$(cat "$T/n0.err")" "the job's nodes change: a new node's shardrun (slot 3) joins the job; every rank finishes its step and writes a checkpoint" "node 0 says a node joins"
# places follow the order the nodes arrived in (slots): node 3's is the last
for n in 0 1 2 3; do
    expect_in "$(cat "$T/n$n.err")" " of 4, restart 1)" "node $n takes part in the world of 4"
done
expect_in "$(cat "$T/n3.err")" "started 1 worker (rank 3 of 4, restart 1)" "node 3 takes the fourth place"
expect_in "$(cat "$T/n0.out")" "[rank0]: shardrun: saved $T/a/checkpoint-7" "every rank saved after step 7"
expect_in "$(cat "$T/n0.out")" "[rank0]: shardrun: resumed from $T/a/checkpoint-7 at step 7" "no step is lost: the world of 4 resumes at step 7"
n=$(grep -c '"rank":' "$T/n0.out")
expect_eq "$n" 4 "the results list the 4 ranks of the last world"

# (b) node 2's shardrun killed after step 6 (nodes 0 and 1 go on from checkpoint-5), started again once
# the world of 2 reached step 12: it is not taken into that world, but into the next one, from a
# checkpoint of step 12
P=$(free_port_pair) OUT=$T/b
NNODES=2:3
SHARDRUN_DEBUG_PAUSE_AT=0:6,0:12@1 start_world 3
wait_for "$T/n0.out" "step 6/20" 120 && pass || fail "the run reached step 6 ($(logs))"
for p in $(ip netns pids "$(ns_of 2)"); do kill -KILL "$p" 2>/dev/null; done
wait "${pid[2]}" 2>/dev/null
unset "pid[2]"
wait_for "$T/n0.err" "started 1 worker (rank 0 of 2, restart 1)" 60 && pass || fail "nodes 0 and 1 go on as a world of 2 ($(logs))"
wait_for "$T/n0.out" "step 12/20" 120 && pass || fail "the world of 2 reached step 12 ($(logs))"
start_node 2 2 "$T/b"
for n in 0 1 2; do wait_node_for "$n" 120; done
expect_eq "${rc[0]}/${rc[1]}/${rc[2]}" "0/0/0" "the three nodes finish the run ($(logs))"
expect_not_in "$(cat "$T/n2.err")" "restart 1)" "node 2, back, took no part in the running world"
expect_in "$(cat "$T/n2.err")" " of 3, restart 2)" "node 2, back, takes part from the next world"
expect_in "$(cat "$T/n0.out")" "[rank0]: shardrun: resumed from $T/b/checkpoint-12 at step 12" "the world of 3 resumes at step 12"
for i in 0 1 2 3; do
    left=$(ip netns pids "$(ns_of "$i")" | wc -l)
    expect_eq "$left" 0 "nothing left running in node $i's namespace"
done
done_checks
