# rdzv_backend = etcd across nodes: three nodes, each a network namespace on one switch running an
# etcd member (a three-member cluster on the nodes' own addresses) and a shardrun agent of an
# elastic GPT-2 job (nnodes = 2:3), every agent started alike:
# (a) node 0, the elected leader, goes after step 7 (its agent, its workers and its etcd member
#     killed, then its namespace deleted): etcd goes on with two members, nodes 1 and 2 elect another
#     leader and go on from checkpoint-5 in a world of 2;
# (b) a fourth node started after step 12 of that world is taken in (every rank saves at step 12)
#     and the run ends on three nodes, its last checkpoint written, trainer_state.json recording the
#     three memberships.
# Nothing is left running in any namespace (lib.sh's cleanup checks by name).
. "$(dirname "$0")/lib.sh"
command -v etcd >/dev/null || { fail "no etcd executable: apt-get install etcd-server"; done_checks; exit 1; }
node_job 20
nodes_up 4

# the etcd members: node I's client URL ADDR:2379, peer URL ADDR:2380; elections within half a second
cluster="" endpoints=""
for i in 0 1 2; do
    cluster+="${cluster:+,}m$i=http://$(addr_of "$i"):2380"
    endpoints+="${endpoints:+,}$(addr_of "$i"):2379"
done
for i in 0 1 2; do
    a=$(addr_of "$i")
    ip netns exec "$(ns_of "$i")" etcd --name "m$i" --data-dir "$T/etcd$i" \
        --listen-client-urls "http://$a:2379" --advertise-client-urls "http://$a:2379" \
        --listen-peer-urls "http://$a:2380" --initial-advertise-peer-urls "http://$a:2380" \
        --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token "sre-$$" \
        --heartbeat-interval 50 --election-timeout 500 >"$T/etcd$i.log" 2>&1 &
    pid[etcd$i]=$!
done
# etcd_ready: a quorum answers a read (node 1's member, through its JSON gateway)
etcd_ready() {
    ip netns exec "$(ns_of 1)" /usr/bin/python3 -c '
import json, sys, urllib.request
req = urllib.request.Request("http://%s:2379/v3/kv/range" % sys.argv[1], json.dumps({"key": "eA=="}).encode())
urllib.request.urlopen(req, timeout=2).read()' "$(addr_of 1)" 2>/dev/null
}
for _ in $(seq 1 60); do etcd_ready && break; sleep 0.25; done
etcd_ready && pass || fail "the three etcd members form a cluster ($(tail -n 3 "$T"/etcd*.log))"

OUT=$T/out
# etcd_node I [ENV...]: node I's agent, every one started alike (start_node's node rank and
# master_addr mean nothing with etcd: an election decides)
etcd_node() {
    local i=$1
    shift
    : >"$T/n$i.out"
    : >"$T/n$i.err"
    ip netns exec "$(ns_of "$i")" env "$@" "$SHARDRUN" "$J" --nnodes "$NNODES" --nproc-per-node 1 --master-port "$P" \
        --rdzv-backend etcd --rdzv-endpoint "$endpoints" --set task.output_dir="$OUT" --set torch.timeout=20 \
        --set shardrun.rdzv_last_call="$LAST_CALL" >"$T/n$i.out" 2>"$T/n$i.err" &
    pid[$i]=$!
}
# rank 0 pauses after step 7 of the first attempt and after step 12 of the second, until its agent
# stops it: the events land there however fast the steps are
PAUSE=SHARDRUN_DEBUG_PAUSE_AT=0:7@0,0:12@1
etcd_node 0 "$PAUSE"
wait_for "$T/n0.err" "meeting in etcd" 60 || fail "node 0's shardrun did not start"
sleep 1 # node 0 is elected first
etcd_node 1 "$PAUSE"
etcd_node 2 "$PAUSE"
wait_for "$T/n0.out" "step 7/20" 120 && pass || fail "the run reached step 7 ($(logs))"
expect_in "$(cat "$T/n0.err")" "started 1 worker (rank 0 of 3)" "node 0 leads the first world (its rank is rank 0)"

# (a) node 0 goes, with its etcd member: every process in its namespace killed (their connections
# close, as a spot node's processes end when it is reclaimed), then the namespace deleted.  (A node
# whose link vanishes with nothing closed is linkcut.sh's: found silent after hang_timeout.)
for p in $(ip netns pids "$(ns_of 0)"); do kill -KILL "$p" 2>/dev/null; done
sleep 1
node_gone 0
unset "pid[0]" "pid[etcd0]"
# (b) once the world of 2 reached step 12, a fourth node
wait_for_any "step 12/20" 120 "$T/n1.out" "$T/n2.out" || fail "the world of 2 reached step 12 ($(logs))"
etcd_node 3 "$PAUSE"
for n in 1 2 3; do wait_node_for "$n" 150; done
expect_eq "${rc[1]}/${rc[2]}/${rc[3]}" "0/0/0" "nodes 1, 2 and 3 finish the run ($(logs))"
both=$(cat "$T/n1.err" "$T/n2.err")
expect_eq "$(grep -c "node 0's shardrun went away .*the other nodes elect another leader in etcd" <<<"$both")" 2 \
    "nodes 1 and 2 say the leader went away and that they elect another"
expect_eq "$(grep -c "this node leads the job now (elected in etcd)" <<<"$both")" 1 "one of them leads now"
expect_eq "$(grep -c "started 1 worker (rank [01] of 2, restart 1)" <<<"$both")" 2 "both go on in a world of 2, restart 1"
expect_in "$(cat "$T/n3.err")" " of 3, restart 2)" "node 3 is taken in: a world of 3, restart 2"
outs=$(cat "$T"/n[123].out)
expect_in "$outs" "[rank0]: shardrun: resumed from $OUT/checkpoint-5 at step 5" "the world of 2 resumes from checkpoint-5"
expect_in "$outs" "[rank0]: shardrun: resumed from $OUT/checkpoint-12 at step 12" "the world of 3 resumes from the join's checkpoint"
expect_in "$outs" "[rank0]: step 20/20" "the run reaches its last step"
[ -f "$OUT/checkpoint-20/model.safetensors" ] && pass || fail "the run's last checkpoint is written"
m=$(/usr/bin/python3 "$SRC/tests/fsdp/check_records.py" membership "$OUT")
expect_eq "$(grep -c world_size <<<"$m")" 3 "trainer_state.json records the three memberships: $m"
expect_in "$m" "step=5 world_size=2 nodes=2" "two nodes from step 5"
expect_in "$m" "step=12 world_size=3 nodes=3" "three nodes again from step 12"
for i in 1 2; do
    kill -TERM "${pid[etcd$i]}" 2>/dev/null
    wait "${pid[etcd$i]}" 2>/dev/null
    unset "pid[etcd$i]"
done
for i in 1 2 3; do
    expect_eq "$(ip netns pids "$(ns_of "$i")" | wc -l)" 0 "nothing left running on node $i"
done
done_checks
