# The hang watchdog on three nodes, where only node 0's agent hears every agent (the others read
# node 0's record alone): three agents on this host as nodes 0, 1 and 2 over loopback, one rank
# each of tests/tasks/hang.c all-reducing without end.
#  - node 2's agent and workers stopped (SIGSTOP): node 0 sees it silent and decides; node 1, which
#    never reads node 2's record, ends too, through node 0's verdict: both exit 1 within
#    hang_timeout and a few seconds, and both name node 2
#  - only node 1's worker stopped (its agent still answers): node 0 names rank 1 from node 1's
#    record; nodes 1 and 2 end with the same verdict
#  - node 0 stopped: nodes 1 and 2 each end on their own, naming node 0
. "$(dirname "$0")/lib.sh"
export SHARDRUN_RDZV_TOKEN=hang-nodes3-test
HT=4
printf '[shardrun]\ntask = %s\nplugins = torch\n[task]\nrounds = 1000000\nhang_rank = -1\n' \
    "$BUILD/tests/tasks/hang.so" >"$T/job.ini"

# start_all: three nodes, back once every node's worker runs and a second more has passed
start_all() {
    P=$(free_port_pair)
    for n in 0 1 2; do start_node 3 $n; done
    bg_t0=$(date +%s.%N)
    for n in 0 1 2; do
        for i in $(seq 150); do [ -n "$(worker_pid "${pid[$n]}" 0)" ] && break; sleep 0.2; done
    done
    sleep 2
}
# ends NODE STOPPED_AT WHAT NAMES: node NODE's agent exits 1 within HT + 6 s of STOPPED_AT and its
# stderr holds NAMES
ends() {
    finish "${pid[$1]}" 60
    elapsed_since=$(since "$2")
    local err
    err=$(cat "$T/n$1.err")
    expect_rc 1 "$3: node $1's agent"
    at_most "$elapsed_since" $((HT + 6)) "$3: node $1 ends within hang_timeout ($HT s) + 6 s"
    expect_in "$err" "$4" "$3: node $1 says: $4"
}

# node 2 stopped whole
start_all
procs=$(tree "${pid[2]}")
kill -STOP $procs
stopped_at=$(date +%s.%N)
ends 0 "$stopped_at" "node 2 stopped" "shardrun: hang: node 2's shardrun (host $HOST) has not answered for"
ends 1 "$stopped_at" "node 2 stopped" "node 2's shardrun (host $HOST) has not answered for"
kill -KILL $procs 2>/dev/null
wait "${pid[2]}" 2>/dev/null

# only node 1's worker stopped: its agent still publishes what it sees (rank 1 stopped)
start_all
w=$(worker_pid "${pid[1]}" 0)
kill -STOP "$w"
stopped_at=$(date +%s.%N)
ends 0 "$stopped_at" "node 1's worker stopped" "rank 1 (node 1"
ends 1 "$stopped_at" "node 1's worker stopped" "rank 1 (node 1"
ends 2 "$stopped_at" "node 1's worker stopped" "rank 1 (node 1"
kill -KILL "$w" 2>/dev/null

# node 0 stopped whole: 1 and 2 end on their own
start_all
procs=$(tree "${pid[0]}")
kill -STOP $procs
stopped_at=$(date +%s.%N)
for n in 1 2; do
    ends $n "$stopped_at" "node 0 stopped" "node 0's shardrun does not answer: this node ends the run on its own"
done
kill -KILL $procs 2>/dev/null
wait "${pid[0]}" 2>/dev/null

echo "hang_nodes3: $checks checks, $failed failed"
[ "$failed" -eq 0 ]
