# [task] eval_files: multiple-choice eval files in llm.c's eval format (tests/gpt2/evalfile.py writes
# them as llm.c's write_evalfile does), scored at each evaluation:
#  - easy.bin (the right completion is the corpus's next word, the wrong ones made-up words) is
#    far above chance after a few steps, and hard.bin (every completion a corpus word) is scored
#    exactly as a PyTorch GPT-2 scores it from the final checkpoint's model.safetensors;
#  - eval_accuracy is in the log line next to eval_loss, in trainer_state.json's log_history and
#    in the results, the same at 1, 2 and 3 ranks (FULL_SHARD, SHARD_GRAD_OP, NO_SHARD; an
#    example count no world size divides, 2 examples a batch) and on every rank;
#  - eval_files alone (no eval data): eval_accuracy without eval_loss;
#  - bad files are refused before step 0 with exit 2, naming the file and the offset;
#  - a task without choice callbacks, or built against the older sr_model_eval, cannot be given
#    eval_files (exit 2), and the older one still evaluates its eval data.
. "$(dirname "$0")/lib.sh"
EV="torch_py $SRC/tests/gpt2/evalfile.py"
corpus
$EV demo "$T/easy.bin" "$T/corpus.txt" 21 1 && $EV demo "$T/hard.bin" "$T/corpus.txt" 26 2 --real-words &&
    pass || fail "evalfile.py demo"
mkdir -p "$T/bad" "$T/sub/dir.bin" && $EV bad "$T/bad" && pass || fail "evalfile.py bad"
gpt2_job g.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = GPT2Block" \
    "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF
size = tiny
n_layer = 2
n_embd = 64
n_head = 4
max_length = 64
min_chars = 100
data = corpus.txt
validation_split_percentage = 10
eval_files = easy.bin hard.bin
max_steps = 4
learning_rate = 1e-2
logging_steps = 2
eval_strategy = steps
eval_steps = 4
eval_on_start = true
per_device_eval_batch_size = 12
EOF
# every rank's eval_accuracy in the results, deduplicated
accs() { grep -o '"eval_accuracy": [^,}]*' <<<"$out" | sed 's/.*: //' | sort -u | tr '\n' ' '; }
declare -A acc
# the same global batch of 12 at every world size (texts that fill max_length: the same training)
for cfg in "1 FULL_SHARD" "2 FULL_SHARD" "3 SHARD_GRAD_OP" "2 NO_SHARD"; do
    set -- $cfg
    run "$SHARDRUN" "$T/g.ini" --nproc-per-node "$1" --set accelerate.fsdp.sharding_strategy="$2" \
        --set task.per_device_train_batch_size=$((12 / $1)) --set task.output_dir="$T/ws$1-$2"
    expect_rc 0 "$1 rank(s), $2"
    expect_in "$out" "shardrun: eval_files: 47 multiple-choice examples from 2 files, 3 a batch per rank" "$1: the files read"
    expect_eq "$(accs | wc -w)" 1 "$1 rank(s) $2: one eval_accuracy on every rank ($(accs))"
    acc[$1-$2]=$(accs)
    # the log line: eval_accuracy right after eval_loss and eval_perplexity, at steps 0 and 4
    n=$(grep -c "'eval_loss': [0-9.]*, 'eval_perplexity': [0-9.]*, 'eval_accuracy': [0-9.]*, 'eval_runtime'" <<<"$out")
    expect_eq "$n" 2 "$1 rank(s) $2: two log lines with eval_accuracy next to eval_loss"
    echo "  $1 rank(s) $2: eval_accuracy $(accs)"
done
for k in 2-FULL_SHARD 3-SHARD_GRAD_OP 2-NO_SHARD; do
    expect_eq "${acc[$k]}" "${acc[1-FULL_SHARD]}" "eval_accuracy at $k equals 1 rank's"
done
# trainer_state.json: every eval entry has eval_accuracy; the first (random weights) near chance
# or below, the last far above it
r=$(torch_py - "$T/ws1-FULL_SHARD/trainer_state.json" <<'PY'
import json, sys
h = [e for e in json.load(open(sys.argv[1]))["log_history"] if "eval_loss" in e]
assert [e["step"] for e in h] == [0, 4], h
assert all("eval_accuracy" in e for e in h), h
first, last = h[0]["eval_accuracy"], h[-1]["eval_accuracy"]
assert last > 0.55, (first, last)
print(first, last)
PY
) && pass || fail "trainer_state.json log_history: $r"
echo "  trainer_state.json eval_accuracy at steps 0 and 4: $r"
# the same accuracy as PyTorch's GPT-2 from the final weights (the last evaluation ran on them)
ref=$($EV reference "$T/ws1-FULL_SHARD/checkpoint-4/model.safetensors" "$T/easy.bin" "$T/hard.bin" --n_head 4 2>&1) &&
    pass || fail "the torch reference: $ref"
echo "  torch: $ref"
torch_py -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-12)" \
    "${acc[1-FULL_SHARD]}" "$(awk '{print $2}' <<<"$ref")" && pass ||
    fail "eval_accuracy ${acc[1-FULL_SHARD]} differs from torch's: $ref"
margin=$(awk '{print $NF}' <<<"$ref")
torch_py -c "import sys; sys.exit(float(sys.argv[1]) < 1e-4)" "$margin" && pass ||
    fail "the reference's smallest margin $margin is too small to compare with fp32"

# eval_files alone: evaluations without eval data
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 2 --set task.validation_split_percentage=0 --set task.max_steps=2 \
    --set task.eval_steps=2 --set task.eval_files="$T/hard.bin" --set task.per_device_train_batch_size=6 --set task.output_dir="$T/alone"
expect_rc 0 "eval_files without eval data"
expect_in "$out" "{'eval_accuracy': " "the log line has eval_accuracy"
expect_not_in "$out" "'eval_loss'" "and no eval_loss"

# bad files: exit 2 before step 0, the file and the offset named
bad() {
    local file=$1 what=$2
    shift 2
    run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set task.eval_files="$file" --set task.output_dir="$T/badrun"
    expect_rc 2 "$what"
    expect_in "$err" "[task] eval_files: $file" "$what: the file named"
    for s in "$@"; do expect_in "$err" "$s" "$what"; done
    expect_not_in "$out" "step 1/" "$what: nothing trained"
}
bad "$T/bad/magic.bin" "wrong magic" "offset 0: magic number 20240520, not 20240522" "token shard"
bad "$T/bad/version.bin" "wrong version" "offset 4: version 2, not 1"
bad "$T/bad/truncated.bin" "truncated file" "truncated: example 1 is"
bad "$T/bad/vocab.bin" "token id >= vocabulary" "token id 300 is not below the model's vocabulary of 257" "offset 1116 (example 1)"
bad "$T/bad/five.bin" "5 completions" "example 1 has 5 completions; the format allows 2 to 4" "offset 1102"
bad "$T/sub/dir.bin" "a directory" "is a directory"
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set task.eval_files=nothere.bin --set task.output_dir="$T/badrun"
expect_rc 2 "a missing file"
expect_in "$err" "cannot read ./nothere.bin: No such file" "named (--set: relative to the current folder)"
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set task.eval_strategy=no --set task.eval_on_start=false \
    --set task.output_dir="$T/badrun"
expect_rc 2 "eval_files without evaluations"
expect_in "$err" "eval_files is scored at each evaluation" "says why"

# tasks that cannot score sequences: the toy model, and one built against the older sr_model_eval
cat >"$T/toy.ini" <<EOF
[shardrun]
task = $BUILD/examples/toy.so
plugins = torch,accelerate

[task]
samples = 64
eval_samples = 16
max_steps = 2
eval_strategy = steps
eval_steps = 2
EOF
run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 1 --set task.eval_files="$T/bad/good.bin"
expect_rc 2 "eval_files for a task without choice callbacks"
expect_in "$err" "[task] eval_files: task toy_model cannot score multiple-choice examples" "names the task"
run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 1 --set shardrun.task="$BUILD/tests/tasks/eval_before_choice.so"
expect_rc 0 "a task built against the older sr_model_eval"
expect_in "$out" "'eval_loss': " "still evaluates its eval data"
run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 1 --set shardrun.task="$BUILD/tests/tasks/eval_before_choice.so" \
    --set task.eval_files="$T/bad/good.bin"
expect_rc 2 "eval_files for the older sr_model_eval"
expect_in "$err" "task eval_before_choice cannot score multiple-choice examples" "refused"
done_checks
