# The hang watchdog with max_restarts: rank 1 stops itself (SIGSTOP) right after step 7 of a GPT-2
# run that saves every 5 steps; the agent names it within hang_timeout, kills the attempt and
# restarts the job, which resumes from checkpoint-5 and ends with the uninterrupted run's
# model.safetensors, byte for byte.
. "$(dirname "$0")/../restarts/lib.sh"
. "$(dirname "$0")/lib.sh"
restart_job 12
J=$T/job.ini
HT=4

run "$SHARDRUN" "$J" --set task.output_dir="$T/ref"
expect_rc 0 "the uninterrupted run"

start_bg stop env SHARDRUN_DEBUG_KILL_AT=1:7:stop "$SHARDRUN" "$J" --set task.output_dir="$T/a" \
    --set shardrun.max_restarts=1 --set shardrun.hang_timeout=$HT
finish $bg 300
out=$(cat "$T/stop.out")
err=$(cat "$T/stop.err")
expect_rc 0 "rank 1 stopped after step 7, one restart allowed"
expect_in "$err" "is behind: stopped" "the stopped rank is named"
expect_in "$err" "restarting the job (restart 1 of max_restarts 1): hang (seen by node 0): rank 1 (node 0, host $HOST, pid" "the agent restarts the job because of the hang"
expect_in "$err" "started 2 workers (ranks 0-1 of 2, restart 1)" "the workers start again"
expect_in "$out" "[rank0]: shardrun: resumed from $T/a/checkpoint-5 at step 5" "and resume from checkpoint-5"
expect_same_file "$T/a/checkpoint-12/model.safetensors" "$T/ref/checkpoint-12/model.safetensors" "the final model.safetensors"
expect_same_file "$T/a/checkpoint-12/optimizer.safetensors" "$T/ref/checkpoint-12/optimizer.safetensors" "the final optimizer.safetensors"
echo "hang_restart: $checks checks, $failed failed"
[ "$failed" -eq 0 ]
