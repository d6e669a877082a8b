# The store is fair to node 0's own loop: node 0's shardrun serves the rendezvous store from the
# loop that also takes its signals and decides the run's verdict, so a store kept busy by many
# clients must still leave that loop its turn.  Two agents on loopback (exec: sleep, one rank each)
# and bench/store_load's 1,024 connections, each keeping a request in flight at node 0's store (a
# CHECK of 1,024 keys: far more work for the server than for the client, so it always has more
# ready connections than it serves in one turn):
#   - the ranks end: node 0 decides the verdict and both agents exit 0 within a second;
#   - SIGTERM to node 0's shardrun: its rank is stopped (and reaped) within a second, exit 143
#     (node 1: 1).
# Before, the server went on serving as long as epoll returned a full batch of ready connections:
# under this load node 0's loop came back only now and then (in three runs: verdicts 3.0-14.8 s
# late, SIGTERMs acted on 1.8-6.6 s late).  CONNS, DEPTH and KEYS (store_load's --conns, --depth,
# --keys) vary the load.
. "$(dirname "$0")/../cli/lib.sh"
LOAD=${1:?usage: fair.sh path/to/store_load}
export SHARDRUN_RDZV_TOKEN=store-fair-test
LIMIT=1.0
CONNS=${CONNS:-1024}
DEPTH=${DEPTH:-1}
KEYS=${KEYS:-1024}
bgpids=()
# every process this test started, and their workers (each the leader of its own group)
cleanup() {
    kill_agents "${bgpids[@]}"
    wait 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
now() { date +%s.%N; }
elapsed() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.2f", a - b }'; }
at_most() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }' && pass || fail "$3: took ${1}s, at most ${2}s expected"; }
# gone_within PID SECONDS: 0 once PID is gone, 1 after SECONDS
gone_within() {
    local until
    until=$(awk -v a="$(now)" -v s="$2" 'BEGIN { printf "%.2f", a + s }')
    while kill -0 "$1" 2>/dev/null; do
        awk -v a="$(now)" -v b="$until" 'BEGIN { exit !(a > b) }' && return 1
        sleep 0.02
    done
    return 0
}

# start_run SECONDS: node 0 and node 1 running a rank that sleeps SECONDS, then the load on node 0's
# store; pid[0], pid[1] the agents, w0 and w1 their ranks
start_run() {
    P=$(free_port_pair)
    # each rank writes the time it ends (a rank ended is gone only once its agent reaps it)
    printf '[shardrun]\ntask = exec:/bin/sh -c "sleep %s; date +%%s.%%N >%s/end.\\$\\$"\n' "$1" "$T" >"$T/job.ini"
    local node i
    for node in 0 1; do
        "$SHARDRUN" "$T/job.ini" --nnodes 2 --node-rank $node --nproc-per-node 1 --master-addr 127.0.0.1 \
            --master-port "$P" >"$T/n$node.out" 2>"$T/n$node.err" &
        pid[$node]=$!
        bgpids+=($!)
    done
    w0= w1=
    for i in $(seq 200); do
        w0=$(worker_of "${pid[0]}" 0) w1=$(worker_of "${pid[1]}" 0)
        [ -n "$w0" ] && [ -n "$w1" ] && break
        sleep 0.05
    done
    [ -n "$w0" ] && [ -n "$w1" ] || {
        fail "the two agents did not start their ranks within 10 s: $(cat "$T/n0.err" "$T/n1.err")"
        done_checks
        exit
    }
    rm -f "$T/rate"
    "$LOAD" --port $((P + 1)) --token "$SHARDRUN_RDZV_TOKEN" --conns $CONNS --depth $DEPTH --keys $KEYS --seconds 60 \
        --rate-file "$T/rate" >"$T/load.out" 2>&1 &
    load=$!
    bgpids+=($!)
    # on once it has been answered for a second (the file is written every second)
    for i in $(seq 250); do [ -s "$T/rate" ] && break; sleep 0.02; done
    [ -s "$T/rate" ] || {
        fail "store_load got no answers from node 0's store within 5 s: $(cat "$T/load.out")"
        done_checks
        exit
    }
    load_at=$(cat "$T/rate")
}

# end_of NODE SECONDS: waits up to SECONDS for that agent to exit and sets $rc (124, after killing it
# and its rank, when it did not)
end_of() {
    if gone_within "${pid[$1]}" "$2"; then
        wait "${pid[$1]}"
        rc=$?
    else
        kill_agents "${pid[$1]}"
        wait "${pid[$1]}" 2>/dev/null
        rc=124
    fi
}

# --- the ranks end under load: the verdict ---
start_run 5
gone_within "$w1" 10 || fail "node 1's rank (sleep 5) did not end"
for i in $(seq 250); do [ "$(ls "$T" | grep -c '^end\.')" = 2 ] && break; sleep 0.02; done
ended=$(cat "$T"/end.* | sort -n | tail -n 1)
end_of 0 15
took=$(elapsed "$ended")
expect_rc 0 "node 0 under load, every rank succeeded"
at_most "$took" $LIMIT "node 0 decides the verdict under load and exits"
end_of 1 5
expect_rc 0 "node 1 under load, every rank succeeded"
at_most "$(elapsed "$ended")" $LIMIT "node 1 hears the verdict under load and exits"
[ "$(cat "$T/rate")" -gt "$load_at" ] && pass || fail "the load did not go on: $(cat "$T/rate") answers"
gone_within "$load" 5 || kill "$load" # it ends once node 0's store closed its connections
wait "$load"
echo "verdict: node 0 exited ${took}s after its rank; $(cat "$T/load.out")"

# --- SIGTERM to node 0's shardrun under load ---
start_run 60
kill -TERM "${pid[0]}"
sent=$(now)
gone_within "$w0" 15
took=$(elapsed "$sent")
at_most "$took" $LIMIT "node 0's SIGTERM reaches its rank under load"
end_of 0 10
expect_rc 143 "node 0 stopped by SIGTERM under load"
end_of 1 10
expect_rc 1 "node 1, whose run node 0's SIGTERM ended"
echo "SIGTERM: node 0's rank stopped ${took}s after it"
kill "$load" 2>/dev/null
done_checks
