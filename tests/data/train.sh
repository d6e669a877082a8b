# The GPT-2 task on llm.c token shards: world sizes 1, 2 and 3 (NO_SHARD, FULL_SHARD, SHARD_GRAD_OP)
# train the same global batches (the same per-step loss and final parameters); a run resumed
# mid-epoch (resume_from_checkpoint, and after SIGTERM) ends with the same model.safetensors, byte for
# byte; the checkpoint records the shards, and a resume on changed data is refused unless
# resume_allow_changes lists data; _val_ shards as eval_data.
. "$(dirname "$0")/../gpt2/lib.sh"
export OMP_NUM_THREADS=1
REF=$SRC/tests/data/llmc_shards.py

# two train shards and a val shard, written the llm.c way (uint16; byte-level ids 0..256)
for s in train_000000:7000:1 train_000001:5000:2 val_000000:1500:3; do
    IFS=: read -r name n seed <<<"$s"
    /usr/bin/python3 -c "import random,sys; random.seed($seed); print(' '.join(str(random.randrange(257)) for _ in range($n)))" |
        /usr/bin/python3 "$REF" write "$T/tiny_$name.bin" gpt-2
done
gpt2_job job.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = GPT2Block" \
    "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
size = tiny
n_layer = 2
n_embd = 32
n_head = 2
max_length = 32
data = $T/tiny_train_*.bin
max_steps = 30
save_steps = 10
learning_rate = 3e-3
warmup_steps = 1
logging_steps = 1
EOF2
train() { # NAME NPROC BATCH [args]
    local name=$1 n=$2 bs=$3
    shift 3
    run "$SHARDRUN" "$T/job.ini" --nproc-per-node "$n" --set task.per_device_train_batch_size="$bs" \
        --set task.output_dir="$T/$name" "$@"
    expect_rc 0 "$name trains ($err)"
}
train base 1 6 --set accelerate.fsdp.sharding_strategy=NO_SHARD
expect_in "$out" "375 samples of 32 tokens (12000 real tokens, 0.0% padding) packed from 12000 tokens of 2 token shards" "the shards' blocks are the samples"
for r in 2:3:FULL_SHARD 3:2:SHARD_GRAD_OP; do
    IFS=: read -r n bs s <<<"$r"
    train "ws$n" "$n" "$bs" --set accelerate.fsdp.sharding_strategy="$s"
    c=$($CMP "$T/ws$n/train_log.jsonl" "$T/base/train_log.jsonl" 1e-5) && pass || fail "ws$n ($s) vs world size 1: $c"
    # atol 1e-5: the attention's key bias has no gradient (softmax ignores a constant added to every
    # key), so Adam turns the ranks' different rounding of that zero into steps of up to 1e-6
    p=$($PCMP 1e-5 1e-5 "$T/base/checkpoint-30/model.safetensors" "$T/ws$n/checkpoint-30/model.safetensors") && pass ||
        fail "ws$n: final parameters differ from world size 1's: $p"
done

# the checkpoint records the data
/usr/bin/python3 - "$T/base/checkpoint-10/trainer_state.json" <<'PY' && pass || fail "checkpoint-10 records the shards"
import json, sys
s = json.load(open(sys.argv[1]))["stateful_callbacks"]["shardrun"]
assert s["data_identity"].startswith("2 shards, 26048 bytes, xxh3 "), s
assert [f.split()[0] for f in s["data_files"].split("; ")] == ["tiny_train_000000.bin", "tiny_train_000001.bin"], s
PY
# mid-epoch resume (an epoch is 62 steps): the same final model, byte for byte
train resumed 1 6 --set accelerate.fsdp.sharding_strategy=NO_SHARD --set task.resume_from_checkpoint="$T/base/checkpoint-10"
expect_same_file "$T/resumed/checkpoint-30/model.safetensors" "$T/base/checkpoint-30/model.safetensors" "resumed at step 10: model.safetensors"
# SIGTERM after step 5: a checkpoint, then resume.  A step of this model takes about 1.5 ms, less
# than wait_for's poll, so rank 0 waits after its step 5 line until the signal asks it to stop
# (SHARDRUN_DEBUG_PAUSE_AT): the run stops after exactly step 5, however fast its steps are
SHARDRUN_DEBUG_PAUSE_AT=0:5 "$SHARDRUN" "$T/job.ini" --set task.per_device_train_batch_size=6 \
    --set accelerate.fsdp.sharding_strategy=NO_SHARD --set task.output_dir="$T/term" >"$T/term.out" 2>"$T/term.err" &
p=$!
wait_for "$T/term.out" "step 5/30" 120 && pass || fail "the run reached step 5 ($(cat "$T/term.err"))"
kill -TERM $p
wait $p
rc=$?
expect_eq "$rc" 143 "SIGTERM: the run stops with a checkpoint ($(tail -2 "$T/term.out"))"
expect_in "$(cat "$T/term.out")" "preempted (SIGTERM) after step 5 of 30" "the run stops after step 5"
expect_not_in "$(cat "$T/term.out")" "step 6/30" "no step after step 5"
expect_eq "$(ls "$T/term" | grep -x 'checkpoint-[0-9]*' | tr '\n' ' ')" "checkpoint-5 " \
    "the preemption's checkpoint is checkpoint-5, the only one"
train term 1 6 --set accelerate.fsdp.sharding_strategy=NO_SHARD --set task.resume_from_checkpoint=latest
expect_in "$out" "resumed from $T/term/checkpoint-5 at step 5" "it resumes from the preemption's checkpoint"
expect_same_file "$T/term/checkpoint-30/model.safetensors" "$T/base/checkpoint-30/model.safetensors" "after SIGTERM and resume: model.safetensors"

# other data under the same names: refused, or allowed by resume_allow_changes
cp "$T/tiny_train_000001.bin" "$T/keep"
printf '\x07' | dd of="$T/tiny_train_000001.bin" bs=1 seek=1024 conv=notrunc 2>/dev/null
run "$SHARDRUN" "$T/job.ini" --set task.per_device_train_batch_size=6 --set accelerate.fsdp.sharding_strategy=NO_SHARD \
    --set task.output_dir="$T/changed" --set task.resume_from_checkpoint="$T/base/checkpoint-10"
expect_rc 2 "resuming on changed shards"
expect_in "$err" "was trained on other data than this run's" "the refusal says why"
expect_in "$err" "resume_allow_changes" "and what to do"
run "$SHARDRUN" "$T/job.ini" --set task.per_device_train_batch_size=6 --set accelerate.fsdp.sharding_strategy=NO_SHARD \
    --set task.output_dir="$T/changed2" --set task.resume_from_checkpoint="$T/base/checkpoint-10" --set task.resume_allow_changes=data
expect_rc 0 "resume_allow_changes = data"
expect_in "$out" "the data changed since" "a warning says the data changed"
cp "$T/keep" "$T/tiny_train_000001.bin"

# llm.c's _val_ shards as the eval data
train evald 1 6 --set task.eval_data="$T/tiny_val_*.bin" --set task.eval_strategy=steps --set task.eval_steps=6 \
    --set task.max_steps=6 --set task.save_steps=6
expect_in "$out" "eval data: 46 samples (1472 real tokens) from eval_data" "the val shard's blocks are the eval samples"
expect_in "$out" "{'eval_loss': " "eval_loss is logged"
done_checks
