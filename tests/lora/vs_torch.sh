# LoRA in C against LoRA in PyTorch (tests/lora/lora_torch.py: PEFT's formulas over the GPT-2 and
# BLOOM references), from the same weights exchanged through safetensors: base weights and adapters
# whose lora_B is not zero (else lora_A's gradient would be 0 and untested).  The first micro-batch's
# logits and loss (the task's dump) and every adapter's gradient (one AdamW step with beta1 = 0 leaves
# exp_avg = the gradient in the FULL checkpoint's optimizer.safetensors) agree within 1e-4 of each
# tensor's largest value, and the frozen base has no optimizer state.  GPT-2 with adapters on all four
# linear layers (c_attn, both c_proj, c_fc: Conv1D weights, fan_in_fan_out) and BLOOM with all four
# (nn.Linear weights), on 1 rank (tests/lora/parity.sh compares 2 ranks with 1); then GPT-2 with one
# layer's adapter (target_modules transformer.h.0.attn.c_attn, PEFT's full module name): block 0's
# c_attn alone, in the model and in adapter_model.safetensors.
. "$(dirname "$0")/lib.sh"
mixed_text
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

lora_ref_gpt2
check_family gpt2 g.ini "$T/g.safetensors" GPT2Block

# one layer: PEFT's full module name (transformer.h.0.attn.c_attn) adapts block 0's c_attn only
$LORA_TORCH init "$T/g1.safetensors" --family gpt2 --base "$T/gbase.safetensors" --r 4 \
    --targets transformer.h.0.attn.c_attn --seed 5 >/dev/null && pass || fail "lora_torch.py init (one layer)"
gpt2_job g1.ini "fsdp.sharding_strategy = NO_SHARD" "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
$GPT2_TINY
$LORA_REF_STEP
init_weights = $T/g1.safetensors
lora_target_modules = transformer.h.0.attn.c_attn
EOF2
check_family gpt2 g1.ini "$T/g1.safetensors" GPT2Block
expect_in "$out" "on transformer.h.0.attn.c_attn: 1024 trainable parameters" "one layer: r (C + 3C) in block 0 only"
names=$(torch_py - "$T/out/checkpoint-1/adapter_model.safetensors" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    print(" ".join(sorted(k for k in json.loads(f.read(struct.unpack("<Q", f.read(8))[0])) if k != "__metadata__")))
PY
)
expect_eq "$names" "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight base_model.model.transformer.h.0.attn.c_attn.lora_B.weight" \
    "one layer: the adapter file holds block 0's c_attn alone"
grep -q '"target_modules": \["transformer.h.0.attn.c_attn"\]' "$T/out/checkpoint-1/adapter_config.json" && pass ||
    fail "one layer: adapter_config.json's target_modules: $(grep target_modules "$T/out/checkpoint-1/adapter_config.json")"

lora_ref_bloom_base
for targets in query_key_value,dense,dense_h_to_4h,dense_4h_to_h; do
    lora_ref_bloom $targets
    check_family bloom b.ini "$T/b.safetensors" BloomBlock
done
done_checks
