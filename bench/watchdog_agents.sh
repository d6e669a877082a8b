#!/bin/bash
# The hang watchdog's traffic at scale: N agents on one host, one rank each running
# exec:/bin/sleep SLEEP (no process group, no collective: the agents' own traffic only), with
# [shardrun] hang_timeout = HANG.  Node 0's agent is sampled every second from /proc: its write
# system calls (one per reply its store sends: the requests it serves), its read calls, and its
# user + system CPU time.  Prints the means over the seconds in which every rank ran, and the wall
# time until every agent exited (or CAP seconds, after which every agent is killed).  SAMPLES=FILE
# keeps the samples (time, ranks running, write calls, read calls, CPU ticks; one line a second).
# docs/benchmarks.md ("The hang watchdog at 1,024 agents").
#   bench/watchdog_agents.sh BUILD_DIR N [HANG=300] [SLEEP=40] [CAP=600]
set -u
B=${1:?usage: watchdog_agents.sh BUILD_DIR N [HANG] [SLEEP] [CAP]}
N=${2:?agents}
HANG=${3:-300}
SLEEP=${4:-40}
CAP=${5:-600}
export SHARDRUN_RDZV_TOKEN=watchdog-bench
. "$(dirname "$0")/agents_lib.sh"
P=$(free_port_pair)
D=$(mktemp -d)
pids=()
cleanup() {
    kill_agents "${pids[@]}"
    [ -n "${SAMPLES:-}" ] && cp "$D/samples" "$SAMPLES"
    rm -rf "$D"
}
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)"
# an argument no other process has: the ranks are counted by it
ARG="$SLEEP.0$$"
printf '[shardrun]\ntask = exec:/bin/sleep %s\nhang_timeout = %s\n' "$ARG" "$HANG" >"$D/job.ini"
t0=$(date +%s.%N)
for ((k = 0; k < N; k++)); do
    "$B/shardrun" "$D/job.ini" --nnodes "$N" --node-rank "$k" --nproc-per-node 1 --master-addr 127.0.0.1 \
        --master-port "$P" >"$D/$k.out" 2>"$D/$k.err" &
    pids+=($!)
done
a0=${pids[0]}
hz=$(getconf CLK_TCK)
# one sample: running ranks, node 0's write calls, read calls, CPU ticks
sample() {
    local w r c
    w=$(awk '/^syscw/ { print $2 }' "/proc/$a0/io" 2>/dev/null)
    r=$(awk '/^syscr/ { print $2 }' "/proc/$a0/io" 2>/dev/null)
    c=$(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$a0/stat" 2>/dev/null)
    echo "$(date +%s.%N) $(pgrep -c -f "^/bin/sleep $ARG\$") ${w:-0} ${r:-0} ${c:-0}"
}
: >"$D/samples"
ended=0
while :; do
    sample >>"$D/samples"
    alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)) && break; done
    [ "$alive" = 0 ] && ended=1 && break
    [ "$(echo "$(date +%s.%N) - $t0 > $CAP" | bc)" = 1 ] && break
    sleep 1
done
t1=$(date +%s.%N)
fails=0
if [ "$ended" = 1 ]; then
    for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
fi
awk -v n="$N" -v hz="$hz" '
    NR > 1 && prev_n == n && $2 == n {
        dt = $1 - pt; secs += dt; w += $3 - pw; r += $4 - pr; c += ($5 - pc) / hz
    }
    NR > 1 && $3 > 0 {
        dt = $1 - pt; if (($3 - pw) / dt > wmax) wmax = ($3 - pw) / dt
        if (!t0) t0 = pt
        t1 = $1; wall_w = $3; wall_r = $4; wall_c = $5
    }
    { prev_n = $2; pt = $1; pw = $3; pr = $4; pc = $5; if ($5 > cmax) cmax = $5 }
    END {
        if (secs > 0)
            printf "node 0 while all %d ranks ran (%.0f s): %.0f writes/s (replies), %.0f reads/s, CPU %.0f%% of a core\n",
                   n, secs, w / secs, r / secs, 100 * c / secs
        else
            printf "the %d ranks never all ran at once\n", n
        if (t1 > t0)
            printf "node 0 over its whole run (%.0f s): %.0f writes/s (at most %.0f in a second), %.0f reads/s, CPU %.0f%% of a core (%.1f s)\n",
                   t1 - t0, wall_w / (t1 - t0), wmax, wall_r / (t1 - t0), 100 * wall_c / hz / (t1 - t0), cmax / hz
    }' "$D/samples"
if [ "$ended" = 1 ]; then
    echo "agents $N hang_timeout $HANG: $(echo "$t1 - $t0" | bc) s, $fails failed, load $(cut -d' ' -f1-3 /proc/loadavg)"
else
    echo "agents $N hang_timeout $HANG: not ended within ${CAP} s (killed), load $(cut -d' ' -f1-3 /proc/loadavg)"
    tail -2 "$D/0.err"
fi
[ "$ended" = 1 ] && [ "$fails" = 0 ]
