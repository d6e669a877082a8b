# Shared by the hang watchdog's tests ([shardrun] hang_timeout, docs/clusters.md "Hangs"): runs in
# the background that the test stops, signals and times by pid.
declare -F pass >/dev/null || . "$(dirname "$0")/../cli/lib.sh" # (once: restart.sh has it already)
# one OpenMP thread per rank: two ranks' spinning threads on 2 cores make a step take seconds
export OMP_NUM_THREADS=1
HOST=$(hostname)

# start_bg NAME CMD...: runs CMD in the background, stdout in $T/NAME.out, stderr in $T/NAME.err;
# its pid in $bg and the start time (s, fractional) in $bg_t0
start_bg() {
    local name=$1
    shift
    "$@" >"$T/$name.out" 2>"$T/$name.err" &
    bg=$!
    bg_t0=$(date +%s.%N)
}

# wait_for FILE TEXT SECONDS: 0 once FILE holds TEXT, 1 after SECONDS
wait_for() {
    local until=$(($(date +%s) + $3))
    while [ "$(date +%s)" -lt "$until" ]; do
        grep -qF -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# worker_pid AGENT LOCAL_RANK: tests/cli/lib.sh's worker_of, failing when there is none (yet)
worker_pid() {
    local pick
    pick=$(worker_of "$1" "$2")
    [ -n "$pick" ] && echo "$pick"
}

# finish PID SECONDS: waits for PID to end, at most SECONDS (then SIGKILL to it and its children,
# and rc 124, as `timeout` has it); sets $rc and $elapsed (seconds since start_bg)
finish() {
    local until=$(($(date +%s) + $2))
    while kill -0 "$1" 2>/dev/null && [ "$(date +%s)" -lt "$until" ]; do sleep 0.1; done
    if kill -0 "$1" 2>/dev/null; then
        local c
        for c in $(pgrep -P "$1"); do kill -KILL -- "-$c" "$c" 2>/dev/null; done
        kill -KILL "$1" 2>/dev/null
        wait "$1" 2>/dev/null
        rc=124
    else
        wait "$1"
        rc=$?
    fi
    elapsed=$(awk -v a="$(date +%s.%N)" -v b="$bg_t0" 'BEGIN { printf "%.1f", a - b }')
}

# within SECONDS WHAT: $elapsed_since (set by the caller) is at most SECONDS
# since T0: seconds from T0 (date +%s.%N) to now
since() { awk -v a="$(date +%s.%N)" -v b="$1" 'BEGIN { printf "%.1f", a - b }'; }
# at_most VALUE LIMIT WHAT
at_most() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }' && pass || fail "$3: took ${1}s, at most $2s expected"; }

# start_node NNODES NODE [ARGS]: node NODE of an NNODES-node run on this host over loopback, one rank
# (the job $T/job.ini, master port $P, hang_timeout $HT), in the background: output in $T/nNODE.*,
# its pid in pid[NODE]
start_node() {
    local nnodes=$1 node=$2
    shift 2
    "$SHARDRUN" "$T/job.ini" --nnodes "$nnodes" --node-rank "$node" --nproc-per-node 1 --master-addr 127.0.0.1 \
        --master-port "$P" --set shardrun.hang_timeout=$HT "$@" >"$T/n$node.out" 2>"$T/n$node.err" &
    pid[$node]=$!
}
# tree PID: PID and its descendants
tree() {
    local c
    echo "$1"
    for c in $(pgrep -P "$1"); do tree "$c"; done
}
