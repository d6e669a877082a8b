# Ctrl-C (SIGINT to shardrun) during a model task's training: exit 130, and the summary says what
# was saved and how to go on -- the newest complete checkpoint and the command to resume from it,
# which then continues from that step; that no checkpoint was saved, when none was; and, for a run
# that resumed and saved nothing since, that the checkpoint it resumed from is still the newest.
. "$(dirname "$0")/../fsdp/lib.sh"
toy_job toy.ini <<EOF2
max_steps = 10
per_device_train_batch_size = 4
logging_steps = 1
EOF2
J=$T/toy.ini
# interrupt NAME STEP [shardrun args...]: runs the job, sends SIGINT once rank 0 has printed step
# STEP (SHARDRUN_DEBUG_PAUSE_AT holds it there), sets rc and err
interrupt() {
    local name=$1 step=$2
    shift 2
    SHARDRUN_DEBUG_PAUSE_AT=0:$step "$SHARDRUN" "$J" --nproc-per-node 2 "$@" >"$T/$name.out" 2>"$T/$name.err" &
    local p=$!
    wait_for "$T/$name.out" "step $step/10" 60 && pass || fail "$name: the run reached step $step ($(cat "$T/$name.err"))"
    kill -INT $p
    wait $p
    rc=$? err=$(cat "$T/$name.err")
    expect_eq "$rc" "130" "$name: SIGINT: exit 130"
}

interrupt saved 6 --set task.output_dir="$T/out" --set task.save_steps=4
expect_in "$err" "shardrun: interrupted by SIGINT during step 7; the newest complete checkpoint is $T/out/checkpoint-4 (step 4): to continue from it, run the same command with --set task.resume_from_checkpoint=latest (or resume_from_checkpoint = latest under [task])" \
    "the checkpoint and how to resume"
run "$SHARDRUN" "$J" --nproc-per-node 2 --set task.output_dir="$T/out" --set task.save_steps=4 \
    --set task.resume_from_checkpoint=latest
expect_rc 0 "the command the summary gives"
expect_in "$out" "step 5/10" "it continues from step 4"
expect_not_in "$out" "step 4/10" "it does not train step 4 again"

interrupt first 6 --set task.output_dir="$T/out2" --set task.save_steps=4 # (checkpoint-4)
interrupt resumed 6 --set task.output_dir="$T/out2" --set task.save_steps=4 --set task.resume_from_checkpoint=latest
expect_in "$err" "interrupted by SIGINT during step 7; no checkpoint was saved since it resumed: the one it resumed from (in output_dir) is still the newest, and the same command continues from it" \
    "a resumed run that saved nothing since"

interrupt none 3
expect_in "$err" "interrupted by SIGINT during step 4; no checkpoint was saved (output_dir with save_steps saves one every N steps): running the job again starts over" \
    "no checkpoint"
done_checks
