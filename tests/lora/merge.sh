# `shardrun merge` is PEFT's merge_and_unload or refuses, before any work and writing nothing.
#   - against PEFT's formula (tests/lora/merge_ref.py, float64): rank_pattern and alpha_pattern
#     (keys matched as PEFT's get_pattern_key matches them: the first in the file's order, on a
#     "."-boundary, as regular expressions), use_rslora (alpha / sqrt(r)), target_modules as a list
#     and as an expression, exclude_modules, fan_in_fan_out (GPT-2's Conv1D);
#   - refused with exit 2, naming the field and its value: bias "all", modules_to_save,
#     layers_to_transform, layers_pattern, use_dora, lora_bias, a field it does not know,
#     init_lora_weights "pissa", target_modules null, lora_alpha Infinity; a config the tensors
#     contradict (an adapted module target_modules does not name, a named one without adapters, a
#     rank rank_pattern does not give); a pattern that is no expression;
#   - a merged weight that is not finite (lora_alpha 1e308, a NaN in a lora_B): exit 2 naming the
#     tensor, the index and the cause;
#   - no adapter_config.json, adapter tensors that overlap: exit 2;
#   - no write through a symbolic link: merged/ or merged/model.safetensors or -o being one is
#     refused (exit 2) and the file it points to stays as it was.
. "$(dirname "$0")/lib.sh"
MREF="torch_py $SRC/tests/lora/merge_ref.py"
L=$T/L # Llama-style nn.Linear weights; q_proj rank 2, v_proj rank 4, up_proj rank 4 and 6
$MREF fixture "$L" --family linear --seed 1 --adapters model.layers.0.self_attn.q_proj=2,model.layers.1.self_attn.q_proj=2,model.layers.0.self_attn.v_proj=4,model.layers.1.self_attn.v_proj=4,model.layers.0.mlp.up_proj=4,model.layers.1.mlp.up_proj=6 &&
    pass || fail "merge_ref.py fixture (linear)"
# cfg DIR [FIELD=JSON | FIELD=-]...: DIR/adapter_config.json, $T/<DIR's name>.json (PEFT's config as
# save_pretrained writes it for DIR's adapters) with FIELD set to JSON (added at the end when new) or
# removed (-)
cfg() {
    torch_py - "$1/adapter_config.json" "$T/$(basename "$1").json" "${@:2}" <<'PY'
import json, sys
with open(sys.argv[2]) as f:
    c = json.load(f)
for kv in sys.argv[3:]:
    k, v = kv.split("=", 1)
    if v == "-":
        del c[k]
    else:
        c[k] = json.loads(v)
with open(sys.argv[1], "w") as f:
    json.dump(c, f, indent=2)
PY
}
cat >"$T/L.json" <<'EOF2'
{"alpha_pattern": {"layers.1.self_attn.v_proj": 32, "v_proj": 4, "proj": 1000, "layers\\.[01]\\.mlp\\.up_proj": 12},
 "auto_mapping": null, "base_model_name_or_path": "base", "bias": "none", "fan_in_fan_out": false,
 "inference_mode": true, "init_lora_weights": true, "layers_pattern": null, "layers_to_transform": null,
 "loftq_config": {}, "lora_alpha": 8, "lora_dropout": 0.05, "megatron_config": null,
 "megatron_core": "megatron.core", "modules_to_save": null, "peft_type": "LORA", "r": 4,
 "rank_pattern": {"q_proj": 2, "model.layers.1.mlp.up_proj": 6}, "revision": null,
 "target_modules": ["q_proj", "v_proj", "up_proj"], "task_type": "CAUSAL_LM", "use_dora": false,
 "use_rslora": false}
EOF2
lcfg() { cfg "$L" "$@"; }
# merged FILE: FILE against PEFT's merge of $L
merged() {
    local r
    r=$($MREF check "$L" "$1" 2>&1) && pass || fail "merge against PEFT's: $r"
    echo "$r" | tail -1
}

# patterns: q_proj r 2 alpha 8 (scale 4); v_proj alpha 32 on layer 1, 4 on layer 0 (the first key
# that matches); "proj" matches nothing (no "." before it); up_proj alpha 12, r 6 on layer 1
lcfg
run "$SHARDRUN" merge "$L" -o "$T/m1.safetensors"
expect_rc 0 "merge with rank_pattern and alpha_pattern"
expect_in "$out" "6 adapted weights (scales 1 to 8)" "per-module scales"
merged "$T/m1.safetensors"
# use_rslora, target_modules as an expression, exclude_modules as one, alpha_pattern's order
lcfg use_rslora=true 'target_modules=".*\\.(q|k|v|up)_proj"' 'exclude_modules="model\\.layers\\.\\d+\\.self_attn\\.k_proj"' \
    'alpha_pattern={"v_proj": 4, "layers.1.self_attn.v_proj": 32}'
run "$SHARDRUN" merge "$L" -o "$T/m2.safetensors"
expect_rc 0 "merge with use_rslora and an expression"
merged "$T/m2.safetensors"
# Conv1D [in, out] weights (fan_in_fan_out), alpha_pattern on one layer
G=$T/G
$MREF fixture "$G" --family conv1d --seed 2 --adapters transformer.h.0.attn.c_attn=4,transformer.h.1.attn.c_attn=4 &&
    pass || fail "merge_ref.py fixture (conv1d)"
cat >"$T/G.json" <<'EOF2'
{"peft_type": "LORA", "r": 4, "lora_alpha": 8, "fan_in_fan_out": true, "target_modules": ["c_attn"],
 "alpha_pattern": {"h.1.attn.c_attn": 2}, "rank_pattern": {}, "bias": "none", "use_rslora": false}
EOF2
cfg "$G"
run "$SHARDRUN" merge "$G"
expect_rc 0 "merge of Conv1D weights with alpha_pattern"
r=$($MREF check "$G" "$G/merged/model.safetensors" 2>&1) && pass || fail "Conv1D merge against PEFT's: $r"
echo "$r" | tail -1

# refusals: exit 2, the message, nothing written.  On $G, which merges (above) when they are not there.
refused() { # WHAT NEEDLE [FIELD=JSON...]
    local what=$1 needle=$2
    shift 2
    cfg "$G" "$@"
    run "$SHARDRUN" merge "$G" -o "$T/x.safetensors"
    expect_rc 2 "$what"
    expect_in "$err" "$needle" "$what: the message"
    [ ! -e "$T/x.safetensors" ] && [ -z "$(find "$T" -maxdepth 1 -name '.x.safetensors.tmp*')" ] && pass ||
        fail "$what: a refused merge writes nothing"
}
refused "bias all" 'bias = "all": these adapters come with trained biases' bias='"all"'
refused "modules_to_save" 'modules_to_save = [ "lm_head" ]: shardrun merge does not do this' 'modules_to_save=["lm_head"]'
refused "layers_to_transform" "layers_to_transform = [ 0 ]: shardrun merge does not do this" "layers_to_transform=[0]"
refused "layers_pattern" 'layers_pattern = "h": shardrun merge does not do this' 'layers_pattern="h"'
refused "use_dora" "use_dora = true: shardrun merge does not do this" use_dora=true
refused "lora_bias" "lora_bias = true: shardrun merge does not do this" lora_bias=true
refused "a field merge does not know" 'future_option = { "x": 1 }: shardrun merge does not do this' 'future_option={"x": 1}'
refused "init_lora_weights pissa" 'init_lora_weights = "pissa": that initialization trains the adapters on a changed base' \
    'init_lora_weights="pissa"'
refused "target_modules null" "target_modules is null or missing" target_modules=null
refused "lora_alpha Infinity" "lora_alpha = inf: expected a finite number > 0" lora_alpha=Infinity
refused "a pattern that is no expression" 'alpha_pattern key "(" is no regular expression' 'alpha_pattern={"(": 3}'
refused "a rank that is not a number" 'rank_pattern["c_attn"] = "4": expected a number' 'rank_pattern={"c_attn": "4"}'
refused "adapters on a module target_modules does not name" \
    "holds adapters on transformer.h.0.attn.c_attn, but $G/adapter_config.json's target_modules does not adapt it" \
    'target_modules=["c_proj"]'
refused "target_modules naming a module without adapters" \
    "target_modules adapts transformer.h.0.attn.c_proj, but $G/adapter_model.safetensors holds no adapters for it" \
    'target_modules=["c_attn", "c_proj"]'
refused "a rank the tensors do not have" "disagree on transformer.h.1.attn.c_attn.weight" \
    'rank_pattern={"transformer.h.1.attn.c_attn": 8}'
refused "lora_alpha 1e308" \
    'the merged transformer.h.0.attn.c_attn.weight is -inf at index 0 ([0, 0]): scale 2.5e+307 (alpha 1e+308 from lora_alpha / r 4 from r) times B A overflows float32' \
    lora_alpha=1e308
# a NaN in layer 1's lora_B [48, 4] at [3, 1]: column 3 of the merged [16, 48] weight
cfg "$G"
cp -r "$G" "$T/N" && rm -r "$T/N/merged"
torch_py -c "
import sys; sys.path.insert(0, '$SRC/tests/gpt2')
import gpt2_torch as g, numpy as np
p = '$T/N/adapter_model.safetensors'; t = g.read_safetensors(p)
t['base_model.model.transformer.h.1.attn.c_attn.lora_B.weight'][3, 1] = np.nan
g.write_safetensors(p, t, {'format': 'pt'})" && pass || fail "a NaN in lora_B"
run "$SHARDRUN" merge "$T/N"
expect_rc 2 "a NaN in lora_B"
expect_in "$err" "the merged transformer.h.1.attn.c_attn.weight is nan at index 3 ([0, 3]): transformer.h.1.attn.c_attn.lora_B.weight holds nan at index 13" \
    "a NaN in lora_B: the message"
[ ! -e "$T/N/merged" ] && pass || fail "a NaN in lora_B: nothing written ($(ls -A "$T/N/merged"))"

# missing or damaged files: exit 2, before any work
mv "$G/adapter_config.json" "$T/cfg.json"
run "$SHARDRUN" merge "$G" -o "$T/x.safetensors"
expect_rc 2 "no adapter_config.json"
expect_in "$err" "cannot read $G/adapter_config.json: No such file or directory" "no adapter_config.json: the message"
mv "$T/cfg.json" "$G/adapter_config.json"
mkdir "$T/O" && cp "$G/adapter_config.json" "$G/model.safetensors" "$T/O/"
torch_py - "$T/O/adapter_model.safetensors" <<'PY'
import json, struct, sys
p = "base_model.model.transformer.h.0.attn.c_attn."
h = {p + "lora_A.weight": {"dtype": "F32", "shape": [4, 16], "data_offsets": [0, 256]},
     p + "lora_B.weight": {"dtype": "F32", "shape": [48, 4], "data_offsets": [128, 896]}}
b = json.dumps(h).encode()
b += b" " * (-len(b) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(b)) + b + bytes(896))
PY
run "$SHARDRUN" merge "$T/O" -o "$T/x.safetensors"
expect_rc 2 "adapter tensors that overlap"
expect_in "$err" "overlap" "adapter tensors that overlap: the message"

# links: the file they point to stays as it was
echo precious >"$T/victim"
mkdir "$T/elsewhere" && echo precious >"$T/elsewhere/model.safetensors"
cp -r "$G" "$T/K1" && rm -r "$T/K1/merged" && ln -s "$T/elsewhere" "$T/K1/merged"
run "$SHARDRUN" merge "$T/K1"
expect_rc 2 "merged/ a link to another folder"
expect_in "$err" "$T/K1/merged is a symbolic link; merge never writes through a link" "merged/ a link: the message"
[ "$(cat "$T/elsewhere/model.safetensors")" = precious ] && pass ||
    fail "merged/ a link: the file in the folder it points to was replaced"
cp -r "$G" "$T/K2" && rm "$T/K2/merged/model.safetensors" && ln -s "$T/victim" "$T/K2/merged/model.safetensors"
run "$SHARDRUN" merge "$T/K2"
expect_rc 2 "merged/model.safetensors a link"
expect_in "$err" "$T/K2/merged/model.safetensors is a symbolic link" "merged/model.safetensors a link: the message"
[ -L "$T/K2/merged/model.safetensors" ] && [ "$(cat "$T/victim")" = precious ] && pass ||
    fail "merged/model.safetensors a link: the link and its target as they were"
ln -s "$T/victim" "$T/out-link.safetensors"
run "$SHARDRUN" merge "$G" -o "$T/out-link.safetensors"
expect_rc 2 "-o a link"
[ -L "$T/out-link.safetensors" ] && [ "$(cat "$T/victim")" = precious ] && pass ||
    fail "-o a link: the link and the file it points to as they were"
# a real merged/ folder and file are replaced, no temporary left
rm "$T/K1/merged" && mkdir "$T/K1/merged" && echo old >"$T/K1/merged/model.safetensors"
run "$SHARDRUN" merge "$T/K1"
expect_rc 0 "merge over an earlier merged/model.safetensors"
r=$($MREF check "$T/K1" "$T/K1/merged/model.safetensors" 2>&1) && pass || fail "the new merged file: $r"
[ -z "$(find "$T/K1/merged" -name '.*')" ] && pass || fail "no temporary left: $(ls -A "$T/K1/merged")"
done_checks
