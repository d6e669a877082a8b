# An elastic job (nnodes = 2:3) on three nodes, each a network namespace on one switch, whose node 2
# loses its link after step 6 (its end of the veth set down: no connection is closed, nothing
# arrives any more).  Node 0's hang watchdog finds node 2 silent (hang_timeout = 5) and the job goes
# on without it, from checkpoint-5, on nodes 0 and 1; node 2, cut off, finds node 0 silent and ends
# on its own (exit 1), saying that the others may go on without it.  Nothing is left running.
. "$(dirname "$0")/lib.sh"
node_job 20
nodes_up 3

P=$(free_port_pair) OUT=$T/a
export SHARDRUN_HANG_TIMEOUT=5
SHARDRUN_DEBUG_PAUSE_AT=0:6 start_world 3
unset SHARDRUN_HANG_TIMEOUT
wait_for "$T/n0.out" "step 6/20" 120 && pass || fail "the run reached step 6 ($(logs))"
r2=$(place_of 2)
t0=$(now_ms)
ip -n "$(ns_of 2)" link set "sre$$n2" down || fail "cannot set node 2's link down"
wait_for "$T/n0.err" "started 1 worker (rank 0 of 2, restart 1)" 60 && pass ||
    fail "nodes 0 and 1 go on as a world of 2 ($(logs))"
ms=$(($(now_ms) - t0))
[ "$ms" -lt 30000 ] && pass || fail "the world of 2 started ${ms} ms after node 2's link went down (hang_timeout 5 s)"
wait_node_for 0 120
wait_node_for 1 120
wait_node_for 2 60
expect_eq "${rc[0]}/${rc[1]}/${rc[2]}" "0/0/1" "nodes 0 and 1 finish the run, node 2 (cut off) fails ($(logs))"
expect_in "$(cat "$T/n0.err")" "the job's nodes change: hang (seen by node 0)" "node 0 says the nodes change, and why"
expect_in "$(cat "$T/n0.err")" "node $r2" "node 0 names node 2 (place $r2)"
expect_in "$(cat "$T/n0.out")" "[rank0]: shardrun: resumed from $T/a/checkpoint-5 at step 5" "the run resumes from checkpoint-5"
expect_in "$(cat "$T/n0.out")" "[rank0]: step 20/20" "the run reaches its last step"
expect_in "$(cat "$T/n2.err")" "the other nodes may go on without this one" "node 2 says the others may go on"
ip -n "$(ns_of 2)" link set "sre$$n2" up
for i in 0 1 2; do
    left=$(ip netns pids "$(ns_of "$i")" | wc -l)
    expect_eq "$left" 0 "nothing left running in node $i's namespace"
done
done_checks
