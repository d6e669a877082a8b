# rdzv_backend = etcd on one host (no root): an etcd member of the test's own on loopback, and
# agents started alike (no node rank, no master_addr) of an elastic GPT-2 job (nnodes = 2:3):
# (a) the elected leader (it hosts the workers' store: rank 0) gets SIGTERM after step 7, a spot
#     notice: every rank saves at step 7, the leader leaves (exit 143), the other two elect another
#     and go on from checkpoint-7 in a world of 2, restart 1;
# (b) a fourth agent started after step 12 is taken in under the new leader (checkpoint-12, restart 2);
# (c) the new leader is killed (SIGKILL) after step 16: the other two elect another again and finish
#     from checkpoint-15, restart 3; trainer_state.json records the four memberships, and nothing of
#     the job is left in etcd after;
# (d) etcd unreachable (nothing at rdzv_endpoint): the agent ends (exit 1) before any worker starts,
#     naming the endpoint, within the client's bounds.
# Nothing is left running.
. "$(dirname "$0")/etcd_lib.sh"
etcd_member

# rank 0 (the leader's) pauses after step 7 of the first attempt, 12 of the second and 16 of the
# third, until its agent stops it: each event lands there however fast the steps are
PAUSE=SHARDRUN_DEBUG_PAUSE_AT=0:7@0,0:12@1,0:16@2
# leader: which of the agents given leads now (the last to say it was elected, or agent 0)
leader() {
    local i l=0
    for i in "$@"; do grep -q "this node leads the job now" "$T/a$i.err" && l=$i; done
    echo "$l"
}
etcd_first_leader "$PAUSE"
etcd_agent 1 "$PAUSE"
etcd_agent 2 "$PAUSE"
wait_for "$T/a0.out" "step 7/20" 120 && pass || fail "the run reached step 7 on agent 0's rank ($(tail -n 3 "$T"/a*.err))"
expect_in "$(cat "$T/a0.err")" "started 1 worker (rank 0 of 3)" "agent 0 leads: its rank is rank 0 of the first world"
n=$(etcd_keys)
[ "$n" -ge 5 ] && pass || fail "etcd holds the job's keys while it runs (3 agents, the leader, the job's record): $n"

# (a) a notice to the leader
kill -TERM "${pid[0]}"
wait_node_for 0 60
expect_eq "${rc[0]}" 143 "the leader leaves with its notice (143)"
expect_in "$(cat "$T/a0.err")" "this node left the elastic job (SIGTERM): every rank stopped after step 7 and $T/out/checkpoint-7 holds it" \
    "the leader says it left after a checkpoint"
wait_for_any "step 12/20" 120 "$T/a1.out" "$T/a2.out" && pass || fail "the world of 2 reached step 12 ($(tail -n 4 "$T"/a[12].err))"
both=$(cat "$T/a1.err" "$T/a2.err")
expect_eq "$(grep -c "node 0's shardrun went away .*the other nodes elect another leader in etcd" <<<"$both")" 2 \
    "agents 1 and 2 say the leader went away and that they elect another"
expect_eq "$(grep -c "this node leads the job now (elected in etcd)" <<<"$both")" 1 "one of them leads now"
expect_eq "$(grep -c "the job's leader is now the node at 127.0.0.1" <<<"$both")" 1 "the other joins it"
expect_eq "$(grep -c "started 1 worker (rank [01] of 2, restart 1)" <<<"$both")" 2 "both go on in a world of 2, restart 1"
expect_in "$(cat "$T/a1.out" "$T/a2.out")" "[rank0]: shardrun: resumed from $T/out/checkpoint-7 at step 7" \
    "no step is lost: the world of 2 resumes from the notice's checkpoint"

# (b) a node joins under the new leader
etcd_agent 3 "$PAUSE"
wait_for_any "step 16/20" 120 "$T/a1.out" "$T/a2.out" && pass || fail "the world of 3 reached step 16 ($(tail -n 4 "$T"/a[123].err))"
expect_in "$(cat "$T/a3.err")" " of 3, restart 2)" "agent 3 is taken in: a world of 3, restart 2"
expect_in "$(cat "$T/a1.out" "$T/a2.out")" "[rank0]: shardrun: resumed from $T/out/checkpoint-12 at step 12" \
    "the world of 3 resumes from the join's checkpoint"

# (c) the new leader is lost
L=$(leader 1 2)
kill -KILL "${pid[$L]}"
t0=$(now_ms)
unset "pid[$L]"
rest=()
for i in 1 2 3; do [ "$i" != "$L" ] && rest+=("$i"); done
for i in "${rest[@]}"; do wait_node_for "$i" 120; done
expect_eq "${rc[${rest[0]}]}/${rc[${rest[1]}]}" "0/0" "agents ${rest[*]} finish the run without the leader ($(tail -n 4 "$T"/a[123].err))"
echo "etcd_local.sh: from the leader's kill to the end of the run: $(($(now_ms) - t0)) ms"
two=$(cat "$T/a${rest[0]}.err" "$T/a${rest[1]}.err")
expect_eq "$(grep -c "started 1 worker (rank [01] of 2, restart 3)" <<<"$two")" 2 "both go on in a world of 2, restart 3"
outs=$(cat "$T/a${rest[0]}.out" "$T/a${rest[1]}.out")
expect_in "$outs" "[rank0]: shardrun: resumed from $T/out/checkpoint-15 at step 15" "the run resumes from checkpoint-15"
expect_in "$outs" "[rank0]: step 20/20" "the run reaches its last step"
[ -f "$T/out/checkpoint-20/model.safetensors" ] && pass || fail "the run's last checkpoint is written"
m=$(/usr/bin/python3 "$SRC/tests/fsdp/check_records.py" membership "$T/out")
expect_eq "$(grep -c world_size <<<"$m")" 4 "trainer_state.json records the four memberships: $m"
expect_in "$m" "step=7 world_size=2 nodes=2" "two nodes from step 7"
expect_in "$m" "step=12 world_size=3 nodes=3" "three nodes from step 12"
expect_in "$m" "step=15 world_size=2 nodes=2" "two nodes again from step 15"
expect_in "$m" "restart=3" "the last membership is restart 3"
# the leaders', the agents' and the job's record: all gone once the job ended (the killed leader's
# lease expired: 5 s)
etcd_keys_gone && pass || fail "nothing of the job is left in etcd: $(etcd_keys) keys"

# (d) nothing at rdzv_endpoint: the agent ends before any worker starts, naming it
Z=$(free_port_pair)
t0=$(now_ms)
run timeout 60 "$SHARDRUN" "$J" --nnodes 2:3 --nproc-per-node 1 --master-port "$P" --rdzv-backend etcd \
    --rdzv-endpoint "127.0.0.1:$Z" --set task.output_dir="$T/none"
expect_rc 1 "etcd unreachable: a failed run"
expect_in "$err" "rendezvous in etcd (rdzv_endpoint = 127.0.0.1:$Z)" "etcd unreachable: the endpoint named"
expect_not_in "$err" "started 1 worker" "etcd unreachable: no worker started"
ms=$(($(now_ms) - t0))
[ "$ms" -lt 20000 ] && pass || fail "etcd unreachable: the agent ends within the client's bounds, not after $ms ms"

etcd_done
done_checks
