# The GPT-2 task's eval data: validation_split_percentage holds the last N% of the texts out of
# training; eval_data reads files with the training data's preprocessing.  eval_loss is the mean
# over predicted tokens (texts of many lengths here, padding ignored): the same at 1, 2 and 3
# ranks and under FULL_SHARD / SHARD_GRAD_OP on the same parameters (eval_on_start: training itself
# averages each rank's mean loss, as HF's Trainer does, so other world sizes train slightly
# differently when texts differ in length), and the same whether each eval batch holds one sample
# or all of them (a mean of batch means would differ), within 1e-6 relative.
. "$(dirname "$0")/lib.sh"
CHK="torch_py $SRC/tests/fsdp/check_records.py"
gpt2_job g.ini <<EOF2
size = tiny
data = /usr/share/common-licenses/*
max_length = 48
min_chars = 16
max_samples = 120
validation_split_percentage = 10
max_steps = 2
learning_rate = 1e-3
logging_steps = 1
eval_strategy = steps
eval_steps = 2
eval_on_start = true
per_device_eval_batch_size = 3
EOF2
train() {
    local name=$1 n=$2 bs=$3
    shift 3
    run "$SHARDRUN" "$T/g.ini" --nproc-per-node "$n" --set task.per_device_train_batch_size="$bs" \
        --set task.output_dir="$T/$name" --set task.save_final=false "$@"
    expect_rc 0 "$name trains"
}
train base 1 6
expect_in "$out" "gpt2: data: 108 samples" "validation_split_percentage = 10 of 120 texts: 108 to train"
expect_in "$out" "gpt2: eval data: 12 samples" "and 12 held out"
expect_eq "$($CHK evals "$T/base" | awk '{print $1}' | tr '\n' ' ')" "0 2 " "evaluations at steps 0 and 2"
for cfg in "2 3 FULL_SHARD 3 0" "3 2 SHARD_GRAD_OP 3 0" "1 6 FULL_SHARD 1 0,2" "1 6 FULL_SHARD 12 0,2"; do
    set -- $cfg
    name="ws$1-$3-eval$4"
    train "$name" "$1" "$2" --set accelerate.fsdp.sharding_strategy="$3" --set task.per_device_eval_batch_size="$4"
    r=$($CHK same_evals "$T/$name" "$T/base" 1e-6 "$5") && pass || fail "$name: $r"
    printf '  %-26s %s\n' "$name" "$r"
done
# eval_data: files of their own, the same preprocessing (here: the training files themselves)
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set task.validation_split_percentage=0 --set task.max_steps=1 \
    --set 'task.eval_data=/usr/share/common-licenses/*' --set task.output_dir="$T/files"
expect_rc 0 "eval_data"
expect_in "$out" "gpt2: eval data: " "eval data from files"
expect_in "$out" "from eval_data" "named as such"
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set 'task.eval_data=/usr/share/common-licenses/*' --set task.output_dir="$T/both"
expect_rc 2 "eval_data and validation_split_percentage together"
expect_in "$err" "eval_data and validation_split_percentage both name eval data" "it says so"
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set task.max_samples=20 --set task.validation_split_percentage=1 \
    --set task.output_dir="$T/none"
expect_rc 2 "a split that holds out no text"
expect_in "$err" "validation_split_percentage = 1 of 20 texts" "names the key and the count"
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set 'task.eval_data=/nonexistent/*' --set task.validation_split_percentage=0 \
    --set task.output_dir="$T/missing"
expect_rc 2 "eval_data matching nothing"
expect_in "$err" "[task] eval_data: the data pattern \"/nonexistent/*\" matches no file" "names the pattern"
done_checks
