# One verdict per run: the agent holding rank 0 decides it and every agent exits with it.
# - rank 0 fails after rank 1 (on the other node) already finished: both agents exit 1, and no
#   node prints results (before, node 1 exited 0 and printed its results);
# - node 1's agent is SIGKILLed mid-run: node 0 says that node 1's shardrun went away, once,
#   within seconds, instead of a collective timeout blamed on the ranks.
. "$(dirname "$0")/lib.sh"
export SHARDRUN_RDZV_TOKEN=verdict-test
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# 1. exec task: rank 0 exits 3 after a second, rank 1 exits 0 at once (2 nodes x 1 worker)
cat >"$T/late.sh" <<'SH'
#!/bin/sh
if [ "$RANK" = 0 ]; then sleep 1; exit 3; fi
exit 0
SH
chmod +x "$T/late.sh"
printf '[shardrun]\ntask = exec:%s\nplugins = torch\n' "$T/late.sh" >"$T/late.ini"
P=$(free_port_pair)
for node in 0 1; do
    timeout 60 "$SHARDRUN" "$T/late.ini" --nnodes 2 --node-rank $node --master-addr 127.0.0.1 --master-port "$P" \
        >"$T/l$node.out" 2>"$T/l$node.err" &
    pid[$node]=$!
done
wait "${pid[0]}"; rc0=$?
wait "${pid[1]}"; rc1=$?
expect_eq "$rc0/$rc1" "1/1" "a late failure on node 0 fails node 1 too ($(cat "$T/l0.err" "$T/l1.err"))"
expect_in "$(cat "$T/l0.err")" "rank 0 (local rank 0, pid" "node 0 names its failed rank"
expect_in "$(cat "$T/l1.err")" "the run failed on another node: rank 0 (node 0) exited with code 3" "node 1 says why"
# one results list, node 0's, with every rank's exit code
expect_eq "$(grep -c '^\[$' "$T/l1.out")" "0" "node 1 prints no results"
sed -n '/^\[$/,$p' "$T/l0.out" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
assert [(x["rank"], x["exit_code"]) for x in r] == [(0, 3), (1, 0)], r' \
    && pass || fail "node 0 lists rank 0 exit 3 and rank 1 exit 0: $(cat "$T/l0.out")"

# 2. node 1's agent killed while its ranks wait: node 0 names it, once, fast
BEHAVE=$BUILD/tests/tasks/behave.so
printf '[shardrun]\ntask = %s\nplugins = torch\n[task]\nact_rank = -1\nothers = sleep\npid_dir = %s\n' \
    "$BEHAVE" "$T/pids" >"$T/sleep.ini"
mkdir -p "$T/pids"
P=$(free_port_pair)
timeout 60 "$SHARDRUN" "$T/sleep.ini" --nnodes 2 --node-rank 0 --nproc-per-node 1 --master-addr 127.0.0.1 \
    --master-port "$P" >"$T/k0.out" 2>"$T/k0.err" &
p0=$!
"$SHARDRUN" "$T/sleep.ini" --nnodes 2 --node-rank 1 --nproc-per-node 1 --master-addr 127.0.0.1 --master-port "$P" \
    >"$T/k1.out" 2>"$T/k1.err" &
p1=$!
disown $p1 # its death by SIGKILL is the point: no job notice
for _ in $(seq 1 500); do [ -s "$T/pids/rank0.pid" ] && [ -s "$T/pids/rank1.pid" ] && break; sleep 0.02; done
t0=$(now_ms)
kill -KILL $p1
wait $p0; rc0=$?
ms=$(($(now_ms) - t0))
expect_eq "$rc0" "1" "node 0 fails when node 1's agent is killed"
expect_in "$(cat "$T/k0.err")" "node 1's shardrun (agent 1) went away before the run ended" "node 0 names the lost agent"
expect_eq "$(grep -c "went away" "$T/k0.err")" "1" "said once"
expect_not_in "$(cat "$T/k0.err")" "did not arrive" "not blamed on a collective timeout"
sed -n '/^\[$/,$p' "$T/k0.out" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
assert [x["rank"] for x in r] == [0, 1] and r[1]["exit_code"] is None, r' \
    && pass || fail "node 0 lists rank 1 as unknown: $(cat "$T/k0.out")"
[ "$ms" -lt 10000 ] && pass || fail "node 0 took $ms ms to stop"
# the killed agent's worker dies with it (PDEATHSIG)
p=$(cat "$T/pids/rank1.pid")
for _ in $(seq 1 100); do [ -e "/proc/$p" ] || break; sleep 0.05; done
[ ! -e "/proc/$p" ] && pass || fail "rank 1 (pid $p) survived its agent"
done_checks
