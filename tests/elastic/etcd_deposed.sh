# rdzv_backend = etcd: a leader cut off from etcd (no root).  An etcd member on loopback; the agent
# elected leader reaches it through a TCP relay of the test's own (its rdzv_endpoint), the other two
# directly.  After step 7 the relay is stopped: the leader cannot renew its lease; once its 5 s TTL
# passed it no longer leads: it stops its workers and ends (exit 1) saying why, and the other two,
# seeing its store close, elect another leader once etcd expired its lease, and finish the run from
# checkpoint-5.  Nothing is left running.
. "$(dirname "$0")/etcd_lib.sh"
etcd_member
R=$(free_port_pair)
# the relay: 127.0.0.1:R -> 127.0.0.1:C, one thread pair per connection
cat >"$T/relay.py" <<'PY'
import socket, sys, threading
src, dst = int(sys.argv[1]), int(sys.argv[2])
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", src)); ls.listen(64)
def pump(a, b):
    try:
        while (d := a.recv(65536)):
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
while True:
    c, _ = ls.accept()
    u = socket.create_connection(("127.0.0.1", dst))
    threading.Thread(target=pump, args=(c, u), daemon=True).start()
    threading.Thread(target=pump, args=(u, c), daemon=True).start()
PY
/usr/bin/python3 "$T/relay.py" "$R" "$C" &
relay_pid=$!
for _ in $(seq 1 50); do curl -s "http://127.0.0.1:$R/health" | grep -q true && break; sleep 0.2; done
curl -s "http://127.0.0.1:$R/health" | grep -q true && pass || fail "etcd answers through the relay"

# the leader (agent 0) meets through the relay, the others directly; rank 0 pauses after step 7
ENDPOINT=127.0.0.1:$R etcd_first_leader SHARDRUN_DEBUG_PAUSE_AT=0:7@0
etcd_agent 1 SHARDRUN_DEBUG_PAUSE_AT=0:7@0
etcd_agent 2 SHARDRUN_DEBUG_PAUSE_AT=0:7@0
wait_for "$T/a0.out" "step 7/20" 120 && pass || fail "the run reached step 7 ($(tail -n 3 "$T"/a*.err))"
expect_in "$(cat "$T/a0.err")" "started 1 worker (rank 0 of 3)" "agent 0 leads"

# the leader's way to etcd goes
kill -KILL "$relay_pid"
wait "$relay_pid" 2>/dev/null
unset relay_pid
t0=$(now_ms)
for i in 0 1 2; do wait_node_for "$i" 120; done
expect_eq "${rc[0]}/${rc[1]}/${rc[2]}" "1/0/0" "the cut-off leader ends (1), the others finish ($(tail -n 4 "$T"/a*.err))"
echo "etcd_deposed.sh: from the cut to the end of the run: $(($(now_ms) - t0)) ms"
expect_in "$(cat "$T/a0.err")" "this node's lease in etcd could not be renewed within its TTL" "the leader says its lease lapsed"
expect_in "$(cat "$T/a0.err")" "this node no longer leads the job" "the leader says it no longer leads"
both=$(cat "$T/a1.err" "$T/a2.err")
expect_eq "$(grep -c "this node leads the job now (elected in etcd)" <<<"$both")" 1 "one of the others leads now"
expect_eq "$(grep -c "started 1 worker (rank [01] of 2, restart 1)" <<<"$both")" 2 "both go on in a world of 2, restart 1"
outs=$(cat "$T/a1.out" "$T/a2.out")
expect_in "$outs" "[rank0]: shardrun: resumed from $T/out/checkpoint-5 at step 5" "the run resumes from checkpoint-5"
expect_in "$outs" "[rank0]: step 20/20" "the run reaches its last step"
expect_eq "$(pgrep -f -- "--rdzv-endpoint 127.0.0.1:$R" || true)" "" "nothing of the leader left running"
etcd_done
done_checks
