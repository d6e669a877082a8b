#!/bin/bash
# N agents on one host, one rank each, started together, running the hello task (rendezvous, the
# Gloo world, an all-reduce): the wall time until every agent exited.  The loopback table of
# docs/benchmarks.md ("Rendezvous and world creation at scale").
#   bench/loopback_agents.sh BUILD_DIR N [shm|tcp]
set -u
B=${1:?usage: loopback_agents.sh BUILD_DIR N [shm|tcp]}
N=${2:?agents}
TR=${3:-shm}
export SHARDRUN_RDZV_TOKEN=loopback-bench
# master_port and the store's, master_port + 1: both free now (a free port's neighbour may not be)
P=$(python3 -c '
import random, socket
for _ in range(200):
    p = random.randint(20000, 60000)
    try:
        for q in (p, p + 1):
            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("", q)); s.close()
        print(p); break
    except OSError:
        pass')
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
ulimit -n "$(ulimit -Hn)"
t0=$(date +%s.%N)
for ((k = 0; k < N; k++)); do
    "$B/shardrun" examples/hello/hello.ini --nnodes "$N" --node-rank "$k" --nproc-per-node 1 --master-addr 127.0.0.1 \
        --master-port "$P" --set torch.transport="$TR" >"$D/$k.out" 2>"$D/$k.err" &
done
fails=0
for ((k = 0; k < N; k++)); do wait -n || fails=$((fails + 1)); done
t1=$(date +%s.%N)
echo "agents $N transport $TR: $(echo "$t1 - $t0" | bc) s, $fails failed"
[ "$fails" = 0 ] || { tail -3 "$D/0.err"; exit 1; }
