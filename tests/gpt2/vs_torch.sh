# GPT-2 in C against GPT-2 in PyTorch (tests/gpt2/gpt2_torch.py, HF's GPT2LMHeadModel math and
# names), from the same weights exchanged through safetensors: the first micro-batch's logits and
# loss (the task's `dump`) and every parameter's gradient (one AdamW step with beta1 = 0 leaves
# exp_avg = the gradient in the FULL checkpoint's optimizer.safetensors) agree within 1e-4 of each
# tensor's largest value.  The batch mixes padded and truncated samples, so the ignored labels and
# the tied lm_head/wte gradient are covered, and its 100 positions span two of the attention's
# 64-query blocks (the second one partial); run on 1 rank and on 2 (FULL_SHARD), whose rank 0
# dumps its own micro-batch.
. "$(dirname "$0")/lib.sh"
/usr/bin/python3 - "$T/mixed.txt" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(16):  # short ones are padded, long ones truncated at max_length 100
        f.write(("Paragraph %d says something short." % i) if i % 2 else ("A much longer paragraph %d " % i) * 6)
        f.write("\n\n")
PY
$TORCH_GPT2 init "$T/w.safetensors" --n_layer 2 --n_head 4 --n_embd 64 --n_positions 128 --vocab_size 300 --seed 3 \
    >/dev/null && pass || fail "gpt2_torch.py init"
gpt2_job g.ini "fsdp.sharding_strategy = NO_SHARD" "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
size = tiny
n_layer = 2
n_embd = 64
n_head = 4
n_positions = 128
vocab_size = 300
max_length = 100
min_chars = 10
data = $T/mixed.txt
init_weights = $T/w.safetensors
max_steps = 1
per_device_train_batch_size = 6
adam_beta1 = 0
max_grad_norm = 0
weight_decay = 0
dump = $T/dump.safetensors
output_dir = $T/out
EOF2
for n in 1 2; do
    rm -rf "$T/out" "$T/dump.safetensors"
    extra=()
    [ "$n" -eq 2 ] && extra=(--set accelerate.fsdp.sharding_strategy=FULL_SHARD --set accelerate.fsdp.auto_wrap_policy=TRANSFORMER_BASED_WRAP --set accelerate.fsdp.transformer_layer_cls_to_wrap=GPT2Block)
    run "$SHARDRUN" "$T/g.ini" --nproc-per-node $n "${extra[@]}"
    expect_rc 0 "one step on $n rank(s)"
    [ -f "$T/dump.safetensors" ] && pass || fail "the task wrote its dump"
    labels=$(/usr/bin/python3 $SRC/tests/interop/read_safetensors.py "$T/dump.safetensors" --dump labels | grep -c -- '^-100$')
    [ "${labels:-0}" -gt 0 ] && pass || fail "the dumped batch has padding (labels -100): $labels"
    if [ "$n" -eq 1 ]; then # gradients are the global batch's: compare them on the 1-rank run
        r=$($TORCH_GPT2 check "$T/dump.safetensors" "$T/w.safetensors" --n_head 4 \
            --grads "$T/out/checkpoint-1/optimizer.safetensors" --tol 1e-4 2>&1) && pass || fail "C vs torch on $n rank(s): $r"
    else
        r=$($TORCH_GPT2 check "$T/dump.safetensors" "$T/w.safetensors" --n_head 4 --tol 1e-4 2>&1) && pass ||
            fail "C vs torch on $n rank(s): $r"
    fi
    echo "$n rank(s): padded labels in the dump: $labels; $(tail -1 <<<"$r")"
done
grep -E "^(logits|loss|transformer.wte.weight|transformer.h.0.attn.c_attn.weight) " <<<"$r" | head -4
done_checks
