# Shared by the etcd tests on one host (tests/elastic/etcd_*.sh, no root): the restart tests' GPT-2
# job (one rank per agent, STEPS steps), an etcd member of the test's own on loopback, agents of an
# elastic job (nnodes = 2:3) meeting there, and the cleanup of all of it by pid.
# Usage: STEPS=N . etcd_lib.sh; etcd_member; etcd_agent I [VAR=VALUE...]; ...; etcd_done
. "$(dirname "$0")/../restarts/lib.sh"
command -v etcd >/dev/null || { fail "no etcd executable: apt-get install etcd-server"; done_checks; exit 1; }
node_job "${STEPS:-20}"
declare -A pid rc
etcd_cleanup() {
    local p
    for p in "${pid[@]}" ${etcd_pid:-} ${relay_pid:-}; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap etcd_cleanup EXIT

# etcd_member: one member, its client port $C, its pid $etcd_pid; waits until it answers
etcd_member() {
    local e
    C=$(free_port_pair) e=$(free_port_pair)
    etcd --name m0 --data-dir "$T/etcd" --listen-client-urls "http://127.0.0.1:$C" \
        --advertise-client-urls "http://127.0.0.1:$C" --listen-peer-urls "http://127.0.0.1:$e" \
        --initial-advertise-peer-urls "http://127.0.0.1:$e" --initial-cluster "m0=http://127.0.0.1:$e" \
        --heartbeat-interval 50 --election-timeout 500 >"$T/etcd.log" 2>&1 &
    etcd_pid=$!
    ENDPOINT=127.0.0.1:$C
    for _ in $(seq 1 50); do etcd_keys >/dev/null 2>&1 && break; sleep 0.2; done
    expect_eq "$(etcd_keys 2>&1)" 0 "etcd answers, with no job's keys yet"
}

# etcd_keys [agents]: how many keys etcd holds under /shardrun/ (through its JSON gateway); with
# `agents`, but the job's record (an interrupted job's stays for its lease's 60 s, for a job started
# again to carry on)
etcd_keys() {
    /usr/bin/python3 - "$C" "${1:-all}" <<'PY'
import base64, json, sys, urllib.request
b = lambda s: base64.b64encode(s.encode()).decode()
req = urllib.request.Request("http://127.0.0.1:%s/v3/kv/range" % sys.argv[1],
                             json.dumps({"key": b("/shardrun/"), "range_end": b("/shardrun0"), "keys_only": True}).encode())
kvs = json.loads(urllib.request.urlopen(req, timeout=5).read()).get("kvs", [])
print(sum(sys.argv[2] == "all" or not base64.b64decode(kv["key"]).endswith(b"/job") for kv in kvs))
PY
}
# etcd_keys_gone [agents]: waits up to 10 s for etcd_keys to be 0 (leases of killed agents expire in 5 s)
etcd_keys_gone() {
    for _ in $(seq 1 40); do [ "$(etcd_keys "$@")" = 0 ] && return 0; sleep 0.25; done
    return 1
}

# etcd_agent I [VAR=VALUE...]: agent I in the background with those variables (output in $T/aI.out,
# .err), meeting at $ENDPOINT, with $AGENT_ARGS more arguments; a port of the test's own
P=$(free_port_pair)
AGENT_ARGS=()
etcd_agent() {
    local i=$1
    shift
    env "$@" "$SHARDRUN" "$J" --nnodes 2:3 --nproc-per-node 1 --master-port "$P" --rdzv-backend etcd \
        --rdzv-endpoint "$ENDPOINT" --set task.output_dir="$T/out" --set torch.timeout=20 \
        --set shardrun.rdzv_last_call=2 "${AGENT_ARGS[@]}" >"$T/a$i.out" 2>"$T/a$i.err" &
    pid[$i]=$!
}
# etcd_first_leader [VAR=VALUE...]: agent 0, the first to meet (so elected), then agents 1 and 2
etcd_first_leader() {
    etcd_agent 0 "$@"
    wait_for "$T/a0.err" "meeting in etcd" 60 || fail "agent 0 did not start"
    sleep 1
}

# etcd_done: the member stopped, and nothing of the test left running
etcd_done() {
    kill -TERM "$etcd_pid"
    wait "$etcd_pid" 2>/dev/null
    unset etcd_pid
    local left
    left=$(pgrep -f -- "--rdzv-endpoint 127.0.0.1:$C" || true)
    expect_eq "$left" "" "nothing left running"
}
