# (c) The link down while the nodes meet (rendezvous): node 1 cannot reach node 0's store; it
# waits up to rdzv_timeout (5 s here), saying what it waits for, then exits 1; node 0, whose
# second node never came, also exits 1 naming it.
. "$(dirname "$0")/lib.sh"
restart_job 12
sed -i '/^nproc_per_node = 2$/d' "$T/job.ini"
J=$T/job.ini
RDZV=5
links_up
link_down
start_node 0 "$J" "$T/out" --set shardrun.rdzv_timeout=$RDZV
start_node 1 "$J" "$T/out" --set shardrun.rdzv_timeout=$RDZV
t0=$(now_ms)
wait_node_for 1 $((RDZV + 15))
t_1=$(($(now_ms) - t0))
wait_node_for 0 $((RDZV + 15))
expect_eq "${rc[0]}/${rc[1]}" "1/1" "both agents exit 1 when the link is down during the rendezvous (124: still running)"
[ "$t_1" -ge $((RDZV * 1000 - 500)) ] && pass || fail "node 1 gave up after ${t_1} ms, before rdzv_timeout ($RDZV s)"
[ "$t_1" -le $(((RDZV + 10) * 1000)) ] && pass || fail "node 1 ended ${t_1} ms after its start (rdzv_timeout $RDZV s)"
expect_in "$(cat "$T/n1.err")" "$A0:$((P + 1))" "node 1 names the store it waits for (node 0's address and port): $(cat "$T/n1.err")"
expect_in "$(head -n 1 "$T/n1.err")" "waiting up to ${RDZV}s ([shardrun] rdzv_timeout) for node 0's shardrun at $A0" \
    "node 1 says first what it waits for, and for how long"
grep -qE "rank 1 did not arrive|node 1" "$T/n0.err" && pass || fail "node 0 names the node that never came: $(cat "$T/n0.err")"
[ ! -e "$T/out/checkpoint-5" ] && pass || fail "no step ran"
done_checks
