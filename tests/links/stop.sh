# (e) The rank on node 1 stopped (SIGSTOP) in the middle of the run: node 0's agent names it --
# rank 1, node 1, its host and pid, stopped -- within hang_timeout (5 s) and a few seconds, and
# both agents exit 1.  Needs the progress watchdog ([shardrun] hang_timeout, issue 25 item 1): a
# shardrun without it refuses the key (exit 2) and this test fails.
. "$(dirname "$0")/lib.sh"
restart_job 30
sed -i '/^nproc_per_node = 2$/d' "$T/job.ini"
J=$T/job.ini
HANG=5
LIMIT=$((HANG + 10))
links_up
# a collective timeout far above hang_timeout: the watchdog must see the stopped rank first
start_node 0 "$J" "$T/out" --set torch.timeout=120 --set shardrun.hang_timeout=$HANG
start_node 1 "$J" "$T/out" --set torch.timeout=120 --set shardrun.hang_timeout=$HANG
wait_progress "$T/n0.out" "step 5/30" 60 && pass || fail "the run reached step 5 ($(tail -n 5 "$T/n0.err" "$T/n1.err"))"
# node 1's worker: the agent's child that is not its guardian (shardrun-guard)
worker=
for c in $(ps -o pid= --ppid "${pid[1]}" 2>/dev/null); do
    [ "$(cat "/proc/$c/comm" 2>/dev/null)" != shardrun-guard ] && worker=$c
done
[ -n "$worker" ] && pass || fail "found node 1's worker (children of agent ${pid[1]}: $(ps -o pid=,comm= --ppid "${pid[1]}"))"
t0=$(now_ms)
[ -n "$worker" ] && kill -STOP "$worker"
wait_node_for 0 $((LIMIT + 5))
t_0=$(($(now_ms) - t0))
wait_node_for 1 10
[ -n "$worker" ] && kill -KILL "$worker" 2>/dev/null
expect_eq "${rc[0]}/${rc[1]}" "1/1" "both agents exit 1 after rank 1 was stopped (124: still running, killed by the test)"
[ "$t_0" -le $((LIMIT * 1000)) ] && pass || fail "node 0 ended ${t_0} ms after the stop (limit ${LIMIT} s)"
expect_in "$(cat "$T/n0.err")" "rank 1 (node 1, host $(hostname), pid $worker)" "node 0 names the stopped rank, its node, host and pid"
expect_in "$(grep -F "rank 1 (node 1" "$T/n0.err")" "stopped" "... and its state"
done_checks
