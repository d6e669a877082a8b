# An elastic job with elastic_join = next_save takes a node in at its next periodic checkpoint, each
# node a network namespace on one switch: nnodes = 2:3 started on two nodes, save_steps = 5; a third
# node started after step 7 waits (node 1 held still meanwhile, so that it is there before step 10's
# checkpoint), and the job goes on with three from checkpoint-10: no checkpoint of its own at the
# step the node arrived, the steps trained after checkpoint-10 done again.  Nothing is left running.
. "$(dirname "$0")/lib.sh"
node_job 20
nodes_up 3

P=$(free_port_pair) OUT=$T/a
NNODES=2:3
export SHARDRUN_ELASTIC_JOIN=next_save # every node's (it is part of what the nodes compare)
start_world 2
wait_for "$T/n0.out" "step 7/20" 120 && pass || fail "the run reached step 7 ($(logs))"
# node 1 held still (SIGSTOP, every process in its namespace): node 0's rank waits for it in a
# collective, well within torch.timeout, until the third node is seen waiting
for p in $(ip netns pids "$(ns_of 1)"); do kill -STOP "$p"; done
start_node 2 2 "$OUT"
wait_for "$T/n0.err" "a new node's shardrun waits to join the job: it is taken in once the next periodic checkpoint" 60 &&
    pass || fail "node 0 says the new node waits for the next checkpoint ($(logs))"
for p in $(ip netns pids "$(ns_of 1)"); do kill -CONT "$p"; done
for n in 0 1 2; do wait_node_for "$n" 120; done
expect_eq "${rc[0]}/${rc[1]}/${rc[2]}" "0/0/0" "the three nodes finish the run ($(logs))"
expect_in "$(cat "$T/n0.err")" "the job's nodes change: a new node's shardrun (slot 2) joins the job at checkpoint-10 (elastic_join = next_save); the job goes on with the new set of nodes from its newest checkpoint" \
    "node 0 takes the node in at checkpoint-10, without a checkpoint of its own"
expect_not_in "$(cat "$T/n0.err")" "every rank finishes its step and writes a checkpoint" "no extra checkpoint is asked for"
for n in 0 1 2; do
    expect_in "$(cat "$T/n$n.err")" " of 3, restart 1)" "node $n takes part in the world of 3"
done
expect_in "$(cat "$T/n2.err")" "started 1 worker (rank 2 of 3, restart 1)" "node 2 takes the third place"
expect_in "$(cat "$T/n0.out")" "[rank0]: shardrun: resumed from $T/a/checkpoint-10 at step 10" \
    "the world of 3 resumes from checkpoint-10"
# only the periodic checkpoints: none at the step the node arrived (7 or so)
expect_eq "$(cd "$T/a" && ls -d checkpoint-* | sort -t- -k2 -n | tr '\n' ' ')" "checkpoint-5 checkpoint-10 checkpoint-15 checkpoint-20 " \
    "the checkpoints are save_steps' only"
expect_eq "$(grep -c "shardrun: saved $T/a/checkpoint-10 " "$T/n0.out")" 1 "checkpoint-10 was written once"
n=$(grep -c '"rank":' "$T/n0.out")
expect_eq "$n" 3 "the results list the 3 ranks of the last world"
for i in 0 1 2; do
    left=$(ip netns pids "$(ns_of "$i")" | wc -l)
    expect_eq "$left" 0 "nothing left running in node $i's namespace"
done
done_checks
