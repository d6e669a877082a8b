#!/bin/bash
# N agents on one host, one rank each, started together, running the hello task (rendezvous, the
# world over shm or Gloo TCP, an all-reduce): the wall time until every agent exited, or CAP seconds
# (default 600), after which every agent and its workers are killed and the run counts as not ended.
# The loopback tables of docs/benchmarks.md ("Rendezvous and world creation at scale").
#   bench/loopback_agents.sh BUILD_DIR N [shm|tcp] [CAP]
set -u
B=${1:?usage: loopback_agents.sh BUILD_DIR N [shm|tcp] [CAP]}
N=${2:?agents}
TR=${3:-shm}
CAP=${4:-600}
export SHARDRUN_RDZV_TOKEN=loopback-bench
. "$(dirname "$0")/agents_lib.sh"
P=$(free_port_pair)
D=$(mktemp -d)
pids=()
cleanup() {
    kill_agents "${pids[@]}"
    [ -n "${KEEP:-}" ] && cp -r "$D" "$KEEP"
    rm -rf "$D"
}
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)"
t0=$(date +%s.%N)
for ((k = 0; k < N; k++)); do
    "$B/shardrun" examples/hello/hello.ini --nnodes "$N" --node-rank "$k" --nproc-per-node 1 --master-addr 127.0.0.1 \
        --master-port "$P" --set torch.transport="$TR" >"$D/$k.out" 2>"$D/$k.err" &
    pids+=($!)
done
ended=0
while :; do
    alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1 && break; done
    [ "$alive" = 0 ] && ended=1 && break
    [ "$(echo "$(date +%s.%N) - $t0 > $CAP" | bc)" = 1 ] && break
    sleep 0.2
done
t1=$(date +%s.%N)
if [ "$ended" = 0 ]; then
    echo "agents $N transport $TR: not ended within $CAP s (killed)"
    tail -2 "$D/0.err"
    exit 1
fi
fails=0
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
echo "agents $N transport $TR: $(echo "$t1 - $t0" | bc) s, $fails failed"
# a failure: node 0's word for it, and the first errors of the ranks themselves (the cause)
[ "$fails" = 0 ] || {
    tail -3 "$D/0.err"
    grep -h 'error' "$D"/*.out "$D"/*.err | grep -v 'failed on another node' | head -5
    exit 1
}
