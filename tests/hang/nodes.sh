# The hang watchdog across nodes: two agents on this host as node 0 and node 1 over loopback (one
# rank each, tests/tasks/hang.c all-reducing without end).  When one node's agent and workers are
# all stopped (SIGSTOP: a node that froze, or whose link died without a FIN), the other side ends
# on its own within hang_timeout and a few seconds, naming the silent node, exit 1 -- node 1 too,
# although the verdict would come from node 0's store, which it can no longer reach.  Before the
# watchdog node 1 waited for node 0 up to [torch] timeout (1800 s).
. "$(dirname "$0")/lib.sh"
export SHARDRUN_RDZV_TOKEN=hang-nodes-test
HT=4
printf '[shardrun]\ntask = %s\nplugins = torch\n[task]\nrounds = 1000000\nhang_rank = -1\n' \
    "$BUILD/tests/tasks/hang.so" >"$T/job.ini"


for frozen in 1 0; do
    other=$((1 - frozen))
    P=$(free_port_pair)
    start_node 2 0
    start_node 2 1
    bg_t0=$(date +%s.%N)
    # both nodes' ranks are all-reducing once node 1's worker runs and a second has passed
    for i in $(seq 100); do [ -n "$(worker_pid "${pid[1]}" 0)" ] && break; sleep 0.2; done
    sleep 2
    procs=$(tree "${pid[$frozen]}")
    kill -STOP $procs
    stopped_at=$(date +%s.%N)
    finish "${pid[$other]}" 60
    elapsed_since=$(since "$stopped_at")
    err=$(cat "$T/n$other.err")
    expect_rc 1 "node $frozen stopped: node $other's agent"
    at_most "$elapsed_since" $((HT + 6)) "node $frozen stopped: node $other ends within hang_timeout ($HT s) + 6 s"
    expect_in "$err" "shardrun: hang: node $frozen's shardrun (host $HOST) has not answered for" "node $other names node $frozen"
    expect_in "$err" "it is stopped, or the link to it is down" "and says what that means"
    [ "$other" = 1 ] && expect_in "$err" "node 0's shardrun does not answer: this node ends the run on its own" "node 1 does not wait for node 0's verdict"
    kill -KILL $procs 2>/dev/null
    wait "${pid[$frozen]}" 2>/dev/null
done
# node 0 stopped, and the collective's own timeout ([torch] timeout = 2) shorter than hang_timeout:
# node 1's rank times out, then blocks naming the missing ranks through node 0's store; node 1
# still ends on its own within hang_timeout, naming node 0
P=$(free_port_pair)
start_node 2 0 --set torch.timeout=2
start_node 2 1 --set torch.timeout=2
bg_t0=$(date +%s.%N)
for i in $(seq 100); do [ -n "$(worker_pid "${pid[1]}" 0)" ] && break; sleep 0.2; done
sleep 2
procs=$(tree "${pid[0]}")
kill -STOP $procs
stopped_at=$(date +%s.%N)
finish "${pid[1]}" 60
elapsed_since=$(since "$stopped_at")
err=$(cat "$T/n1.err")
expect_rc 1 "node 0 stopped, [torch] timeout 2: node 1's agent"
at_most "$elapsed_since" $((HT + 6)) "node 0 stopped, [torch] timeout 2: node 1 ends within hang_timeout ($HT s) + 6 s"
expect_in "$err" "shardrun: hang: node 0's shardrun (host $HOST) has not answered for" "node 1 names node 0"
expect_in "$err" "node 0's shardrun does not answer: this node ends the run on its own" "and ends on its own"
kill -KILL $procs 2>/dev/null
wait "${pid[0]}" 2>/dev/null

echo "hang_nodes: $checks checks, $failed failed"
[ "$failed" -eq 0 ]
