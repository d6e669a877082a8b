# The environment an elastic job's workers get, three agents on loopback (no root): each attempt's
# workers see the CURRENT membership, and only an elastic run sets SHARDRUN_ELASTIC_RANKS.
# (a) nnodes = 2:3, 2 ranks per node, three agents: attempt 0 is a world of 6 (RANKs 0..5 once each,
#     3 nodes, SHARDRUN_ELASTIC_RANKS 6, restart count 0, one MASTER_ADDR/PORT);
# (b) one of the other nodes' agents killed (SIGKILL): attempt 1 on the two survivors is a world of 4
#     (RANKs 0..3, GROUP_RANKs 0..1, restart count 1, SHARDRUN_ELASTIC_RANKS still 6), and both end
#     with 0 once their task does, with max_restarts at its default 0: a membership change is no
#     failure;
# (c) a plain nnodes = 3 run's workers have no SHARDRUN_ELASTIC_RANKS.
. "$(dirname "$0")/../cli/lib.sh"
export SHARDRUN_RDZV_TOKEN=elastic-env-$$
declare -A pid
trap 'kill_agents "${pid[@]}"; rm -rf "$T"' EXIT

# the task: one line per rank with the variables the test checks, then, in the first attempt only,
# a sleep long enough for the test to take a node away (the agents stop it at the membership change)
cat >"$T/show.sh" <<'EOF'
#!/bin/sh
echo "envline attempt=$TORCHELASTIC_RESTART_COUNT rank=$RANK world=$WORLD_SIZE group_rank=$GROUP_RANK" \
    "group_world=$GROUP_WORLD_SIZE role_world=$ROLE_WORLD_SIZE local_world=$LOCAL_WORLD_SIZE node_rank=$NODE_RANK" \
    "master=$MASTER_ADDR:$MASTER_PORT elastic=${SHARDRUN_ELASTIC_RANKS-unset} max_restarts=$TORCHELASTIC_MAX_RESTARTS"
[ "$TORCHELASTIC_RESTART_COUNT" = 0 ] && [ -n "${SHARDRUN_ELASTIC_RANKS-}" ] && exec sleep 60
exit 0
EOF
chmod +x "$T/show.sh"
printf '[shardrun]\ntask = exec:%s\nplugins = torch\n' "$T/show.sh" >"$T/job.ini"

# start_agent NAME NODE_RANK NNODES PORT: an agent in the background, output in $T/NAME.out/.err
start_agent() {
    "$SHARDRUN" "$T/job.ini" --nnodes "$3" --node-rank "$2" --nproc-per-node 2 --master-addr 127.0.0.1 \
        --master-port "$4" --set shardrun.rdzv_last_call=2 >"$T/$1.out" 2>"$T/$1.err" &
    pid[$1]=$!
}
# lines ATTEMPT NAME...: the task's lines of that attempt in those agents' output
lines() {
    local a=$1
    shift
    for n in "$@"; do grep -h "envline attempt=$a " "$T/$n.out"; done
}
# field LINES KEY: each line's KEY=value, sorted, space-separated; distinct LINES KEY: the values
# once each
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1" | sort -n | tr '\n' ' ' | sed 's/ $//'; }
distinct() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1" | sort -u | tr '\n' ' ' | sed 's/ $//'; }
# wait_lines ATTEMPT COUNT NAME...: until the agents printed COUNT lines of that attempt (0), or 30 s
# passed or every one of them ended (1)
wait_lines() {
    local a=$1 c=$2 i n up
    shift 2
    for i in $(seq 600); do
        [ "$(lines "$a" "$@" | wc -l)" -ge "$c" ] && return 0
        up=0
        for n in "$@"; do kill -0 "${pid[$n]}" 2>/dev/null && up=1; done
        [ "$up" = 0 ] && [ "$(lines "$a" "$@" | wc -l)" -lt "$c" ] && return 1
        sleep 0.05
    done
    return 1
}
logs() { tail -n 5 "$T"/*.err; }
# ends NAME WHAT: the agent's exit code is 0 within 30 s (killed when it still runs then)
ends() {
    local i code
    for i in $(seq 600); do kill -0 "${pid[$1]}" 2>/dev/null || break; sleep 0.05; done
    if kill -0 "${pid[$1]}" 2>/dev/null; then
        kill_agents "${pid[$1]}"
        fail "$2: $1 still ran after 30 s ($(logs))"
    else
        wait "${pid[$1]}"
        code=$?
        expect_eq "$code" 0 "$2: $1's exit code ($(tail -n 3 "$T/$1.err"))"
    fi
    unset "pid[$1]"
}

# (a) the other nodes first, then node 0: all three are there when node 0 opens the rendezvous, so
# the first world has MAX nodes at once (rdzv_last_call only bounds a slow start)
P=$(free_port_pair)
start_agent n1 1 2:3 "$P"
start_agent n2 2 2:3 "$P"
wait_for "$T/n1.err" "shardrun: " 30 && wait_for "$T/n2.err" "shardrun: " 30 || fail "the agents did not start ($(logs))"
start_agent n0 0 2:3 "$P"
if ! wait_lines 0 6 n0 n1 n2; then
    fail "the first world's 6 ranks did not all start within 30 s ($(logs))"
    done_checks
    exit 1
fi
a0=$(lines 0 n0 n1 n2)
expect_eq "$(wc -l <<<"$a0")" 6 "attempt 0: one line per rank"
expect_eq "$(field "$a0" rank)" "0 1 2 3 4 5" "attempt 0: RANKs 0..5, each once"
expect_eq "$(distinct "$a0" world)" 6 "attempt 0: WORLD_SIZE 6 everywhere"
expect_eq "$(distinct "$a0" role_world)" 6 "attempt 0: ROLE_WORLD_SIZE 6 everywhere"
expect_eq "$(distinct "$a0" group_world)" 3 "attempt 0: GROUP_WORLD_SIZE 3 everywhere"
expect_eq "$(field "$a0" group_rank)" "0 0 1 1 2 2" "attempt 0: GROUP_RANKs 0..2, two ranks each"
expect_eq "$(field "$a0" node_rank)" "0 0 1 1 2 2" "attempt 0: NODE_RANK is GROUP_RANK"
expect_eq "$(distinct "$a0" local_world)" 2 "attempt 0: LOCAL_WORLD_SIZE 2 everywhere"
expect_eq "$(distinct "$a0" elastic)" 6 "attempt 0: SHARDRUN_ELASTIC_RANKS 6 (MAX 3 x 2) everywhere"
expect_eq "$(distinct "$a0" master)" "127.0.0.1:$P" "attempt 0: the same MASTER_ADDR:MASTER_PORT everywhere"
expect_eq "$(distinct "$a0" max_restarts)" 0 "attempt 0: TORCHELASTIC_MAX_RESTARTS is the default 0"
# a rank's line comes out under its own rank's prefix, on the agent whose node holds it
for n in n0 n1 n2; do
    for r in $(field "$(lines 0 "$n")" rank); do
        expect_in "$(cat "$T/$n.out")" "[rank$r]: envline attempt=0 rank=$r " "attempt 0: rank $r's line on $n"
    done
done

# (b) node 2's agent lost outright: its guardian ends its workers, node 0 re-forms the world at once
victim=n2
orphans="$(worker_of "${pid[$victim]}" 0) $(worker_of "${pid[$victim]}" 1)"
# out of the shell's jobs first: bash would report a job killed by a signal on its own stderr
disown "${pid[$victim]}"
kill -KILL "${pid[$victim]}"
unset "pid[$victim]"
wait_lines 1 4 n0 n1 || fail "the two survivors' 4 ranks did not start again within 30 s ($(logs))"
for n in n0 n1; do ends "$n" "a survivor ends with 0 once its task does, max_restarts (0) unused"; done
left=""
for w in $orphans; do
    for i in $(seq 200); do kill -0 "$w" 2>/dev/null || break; sleep 0.05; done
    kill -0 "$w" 2>/dev/null && left="$left $w" && kill -KILL "$w"
done
expect_eq "$(wc -w <<<"$orphans")/${left:-none}" "2/none" "the lost agent's two workers end with it (its guardian)"
a1=$(lines 1 n0 n1)
expect_eq "$(wc -l <<<"$a1")" 4 "attempt 1: one line per rank"
expect_eq "$(field "$a1" rank)" "0 1 2 3" "attempt 1: RANKs 0..3, each once"
expect_eq "$(distinct "$a1" world)" 4 "attempt 1: WORLD_SIZE 4 everywhere"
expect_eq "$(distinct "$a1" role_world)" 4 "attempt 1: ROLE_WORLD_SIZE 4 everywhere"
expect_eq "$(distinct "$a1" group_world)" 2 "attempt 1: GROUP_WORLD_SIZE 2 everywhere"
expect_eq "$(field "$a1" group_rank)" "0 0 1 1" "attempt 1: GROUP_RANKs 0..1, two ranks each"
expect_eq "$(distinct "$a1" local_world)" 2 "attempt 1: LOCAL_WORLD_SIZE 2 everywhere"
expect_eq "$(distinct "$a1" elastic)" 6 "attempt 1: SHARDRUN_ELASTIC_RANKS still 6 (MAX, not the current world)"
expect_eq "$(distinct "$a1" master)" "127.0.0.1:$P" "attempt 1: the same MASTER_ADDR:MASTER_PORT everywhere"
expect_eq "$(distinct "$a1" max_restarts)" 0 "attempt 1: TORCHELASTIC_MAX_RESTARTS still 0"
expect_eq "$(lines 2 n0 n1 | wc -l)" 0 "no third attempt"
# node 0's ranks are 0 and 1 in both worlds
expect_eq "$(field "$(lines 1 n0)" rank)" "0 1" "attempt 1: node 0 holds ranks 0 and 1"

# (c) a plain nnodes = 3: the same task, no SHARDRUN_ELASTIC_RANKS in any worker
P=$(free_port_pair)
start_agent p1 1 3 "$P"
start_agent p2 2 3 "$P"
start_agent p0 0 3 "$P"
for n in p0 p1 p2; do ends "$n" "plain run"; done
p=$(lines 0 p0 p1 p2)
expect_eq "$(field "$p" rank)" "0 1 2 3 4 5" "plain run: RANKs 0..5"
expect_eq "$(distinct "$p" elastic)" unset "plain run: no SHARDRUN_ELASTIC_RANKS in any worker"
done_checks
