# rdzv_backend = etcd on one host (no root), an etcd member of the test's own on loopback: an agent
# that is asked to stop while it meets the others again after its leader went away stops then, not
# at the end of rdzv_timeout.  Two agents of an elastic GPT-2 job (nnodes = 2:3, rdzv_timeout = 60):
# the leader is killed (SIGKILL); the other is elected and waits for a second node (MIN), which
# never comes; it gets SIGTERM there and ends at once (143), without starting a worker, and leaves
# no agent or leader in etcd (their leases expire).  (b) One agent alone: the minimum not reached
# within rdzv_timeout, the message names rdzv_endpoint.  Nothing is left running.
. "$(dirname "$0")/../restarts/lib.sh"
command -v etcd >/dev/null || { fail "no etcd executable: apt-get install etcd-server"; done_checks; exit 1; }
restart_job 40
sed -i '/^nproc_per_node = 2$/d' "$T/job.ini"
J=$T/job.ini
declare -A pid rc
cleanup() {
    local p
    for p in "${pid[@]}" ${etcd_pid:-}; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT

C=$(free_port_pair) E=$(free_port_pair)
etcd --name m0 --data-dir "$T/etcd" --listen-client-urls "http://127.0.0.1:$C" --advertise-client-urls "http://127.0.0.1:$C" \
    --listen-peer-urls "http://127.0.0.1:$E" --initial-advertise-peer-urls "http://127.0.0.1:$E" \
    --initial-cluster "m0=http://127.0.0.1:$E" --heartbeat-interval 50 --election-timeout 500 >"$T/etcd.log" 2>&1 &
etcd_pid=$!
# keys: how many keys etcd holds under /shardrun/ (through its JSON gateway), but the job's record
# (an interrupted job's: it stays for its lease's 60 s, for a job started again to carry on)
keys() {
    /usr/bin/python3 - "$C" <<'PY'
import base64, json, sys, urllib.request
b = lambda s: base64.b64encode(s.encode()).decode()
req = urllib.request.Request("http://127.0.0.1:%s/v3/kv/range" % sys.argv[1],
                             json.dumps({"key": b("/shardrun/"), "range_end": b("/shardrun0"), "keys_only": True}).encode())
kvs = json.loads(urllib.request.urlopen(req, timeout=5).read()).get("kvs", [])
print(sum(not base64.b64decode(kv["key"]).endswith(b"/job") for kv in kvs))
PY
}
for _ in $(seq 1 50); do keys >/dev/null 2>&1 && break; sleep 0.2; done
expect_eq "$(keys 2>&1)" 0 "etcd answers, with no job's keys yet"

P=$(free_port_pair)
start_agent() { # I [ENV...]: agent I in the background (output in $T/aI.out, .err)
    local i=$1
    shift
    env "$@" "$SHARDRUN" "$J" --nnodes 2:3 --nproc-per-node 1 --master-port "$P" --rdzv-backend etcd \
        --rdzv-endpoint "127.0.0.1:$C" --set task.output_dir="$T/out" --set torch.timeout=20 \
        --set shardrun.rdzv_last_call=2 --set shardrun.rdzv_timeout=60 >"$T/a$i.out" 2>"$T/a$i.err" &
    pid[$i]=$!
}
# the leader's rank 0 pauses after step 3 until its agent is killed: the kill lands mid-run
start_agent 0 SHARDRUN_DEBUG_PAUSE_AT=0:3@0
wait_for "$T/a0.err" "meeting in etcd" 60 || fail "agent 0 did not start"
sleep 1 # agent 0 is elected first
start_agent 1 SHARDRUN_DEBUG_PAUSE_AT=0:3@0
wait_for "$T/a0.out" "step 3/40" 120 && pass || fail "the run reached step 3 on agent 0's rank ($(tail -n 3 "$T"/a*.err))"
expect_in "$(cat "$T/a0.err")" "started 1 worker (rank 0 of 2)" "agent 0 leads"

kill -KILL "${pid[0]}"
wait_node 0
wait_for "$T/a1.err" "elect another leader in etcd" 60 && pass || fail "agent 1 saw its leader go ($(tail -n 3 "$T/a1.err"))"
# its election: once the killed leader's lease expired (5 s), agent 1 leads and waits for a second node
sleep 8
kill -0 "${pid[1]}" 2>/dev/null && pass || fail "agent 1 waits for a second node ($(tail -n 3 "$T/a1.err"))"
t0=$(now_ms)
kill -TERM "${pid[1]}"
wait_node_for 1 30
ms=$(($(now_ms) - t0))
expect_eq "${rc[1]}" 143 "agent 1, asked to stop while it meets the others again, stops (143) ($(tail -n 3 "$T/a1.err"))"
[ "$ms" -lt 10000 ] && pass || fail "agent 1 stops within 10 s of its SIGTERM, not after $ms ms (rdzv_timeout is 60 s)"
expect_eq "$(grep -c "started 1 worker" "$T/a1.err")" 1 "agent 1 started no worker after the leader went"
for _ in $(seq 1 40); do [ "$(keys)" = 0 ] && break; sleep 0.25; done
expect_eq "$(keys)" 0 "no agent and no leader of the job is left in etcd"

# (b) one agent alone: the minimum never joins; the message names what the others need (etcd's
# rdzv_endpoint, not node 0's master_addr)
run timeout 60 "$SHARDRUN" "$J" --nnodes 2:3 --nproc-per-node 1 --master-port "$P" --rdzv-backend etcd \
    --rdzv-endpoint "127.0.0.1:$C" --set task.output_dir="$T/alone" --set shardrun.rdzv_timeout=3
expect_rc 1 "one agent alone: exit 1 (a failed run), as with the built-in store"
expect_in "$err" "1 of the at least 2 nodes of nnodes = 2:3 joined within rdzv_timeout (3s): start the others' shardrun with the same job file and rdzv_endpoint" \
    "the minimum not reached: the others need the same rdzv_endpoint"

kill -TERM "$etcd_pid"
wait "$etcd_pid" 2>/dev/null
unset etcd_pid
left=$(pgrep -f -- "--rdzv-endpoint 127.0.0.1:$C" || true)
expect_eq "$left" "" "nothing left running"
done_checks
