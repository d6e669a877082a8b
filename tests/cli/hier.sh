# Groups that span hosts, with shm on: shared memory inside each host, Gloo between one leader per
# host.  "Hosts" are agents on loopback told apart by SHARDRUN_HOST_ID (part of the identity each
# rank publishes).  The collectives matrix on the hierarchical world (2 hosts x 2 ranks, 3 hosts x
# 2), its sub-groups choosing for themselves (the shard pairs share a host: shm; the replicate
# pairs span two with one rank each: Gloo), a stalled rank named, and agents that say they share
# a host getting shm for the whole world.
. "$(dirname "$0")/lib.sh"
export SHARDRUN_RDZV_TOKEN=hier-test
printf '[shardrun]\ntask = %s\nplugins = torch\n[torch]\nbackend = gloo\ntransport = shm\ntimeout = 60\n[task]\nsizes = 0,1,7,1000,65537\n' \
    "$BUILD/tests/tasks/collectives.so" >"$T/c.ini"
# nodes N ID_OF_NODE... -- ARGS: N agents of 2 ranks each, node i with SHARDRUN_HOST_ID=${ids[i]}
nodes() {
    local n=$1 node
    shift
    local ids=()
    while [ "$1" != -- ]; do ids+=("$1"); shift; done
    shift
    P=$(free_port_pair)
    for node in $(seq 0 $((n - 1))); do
        SHARDRUN_HOST_ID=${ids[$node]} "$SHARDRUN" "$T/c.ini" --nnodes "$n" --node-rank "$node" --nproc-per-node 2 \
            --master-addr 127.0.0.1 --master-port "$P" "$@" >"$T/n$node.out" 2>"$T/n$node.err" &
        pid[$node]=$!
    done
    out="" rcs=""
    for node in $(seq 0 $((n - 1))); do
        wait "${pid[$node]}"
        rcs="$rcs${rcs:+/}$?"
        out="$out$(cat "$T/n$node.out" "$T/n$node.err")"$'\n'
    done
}

nodes 2 a b --
expect_eq "$rcs" "0/0" "2 hosts x 2 ranks: both agents succeed ($out)"
expect_eq "$(grep -c "world over hier" <<<"$out")" "4" "the world spans two hosts: hierarchical"
expect_eq "$(grep -c "sub-groups: shard over shm, replicate over tcp" <<<"$out")" "4" "sub-groups choose for themselves"
expect_eq "$(grep -c "checks, 0 failed on rank" <<<"$out")" "4" "every check passed on 2 hosts x 2"
expect_not_in "$out" "MISMATCH" "no mismatch on 2 hosts x 2"

nodes 3 a b c --
expect_eq "$rcs" "0/0/0" "3 hosts x 2 ranks: every agent succeeds ($out)"
expect_eq "$(grep -c "world over hier" <<<"$out")" "6" "3 hosts: hierarchical"
expect_eq "$(grep -c "checks, 0 failed on rank" <<<"$out")" "6" "every check passed on 3 hosts x 2"

nodes 2 same same --
expect_eq "$rcs" "0/0" "two agents on one host ($out)"
expect_eq "$(grep -c "world over shm" <<<"$out")" "4" "agents that share a host: shm for the whole world"

# rank 3 never joins: the others fail within the timeout, naming the operation and rank 3
nodes 2 a b -- --set torch.timeout=2 --set task.stall_rank=3
[ "$rcs" != "0/0" ] && pass || fail "a stalled rank fails the run"
grep -qE "all_reduce #1 \(1 x fp32\) on group world \(rank [0-2] of 4\)(: rank 3 did not arrive within 2s| failed: shm: rank 3 \(pid [0-9]+\) exited)" <<<"$out" \
    && pass || fail "a waiting rank names the operation and rank 3: $out"
done_checks
