# Restarts on one node (max_restarts): a rank SIGKILLed after step 7 of a GPT-2 run that saves every
# 5 steps restarts the job, which resumes from checkpoint-5 and ends byte for byte where an
# uninterrupted run ends; a failure before training began is not retried; when the restarts run
# out, every attempt is listed; main and exec: tasks see the restart count.
. "$(dirname "$0")/lib.sh"
restart_job 12
J=$T/job.ini

# the uninterrupted run
run "$SHARDRUN" "$J" --set task.output_dir="$T/ref" --set shardrun.max_restarts=1
expect_rc 0 "uninterrupted run"

# (a) rank 1 killed after step 7, one restart allowed
t0=$(date +%s%N)
SHARDRUN_DEBUG_KILL_AT=1:7 run "$SHARDRUN" "$J" --set task.output_dir="$T/a" --set shardrun.max_restarts=1
expect_rc 0 "a run that lost rank 1 after step 7 and restarted"
expect_in "$err" "restarting the job (restart 1 of max_restarts 1): rank 1 (node 0) was killed by signal SIGKILL (9) after step 7" "the agent says why it restarts"
expect_in "$err" "started 2 workers (ranks 0-1 of 2, restart 1)" "the workers start again"
expect_in "$out" "[rank0]: shardrun: restart 1: resuming from this job's newest checkpoint, $T/a/checkpoint-5" "the trainer picks checkpoint-5 without being asked"
expect_in "$out" "[rank0]: shardrun: resumed from $T/a/checkpoint-5 at step 5" "and resumes at step 5"
expect_eq "$(grep -c 'started 2 workers' <<<"$err")" "2" "two attempts"
expect_same_file "$T/a/checkpoint-12/model.safetensors" "$T/ref/checkpoint-12/model.safetensors" "the final model.safetensors"
expect_same_file "$T/a/checkpoint-12/optimizer.safetensors" "$T/ref/checkpoint-12/optimizer.safetensors" "the final optimizer.safetensors"
expect_eq "$(steps_of "$T/a/train_log.jsonl")" "$(steps_of "$T/ref/train_log.jsonl")" "train_log.jsonl: every step once, with the uninterrupted run's losses"
expect_in "$out" '"exit_code": 0' "the results list of the last attempt"
sed -n '/^\[$/,$p' <<<"$out" | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); assert [x["global_step"] for x in r]==[12,12], r' \
    && pass || fail "both ranks report global_step 12"

# (c) a configuration error is not retried: one attempt, exit 2
run "$SHARDRUN" "$J" --set task.output_dir="$T/c" --set shardrun.max_restarts=3 --set task.data="$T/no-such-file"
expect_rc 2 "a missing data file with max_restarts = 3"
# (found by the agent before any worker, or by the workers: either way one attempt)
[ "$(grep -c 'started 2 workers' <<<"$err")" -le 1 ] && pass || fail "one attempt for a configuration error: $err"
expect_not_in "$err" "restarting" "no restart for a configuration error"
# nor a failure before the first step (a damaged checkpoint to resume from): exit 1, once
cp -r "$T/ref/checkpoint-10" "$T/damaged"
printf '\x5a' | dd of="$T/damaged/model.safetensors" bs=1 seek=$(( $(stat -c %s "$T/damaged/model.safetensors") - 40 )) conv=notrunc status=none
run "$SHARDRUN" "$J" --set task.output_dir="$T/c2" --set shardrun.max_restarts=3 --set task.resume_from_checkpoint="$T/damaged"
expect_rc 1 "resuming from a damaged checkpoint with max_restarts = 3"
expect_eq "$(grep -c 'started 2 workers' <<<"$err")" "1" "one attempt for a failure before training began"
expect_in "$err" "not restarted (max_restarts = 3): the failure came before training began" "the summary says why there was no restart"
expect_not_in "$err" "restarting" "no restart for a failure before training began"

# (e) the restarts run out: exit 1, every attempt listed with rank, host, signal and step
SHARDRUN_DEBUG_KILL_AT=1:7:every run "$SHARDRUN" "$J" --set task.output_dir="$T/e" --set shardrun.max_restarts=2
expect_rc 1 "rank 1 killed after step 7 in every attempt, max_restarts = 2"
expect_in "$err" "the job failed after 2 restarts (max_restarts = 2); its attempts:" "the summary counts the restarts"
host=$(hostname)
for a in 0 1 2; do
    expect_in "$err" "attempt $a: rank 1 (node 0) was killed by signal SIGKILL (9) after step 7 (host $host)" "attempt $a is listed"
done
expect_eq "$(grep -c 'started 2 workers' <<<"$err")" "3" "three attempts"

# a signal while the job waits to restart: no restart, the signal's exit code, the attempts listed
SHARDRUN_DEBUG_KILL_AT=1:3 "$SHARDRUN" "$J" --set task.output_dir="$T/sig" --set shardrun.max_restarts=1 \
    --set shardrun.restart_delay=4 >"$T/sig.out" 2>"$T/sig.err" &
p=$!
wait_for "$T/sig.err" "restarting the job" 120 && pass || fail "the job restarts ($(cat "$T/sig.err"))"
sleep 0.5
kill -INT $p
wait $p
expect_eq "$?" "130" "SIGINT while the job waits restart_delay: exit 130"
expect_eq "$(grep -c 'started 2 workers' "$T/sig.err")" "1" "no second attempt after the SIGINT"
expect_in "$(cat "$T/sig.err")" "restart 1 called off: node 0's shardrun was stopped by SIGINT while the job restarted" "the list of attempts says the restart was called off"

# two runs in one Slurm allocation (one SLURM_JOB_ID): the second one's restart never takes the
# first one's checkpoints (it has its own launch id, and another configuration)
SLURM_JOB_ID=777 run "$SHARDRUN" "$J" --set task.output_dir="$T/alloc"
expect_rc 0 "the first run of the allocation"
SLURM_JOB_ID=777 SHARDRUN_DEBUG_KILL_AT=1:3 run "$SHARDRUN" "$J" --set task.output_dir="$T/alloc" \
    --set task.learning_rate=5e-4 --set task.overwrite_output_dir=true --set shardrun.max_restarts=1
expect_rc 0 "the second run, restarted after step 3"
expect_in "$out" "[rank0]: shardrun: restart 1: no checkpoint in $T/alloc yet; starting from the beginning" "the second run's restart does not take the first run's checkpoint-12"
expect_eq "$(steps_of "$T/alloc/train_log.jsonl" | wc -l)" "12" "the second run trained 12 steps"

# a main task sees sr_restart_count(); torchrun's variables say the same
job main.ini <<EOT
[shardrun]
task = $BUILD/tests/tasks/behave.so
plugins = torch
nproc_per_node = 2
max_restarts = 2
restart_delay = 1
[task]
act_rank = 1
act = exit3
act_until_restart = 1
EOT
t0=$(date +%s%N)
run "$SHARDRUN" "$T/main.ini"
ms=$((($(date +%s%N) - t0) / 1000000))
expect_rc 0 "a main task whose rank 1 fails in the first attempt only"
expect_in "$out" "[rank1]: restart count 0" "first attempt: restart count 0"
expect_in "$out" "[rank1]: restart count 1" "second attempt: restart count 1"
expect_not_in "$out" "restart count 2" "no third attempt"
[ "$ms" -ge 1000 ] && pass || fail "restart_delay = 1 is waited for (the run took ${ms} ms)"
run "$SHARDRUN" env "$T/main.ini"
expect_in "$out" "TORCHELASTIC_MAX_RESTARTS=2" "TORCHELASTIC_MAX_RESTARTS is max_restarts"
expect_in "$out" "TORCHELASTIC_RESTART_COUNT=0" "TORCHELASTIC_RESTART_COUNT starts at 0"

# an exec: task sees TORCHELASTIC_RESTART_COUNT
job exec.ini <<EOT
[shardrun]
task = exec:/bin/sh -c 'echo "count=\$TORCHELASTIC_RESTART_COUNT of \$TORCHELASTIC_MAX_RESTARTS"; [ "\$TORCHELASTIC_RESTART_COUNT" -ge 1 ]'
plugins = torch
max_restarts = 1
EOT
run "$SHARDRUN" "$T/exec.ini"
expect_rc 0 "an exec: task that fails in its first attempt"
expect_in "$out" "count=0 of 1" "exec: first attempt"
expect_in "$out" "count=1 of 1" "exec: second attempt"

# bad values are refused before anything starts
run "$SHARDRUN" "$J" --set shardrun.max_restarts=-1
expect_rc 2 "max_restarts = -1"
expect_in "$err" "max_restarts" "the error names max_restarts"
run "$SHARDRUN" "$J" --set shardrun.restart_delay=-3
expect_rc 2 "restart_delay = -3"
expect_in "$err" "restart_delay: expected a number >= 0" "the error names restart_delay"
done_checks
