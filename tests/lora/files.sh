# What a LoRA fine-tune leaves, and what becomes of it.  GPT-2 tiny with PEFT's defaults (r 4,
# lora_alpha 8, target c_attn) trained 6 steps from base weights that hold no adapters, on 2 ranks
# under FULL_SHARD with a FULL checkpoint:
#   - adapter_model.safetensors holds exactly PEFT's names and shapes ("base_model.model.<path>.
#     lora_A.weight" [r, in], lora_B [out, r], float32, metadata format pt), equal to the checkpoint's
#     own adapters, and adapter_config.json says what PEFT's LoraConfig would (tests/lora/lora_torch.py
#     adapter);
#   - the base weights in the checkpoint are the initial ones, bit for bit (frozen), the adapters moved;
#   - `shardrun merge` writes model.safetensors = W + B A scale (transposed for Conv1D), the same as
#     the PyTorch reference's merge, with no adapters in it; a LoRA-off run from it loads it with no
#     warning and computes the logits of the LoRA run from the checkpoint (base + adapters);
#   - merge refuses (exit 2) a base the adapters do not fit, and a checkpoint without adapters
#     (tests/lora/merge.sh has its other refusals).
. "$(dirname "$0")/lib.sh"
mixed_text
$TORCH_GPT2 init "$T/base.safetensors" --n_layer 2 --n_head 4 --n_embd 64 --n_positions 128 --vocab_size 300 --seed 3 \
    >/dev/null && pass || fail "gpt2_torch.py init"
gpt2_job g.ini "fsdp.sharding_strategy = FULL_SHARD" "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" \
    "fsdp.transformer_layer_cls_to_wrap = GPT2Block" "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
$GPT2_TINY
max_length = 100
min_chars = 10
data = $T/mixed.txt
init_weights = $T/base.safetensors
max_steps = 6
per_device_train_batch_size = 2
learning_rate = 1e-2
output_dir = $T/out
lora_r = 4
EOF2
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 2
expect_rc 0 "LoRA fine-tune on 2 ranks"
ck=$T/out/checkpoint-6
expect_in "$out" "LoRA r 4, alpha 8 (scale 2) on c_attn" "PEFT's defaults: lora_alpha 8, c_attn for GPT-2"
r=$($LORA_TORCH adapter "$ck" --family gpt2 --n_layer 2 --r 4 --alpha 8 --targets c_attn 2>&1) && pass ||
    fail "adapter files as PEFT writes them: $r"
tail -1 <<<"$r"
grep -q '"base_model_name_or_path": ".*base.safetensors"' "$ck/adapter_config.json" && pass ||
    fail "adapter_config.json names the base (init_weights): $(grep base_model "$ck/adapter_config.json")"

# the base is the initial weights bit for bit; the adapters trained (B moved from zeros)
r=$(torch_py -c "
import sys; sys.path.insert(0, '$SRC/tests/gpt2')
import gpt2_torch as g, numpy as np
base, ck = g.read_safetensors('$T/base.safetensors'), g.read_safetensors('$ck/model.safetensors')
moved = [k for k in base if not np.array_equal(base[k].view(np.uint32), ck[k].view(np.uint32))]
lora = [k for k in ck if '.lora_' in k]
bz = [k for k in lora if '.lora_B.' in k and not np.any(ck[k])]
print(len(base), 'base tensors,', len(moved), 'changed:', moved[:3], ';', len(lora), 'adapters,', len(bz), 'B still zero')
sys.exit(1 if moved or len(lora) != 4 or bz else 0)" 2>&1) && pass || fail "frozen base, trained adapters: $r"
echo "$r"

# merge, against the reference's
run "$SHARDRUN" merge "$ck"
expect_rc 0 "shardrun merge"
expect_in "$out" "2 adapted weights (scale 2)" "merge folds both layers' c_attn"
$LORA_TORCH merge "$ck/model.safetensors" --family gpt2 --alpha 8 --out "$T/ref_merged.safetensors" >/dev/null && pass ||
    fail "lora_torch.py merge"
r=$($PCMP 1e-6 1e-7 "$T/ref_merged.safetensors" "$ck/merged/model.safetensors" 2>&1) && pass ||
    fail "merged weights differ from the reference's merge: $r"
r=$(torch_py -c "
import sys; sys.path.insert(0, '$SRC/tests/gpt2')
import gpt2_torch as g
m, b = g.read_safetensors('$ck/merged/model.safetensors'), g.read_safetensors('$T/base.safetensors')
print(sorted(m) == sorted(b) or sorted(set(m) ^ set(b)))" 2>&1)
expect_eq "$r" True "the merged file holds the base's tensors and no adapters"

# the merged model, LoRA off, computes what base + adapters computed
for v in lora merged; do
    if [ $v = lora ]; then w=$ck/model.safetensors lr="lora_r = 4"; else w=$ck/merged/model.safetensors lr=""; fi
    gpt2_job $v.ini "fsdp.sharding_strategy = NO_SHARD" <<EOF2
$GPT2_TINY
max_length = 100
min_chars = 10
data = $T/mixed.txt
init_weights = $w
max_steps = 1
per_device_train_batch_size = 4
dump = $T/$v.dump
output_dir = $T/$v
$lr
EOF2
    run "$SHARDRUN" "$T/$v.ini" --nproc-per-node 1
    expect_rc 0 "one step from the $v weights"
    expect_not_in "$err$out" "init_weights:" "$v weights load with no missing or unused tensor"
done
r=$(torch_py -c "
import sys; sys.path.insert(0, '$SRC/tests/gpt2')
import gpt2_torch as g, numpy as np
a, b = g.read_safetensors('$T/lora.dump'), g.read_safetensors('$T/merged.dump')
assert np.array_equal(a['input_ids'], b['input_ids']), 'not the same batch'
d = float(np.abs(a['logits'].astype(np.float64) - b['logits']).max()) / float(np.abs(a['logits']).max())
print(f'merged vs base + adapters: logits rel diff {d:.3e}, loss {a[\"loss\"][0]:.7f} vs {b[\"loss\"][0]:.7f}')
sys.exit(0 if d < 1e-5 else 1)" 2>&1) && pass || fail "merged logits: $r"
echo "$r"

# refusals
run "$SHARDRUN" merge "$ck" --base "$T/mixed.txt" -o "$T/x.safetensors"
expect_rc 2 "merge with a base that is no safetensors file"
$TORCH_GPT2 init "$T/other.safetensors" --n_layer 2 --n_head 4 --n_embd 32 --n_positions 128 --vocab_size 300 --seed 3 >/dev/null
run "$SHARDRUN" merge "$ck" --base "$T/other.safetensors" -o "$T/x.safetensors"
expect_rc 2 "merge with a base of another width"
expect_in "$err" "disagree on transformer.h.0.attn.c_attn.weight" "merge names the weight the adapters do not fit"
mkdir -p "$T/plain" && cp "$T/base.safetensors" "$T/plain/model.safetensors"
run "$SHARDRUN" merge "$T/plain"
expect_rc 2 "merge of a checkpoint without adapters"
expect_in "$err" "adapter_config.json" "merge says which file is missing"
[ ! -e "$T/x.safetensors" ] && pass || fail "a refused merge writes nothing"
done_checks
