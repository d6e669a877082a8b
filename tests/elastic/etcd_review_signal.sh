# rdzv_backend = etcd on one host (no root), an etcd member of the test's own on loopback: an agent
# that is asked to stop while it meets the others again after its leader went away stops then, not
# at the end of rdzv_timeout.  Two agents of an elastic GPT-2 job (nnodes = 2:3, rdzv_timeout = 60):
# the leader is killed (SIGKILL); the other is elected and waits for a second node (MIN), which
# never comes; it gets SIGTERM there and ends at once (143), without starting a worker, and leaves
# no agent or leader in etcd (their leases expire).  (b) One agent alone: the minimum not reached
# within rdzv_timeout, the message names rdzv_endpoint.  Nothing is left running.
STEPS=40 . "$(dirname "$0")/etcd_lib.sh"
etcd_member
AGENT_ARGS=(--set shardrun.rdzv_timeout=60)

# the leader's rank 0 pauses after step 3 until its agent is killed: the kill lands mid-run
etcd_first_leader SHARDRUN_DEBUG_PAUSE_AT=0:3@0
etcd_agent 1 SHARDRUN_DEBUG_PAUSE_AT=0:3@0
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
etcd_keys_gone agents && pass || fail "no agent and no leader of the job is left in etcd: $(etcd_keys agents) keys"

# (b) one agent alone: the minimum never joins; the message names what the others need (etcd's
# rdzv_endpoint, not node 0's master_addr)
run timeout 60 "$SHARDRUN" "$J" --nnodes 2:3 --nproc-per-node 1 --master-port "$P" --rdzv-backend etcd \
    --rdzv-endpoint "127.0.0.1:$C" --set task.output_dir="$T/alone" --set shardrun.rdzv_timeout=3
expect_rc 1 "one agent alone: exit 1 (a failed run), as with the built-in store"
expect_in "$err" "1 of the at least 2 nodes of nnodes = 2:3 joined within rdzv_timeout (3s): start the others' shardrun with the same job file and rdzv_endpoint" \
    "the minimum not reached: the others need the same rdzv_endpoint"

etcd_done
done_checks
