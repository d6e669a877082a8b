# The hang watchdog's traffic at node 0's store grows like the agents, not their square: 24 agents
# on loopback, one rank each (exec: sleep; hang_timeout = 300: an exchange a second), and node 0's
# write system calls (one per reply its store sends) counted over 3 s while every rank runs: at
# most 4 a second per agent (each sets its record and reads node 0's: 2).  Before, every agent also
# read every other agent's record: 24 x 23 requests a second (about a million at 1,024 agents).
# Then the sockets node 0's agent holds: one per other agent.
. "$(dirname "$0")/../cli/lib.sh"
N=24
export SHARDRUN_RDZV_TOKEN=watchdog-traffic-test
pids=()
cleanup() {
    kill_agents "${pids[@]}"
    wait 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
P=$(free_port_pair)
printf '[shardrun]\ntask = exec:/bin/sleep 12\nhang_timeout = 300\n' >"$T/job.ini"
for ((k = 0; k < N; k++)); do
    "$SHARDRUN" "$T/job.ini" --nnodes $N --node-rank $k --nproc-per-node 1 --master-addr 127.0.0.1 \
        --master-port "$P" >"$T/$k.out" 2>"$T/$k.err" &
    pids+=($!)
done
# every agent started its rank, and its watchdog has exchanged once
for i in $(seq 300); do
    [ "$(grep -l '^shardrun: started 1 worker' "$T"/*.err | wc -l)" = $N ] && break
    sleep 0.05
done
started=$(grep -l '^shardrun: started 1 worker' "$T"/*.err | wc -l)
[ "$started" = $N ] || {
    fail "only $started of $N agents started their rank within 15 s: $(tail -n 3 "$T/0.err")"
    done_checks
    exit
}
sleep 1.5
writes() { awk '/^syscw/ { print $2 }' "/proc/${pids[0]}/io"; }
w0=$(writes) t0=$(date +%s.%N)
sleep 3
w1=$(writes) t1=$(date +%s.%N)
running=0
for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && running=$((running + 1)); done
expect_eq "$running" $N "every agent still running while node 0's writes were counted"
rate=$(awk -v a="$w0" -v b="$w1" -v s="$t0" -v e="$t1" 'BEGIN { printf "%.0f", (b - a) / (e - s) }')
echo "node 0's store: $rate replies a second for $N agents"
[ "$rate" -le $((4 * N)) ] && pass || fail "node 0's store sent $rate replies a second for $N agents: more than $((4 * N)) (4 per agent)"
# and node 0 holds one connection per other agent: its control requests, the wait that shows it is
# alive, its wait for the verdict and its watchdog's exchange are channels of that connection
# (before: one connection each, 4 per agent).  Node 0's own sockets: the store's listening socket
# and a few of its own (the metrics port when on, a peer's connection mid-reconnect).
sockets=$(find "/proc/${pids[0]}/fd" -lname 'socket:*' 2>/dev/null | wc -l)
echo "node 0's agent holds $sockets sockets for $((N - 1)) other agents"
[ "$sockets" -le $((N - 1 + 4)) ] && pass ||
    fail "node 0's agent holds $sockets sockets for $((N - 1)) other agents: more than one per agent (+4)"
# and the run ends as it should
fails=0
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
expect_eq "$fails" 0 "agents that failed"
done_checks
