# A LoRA run that starts from a PEFT adapter folder ([task] init_adapters): adapter_config.json as
# PEFT's save_pretrained writes it (PEFT's field order and its fields that are off: use_dora false,
# layer_replication null, loftq_config {}, ...) and adapter_model.safetensors under PEFT's names
# ("base_model.model.<module>.lora_A.weight"), the base from init_weights.  With learning rate 0 the
# run's checkpoint holds the folder's adapters bit for bit and its loss is not the fresh adapters'
# (B = 0: the base's); with the folder as resume point of a longer fine-tune it trains on.  Refused
# before any step (exit 2, naming what to set): another lora_alpha, other targets, use_dora, a
# folder whose tensors are not the run's adapters, and init_adapters without lora_r.  Tiny GPT-2,
# 1 rank.
. "$(dirname "$0")/lib.sh"
corpus
gpt2_job g.ini "fsdp.sharding_strategy = NO_SHARD" "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
$GPT2_TINY
max_length = 64
data = $T/corpus.txt
max_steps = 1
EOF2
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set task.output_dir="$T/base"
expect_rc 0 "the base: a run without LoRA"
base=$T/base/checkpoint-1/model.safetensors
LORA=(--nproc-per-node 1 --set task.init_weights="$base" --set task.lora_r=4 --set task.lora_alpha=16
    --set task.lora_target_modules=c_attn,mlp.c_fc)
run "$SHARDRUN" "$T/g.ini" "${LORA[@]}" --set task.max_steps=3 --set task.learning_rate=5e-2 --set task.output_dir="$T/a"
expect_rc 0 "adapters trained 3 steps"

# the folder PEFT's save_pretrained writes for them
mkdir -p "$T/peft"
cp "$T/a/checkpoint-3/adapter_model.safetensors" "$T/peft/"
peft_config() { # [FIELD VALUE]...: PEFT 0.13's adapter_config.json with these fields changed
    /usr/bin/python3 - "$T/peft/adapter_config.json" "$@" <<'PY'
import json, sys
c = {"alpha_pattern": {}, "auto_mapping": None, "base_model_name_or_path": "gpt2", "bias": "none",
     "exclude_modules": None, "fan_in_fan_out": True, "inference_mode": True, "init_lora_weights": True,
     "layer_replication": None, "layers_pattern": None, "layers_to_transform": None, "loftq_config": {},
     "lora_alpha": 16, "lora_bias": False, "lora_dropout": 0.05, "megatron_config": None,
     "megatron_core": "megatron.core", "modules_to_save": None, "peft_type": "LORA", "r": 4,
     "rank_pattern": {}, "revision": None, "target_modules": ["c_fc", "c_attn"], "task_type": "CAUSAL_LM",
     "use_dora": False, "use_rslora": False}
for k, v in zip(sys.argv[2::2], sys.argv[3::2]):
    c[k] = json.loads(v)
json.dump(c, open(sys.argv[1], "w"), indent=2, sort_keys=True)
PY
}
peft_config
run "$SHARDRUN" "$T/g.ini" "${LORA[@]}" --set task.learning_rate=0 --set task.output_dir="$T/fresh"
expect_rc 0 "fresh adapters, learning rate 0"
fresh=$(result final_loss)
run "$SHARDRUN" "$T/g.ini" "${LORA[@]}" --set task.init_adapters="$T/peft" --set task.learning_rate=0 \
    --set task.output_dir="$T/b"
expect_rc 0 "the PEFT folder's adapters, learning rate 0"
expect_in "$out" "the adapters from $T/peft/adapter_model.safetensors" "the start-up line names the adapters' file"
expect_not_in "$out$err" "warning" "a start from a PEFT folder warns of nothing"
r=$($PCMP 0 1e-30 "$T/peft/adapter_model.safetensors" "$T/b/checkpoint-1/adapter_model.safetensors" 2>&1) && pass ||
    fail "the checkpoint's adapters are the folder's: $r"
[ "$(result final_loss)" != "$fresh" ] && pass ||
    fail "the folder's adapters change the loss (fresh adapters: $fresh, the folder's: $(result final_loss))"
run "$SHARDRUN" "$T/g.ini" "${LORA[@]}" --set task.init_adapters="$T/peft" --set task.max_steps=2 \
    --set task.learning_rate=1e-2 --set task.output_dir="$T/c"
expect_rc 0 "a fine-tune continued from the PEFT folder"

refused() { # WHAT NEEDLE [--set ...]
    local what=$1 needle=$2
    shift 2
    run "$SHARDRUN" "$T/g.ini" "$@" --set task.output_dir="$T/refused"
    expect_rc 2 "$what"
    expect_in "$err$out" "$needle" "$what: the message"
    echo "$what: $(grep -F -- "$needle" <<<"$err$out" | head -1)"
    [ ! -e "$T/refused/checkpoint-1" ] && pass || fail "$what: nothing trained"
}
refused "another lora_alpha" "set lora_alpha = 16" "${LORA[@]}" --set task.init_adapters="$T/peft" \
    --set task.lora_alpha=8
refused "other targets" "target_modules adapts transformer.h.0.mlp.c_fc, which lora_target_modules = c_attn does not" \
    "${LORA[@]}" --set task.init_adapters="$T/peft" --set task.lora_target_modules=c_attn
refused "init_adapters without lora_r" "init_adapters is set but lora_r is 0" --nproc-per-node 1 \
    --set task.init_adapters="$T/peft"
peft_config use_dora true
refused "use_dora" "use_dora = true: LoRA training does not do this" "${LORA[@]}" \
    --set task.init_adapters="$T/peft"
# the tensors of other adapters (those of c_attn alone) under a config that says c_attn and c_fc
peft_config
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set task.init_weights="$base" --set task.lora_r=4 --set task.lora_alpha=16 \
    --set task.output_dir="$T/d"
cp "$T/d/checkpoint-1/adapter_model.safetensors" "$T/peft/"
refused "a folder without the c_fc adapters" "lacks 4 of this run's adapter tensors" "${LORA[@]}" \
    --set task.init_adapters="$T/peft"
done_checks
