# Shared by the elastic tests (tests/elastic/): the restart tests' GPT-2 job, and up to five nodes,
# each a network namespace with one veth link to a bridge in a sixth namespace (the switch).  Root
# only.
#
# Every name carries this test's pid: namespaces srePIDn0..n4 and srePIDsw, the veth pairs
# srePIDn<i> (in the node) / srePIDs<i> (on the bridge), the bridge sreb (inside the switch's
# namespace, so the name is free).  The test creates them and removes them, by name, at exit, also
# when it fails, and kills by pid whatever it started inside them.  Addresses 10.203.0.1..5/24 on
# the veths only: no traffic leaves the switch.  Each node's /etc/hosts maps this host's name to
# 127.0.1.1 (as tests/links/lib.sh explains).
. "$(dirname "$0")/../restarts/lib.sh"
export SHARDRUN_RDZV_TOKEN=elastic-$$
unset GLOO_SOCKET_IFNAME

[ "$(id -u)" = 0 ] || { fail "these tests need root (network namespaces and veth links); run them as root"; done_checks; exit 1; }
command -v ip >/dev/null || { fail "these tests need iproute2's ip (apt-get install iproute2)"; done_checks; exit 1; }

NSW=sre$$sw
declare -A pid rc
NODES=()

# ns_of I / addr_of I: node I's namespace and address
ns_of() { echo "sre$$n$1"; }
addr_of() { echo "10.203.0.$(($1 + 1))"; }

elastic_cleanup() {
    local p ns i
    for p in "${pid[@]}"; do kill -KILL "$p" 2>/dev/null; done
    for i in 0 1 2 3 4; do
        ns=$(ns_of "$i")
        if ip netns list | grep -qw "$ns"; then
            for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
            ip netns del "$ns" 2>/dev/null
        fi
        rm -rf "/etc/netns/$ns"
    done
    ip netns list | grep -qw "$NSW" && ip netns del "$NSW" 2>/dev/null
    rm -rf "$T"
}
trap elastic_cleanup EXIT

# nodes_up N: the switch and nodes 0..N-1 on it
nodes_up() {
    local i ns
    ip netns add "$NSW" || { fail "cannot create network namespace $NSW"; done_checks; exit 1; }
    ip -n "$NSW" link add sreb type bridge && ip -n "$NSW" link set sreb up ||
        { fail "cannot create a bridge (kernel without bridge support?)"; done_checks; exit 1; }
    for ((i = 0; i < $1; i++)); do
        ns=$(ns_of "$i")
        mkdir -p "/etc/netns/$ns"
        printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n' "$(hostname)" >"/etc/netns/$ns/hosts"
        ip netns add "$ns" || { fail "cannot create network namespace $ns"; done_checks; exit 1; }
        ip -n "$ns" link set lo up
        ip link add "sre$$n$i" netns "$ns" type veth peer name "sre$$s$i" netns "$NSW" &&
            ip -n "$NSW" link set "sre$$s$i" master sreb && ip -n "$NSW" link set "sre$$s$i" up &&
            ip -n "$ns" addr add "$(addr_of "$i")/24" dev "sre$$n$i" && ip -n "$ns" link set "sre$$n$i" up ||
            { fail "cannot link node $i to the switch"; done_checks; exit 1; }
    done
}

# node_gone I: node I vanishes: every process in its namespace killed (SIGKILL), the namespace
# deleted, its link with it
node_gone() {
    local p ns
    ns=$(ns_of "$1")
    for p in $(ip netns pids "$ns"); do kill -KILL "$p" 2>/dev/null; done
    ip netns del "$ns"
}

# start_node I NODE_RANK OUTDIR [ARGS...]: a shardrun agent in node I's namespace, in the background
# (output in $T/nI.out, .err); master_addr is node 0's address; nnodes is $NNODES, rdzv_last_call
# $LAST_CALL
P=29500
NNODES=2:3
# the first world forms once MAX nodes are there, or this long after MIN came
LAST_CALL=2
start_node() {
    local i=$1 rank=$2 dir=$3
    shift 3
    : >"$T/n$i.out" # emptied here, not only by the background job's redirection: `started` must not
    : >"$T/n$i.err" # read an earlier agent's lines
    ip netns exec "$(ns_of "$i")" "$SHARDRUN" "$J" --nnodes "$NNODES" --node-rank "$rank" --nproc-per-node 1 \
        --master-addr "$(addr_of 0)" --master-port "$P" --set task.output_dir="$dir" --set torch.timeout=20 \
        --set shardrun.rdzv_last_call="$LAST_CALL" "$@" >"$T/n$i.out" 2>"$T/n$i.err" &
    pid[$i]=$!
}
# started I: waits until node I's shardrun runs (its first line; entering a namespace may take seconds
# while the kernel still removes another one)
started() { wait_for "$T/n$1.err" "shardrun: " 60 || fail "node $1's shardrun did not start within 60 s"; }
# start_world NODES ARGS0...: nodes 1..NODES-1 first, each running, then node 0 (with ARGS0): every
# node is there when node 0 opens the rendezvous, so the first world has them all however slow
# the machine; the output folder is $OUT
start_world() {
    local n=$1 i
    shift
    for ((i = 1; i < n; i++)); do start_node "$i" "$i" "$OUT"; done
    for ((i = 1; i < n; i++)); do started "$i"; done
    start_node 0 0 "$OUT" "$@"
}
# place_of I [RESTART]: node I's rank in that attempt's world (the first without RESTART), from its
# "started 1 worker (rank R of N...)" line; places follow the order the nodes arrived in
place_of() {
    local line
    if [ -n "${2:-}" ]; then line=$(grep -o "started 1 worker (rank [0-9]* of [0-9]*, restart $2)" "$T/n$1.err")
    else line=$(grep -o "started 1 worker (rank [0-9]* of [0-9]*)" "$T/n$1.err" | head -n 1); fi
    line=${line#*rank }
    echo "${line%% *}"
}
# logs: every node's stderr, for a failure's message
logs() {
    local f
    for f in "$T"/n*.err; do echo "--- $f"; tail -n 8 "$f"; done
}
