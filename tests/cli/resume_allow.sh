# [task] resume_allow_changes takes [task] keys (the trainer's, the task's own), mixed_precision,
# data or all.  A name that is none of them (a misspelt key) was accepted silently, and the change
# it meant to allow was refused only at the resume, days later; now it is refused before any
# worker starts (exit 2), naming where it was set, the name and the nearest one.
. "$(dirname "$0")/../fsdp/lib.sh"
toy_job toy.ini <<EOF
max_steps = 1
per_device_train_batch_size = 2
EOF
run "$SHARDRUN" "$T/toy.ini" --set task.resume_allow_changes="learning_rate, lerning_rate"
expect_rc 2 "a misspelt key in resume_allow_changes"
expect_eq "$out" "" "nothing started"
expect_in "$err" "command line --set task.resume_allow_changes=learning_rate, lerning_rate: [task] resume_allow_changes names \"lerning_rate\", which is no [task] key of this run (did you mean \"learning_rate\"?); it takes [task] keys, mixed_precision, data or all" \
    "the name, where it was set and the nearest key"
expect_not_in "$err" "names \"learning_rate\"" "a trainer key is not reported"
printf 'resume_allow_changes = data_sed\n' >>"$T/toy.ini"
run "$SHARDRUN" "$T/toy.ini"
expect_rc 2 "the task's own key misspelt"
expect_in "$err" "$T/toy.ini:" "the job file's line"
expect_in "$err" "names \"data_sed\", which is no [task] key of this run (did you mean \"data_seed\"?)" "the nearest of the task's own keys"
run "$SHARDRUN" env "$T/toy.ini"
expect_rc 2 "shardrun env: the same"
# every kind of name it takes: the trainer's key, the task's own (read, not set), the other names
run "$SHARDRUN" "$T/toy.ini" --set task.resume_allow_changes="learning_rate,data_seed, mixed_precision,data"
expect_rc 0 "trainer keys, the task's keys, mixed_precision and data"
run "$SHARDRUN" "$T/toy.ini" --set task.resume_allow_changes=all
expect_rc 0 "all"
done_checks
