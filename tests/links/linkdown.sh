# (b) The link between two nodes taken down in the middle of a step ([torch] timeout = 5 s):
# both agents -- node 1's too, which can no longer reach node 0's store -- name the other side
# and exit 1 within the timeout and a few seconds.  Then with max_restarts = 1 and the link back
# up after the collective timed out: the job restarts from its checkpoint and ends byte for byte
# where an uninterrupted run ends.
# Node 1 ending on its own needs the progress watchdog ([shardrun] hang_timeout, issue 25 item 1):
# before it, node 1's agent waits for node 0's verdict up to rdzv_timeout (300 s) and this fails.
. "$(dirname "$0")/lib.sh"
restart_job 30
J=$T/job.ini
TIMEOUT=5
LIMIT=$((TIMEOUT + 15))
# the watchdog's key where this shardrun has it (it makes each side end on its own, node 1 too)
HANG=()
"$SHARDRUN" reference | grep -qF '`hang_timeout`' && HANG=(--set shardrun.hang_timeout=$TIMEOUT)

run "$SHARDRUN" "$J" --set task.output_dir="$T/ref"
expect_rc 0 "the uninterrupted one-node run"
sed -i '/^nproc_per_node = 2$/d' "$J"
links_up
have_netem || echo "note: this kernel has no netem qdisc (sch_netem): delay and loss on the link are not tested, only a link that goes down"

# 1. the link down after step 6, no restarts: both sides end, each naming the other
start_node 0 "$J" "$T/down" --set torch.timeout=$TIMEOUT "${HANG[@]}"
start_node 1 "$J" "$T/down" --set torch.timeout=$TIMEOUT "${HANG[@]}"
wait_progress "$T/n0.out" "step 6/30" 60 && pass || fail "the run reached step 6 ($(tail -n 5 "$T/n0.err" "$T/n1.err"))"
link_down
t0=$(now_ms)
wait_node_for 0 $((LIMIT + 5))
t_0=$(($(now_ms) - t0))
wait_node_for 1 $((LIMIT + 5 - t_0 / 1000))
t_1=$(($(now_ms) - t0))
expect_eq "${rc[0]}/${rc[1]}" "1/1" "both agents exit 1 after the link went down (124: still running, killed by the test)"
[ "$t_0" -le $((LIMIT * 1000)) ] && pass || fail "node 0 ended ${t_0} ms after the link went down (limit ${LIMIT} s)"
[ "$t_1" -le $((LIMIT * 1000)) ] && pass || fail "node 1 ended ${t_1} ms after the link went down (limit ${LIMIT} s): $(tail -4 "$T/n1.err")"
grep -qE "rank 1 did not arrive|rank 1 \(node 1|node 1 \(host|node 1's shardrun" "$T/n0.out" "$T/n0.err" && pass ||
    fail "node 0 names rank 1 / node 1: $(tail -4 "$T/n0.err")"
grep -qE "rank 0 did not arrive|rank 0 \(node 0|node 0 \(host|node 0's shardrun" "$T/n1.out" "$T/n1.err" && pass ||
    fail "node 1 names rank 0 / node 0: $(tail -4 "$T/n1.err")"
link_up_again

# 2. max_restarts = 1: the link down long enough for the collective to time out, then up again:
# the job restarts on both nodes and finishes equal to the uninterrupted run
P=29502
start_node 0 "$J" "$T/restart" --set torch.timeout=$TIMEOUT --set shardrun.max_restarts=1
start_node 1 "$J" "$T/restart" --set torch.timeout=$TIMEOUT --set shardrun.max_restarts=1
wait_progress "$T/n0.out" "step 7/30" 60 && pass || fail "the run reached step 7 ($(tail -n 5 "$T/n0.err" "$T/n1.err"))"
link_down
sleep $((TIMEOUT + 2))
link_up_again
wait_node_for 0 90
wait_node_for 1 15
expect_eq "${rc[0]}/${rc[1]}" "0/0" "both agents finish after the restart ($(tail -4 "$T/n0.err"; tail -4 "$T/n1.err"))"
expect_in "$(cat "$T/n0.err")" "restarting the job (restart 1 of max_restarts 1)" "node 0 restarts the job"
expect_same_file "$T/restart/checkpoint-30/model.safetensors" "$T/ref/checkpoint-30/model.safetensors" "the final model after the restart"
expect_eq "$(steps_of "$T/restart/train_log.jsonl" | tail -5)" "$(steps_of "$T/ref/train_log.jsonl" | tail -5)" "the last losses"
done_checks
