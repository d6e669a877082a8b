# Several nodes on loopback: two agents form one 4-rank group (2 nodes x 2); a failure on one
# node ends the run on both; a node that never comes makes the others fail within the timeout,
# naming the missing ranks; garbage sent to the store does not disturb a run.
. "$(dirname "$0")/lib.sh"
export SHARDRUN_RDZV_TOKEN=multinode-test
BEHAVE=$BUILD/tests/tasks/behave.so
now() { date +%s%N; }

# start_node NODE JOB [ARGS...]: starts that node's agent in the background (output in $T/nNODE.*)
start_node() {
    local node=$1 job=$2
    shift 2
    "$SHARDRUN" "$job" --nnodes 2 --node-rank "$node" --nproc-per-node 2 --master-addr 127.0.0.1 --master-port "$P" \
        "$@" >"$T/n$node.out" 2>"$T/n$node.err" &
    pid[$node]=$!
}
wait_node() { wait "${pid[$1]}"; rc[$1]=$?; }

# 1. hello on 2 nodes x 2: one group of 4
P=$(free_port_pair)
start_node 0 "$SRC/examples/hello/hello.ini"
start_node 1 "$SRC/examples/hello/hello.ini"
wait_node 0
wait_node 1
expect_eq "${rc[0]}/${rc[1]}" "0/0" "both agents succeed ($(cat "$T/n0.err" "$T/n1.err"))"
for r in 0 1 2 3; do
    expect_in "$(cat "$T/n$((r / 2)).out")" "[rank$r]: all_reduce of ranks over gloo: 6 (expected 6)" "rank $r all-reduced over 4 ranks"
done
expect_in "$(cat "$T/n1.out")" "[rank3]: hello from rank 3 of 4 (local rank 1 of 2, node 1 of 2)" "rank = node_rank * nproc + local_rank"
# one results list per run: node 0 prints every rank's results, in rank order; node 1 none
expect_eq "$(grep -o '^  {"rank": [0-9]' "$T/n0.out" | tr -d ' {"rank:' | tr -d '\n')" "0123" "node 0's results list every rank"
expect_eq "$(grep -c '^\[$' "$T/n1.out")" "0" "node 1 prints no results list"
sed -n '/^\[$/,$p' "$T/n0.out" | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); assert [x["rank"] for x in r]==[0,1,2,3] and all(x["rank_sum"]==6 for x in r), r' \
    && pass || fail "node 0's results are one valid JSON list"

# 2. a worker on node 1 killed from outside: both nodes end, both agents exit non-zero
P=$(free_port_pair)
mkdir -p "$T/pids"
printf '[shardrun]\ntask = %s\nplugins = torch\n[task]\npid_dir = %s\nact_rank = -1\nothers = sleep\n' "$BEHAVE" \
    "$T/pids" >"$T/sleep.ini"
start_node 0 "$T/sleep.ini"
start_node 1 "$T/sleep.ini"
for _ in $(seq 1 300); do [ "$(ls "$T"/pids/rank*.pid 2>/dev/null | wc -l)" -ge 4 ] && break; sleep 0.02; done
t0=$(now)
kill -KILL "$(cat "$T/pids/rank3.pid")"
wait_node 1
wait_node 0
ms=$((($(now) - t0) / 1000000))
expect_eq "${rc[0]}/${rc[1]}" "1/1" "both agents exit 1 after a worker on node 1 was killed"
[ "$ms" -lt 5000 ] && pass || fail "the run ended on both nodes after ${ms} ms (limit 5000)"
expect_in "$(cat "$T/n1.err")" "rank 3 (local rank 1, pid" "node 1 names its failed rank"
expect_in "$(cat "$T/n0.err")" "the run failed on another node: rank 3 (node 1) was killed by signal SIGKILL (9)" "node 0 says why it stopped"
for r in 0 1 2 3; do
    p=$(cat "$T/pids/rank$r.pid")
    [ ! -e "/proc/$p" ] && pass || fail "rank $r (pid $p) survived"
done

# 3b. node 0's workers succeed, one on node 1 fails: node 0's agent (which hosts the store) still
# reports the run as failed
P=$(free_port_pair)
printf '[shardrun]\ntask = %s\nplugins = torch\n[task]\nact_rank = 3\nact = exit3\nothers = ok\n' "$BEHAVE" >"$T/late.ini"
start_node 0 "$T/late.ini"
start_node 1 "$T/late.ini"
wait_node 1
wait_node 0
expect_eq "${rc[0]}/${rc[1]}" "1/1" "a failure on node 1 fails node 0's agent too"
expect_in "$(cat "$T/n0.err")" "the run failed on another node: rank 3 (node 1) exited with code 3" "node 0 names node 1's failure"

# 3. node 1 never comes: node 0's ranks fail within the timeout, naming ranks 2 and 3
P=$(free_port_pair)
t0=$(now)
start_node 0 "$SRC/examples/hello/hello.ini" --set torch.timeout=2
wait_node 0
ms=$((($(now) - t0) / 1000000))
expect_eq "${rc[0]}" "1" "node 0 alone fails"
[ "$ms" -lt 6000 ] && pass || fail "rendezvous timeout took ${ms} ms (timeout 2 s)"
expect_in "$(cat "$T/n0.err")" "process group world: ranks 2, 3 did not arrive within 2s (this is rank" "the missing ranks are named"

# 3c. the store's port is taken: a clear error before anything starts
P=$(free_port_pair)
# the holder says when it listens (a fixed wait lost the race to a loaded machine's slow Python start:
# node 0 took the port first and waited for node 1 for ever)
/usr/bin/python3 -c 'import socket,sys,time; s=socket.socket(); s.bind(("",int(sys.argv[1]))); s.listen(); open(sys.argv[2],"w").close(); time.sleep(30)' \
    "$((P + 1))" "$T/holding" &
holder=$!
for _ in $(seq 1 500); do [ -e "$T/holding" ] && break; sleep 0.02; done
[ -e "$T/holding" ] && pass || fail "the port holder did not start listening within 10 s"
start_node 0 "$SRC/examples/hello/hello.ini"
wait_node 0
kill "$holder" 2>/dev/null
expect_eq "${rc[0]}" "2" "a taken rendezvous port is a configuration error"
expect_in "$(cat "$T/n0.err")" "rendezvous store ([shardrun] rdzv_port = 0, default, so master_port + 1): cannot listen on 0.0.0.0:$((P + 1)): Address already in use; choose another port (rdzv_port" "the port and the fix are named"
expect_eq "$(cat "$T/n0.out")" "" "nothing started"

# 4. garbage at the store while node 1 is not there yet; the run still completes
P=$(free_port_pair)
start_node 0 "$SRC/examples/hello/hello.ini" --set shardrun.log_level=debug
for _ in $(seq 1 200); do grep -q "rendezvous store listening" "$T/n0.err" && break; sleep 0.02; done
/usr/bin/python3 - "$((P + 1))" <<'PY'
import os, socket, struct, sys
port = int(sys.argv[1])
def send(data, read=False):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(data)
    if read:
        s.settimeout(2)
        try: s.recv(100)
        except OSError: pass
    s.close()
send(os.urandom(4096))                                                # random bytes
send(struct.pack("<IBxxxI", 0x31535253, 1, 1) + struct.pack("<I", 10) + b"abc")   # truncated
send(struct.pack("<IBxxxI", 0x31535253, 1, 1) + struct.pack("<I", 0xFFFFFFF0))    # oversized length
send(struct.pack("<IBxxxI", 0x31535253, 1, 100000))                   # too many items
tok = b"wrong-token"
send(struct.pack("<IBxxxI", 0x31535253, 1, 1) + struct.pack("<I", len(tok)) + tok, read=True)  # wrong token
key, val = b"pg/world/arrived/2", b"1"                                 # a SET without HELLO
send(struct.pack("<IBxxxI", 0x31535253, 2, 2) + struct.pack("<I", len(key)) + key + struct.pack("<I", 1) + val, read=True)
PY
start_node 1 "$SRC/examples/hello/hello.ini"
wait_node 1
wait_node 0
expect_eq "${rc[0]}/${rc[1]}" "0/0" "the run completes after the garbage ($(tail -3 "$T/n0.err"))"
for r in 0 1 2 3; do
    expect_in "$(cat "$T/n$((r / 2)).out")" "[rank$r]: all_reduce of ranks over gloo: 6" "rank $r completed"
done
done_checks
