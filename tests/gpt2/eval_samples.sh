# [task] max_eval_samples and max_train_samples, HF's meaning: the first N samples of the eval and the
# training set.  The evaluations of the first 5 of 12 eval texts are those of a file holding just
# those 5; training on the first 10 samples is, step for step, training on data cut to its first 10
# texts (the task's max_samples); the plan line says how many of how many; a value below 1 is
# refused before any worker starts.
. "$(dirname "$0")/lib.sh"
CHK="torch_py $SRC/tests/fsdp/check_records.py"
for i in {0..11}; do printf 'Held-out paragraph %d, with words enough to be kept as a text of its own.\n\n' "$i"; done >"$T/eval12.txt"
for i in {0..4}; do printf 'Held-out paragraph %d, with words enough to be kept as a text of its own.\n\n' "$i"; done >"$T/eval5.txt"
gpt2_job g.ini <<EOF2
size = tiny
data = /usr/share/common-licenses/*
max_length = 48
min_chars = 16
max_samples = 60
max_steps = 2
learning_rate = 1e-3
logging_steps = 1
per_device_train_batch_size = 4
eval_strategy = steps
eval_steps = 1
eval_on_start = true
per_device_eval_batch_size = 2
save_final = false
EOF2
train() {
    local name=$1
    shift
    run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set task.output_dir="$T/$name" "$@"
    expect_rc 0 "$name trains"
}
train first5 --set task.eval_data="$T/eval12.txt" --set task.max_eval_samples=5
expect_in "$out" "gpt2: eval data: 12 samples" "the task holds 12 eval texts"
expect_in "$out" "'eval_samples_per_second'" "an evaluation ran"
train only5 --set task.eval_data="$T/eval5.txt"
r=$($CHK same_evals "$T/first5" "$T/only5" 0) && pass || fail "max_eval_samples = 5: $r"
echo "  max_eval_samples = 5 against a file of those 5 texts: $r"
train all12 --set task.eval_data="$T/eval12.txt"
r=$($CHK same_evals "$T/all12" "$T/only5" 0) && fail "all 12 eval texts evaluate as the first 5 do: $r" || pass
# max_train_samples: the first 10 samples, whatever the task holds (60 here)
train first10 --set task.eval_strategy=no --set task.eval_on_start=false --set task.max_train_samples=10
expect_in "$out" "shardrun: 10 samples (the first of 60: max_train_samples)" "the plan says which samples"
loss10=$(result final_loss) sum10=$(result param_sum)
train cut10 --set task.eval_strategy=no --set task.eval_on_start=false --set task.max_samples=10
expect_eq "$(result final_loss) $(result param_sum)" "$loss10 $sum10" "max_train_samples = 10 trains as data cut to 10 texts"
train more --set task.eval_strategy=no --set task.eval_on_start=false --set task.max_train_samples=1000
expect_in "$out" "shardrun: 60 samples, " "max_train_samples above the data's size: all of it"
for k in max_eval_samples max_train_samples; do
    run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set task.$k=0 --set task.output_dir="$T/bad"
    expect_rc 2 "$k = 0 is refused"
    expect_in "$err" "$k" "the message names $k"
    [ ! -e "$T/bad" ] && pass || fail "$k = 0: nothing may be written"
done
done_checks
