# Generation from a LoRA run's FULL checkpoint: the adapters are folded in memory by shardrun merge's
# own code, so the text (greedy, temperature 0) and every logit equal, bit for bit, generation from
# the merged model (`shardrun merge CHECKPOINT`), for GPT-2 (Conv1D weights: fan_in_fan_out), BLOOM
# (query_key_value) and Llama (q_proj, v_proj); the banner says the adapters were merged, and the base
# alone gives other logits (a tiny random BLOOM repeats the prompt's last token either way).  A
# checkpoint's model.safetensors without its adapter files, and a PEFT adapter folder without its
# base, are refused (exit 2) naming `shardrun merge`.  Tiny models from the task's initialisers,
# adapters trained 4 steps at a high learning rate (lora_alpha 64); 1 rank.
# Environment: GENERATE (default $BUILD/shardrun_generate).
. "$(dirname "$0")/../llama/lib.sh"
. "$(dirname "$0")/../bloom/lib.sh"
GEN=${GENERATE:-$BUILD/shardrun_generate}
[ -x "$GEN" ] || { echo "FAIL: no shardrun_generate at $GEN (build the tree, or set GENERATE)"; exit 1; }
export OMP_NUM_THREADS=1
corpus
PROMPT="5 17 200 3 99 42 7"
LORA="max_length = 64
data = $T/corpus.txt
max_steps = 4
learning_rate = 5e-2
per_device_train_batch_size = 2
lora_r = 4
lora_alpha = 64"
gpt2_job g.ini "fsdp.sharding_strategy = NO_SHARD" "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
n_layer = 2
n_embd = 64
n_head = 4
n_positions = 96
vocab_size = 300
$LORA
output_dir = $T/g
EOF2
bloom_job b.ini "fsdp.sharding_strategy = NO_SHARD" "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
n_layer = 2
hidden_size = 48
n_head = 4
vocab_size = 300
$LORA
output_dir = $T/b
EOF2
llama_config c.json 4 2
llama_job l.ini "fsdp.sharding_strategy = NO_SHARD" "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
config = $T/c.json
$LORA
output_dir = $T/l
EOF2

# gen NAME MODEL [flags]: greedy ids and every step's logits into $T/NAME.ids, $T/NAME.logits
gen() {
    local name=$1 model=$2
    shift 2
    run "$GEN" "$model" --prompt-ids "$PROMPT" --temperature 0 --max-new-tokens 16 --ignore-eos --output ids \
        --logits "$T/$name.logits" "$@"
    printf '%s\n' "$out" >"$T/$name.ids"
}
for fam in g:gpt2:2 b:bloom:2 l:llama:4; do
    IFS=: read -r d family nadapted <<<"$fam"
    run "$SHARDRUN" "$T/$d.ini" --nproc-per-node 1
    expect_rc 0 "$family: a LoRA run"
    ck=$T/$d/checkpoint-4
    cfg=(--n-head 4)
    [ "$family" = llama ] && cfg=(--config "$T/c.json")
    gen "$d.ck" "$ck" "${cfg[@]}"
    expect_rc 0 "$family: generation from the LoRA checkpoint"
    expect_in "$err" "LoRA adapters ($ck/adapter_model.safetensors) merged in memory into $nadapted weights, scale 16" \
        "$family: the banner says the adapters were merged"
    run "$SHARDRUN" merge "$ck"
    expect_rc 0 "$family: shardrun merge"
    gen "$d.merged" "$ck/merged/model.safetensors" --family "$family" "${cfg[@]}"
    expect_rc 0 "$family: generation from the merged model"
    [ -s "$T/$d.ck.ids" ] && expect_same_file "$T/$d.ck.ids" "$T/$d.merged.ids" "$family: the text (ids)"
    r=$($PCMP 0 1e-30 "$T/$d.merged.logits" "$T/$d.ck.logits" 2>&1) && pass ||
        fail "$family: the logits of the checkpoint and of the merged model: $r"
    # the adapters count: the base alone (the checkpoint without its lora_* tensors) computes other logits
    torch_py - "$ck/model.safetensors" "$T/$d.base.safetensors" "$SRC/tests/gpt2" <<'PY' || fail "$family: the base alone"
import sys
sys.path.insert(0, sys.argv[3])
from gpt2_torch import read_safetensors, write_safetensors
write_safetensors(sys.argv[2], {k: v for k, v in read_safetensors(sys.argv[1]).items() if ".lora_" not in k}, {})
PY
    gen "$d.base" "$T/$d.base.safetensors" --family "$family" "${cfg[@]}"
    expect_rc 0 "$family: generation from the base alone"
    $PCMP 1e-3 1e-3 "$T/$d.base.logits" "$T/$d.ck.logits" >/dev/null 2>&1 && fail "$family: the adapters change nothing" ||
        pass
    echo "$family: $(cat "$T/$d.ck.ids"); the base alone: $(cat "$T/$d.base.ids")"
done

# the checkpoint without its adapter files (model.safetensors and the tokenizer and config files
# it lists), and the adapters alone
mkdir -p "$T/peft"
cp -r "$T/g/checkpoint-4" "$T/alone"
rm "$T/alone/adapter_config.json" "$T/alone/adapter_model.safetensors"
gen alone "$T/alone" --n-head 4
expect_rc 2 "a LoRA model.safetensors without adapter_config.json"
expect_in "$err" "holds 4 LoRA adapter tensors" "the model without its adapter files: what it holds"
expect_in "$err" "shardrun merge CHECKPOINT_DIR" "the model without its adapter files: what to do"
cp "$T/g/checkpoint-4/adapter_config.json" "$T/g/checkpoint-4/adapter_model.safetensors" "$T/peft/"
gen peft "$T/peft" --n-head 4
expect_rc 2 "a PEFT adapter folder without its base"
expect_in "$err" "shardrun merge $T/peft --base BASE/model.safetensors -o merged.safetensors" \
    "the adapters without their base: what to do"
done_checks
