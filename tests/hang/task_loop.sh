# The hang watchdog and a main task (collective sequence numbers only): rank 1 of tests/tasks/hang.c
# spins in a loop that never ends (or sleeps without end) instead of joining all_reduce #21; it is
# named, running (or sleeping), within hang_timeout and a few seconds, exit 1.  A run that does not
# hang is left alone, also with a hang_timeout shorter than the run.
. "$(dirname "$0")/lib.sh"
HT=3
job() {
    printf '[shardrun]\ntask = %s\nplugins = torch\nnproc_per_node = %s\n[task]\n%s\n' \
        "$BUILD/tests/tasks/hang.so" "$1" "$2" >"$T/job.ini"
}
for how in loop sleep; do
    job 2 "how = $how"
    start_bg $how "$SHARDRUN" "$T/job.ini" --set shardrun.hang_timeout=$HT
    agent=$bg
    wait_for "$T/$how.out" "rank 1 hangs before round 20" 60 && pass || fail "$how: rank 1 never reached round 20: $(cat "$T/$how.err")"
    hung_at=$(date +%s.%N)
    r1=$(worker_pid "$agent" 1)
    finish "$agent" 60
    elapsed_since=$(since "$hung_at")
    err=$(cat "$T/$how.err")
    expect_rc 1 "$how: rank 1 hangs"
    at_most "$elapsed_since" $((HT + 5)) "$how: the run ends within hang_timeout ($HT s) + 5 s"
    state=running
    [ $how = sleep ] && state=sleeping
    expect_in "$err" "shardrun: hang: rank 1 (node 0, host $HOST, pid $r1) is behind: $state" "$how: rank 1 named, $state"
    expect_in "$err" "it has not entered the collective rank 0 waits in all_reduce #21" "$how: the collective rank 0 waits in"
    expect_in "$err" "after all_reduce #20" "$how: rank 1's last collective"
done

# 3 ranks, the last one hangs: the two others wait
job 3 "hang_rank = 2
how = sleep"
start_bg three "$SHARDRUN" "$T/job.ini" --set shardrun.hang_timeout=$HT
finish $bg 60
err=$(cat "$T/three.err")
expect_rc 1 "3 ranks, rank 2 hangs"
expect_in "$err" "is behind: sleeping; it has not entered the collective ranks 0 and others wait in all_reduce #21" "3 ranks: rank 2 named, the others wait"

# no hang: 40 rounds of 10 ms, hang_timeout 1 s: exit 0, no report
job 2 "hang_rank = -1"
run "$SHARDRUN" "$T/job.ini" --set shardrun.hang_timeout=1
expect_rc 0 "a run that does not hang"
expect_not_in "$err" "hang" "no report"
echo "hang_task_loop: $checks checks, $failed failed"
[ "$failed" -eq 0 ]
