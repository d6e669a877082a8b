# Shared by the tests of two nodes joined by a real network link (tests/links/): the restart
# tests' GPT-2 job, plus two network namespaces, one per node, joined by a veth pair.  Root only.
#
# Every name carries this test's pid (namespaces srlPIDa/srlPIDb, veth srlPIDa/srlPIDb): the
# test creates them and removes them, by name, at exit, also when it fails.  The addresses are on
# the veth only (10.201.0.1 node 0, 10.201.0.2 node 1): no traffic leaves the pair.  Each
# namespace's /etc/hosts (ip netns exec's /etc/netns/NAME/hosts) maps this host's name to
# 127.0.1.1, as Debian's default does: a node that advertised the address its host name resolves
# to would advertise a loopback address (what shardrun must never do).  GLOO_SOCKET_IFNAME is not
# set: shardrun must find the interface itself.
. "$(dirname "$0")/../restarts/lib.sh"
export SHARDRUN_RDZV_TOKEN=links-$$
unset GLOO_SOCKET_IFNAME

[ "$(id -u)" = 0 ] || { fail "these tests need root (network namespaces and a veth pair); run them as root"; done_checks; exit 1; }
command -v ip >/dev/null || { fail "these tests need iproute2's ip (apt-get install iproute2)"; done_checks; exit 1; }

NS0=srl$$a NS1=srl$$b
IF0=srl$$a IF1=srl$$b
A0=10.201.0.1 A1=10.201.0.2
declare -A pid rc

links_cleanup() {
    local p ns
    for p in "${pid[@]}"; do kill -KILL "$p" 2>/dev/null; done
    for ns in "$NS0" "$NS1"; do
        if ip netns list | grep -qw "$ns"; then
            # what this test started inside its namespaces, by pid
            for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
            ip netns del "$ns" 2>/dev/null
        fi
        rm -rf "/etc/netns/$ns"
    done
    ip link del "$IF0" 2>/dev/null
    rm -rf "$T"
}
trap links_cleanup EXIT

# links_up: both namespaces, the veth pair between them, addresses, links up
links_up() {
    local ns
    for ns in "$NS0" "$NS1"; do
        mkdir -p "/etc/netns/$ns"
        printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n' "$(hostname)" >"/etc/netns/$ns/hosts"
        ip netns add "$ns" || { fail "cannot create network namespace $ns"; done_checks; exit 1; }
        ip -n "$ns" link set lo up
    done
    ip link add "$IF0" type veth peer name "$IF1" || { fail "cannot create a veth pair (kernel without veth?)"; done_checks; exit 1; }
    ip link set "$IF0" netns "$NS0" && ip link set "$IF1" netns "$NS1" &&
        ip -n "$NS0" addr add "$A0/24" dev "$IF0" && ip -n "$NS1" addr add "$A1/24" dev "$IF1" &&
        ip -n "$NS0" link set "$IF0" up && ip -n "$NS1" link set "$IF1" up ||
        { fail "cannot set up the veth pair"; done_checks; exit 1; }
}
# link_down / link_up_again: node 0's end of the veth (the pair goes down with it)
link_down() { ip -n "$NS0" link set "$IF0" down; }
link_up_again() { ip -n "$NS0" link set "$IF0" up; }

# netem (delay, loss) needs sch_netem, which not every kernel has: say so, never skip silently
have_netem() {
    ip netns exec "$NS0" tc qdisc add dev "$IF0" root netem delay 1ms 2>/dev/null && ip netns exec "$NS0" tc qdisc del dev "$IF0" root
}

# start_node NODE JOB OUTDIR [ARGS...]: that node's agent in its namespace, in the background
# (output in $T/nNODE.out, .err); master_addr is node 0's veth address
P=29500
start_node() {
    local node=$1 job=$2 dir=$3 ns=$NS0
    [ "$node" = 1 ] && ns=$NS1
    shift 3
    ip netns exec "$ns" "$SHARDRUN" "$job" --nnodes 2 --node-rank "$node" --nproc-per-node 1 --master-addr "$A0" \
        --master-port "$P" --set task.output_dir="$dir" --set torch.timeout=20 "$@" >"$T/n$node.out" 2>"$T/n$node.err" &
    pid[$node]=$!
}
# wait_progress FILE TEXT SECONDS: until FILE holds TEXT; gives up at once when node 0's agent ended
wait_progress() {
    local end=$(($(now_ms) + $3 * 1000))
    while [ "$(now_ms)" -lt "$end" ]; do
        grep -qF -- "$2" "$1" 2>/dev/null && return 0
        kill -0 "${pid[0]:-0}" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
