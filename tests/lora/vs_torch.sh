# LoRA in C against LoRA in PyTorch (tests/lora/lora_torch.py: PEFT's formulas over the GPT-2 and
# BLOOM references), from the same weights exchanged through safetensors: base weights and adapters
# whose lora_B is not zero (else lora_A's gradient would be 0 and untested).  The first micro-batch's
# logits and loss (the task's dump) and every adapter's gradient (one AdamW step with beta1 = 0 leaves
# exp_avg = the gradient in the FULL checkpoint's optimizer.safetensors) agree within 1e-4 of each
# tensor's largest value, and the frozen base has no optimizer state.  GPT-2 with adapters on all four
# linear layers (c_attn, both c_proj, c_fc: Conv1D weights, fan_in_fan_out) and BLOOM with all four
# (nn.Linear weights), on 1 rank (tests/lora/parity.sh compares 2 ranks with 1).
. "$(dirname "$0")/lib.sh"
mixed_text
common="max_length = 100
min_chars = 10
data = $T/mixed.txt
max_steps = 1
per_device_train_batch_size = 6
adam_beta1 = 0
max_grad_norm = 0
weight_decay = 0
dump = $T/dump.safetensors
output_dir = $T/out
lora_r = 4
lora_alpha = 6"
check_family() { # FAMILY JOB WEIGHTS CLS
    local fam=$1 job=$2 w=$3 cls=$4 n r extra
    for n in 1; do
        rm -rf "$T/out" "$T/dump.safetensors"
        extra=()
        [ "$n" -eq 2 ] && extra=(--set accelerate.fsdp.sharding_strategy=FULL_SHARD --set accelerate.fsdp.auto_wrap_policy=TRANSFORMER_BASED_WRAP --set accelerate.fsdp.transformer_layer_cls_to_wrap=$cls)
        run "$SHARDRUN" "$T/$job" --nproc-per-node $n "${extra[@]}"
        expect_rc 0 "$job: one step on $n rank(s)"
        expect_in "$out" "LoRA r 4, alpha 6 (scale 1.5)" "$job: the start-up line says LoRA is on"
        if [ "$n" -eq 1 ]; then
            r=$($LORA_TORCH check "$T/dump.safetensors" "$w" --family $fam --n_head 4 --alpha 6 \
                --grads "$T/out/checkpoint-1/optimizer.safetensors" --frozen 2>&1) && pass || fail "$job: C vs torch on 1 rank: $r"
        else
            r=$($LORA_TORCH check "$T/dump.safetensors" "$w" --family $fam --n_head 4 --alpha 6 2>&1) && pass ||
                fail "$job: C vs torch on 2 ranks: $r"
        fi
        echo "$job, $n rank(s): $(tail -1 <<<"$r")"
    done
}

$TORCH_GPT2 init "$T/gbase.safetensors" --n_layer 2 --n_head 4 --n_embd 64 --n_positions 128 --vocab_size 300 --seed 3 \
    >/dev/null && pass || fail "gpt2_torch.py init"
$LORA_TORCH init "$T/g.safetensors" --family gpt2 --base "$T/gbase.safetensors" --r 4 --targets c_attn,c_proj,c_fc \
    --seed 5 >/dev/null && pass || fail "lora_torch.py init (gpt2)"
gpt2_job g.ini "fsdp.sharding_strategy = NO_SHARD" "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
$GPT2_TINY
$common
init_weights = $T/g.safetensors
lora_target_modules = c_attn,c_proj,c_fc
EOF2
check_family gpt2 g.ini "$T/g.safetensors" GPT2Block

$TORCH_BLOOM init "$T/bbase.safetensors" --n_layer 2 --n_head 4 --hidden_size 48 --vocab_size 300 --seed 4 \
    >/dev/null && pass || fail "bloom_torch.py init"
for targets in query_key_value,dense,dense_h_to_4h,dense_4h_to_h; do
    $LORA_TORCH init "$T/b.safetensors" --family bloom --base "$T/bbase.safetensors" --r 4 --targets $targets \
        --seed 6 >/dev/null && pass || fail "lora_torch.py init (bloom, $targets)"
    tm="lora_target_modules = $targets"
    bloom_job b.ini "fsdp.sharding_strategy = NO_SHARD" "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
$BLOOM_TINY
$common
init_weights = $T/b.safetensors
$tm
EOF2
    check_family bloom b.ini "$T/b.safetensors" BloomBlock
done
done_checks
