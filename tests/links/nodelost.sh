# (d) Node 0 vanishes in the middle of the run: every process in its network namespace killed
# (SIGKILL) and the namespace deleted, its end of the link with it.  Node 1 names node 0 as lost
# and exits 1 within the collective timeout (5 s) and a few seconds.
. "$(dirname "$0")/lib.sh"
restart_job 30
sed -i '/^nproc_per_node = 2$/d' "$T/job.ini"
J=$T/job.ini
TIMEOUT=5
LIMIT=$((TIMEOUT + 15))
HANG=()
"$SHARDRUN" reference | grep -qF '`hang_timeout`' && HANG=(--set shardrun.hang_timeout=$TIMEOUT)
links_up
start_node 0 "$J" "$T/out" --set torch.timeout=$TIMEOUT "${HANG[@]}"
start_node 1 "$J" "$T/out" --set torch.timeout=$TIMEOUT "${HANG[@]}"
wait_progress "$T/n0.out" "step 5/30" 60 && pass || fail "the run reached step 5 ($(tail -n 5 "$T/n0.err" "$T/n1.err"))"
t0=$(now_ms)
for p in $(ip netns pids "$NS0"); do kill -KILL "$p" 2>/dev/null; done
ip netns del "$NS0"
wait_node_for 0 5
wait_node_for 1 $LIMIT
t_1=$(($(now_ms) - t0))
expect_eq "${rc[1]}" 1 "node 1 exits 1 after node 0 vanished (124: still running, killed by the test)"
[ "$t_1" -le $((LIMIT * 1000)) ] && pass || fail "node 1 ended ${t_1} ms after node 0 vanished (limit ${LIMIT} s)"
grep -qE "node 0" "$T/n1.err" && pass || fail "node 1 names node 0 as lost: $(tail -n 6 "$T/n1.err")"
done_checks
