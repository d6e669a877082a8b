# LoRA on the Llama family against the PyTorch reference (tests/lora/lora_torch.py over
# tests/llama/llama_torch.py): grouped-query attention (4 query heads on 2 key/value heads) with
# q/k/v biases, adapters on all seven linear layers (q/k/v write strided into the fused buffer and add
# before RoPE; gate/up before SwiGLU; lora_B not zero), then PEFT's default for Llama (q_proj,
# v_proj), then all seven with lora_dropout = 0.1 (lora.h's masks, which the reference draws too):
# logits, loss and every adapter's gradient within 1e-4, no optimizer state for the frozen base, on
# 1 rank.
. "$(dirname "$0")/../llama/lib.sh"
LORA_TORCH="torch_py $SRC/tests/lora/lora_torch.py"
mixed_text
llama_config c.json 4 2 '"attention_bias": true'
$TORCH_LLAMA init "$T/base.safetensors" --config "$T/c.json" --vocab_size 300 --seed 7 >/dev/null && pass ||
    fail "llama_torch.py init"
all=q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj
for v in $all:0 q_proj,v_proj:0 $all:0.1; do
    targets=${v%:*} dropout=${v#*:}
    $LORA_TORCH init "$T/w.safetensors" --family llama --base "$T/base.safetensors" --r 4 --targets $targets --seed 8 \
        >/dev/null && pass || fail "lora_torch.py init ($targets)"
    tm="lora_target_modules = $targets"
    [ "$targets" = q_proj,v_proj ] && tm="" # PEFT's default for Llama
    llama_job l.ini "fsdp.sharding_strategy = NO_SHARD" "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
config = $T/c.json
vocab_size = 300
$REF_STEP
init_weights = $T/w.safetensors
lora_r = 4
lora_alpha = 6
lora_dropout = $dropout
$tm
EOF2
    for n in 1; do
        rm -rf "$T/out" "$T/dump.safetensors"
        extra=() grads=()
        [ "$n" -eq 2 ] && extra=(--set accelerate.fsdp.sharding_strategy=FULL_SHARD --set accelerate.fsdp.auto_wrap_policy=TRANSFORMER_BASED_WRAP --set accelerate.fsdp.transformer_layer_cls_to_wrap=LlamaDecoderLayer)
        [ "$n" -eq 1 ] && grads=(--grads "$T/out/checkpoint-1/optimizer.safetensors" --frozen)
        run "$SHARDRUN" "$T/l.ini" --nproc-per-node $n "${extra[@]}"
        expect_rc 0 "$targets: one step on $n rank(s)"
        expect_in "$out" "LoRA r 4, alpha 6 (scale 1.5) on $targets" "$targets: the start-up line"
        want=$(torch_py - "$T/w.safetensors" <<'PY'
import json, math, struct, sys
with open(sys.argv[1], "rb") as f:
    head = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
print(sum(math.prod(v["shape"]) for k, v in head.items() if ".lora_" in k))
PY
)
        expect_in "$out" ": $want trainable parameters" \
            "$targets: the start-up line counts the adapters' elements in the reference's file ($want)"
        r=$($LORA_TORCH check "$T/dump.safetensors" "$T/w.safetensors" --family llama --config "$T/c.json" --n_head 4 \
            --alpha 6 --dropout "$dropout" "${grads[@]}" 2>&1) && pass ||
            fail "$targets, dropout $dropout: C vs torch on $n rank(s): $r"
        echo "$targets, dropout $dropout, $n rank(s): $(tail -1 <<<"$r")"
    done
done
done_checks
