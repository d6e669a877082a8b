# `shardrun status OUTPUT_DIR` from another terminal: a running job (rank 0 held after step 5 by
# SHARDRUN_DEBUG_PAUSE_AT and stopped with SIGSTOP, so what it shows is fixed), the same job stopped
# by SIGTERM, a finished one, a failed one, a stale one (its shardrun killed outright: the status
# still says running, and must never be shown as live), and what is no run at all.
. "$(dirname "$0")/../fsdp/lib.sh"
export OMP_NUM_THREADS=1
toy_job job.ini <<EOF
max_steps = 100000
num_train_epochs = 10000
logging_steps = 1
save_steps = 100000
EOF
sed -i 's/^plugins = torch,accelerate$/&\nnproc_per_node = 2/' "$T/job.ini"

# start NAME: a run into $T/NAME (pid in $p) held after rank 0's step 5
start() {
    SHARDRUN_DEBUG_PAUSE_AT=0:5 "$SHARDRUN" "$T/job.ini" --set task.output_dir="$T/$1" >"$T/$1.out" 2>"$T/$1.err" &
    p=$!
    wait_for "$T/$1.out" "step 5/" 60 && pass || fail "$1: the run reached step 5 ($(cat "$T/$1.err"))"
}
# status_until DIR TEXT: `shardrun status DIR` until its output holds TEXT (10 s at most); sets $out, $rc
status_until() {
    local i
    for i in $(seq 1 50); do
        run "$SHARDRUN" status "$1"
        grep -qF -- "$2" <<<"$out" && return 0
        sleep 0.2
    done
    return 1
}

# running: every rank at step 5; rank 0 stopped (SIGSTOP), rank 1 waiting for it
start live
w=$(worker_of $p 0)
kill -STOP "$w"
status_until "$T/live" "(stopped)" && pass || fail "running: rank 0 shown stopped: $out $err"
expect_rc 0 "running: exit 0"
expect_in "$out" "$T/live: running since " "running: it says the run is running"
line0=$(grep -E '^  0 ' <<<"$out")
line1=$(grep -E '^  1 ' <<<"$out")
expect_in "$line0" "5/100000" "running: rank 0 finished step 5 of 100000"
expect_in "$line1" "5/100000" "running: rank 1 finished step 5 of 100000"
expect_in "$line0" " $w " "running: rank 0's pid"
expect_in "$line0" "(stopped)" "running: rank 0 is the stopped one"
expect_in "$out" "ETA: " "running: an ETA line"
# the same run stopped by SIGTERM: a preemption, exit 143, said once it ended
kill -CONT "$w"
kill -TERM $p
wait $p
expect_eq "$?" 143 "the preempted run's exit"
run "$SHARDRUN" status "$T/live"
expect_rc 1 "stopped: exit 1 (the run did not finish)"
expect_in "$out" "$T/live: stopped by SIGTERM (exit 143) at " "stopped: how it ended"
expect_in "$(grep -E '^  0 ' <<<"$out")" "5/100000" "stopped: where rank 0 stopped"

# finished
run "$SHARDRUN" "$T/job.ini" --set task.output_dir="$T/done" --set task.max_steps=30
expect_rc 0 "the finished run"
run "$SHARDRUN" status "$T/done"
expect_rc 0 "finished: exit 0"
expect_in "$out" "$T/done: finished with exit 0 at " "finished: it says so"

# failed: rank 1 killed after step 3
SHARDRUN_DEBUG_KILL_AT=1:3 run "$SHARDRUN" "$T/job.ini" --set task.output_dir="$T/failed"
expect_rc 1 "the failed run"
run "$SHARDRUN" status "$T/failed"
expect_rc 1 "failed: exit 1"
expect_in "$out" "$T/failed: failed with exit 1 at " "failed: it says so"

# stale: its shardrun killed outright (SIGKILL: nothing written after); the lock and a status that
# says "running" are left behind
start stale
status_until "$T/stale" "5/100000" && pass || fail "stale: the status shows step 5 before the kill: $out $err"
kill -KILL $p
wait $p
run "$SHARDRUN" status "$T/stale"
expect_rc 1 "stale: exit 1"
expect_in "$out" "$T/stale: stale: the status says running, but its shardrun (pid $p on this host) is gone" "stale: named stale"
expect_not_in "$out" "running since" "stale: never shown as running"
expect_not_in "$out" "ETA" "stale: no ETA"

# no run, bad arguments, a damaged file
mkdir -p "$T/empty"
run "$SHARDRUN" status "$T/empty"
expect_rc 3 "no status file: exit 3"
expect_in "$err" "no run in $T/empty" "no status file: said"
run "$SHARDRUN" status "$T/nowhere"
expect_rc 3 "no such folder: exit 3"
run "$SHARDRUN" status
expect_rc 2 "no folder given: exit 2"
run "$SHARDRUN" status "$T/empty" "$T/done"
expect_rc 2 "two folders: exit 2"
printf 'shardrun status 1\nstate running\npid x\n' >"$T/empty/.shardrun.status"
run "$SHARDRUN" status "$T/empty"
expect_rc 2 "a damaged status file: exit 2"
expect_in "$err" "is not a status file shardrun writes: cannot read the line \"pid x\"" "a damaged status file: the line named"
done_checks
