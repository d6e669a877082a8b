# The etcd client (core/etcd/) against a real cluster: three etcd members (Debian's etcd-server)
# started here on loopback (127.0.0.11-13, free ports, data in $T), tests/etcd/client_test.c run
# against them (keys, compare-and-swap races, leases, watches, a killed member, members that do
# not answer), and every member stopped by its pid at the end: nothing is left running.  A cluster
# that does not start fails the test with the members' logs; it never skips.
#   bash tests/etcd/cluster.sh [CLIENT_TEST]   (default: $BUILD/etcd_client_test)
t_launch=$(date +%s.%N)
. "$(dirname "$0")/../cli/lib.sh"
PROG=${1:-$BUILD/etcd_client_test}
if ! command -v etcd >/dev/null; then
    fail "no etcd executable: apt-get install etcd-server"
    done_checks
    exit 1
fi
[ -x "$PROG" ] || { fail "no client test program at $PROG (build first)"; done_checks; exit 1; }

pids=()
# KILL, not TERM: the data is thrown away, and etcd's graceful stop took 6 s with a member gone
stop_members() {
    local p
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
}
trap 'stop_members; rm -rf "$T"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

ips=(127.0.0.11 127.0.0.12 127.0.0.13)
client=() peer=() cluster=""
for i in 0 1 2; do
    p=$(free_port_pair)
    [ -n "$p" ] || { fail "harness: no free port pair"; done_checks; exit 1; }
    client[$i]=${ips[$i]}:$p
    peer[$i]=http://${ips[$i]}:$((p + 1))
    cluster+="${cluster:+,}m$i=${peer[$i]}"
done
# elections in half a second (heartbeat 50 ms): a killed leader is replaced quickly; the shortest
# lease etcd then grants is 1 s
for i in 0 1 2; do
    etcd --name "m$i" --data-dir "$T/m$i" \
        --listen-client-urls "http://${client[$i]}" --advertise-client-urls "http://${client[$i]}" \
        --listen-peer-urls "${peer[$i]}" --initial-advertise-peer-urls "${peer[$i]}" \
        --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token "test-$$" \
        --heartbeat-interval 50 --election-timeout 500 >"$T/m$i.log" 2>&1 &
    pids+=($!)
done
endpoints=$(IFS=,; echo "${client[*]}")
echo "cluster.sh: members at $endpoints (pids ${pids[*]})"

start=$(date +%s.%N)
echo "cluster.sh: started $(awk -v a="$t_launch" -v b="$start" 'BEGIN { printf "%.1f", b - a }') s after the script"
run timeout -k 5 60 "$PROG" "$endpoints" "$(IFS=,; echo "${pids[*]}")"
printf '%s\n' "$out"
[ -n "$err" ] && printf '%s\n' "$err" >&2
expect_rc 0 "the client's checks against the cluster"
if [ "$rc" -ne 0 ]; then
    for i in 0 1 2; do echo "--- member m$i (${client[$i]}): last lines of its log"; tail -5 "$T/m$i.log"; done
fi
echo "cluster.sh: checks took $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"

# nothing left running: every member stopped by its pid
t0=$(date +%s.%N)
stop_members
echo "cluster.sh: members stopped in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && fail "member pid $p still running" || pass; done
pids=()
done_checks
