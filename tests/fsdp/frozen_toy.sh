# Frozen parameters on the toy model task (examples/toy), under what GPT-2 on CPUs cannot run
# (tests/fsdp/frozen_train.sh covers the rest): bf16 and fp16 compute, where gradients and gathers go
# through casts but a frozen parameter's fp32 shard is never written (bit-identical to its initial
# value in the FULL checkpoint, the others changed); fp16's overflow check, which an infinite
# gradient of a trained parameter still trips on every rank (a skipped step); and a tied name
# ([task] freeze = head.weight freezes embed.weight, the one storage both use).
. "$(dirname "$0")/lib.sh"
FCHK="/usr/bin/python3 $SRC/tests/fsdp/frozen_check.py"
FREEZE='blocks.*.fc1.*,embed.pos,head.weight'
toy_job toy.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = MLPBlock,MixerBlock" \
    "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF
max_steps = 6
per_device_train_batch_size = 4
learning_rate = 0.01
warmup_steps = 0
logging_steps = 1
EOF
train() { # NAME [shardrun args...]
    local name=$1
    shift
    run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$T/$name" "$@"
    expect_rc 0 "$name trains"
}
train init --set task.max_steps=1 --set task.learning_rate=0
for mp in bf16 fp16; do
    train "$mp" --set accelerate.mixed_precision=$mp --set task.freeze="$FREEZE"
    # embed.weight (tied: 32 x 16), embed.pos (8 x 16), 3 MLP blocks' fc1 (64 x 16 + 64)
    expect_eq "$(result frozen_params)" $((32 * 16 + 8 * 16 + 3 * (64 * 16 + 64))) "$mp: frozen elements, the tied embedding once"
    f=$($FCHK "$T/init/checkpoint-1/model.safetensors" "$T/$mp/checkpoint-6" "$FREEZE,embed.weight") && pass || fail "$f"
    echo "  $f"
done
train overflow --set accelerate.mixed_precision=fp16 --set task.freeze="$FREEZE" --set task.inject_overflow_step=2 \
    --set task.inject_overflow_rank=1
expect_eq "$(result skipped_steps)" 1 "fp16: an infinite gradient of a trained parameter (head.bias) skips the step"
expect_eq "$(grep -o '"toy_overflow_injections": [0-9]*' <<<"$out" | sed 's/.*: //' | sort | tr '\n' ' ')" "0 1 " \
    "the overflow was injected on rank 1 only"
done_checks
