# The hang watchdog and a main task that says it makes progress (sr_progress, shardrun/task.h):
# every rank of tests/tasks/hang.c calls it once per round, then every rank stops in pause()
# before round 20, outside any collective.  Before sr_progress such a run waited for ever; now the
# run is named hung within hang_timeout and a few seconds (docs/clusters.md "Hangs": the check
# runs about once a second, then shutdown_grace), exit 1, with every rank's line.  A task that
# never calls it is left alone, as before: nothing says its silence is not its work.
. "$(dirname "$0")/lib.sh"
HT=3
job() {
    printf '[shardrun]\ntask = %s\nplugins = torch\nnproc_per_node = 2\n[task]\nhang_rank = all\nhow = sleep\n%s\n' \
        "$BUILD/tests/tasks/hang.so" "$1" >"$T/job.ini"
}
job "progress = 1"
start_bg said "$SHARDRUN" "$T/job.ini" --set shardrun.hang_timeout=$HT
agent=$bg
wait_for "$T/said.out" "[rank1]: rank 1 hangs before round 20" 60 && pass || fail "rank 1 never reached round 20: $(cat "$T/said.err")"
wait_for "$T/said.out" "[rank0]: rank 0 hangs before round 20" 10 && pass || fail "rank 0 never reached round 20: $(cat "$T/said.err")"
hung_at=$(date +%s.%N)
r0=$(worker_pid "$agent" 0)
r1=$(worker_pid "$agent" 1)
finish "$agent" 30
elapsed_since=$(since "$hung_at")
echo "the run ended ${elapsed_since}s after every rank stopped (hang_timeout $HT s)"
err=$(cat "$T/said.err")
expect_rc 1 "every rank in pause() after sr_progress: the run hangs"
at_most "$elapsed_since" $((HT + 5)) "the run ends within hang_timeout ($HT s) + 5 s"
expect_in "$err" "shardrun: hang: rank 0 (node 0, host $HOST, pid $r0) made no progress for" "rank 0 named"
expect_in "$err" "sleeping; nor did any other rank, none in a collective (hang_timeout = ${HT}s)" "no rank in a collective"
expect_in "$err" "rank 1 (node 0, host $HOST, pid $r1): sleeping; after all_reduce #20; no progress for" "rank 1's line"
expect_in "$err" "the run hung: rank 0" "the summary says the run hung"
expect_eq "$(grep -c 'shardrun: hang:' <<<"$err")" 1 "one report"

# without sr_progress the same silence is not a hang (it may be the task's work): still running
# well after hang_timeout, then stopped here
job "progress = 0"
start_bg quiet "$SHARDRUN" "$T/job.ini" --set shardrun.hang_timeout=1
wait_for "$T/quiet.out" "[rank0]: rank 0 hangs before round 20" 60 && pass || fail "rank 0 never reached round 20: $(cat "$T/quiet.err")"
sleep 4
kill -0 "$bg" 2>/dev/null && pass || fail "a task that never calls sr_progress is not ended by the watchdog: $(cat "$T/quiet.err")"
expect_not_in "$(cat "$T/quiet.err")" "hang" "no report"
kill -TERM "$bg"
finish "$bg" 30
expect_rc 143 "stopped by SIGTERM"
echo "hang_progress: $checks checks, $failed failed"
[ "$failed" -eq 0 ]
