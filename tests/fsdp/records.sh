# Evaluation and the trainer's records, on the toy model task (eval_samples held out):
#  - eval_loss is the same at world size 1, 2 and 3 (and 2 nodes x 2), under every sharding strategy, with the
#    engine off, and with another eval batch size (within 1e-6 relative), and the same on every
#    rank; evaluating does not change training (train_log.jsonl byte for byte);
#  - sr_model_eval grown (a newer header) works, short is refused;
#  - eval_strategy = steps / epoch, eval_steps (and its default, logging_steps), eval_on_start;
#    configuration errors (no eval data, load_best_model_at_end without evaluations at saves);
#  - trainer_state.json in output_dir and every checkpoint: loadable as transformers' TrainerState,
#    log_history equal to train_log.jsonl, eval entries, the closing summary (and its console line);
#  - save_total_limit keeps the newest checkpoints and the best one, across a resume, and cleans
#    up a deletion that was cut short; load_best_model_at_end; a checkpoint of an older shardrun
#    (flat trainer_state.json) still resumes;
#  - loss.svg: well-formed, its polylines are log_history's values, and headless Chromium renders
#    it; `shardrun plot` over two runs, and its errors.
. "$(dirname "$0")/lib.sh"
CHK="/usr/bin/python3 $SRC/tests/fsdp/check_records.py"
RTOL=1e-6
cat >"$T/task.part" <<EOF
samples = 240
eval_samples = 50
per_device_eval_batch_size = 4
max_steps = 10
learning_rate = 1e-2
warmup_steps = 2
logging_steps = 1
eval_strategy = steps
eval_steps = 5
eval_on_start = true
save_steps = 5
EOF
toy_job toy.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = MLPBlock,MixerBlock" \
    "fsdp.state_dict_type = FULL_STATE_DICT" <"$T/task.part"
toy_job ddp.ini "use_fsdp = false" <"$T/task.part"

# train NAME NPROC BATCH [shardrun args...]: output in $T/NAME
train() {
    local name=$1 n=$2 bs=$3
    shift 3
    run "$SHARDRUN" "$T/${JOB:-toy.ini}" --nproc-per-node "$n" --set task.per_device_train_batch_size="$bs" \
        --set task.output_dir="$T/$name" "$@"
    expect_rc 0 "$name trains"
}
# every rank reports the same last eval_loss
same_on_ranks() {
    local n
    n=$(grep -o '"eval_loss": [^,}]*' <<<"$out" | sort -u | wc -l)
    expect_eq "$n" 1 "$1: every rank's eval_loss is the same ($(grep -o '"eval_loss": [^,}]*' <<<"$out" | tr '\n' ' '))"
}

echo "== eval_loss across world sizes and strategies (against world size 1, rtol $RTOL)"
train base 1 12 --set accelerate.fsdp.sharding_strategy=NO_SHARD
expect_eq "$($CHK evals "$T/base" | awk '{print $1}' | tr '\n' ' ')" "0 5 10 " "evaluations at steps 0 (eval_on_start), 5, 10"
expect_in "$out" "[rank0]: {'eval_loss': " "rank 0 prints HF's eval line"
expect_in "$out" "'epoch': 0.5}" "the eval line ends with the epoch"
expect_in "$out" "[rank0]: {'train_runtime': " "rank 0 prints HF's summary line"
for k in train_samples_per_second train_steps_per_second train_loss epoch; do expect_in "$out" "'$k': " "summary: $k"; done
for cfg in "2 6 FULL_SHARD" "2 6 SHARD_GRAD_OP" "2 6 NO_SHARD" "3 4 FULL_SHARD" "3 4 SHARD_GRAD_OP" "3 4 NO_SHARD"; do
    set -- $cfg
    train "ws$1-$3" "$1" "$2" --set accelerate.fsdp.sharding_strategy="$3" --set accelerate.fsdp.forward_prefetch=true
    r=$($CHK same_evals "$T/ws$1-$3" "$T/base" $RTOL) && pass || fail "ws$1-$3: $r"
    printf '  %-18s %s\n' "ws$1-$3" "$r"
    same_on_ranks "ws$1-$3"
done
# HYBRID_SHARD: shard within each of 2 nodes (2 ranks), replicate across them
export SHARDRUN_RDZV_TOKEN=records-test
P=$(free_port_pair)
for node in 0 1; do
    "$SHARDRUN" "$T/toy.ini" --nnodes 2 --node-rank $node --nproc-per-node 2 --master-addr 127.0.0.1 --master-port "$P" \
        --set task.per_device_train_batch_size=3 --set task.output_dir="$T/hybrid" \
        --set accelerate.fsdp.sharding_strategy=HYBRID_SHARD >"$T/hybrid.n$node.out" 2>"$T/hybrid.n$node.err" &
    pids[$node]=$!
done
wait "${pids[0]}"; r0=$?
wait "${pids[1]}"; r1=$?
expect_eq "$r0/$r1" "0/0" "HYBRID_SHARD on 2 nodes x 2 ($(tail -n 3 "$T/hybrid.n0.err" "$T/hybrid.n1.err"))"
expect_in "$(cat "$T/hybrid.n0.out")" "shard group 2, replicas 2" "HYBRID_SHARD: shards within a node, replicas across nodes"
r=$($CHK same_evals "$T/hybrid" "$T/base" $RTOL) && pass || fail "hybrid: $r"
printf '  %-18s %s\n' "ws4 HYBRID_SHARD" "$r"
out=$(cat "$T/hybrid.n0.out" "$T/hybrid.n1.out")
same_on_ranks "HYBRID_SHARD (4 ranks)"
JOB=ddp.ini train ddp2 2 6
r=$($CHK same_evals "$T/ddp2" "$T/base" $RTOL) && pass || fail "ddp2: $r"
printf '  %-18s %s\n' "ddp (no FSDP) ws2" "$r"
train ws1-eval7 1 12 --set accelerate.fsdp.sharding_strategy=NO_SHARD --set task.per_device_eval_batch_size=7
r=$($CHK same_evals "$T/ws1-eval7" "$T/base" $RTOL) && pass || fail "eval batch 7: $r"
printf '  %-18s %s\n' "eval batch 7" "$r"
# training is the same with and without evaluation
train noeval 2 6 --set task.eval_strategy=no --set task.eval_on_start=false
expect_same_file "$T/noeval/train_log.jsonl" "$T/ws2-FULL_SHARD/train_log.jsonl" "train_log.jsonl without evaluation"

# sr_model_eval is versioned by struct_size: a grown one works, a short one is refused
run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 1 --set shardrun.task="$BUILD/tests/tasks/eval_grown.so" --set task.output_dir="$T/grown" \
    --set task.per_device_train_batch_size=12 --set accelerate.fsdp.sharding_strategy=NO_SHARD
expect_rc 0 "a task with a grown sr_model_eval"
r=$($CHK same_evals "$T/grown" "$T/base" $RTOL) && pass || fail "grown sr_model_eval: $r"
run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 1 --set shardrun.task="$BUILD/tests/tasks/eval_short.so" --set task.output_dir="$T/short"
expect_rc 2 "a task with a short sr_model_eval"
expect_in "$err" "sr_model_eval_data: struct_size 16 is too small (this shardrun needs 24)" "both sizes named"

echo "== schedules"
train epoch 2 6 --set task.samples=48 --set task.max_steps=-1 --set task.num_train_epochs=2.5 \
    --set task.eval_strategy=epoch --set task.eval_on_start=false
expect_eq "$($CHK evals "$T/epoch" | awk '{print $1 "@" $3}' | tr '\n' ' ')" "4@1.0 8@2.0 10@2.5 " \
    "eval_strategy = epoch: after each epoch of 4 steps and at the end"
expect_in "$out" "'epoch': 1.0}" "the epoch's eval line says epoch 1.0"
train steps3 2 6 --set task.eval_steps=3 --set task.eval_on_start=false
expect_eq "$($CHK evals "$T/steps3" | awk '{print $1}' | tr '\n' ' ')" "3 6 9 " "eval_steps = 3"
grep -v '^eval_steps ' "$T/task.part" | toy_job nosteps.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" \
    "fsdp.transformer_layer_cls_to_wrap = MLPBlock,MixerBlock"
JOB=nosteps.ini train default-steps 2 6 --set task.logging_steps=4 --set task.eval_on_start=false
expect_eq "$($CHK evals "$T/default-steps" | awk '{print $1}' | tr '\n' ' ')" "4 8 " "eval_steps defaults to logging_steps"
run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 1 --set task.eval_samples=0 --set task.output_dir="$T/x1"
expect_rc 2 "eval_strategy without eval data is a configuration error"
expect_in "$err" "eval_strategy = steps (with eval_on_start): task toy_model describes no eval data" "it says why"
run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 1 --set task.load_best_model_at_end=true --set task.eval_strategy=epoch \
    --set task.output_dir="$T/x2"
expect_rc 2 "load_best_model_at_end with eval_strategy = epoch"
expect_in "$err" "load_best_model_at_end = true needs an evaluation at every checkpoint" "it says why"

echo "== trainer_state.json"
r=$($CHK state "$T/base" 20) && pass || fail "base: $r"
echo "  $(tail -1 <<<"$r")"
r=$($CHK state "$T/ws3-FULL_SHARD" 20) && pass || fail "ws3: $r"

echo "== save_total_limit, best model, resume"
cat >"$T/best.part" <<EOF
learning_rate = 0.3
lr_scheduler_type = constant
max_grad_norm = 0
warmup_steps = 0
eval_steps = 2
save_steps = 2
save_total_limit = 1
load_best_model_at_end = true
eval_on_start = false
EOF
{ grep -vE '^(learning_rate|warmup_steps|eval_steps|save_steps|eval_on_start) ' "$T/task.part"; cat "$T/best.part"; } >"$T/best.task"
toy_job best.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = MLPBlock,MixerBlock" \
    "fsdp.state_dict_type = SHARDED_STATE_DICT" <"$T/best.task"
JOB=best.ini train best 2 6 --set task.max_steps=8
read -r best newest <<<"$($CHK best "$T/best")"
[ -n "$best" ] && [ "$best" != "$newest" ] && pass || fail "the scenario needs a best checkpoint before the newest (best $best, newest $newest)"
expect_eq "$(cd "$T/best" && ls -d checkpoint-* | sort -t- -k2 -n | tr '\n' ' ')" "checkpoint-$best checkpoint-$newest " \
    "save_total_limit = 1 keeps the newest and the best"
expect_in "$out" "loaded the best model: $T/best/checkpoint-$best" "load_best_model_at_end loads it"
expect_in "$(cat "$T/best/trainer_state.json")" "\"best_model_checkpoint\": \"$T/best/checkpoint-$best\"" "best_model_checkpoint"
mkdir "$T/best/checkpoint-3.deleting" && echo x >"$T/best/checkpoint-3.deleting/model.safetensors"
# resumed with one step more: checkpoint-9 has no evaluation, the best stays the earlier one
JOB=best.ini train best 2 6 --set task.max_steps=9 --set task.resume_from_checkpoint=latest
expect_in "$out" "resumed from $T/best/checkpoint-$newest" "the run resumes from the newest"
expect_eq "$(cd "$T/best" && ls -d checkpoint-* | sort -t- -k2 -n | tr '\n' ' ')" "checkpoint-$best checkpoint-9 " \
    "after the resume: the best (restored from the checkpoint) and the newest; a cut-short deletion is gone"
expect_eq "$(/usr/bin/python3 -c "import json,sys; print([e['step'] for e in json.load(open(sys.argv[1]))['log_history'] if 'loss' in e])" "$T/best/trainer_state.json")" \
    "[1, 2, 3, 4, 5, 6, 7, 8, 9]" "log_history goes on across the resume, each step once"
# a checkpoint an older shardrun wrote (shardrun's keys at the top level, no log_history) resumes
$CHK flatten "$T/best/checkpoint-9"
JOB=best.ini train best 2 6 --set task.max_steps=10 --set task.resume_from_checkpoint="$T/best/checkpoint-9"
expect_in "$out" "resumed from $T/best/checkpoint-9 at step 9" "a flat trainer_state.json still resumes"
expect_in "$out" "log_history restarts at step 9" "and says its history starts there"

echo "== loss.svg and shardrun plot"
r=$($CHK svg "$T/base/loss.svg" "$T/base") && pass || fail "loss.svg: $r"
echo "$r" | sed 's/^/  /'
command -v chromium >/dev/null || { fail "no chromium to render loss.svg (apt-get install chromium)"; done_checks; exit; }
udir=$(mktemp -d)
timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$udir" --window-size=900,520 \
    --screenshot="$T/loss.png" "file://$T/base/loss.svg" >"$T/chromium.log" 2>&1
crc=$?
rm -rf "$udir"
expect_eq "$crc" 0 "chromium renders loss.svg ($(tail -2 "$T/chromium.log"))"
/usr/bin/python3 - "$T/loss.png" <<'EOF' && pass || fail "the screenshot is a 900x520 PNG with a drawing in it"
import struct, sys, zlib
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n" and len(b) > 5000, "not a PNG of some size"
w, h = struct.unpack(">II", b[16:24])
assert (w, h) == (900, 520), (w, h)
EOF
mv "$T/ws3-FULL_SHARD" "$T/FULL_SHARD" && mv "$T/ws3-SHARD_GRAD_OP" "$T/SHARD_GRAD_OP"
run "$SHARDRUN" plot "$T/FULL_SHARD" --compare "$T/SHARD_GRAD_OP" -o "$T/cmp.svg"
expect_rc 0 "shardrun plot --compare"
expect_in "$out" "wrote $T/cmp.svg (2 runs)" "it says what it wrote"
r=$($CHK svg "$T/cmp.svg" "$T/FULL_SHARD" "$T/SHARD_GRAD_OP") && pass || fail "cmp.svg: $r"
run "$SHARDRUN" plot "$T/FULL_SHARD"
expect_rc 0 "shardrun plot one run"
expect_in "$out" "wrote $T/FULL_SHARD/loss.svg (1 run)" "by default into the run's folder"
run "$SHARDRUN" plot "$T/FULL_SHARD" --compare "$T/nowhere"
expect_rc 2 "a missing folder"
expect_in "$err" "$T/nowhere is not a folder" "it is named"
mkdir "$T/empty"
run "$SHARDRUN" plot "$T/empty"
expect_rc 2 "a folder without trainer_state.json"
expect_in "$err" "$T/empty/trainer_state.json: No such file or directory" "the file is named"
done_checks
