# Frozen parameters ([task] freeze, SR_PARAM_FROZEN) on the tiny GPT-2: the attention of every block
# and the position embedding frozen, so each GPT2Block unit and the root mix frozen and trainable
# parameters (FSDP_USE_ORIG_PARAMS = true, accelerate's default).  Checks:
#  - 2 ranks FULL_SHARD, SHARD_GRAD_OP, NO_SHARD and FULL_SHARD with activation checkpointing match 1
#    rank (per-step loss and grad norm, final parameters), as tests/transformer/parity.sh checks
#    unfrozen training; offloaded shards (the staging path) give the same parameters bit for bit;
#  - in every FULL checkpoint the frozen parameters are bit-identical to their
#    initial values, the others changed, and optimizer.safetensors holds moments for the trained
#    parameters only;
#  - persistent bytes per rank = (frozen x 4 + trainable x 16) / ranks (results
#    engine_persistent_bytes, engine_persistent_formula_bytes), smaller than unfrozen training's;
#  - a unit entirely frozen does no reduce-scatter (engine_reduce_scatter_bytes);
#  - FULL_STATE_DICT and SHARDED_STATE_DICT: a run resumed from step 6 matches the uninterrupted one;
#    resuming with
#    another frozen set is refused: [task] freeze as a changed setting (exit 2), and, when
#    resume_allow_changes lets it change, by the checkpoint's load naming the parameters (exit 1, as
#    a checkpoint of another model is refused).
. "$(dirname "$0")/../gpt2/lib.sh"
FCHK="/usr/bin/python3 $SRC/tests/fsdp/frozen_check.py"
FREEZE='transformer.h.*.attn.*,transformer.wpe.weight'
corpus
gpt2_job job.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = GPT2Block" \
    "fsdp.state_dict_type = FULL_STATE_DICT" "fsdp.use_orig_params = true" <<EOF2
size = tiny
n_layer = 2
n_embd = 64
n_head = 4
max_length = 96
min_chars = 100
data = $T/corpus.txt
max_steps = 12
learning_rate = 3e-3
warmup_steps = 2
weight_decay = 0.1
max_grad_norm = 0.5
logging_steps = 1
EOF2
train() { # NAME NPROC [shardrun args...]
    local name=$1 n=$2
    shift 2
    run "$SHARDRUN" "$T/job.ini" --nproc-per-node "$n" --set task.per_device_train_batch_size=$((8 / n)) \
        --set task.output_dir="$T/$name" "$@"
    expect_rc 0 "$name trains"
}
# the initial parameters: one step at learning rate 0 changes nothing
train init 1 --set task.max_steps=1 --set task.learning_rate=0
train base 1 --set accelerate.fsdp.sharding_strategy=NO_SHARD --set task.freeze="$FREEZE"
expect_eq "$(result frozen_params)" 49664 "frozen elements: 2 x (64x192 + 192 + 64x64 + 64) attention + 256x64 wpe"
expect_in "$out" "132928 parameters, 49664 of them frozen" "the engine's description counts the frozen parameters"
train ws2 2 --set accelerate.fsdp.sharding_strategy=FULL_SHARD --set task.freeze="$FREEZE"
expect_in "$out" "6 units (2 wrapped + root)" "each mixed unit has a frozen companion (3 units + 3)"
fro=$(result frozen_params) tra=$(result trainable_params) pers=$(result engine_persistent_bytes)
formula=$(result engine_persistent_formula_bytes)
r=$($CMP "$T/ws2/train_log.jsonl" "$T/base/train_log.jsonl" 1e-5) && pass || fail "2 ranks vs 1: $r"
echo "  loss and grad norm, 2 ranks vs 1: $(head -1 <<<"$r")"
p=$($PCMP 1e-5 1e-6 "$T/base/checkpoint-12/model.safetensors" "$T/ws2/checkpoint-12/model.safetensors") && pass ||
    fail "2 ranks: final parameters differ from 1 rank's: $p"
# the other strategies, activation checkpointing and offloading's staging path match too
same() { # NAME
    local r p
    r=$($CMP "$T/$1/train_log.jsonl" "$T/base/train_log.jsonl" 1e-5) && pass || fail "$1 vs 1 rank: $r"
    p=$($PCMP 1e-5 1e-6 "$T/base/checkpoint-12/model.safetensors" "$T/$1/checkpoint-12/model.safetensors") && pass ||
        fail "$1: final parameters differ from 1 rank's: $p"
}
for s in SHARD_GRAD_OP NO_SHARD; do
    train "ws2-$s" 2 --set accelerate.fsdp.sharding_strategy=$s --set task.freeze="$FREEZE"
    same "ws2-$s"
done
train ws2-ckpt 2 --set accelerate.fsdp.activation_checkpointing=true --set task.freeze="$FREEZE"
same ws2-ckpt
SHARDRUN_DEBUG_OFFLOAD_STAGING=1 train ws2-offload 2 --set accelerate.fsdp.offload_params=true --set task.freeze="$FREEZE"
p=$($PCMP 0 1e-30 "$T/ws2/checkpoint-12/model.safetensors" "$T/ws2-offload/checkpoint-12/model.safetensors") && pass ||
    fail "offloaded shards (staging path): parameters differ from ws2's: $p"
for d in base ws2 ws2-SHARD_GRAD_OP ws2-NO_SHARD ws2-ckpt; do
    f=$($FCHK "$T/init/checkpoint-1/model.safetensors" "$T/$d/checkpoint-12" "$FREEZE") && pass || fail "$f"
    echo "  $f"
done

echo "== memory: (frozen x 4 + trainable x 16) / ranks"
expect_eq "$formula" $(((fro * 4 + tra * 16) / 2)) "the report's formula at 2 ranks"
expect_eq "$pers" $(((fro * 4 + tra * 16) / 2)) "persistent bytes per rank at 2 ranks (no padding at this size)"
train full 2 --set accelerate.fsdp.sharding_strategy=FULL_SHARD
expect_eq "$(result engine_persistent_bytes)" $(((fro + tra) * 16 / 2)) "unfrozen training: 16 x P / ranks"
echo "  persistent bytes per rank: $pers frozen, $(result engine_persistent_bytes) unfrozen"
rs_all=$(result engine_reduce_scatter_bytes)

echo "== a unit entirely frozen does no reduce-scatter"
train blocks 2 --set accelerate.fsdp.sharding_strategy=FULL_SHARD --set task.freeze='transformer.h.*'
tra=$(result trainable_params)
# only the root (embeddings, ln_f; trainable elements padded to 2 ranks) is reduced, at each of 12 steps
expect_eq "$(result engine_reduce_scatter_bytes)" $(((tra + tra % 2) * 4 * 12)) "reduce-scatter bytes: the root's only"
[ "$rs_all" -gt "$(result engine_reduce_scatter_bytes)" ] && pass || fail "unfrozen training reduces more ($rs_all)"

echo "== FULL_STATE_DICT: resume with the same frozen set"
train fu 2 --set task.save_steps=6 --set task.freeze="$FREEZE"
sum=$(result param_sum)
cp -r "$T/fu" "$T/fur" && rm -r "$T/fur/checkpoint-12"
train fur 2 --set task.save_steps=6 --set task.freeze="$FREEZE" --set task.resume_from_checkpoint=true
expect_in "$out" "resumed from $T/fur/checkpoint-6 at step 6" "the run resumed"
r=$($CMP "$T/fur/train_log.jsonl" "$T/fu/train_log.jsonl" 1e-6) && pass || fail "resumed vs uninterrupted: $r"
expect_eq "$(result param_sum)" "$sum" "resumed and uninterrupted runs end with the same parameters (param_sum)"

echo "== SHARDED_STATE_DICT: resume with the same frozen set, refuse another"
train sh 2 --set accelerate.fsdp.state_dict_type=SHARDED_STATE_DICT --set task.save_steps=6 --set task.freeze="$FREEZE"
sum=$(result param_sum)
cp -r "$T/sh" "$T/shr" && rm -r "$T/shr/checkpoint-12"
train shr 2 --set accelerate.fsdp.state_dict_type=SHARDED_STATE_DICT --set task.save_steps=6 \
    --set task.freeze="$FREEZE" --set task.resume_from_checkpoint=true
r=$($CMP "$T/shr/train_log.jsonl" "$T/sh/train_log.jsonl" 1e-6) && pass || fail "resumed vs uninterrupted: $r"
expect_in "$out" "resumed from $T/shr/checkpoint-6 at step 6" "the run resumed"
expect_eq "$(result param_sum)" "$sum" "resumed and uninterrupted runs end with the same parameters (param_sum)"
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 2 --set task.per_device_train_batch_size=4 --set task.output_dir="$T/shr" \
    --set accelerate.fsdp.state_dict_type=SHARDED_STATE_DICT --set task.freeze='transformer.h.*.attn.*' \
    --set task.resume_from_checkpoint="$T/sh/checkpoint-6"
expect_rc 2 "resuming with another [task] freeze"
expect_in "$err" "[task] freeze: $FREEZE in the checkpoint, transformer.h.*.attn.* now" "the setting is named"
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 2 --set task.per_device_train_batch_size=4 --set task.output_dir="$T/shr" \
    --set accelerate.fsdp.state_dict_type=SHARDED_STATE_DICT --set task.freeze='transformer.h.*.attn.*' \
    --set task.resume_from_checkpoint="$T/sh/checkpoint-6" --set task.resume_allow_changes=freeze
expect_rc 1 "resuming with another frozen set, even when resume_allow_changes lists freeze (a checkpoint's refusal)"
expect_in "$err" "other frozen parameters than this run's: 0 frozen now but trained in the checkpoint, 1 trained now but frozen in the checkpoint (no optimizer state saved) (transformer.wpe.weight)" \
    "the parameters that differ are named"
expect_not_in "$out" "step 7/" "nothing was trained"
done_checks
