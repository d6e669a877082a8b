# BLOOM in C against BLOOM in PyTorch (tests/bloom/bloom_torch.py, HF's BloomForCausalLM math and
# names), from the same random weights exchanged through safetensors: the first micro-batch's logits
# and loss (the task's `dump`) and every parameter's gradient (one AdamW step with beta1 = 0 leaves
# exp_avg = the gradient in the FULL checkpoint's optimizer.safetensors) agree within 1e-4 of each
# tensor's largest value.  Head counts 4 (a power of two), 6 and 12 (ALiBi's extra heads: slopes
# 2^-1, 2^-3 from base 2^(-4/4); 2^-0.5 ... from base 2^(-4/8), not exact in float32), hidden 48,
# and bloom-560m's 16 (base 2^-0.5; hidden 64).
# The batch mixes padded and truncated samples, so the ignored labels and the tied
# lm_head/word_embeddings gradient are covered, and its 100 positions span two of the attention's
# 64-query blocks (the second one partial); 4 and 6 heads run on 1 rank and on 2 (FULL_SHARD per
# BloomBlock), whose rank 0 dumps its own micro-batch (gradients are the global batch's: compared
# on 1 rank).
. "$(dirname "$0")/lib.sh"
/usr/bin/python3 - "$T/mixed.txt" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(16):  # short ones are padded, long ones truncated at max_length 100
        f.write(("Paragraph %d says something short." % i) if i % 2 else ("A much longer paragraph %d " % i) * 6)
        f.write("\n\n")
PY
for heads in 4 6 12 16; do
    hidden=48
    [ "$heads" = 16 ] && hidden=64
    w="$T/w$heads.safetensors"
    $TORCH_BLOOM init "$w" --n_layer 2 --n_head $heads --hidden_size $hidden --vocab_size 300 --seed $heads \
        >/dev/null && pass || fail "bloom_torch.py init ($heads heads)"
    bloom_job b$heads.ini "fsdp.sharding_strategy = NO_SHARD" "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
size = tiny
n_layer = 2
hidden_size = $hidden
n_head = $heads
vocab_size = 300
max_length = 100
min_chars = 10
data = $T/mixed.txt
init_weights = $w
max_steps = 1
per_device_train_batch_size = 6
adam_beta1 = 0
max_grad_norm = 0
weight_decay = 0
dump = $T/dump.safetensors
output_dir = $T/out
EOF2
    ranks="1 2"
    case $heads in 12 | 16) ranks=1 ;; esac
    for n in $ranks; do
        rm -rf "$T/out" "$T/dump.safetensors"
        extra=()
        [ "$n" -eq 2 ] && extra=(--set accelerate.fsdp.sharding_strategy=FULL_SHARD --set accelerate.fsdp.auto_wrap_policy=TRANSFORMER_BASED_WRAP --set accelerate.fsdp.transformer_layer_cls_to_wrap=BloomBlock)
        run "$SHARDRUN" "$T/b$heads.ini" --nproc-per-node $n "${extra[@]}"
        expect_rc 0 "$heads heads: one step on $n rank(s)"
        [ -f "$T/dump.safetensors" ] && pass || fail "$heads heads, $n rank(s): the task wrote its dump"
        labels=$(/usr/bin/python3 $SRC/tests/interop/read_safetensors.py "$T/dump.safetensors" --dump labels | grep -c -- '^-100$')
        [ "${labels:-0}" -gt 0 ] && pass || fail "$heads heads: the dumped batch has padding (labels -100): $labels"
        grads=()
        [ "$n" -eq 1 ] && grads=(--grads "$T/out/checkpoint-1/optimizer.safetensors")
        r=$($TORCH_BLOOM check "$T/dump.safetensors" "$w" --n_head $heads "${grads[@]}" --tol 1e-4 2>&1) && pass ||
            fail "C vs torch, $heads heads on $n rank(s): $r"
        echo "$heads heads, $n rank(s): padded labels in the dump: $labels; $(tail -1 <<<"$r")"
        [ "$n" -eq 1 ] && grep -E "^(logits|loss|transformer.word_embeddings.weight.grad|transformer.h.0.self_attention.query_key_value.weight.grad) " <<<"$r"
    done
done
done_checks
