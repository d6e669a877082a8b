# shardrun_generate (examples/generate) on Llama-family checkpoints (examples/llama/llama_infer.c).
#  - greedy decoding picks, at every step, the argmax of tests/llama/llama_torch.py's Llama (float64,
#    HF's formulas, one forward over the whole sequence), from a 7-token prompt over 24 new tokens, at
#    4 heads on 4 key/value heads, 6 on 2 with Llama 3's rope_scaling, 4 on 1 as Qwen2 (q/k/v biases,
#    tied lm_head) and 8 on 2 with attention_bias and mlp_bias; and the check fails for a model read
#    with other heads;
#  - the key/value cache gives the logits of a full recomputation (the task's training forward,
#    --no-kv-cache) within 1e-4 of the largest, the same tokens;
#  - gpt2_generate, the command's first name, is the same program;
#  - the family and its figures come from the config.json next to the model, or --config; a tiny
#    Llama the llama task trained (FULL_STATE_DICT) generates from its checkpoint-N folder in one
#    command, its size found from its widths, greedy as the reference;
#  - a Llama without a config.json whose widths are no named size's, and a --config that is not the
#    file's model, exit 2 with one message naming what to give.
# Environment: SHARDRUN_GENERATE (default $BUILD/shardrun_generate).
. "$(dirname "$0")/lib.sh"
GEN=${SHARDRUN_GENERATE:-$BUILD/shardrun_generate}
CHECK="/usr/bin/python3 $SRC/tests/gpt2/generate_check.py"
[ -x "$GEN" ] || { echo "FAIL: no shardrun_generate at $GEN (build the tree, or set SHARDRUN_GENERATE)"; exit 1; }
export OMP_NUM_THREADS=2
PROMPT="5 17 200 3 99 42 7"
R3='"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 16}'

# family NAME HEADS KV_HEADS [config members...]: random weights in $T/NAME/ (model.safetensors and
# config.json), greedy vs torch, the cache vs recomputation
family() {
    local name=$1 heads=$2 kv=$3
    shift 3
    mkdir -p "$T/$name"
    llama_config "$name/config.json" "$heads" "$kv" "$@"
    $TORCH_LLAMA init "$T/$name/model.safetensors" --config "$T/$name/config.json" --vocab_size 257 --seed 5 \
        >/dev/null || fail "$name: llama_torch.py init"
    run "$GEN" "$T/$name" --prompt-ids "$PROMPT" --temperature 0 --max-new-tokens 24 --ignore-eos --output ids \
        --logits "$T/$name.kv.st"
    expect_rc 0 "$name: greedy with the key/value cache"
    expect_in "$err" "2 layers, $heads heads on $kv key/value heads ($T/$name/config.json)" "$name: the banner"
    expect_in "$err" "the llama family" "$name: the family"
    expect_in "$err" "24 new tokens" "$name: 24 tokens"
    kv_ids=$out
    r=$($CHECK greedy "$T/$name.kv.st" "$T/$name/model.safetensors" --family llama --config "$T/$name/config.json" 2>&1) &&
        pass || fail "$name: greedy vs torch's argmax: $r"
    echo "$name: $r"
    expect_in "$r" "24 equal to torch's argmax, 0 ties" "$name: every token torch's, no tie needed"
    run "$GEN" "$T/$name" --prompt-ids "$PROMPT" --temperature 0 --max-new-tokens 24 --ignore-eos --output ids \
        --no-kv-cache --logits "$T/$name.full.st"
    expect_rc 0 "$name: greedy recomputing the prefix every token"
    expect_eq "$out" "$kv_ids" "$name: the same tokens without the cache"
    r=$($CHECK same "$T/$name.kv.st" "$T/$name.full.st" --tol 1e-4 2>&1) && pass || fail "$name: cache vs recomputation: $r"
    echo "$name: $r"
}
family mha 4 4
family gqa 6 2 "$R3"
expect_in "$err" "(llama3 scaling)" "gqa: rope_scaling read"
family qwen2 4 1 '"model_type": "qwen2"' '"tie_word_embeddings": true'
expect_in "$err" "tied lm_head, q/k/v biases" "qwen2: biases and the tied head"
family biases 8 2 '"attention_bias": true' '"mlp_bias": true'
expect_in "$err" "q/k/v biases, o_proj bias, MLP biases" "biases: every bias"

# the check can fail: gqa's tokens against the model read as 6 heads on 6 key/value heads (a
# wrong grouping) -- its shapes differ, so compare mha's tokens with the gqa config's heads instead
llama_config wrong.json 2 2
r=$($CHECK greedy "$T/mha.kv.st" "$T/mha/model.safetensors" --family llama --config "$T/wrong.json" 2>&1) &&
    fail "the greedy check passes a model read with 2 heads instead of 4: $r" || pass

# gpt2_generate is the same program
run "$BUILD/gpt2_generate" "$T/gqa" --prompt-ids "$PROMPT" --temperature 0 --max-new-tokens 24 --ignore-eos --output ids
expect_rc 0 "gpt2_generate on a Llama"
r=$(cat "$T/gqa.kv.st" >/dev/null; "$GEN" "$T/gqa" --prompt-ids "$PROMPT" --temperature 0 --max-new-tokens 24 \
    --ignore-eos --output ids 2>/dev/null)
expect_eq "$out" "$r" "gpt2_generate: the same tokens"
# --config names the config.json when the file stands alone; sampling works as for GPT-2
cp "$T/gqa/model.safetensors" "$T/alone.safetensors"
run "$GEN" "$T/alone.safetensors" --config "$T/gqa/config.json" --prompt-ids "$PROMPT" --temperature 0 \
    --max-new-tokens 24 --ignore-eos --output ids
expect_rc 0 "--config"
expect_eq "$out" "$r" "--config: the same tokens"
run "$GEN" "$T/alone.safetensors" --config "$T/gqa/config.json" --prompt-ids "$PROMPT" --seed 3 --max-new-tokens 8
expect_rc 0 "sampling"

# ---- bad input: one message, exit 2 -------------------------------------------------------------
run "$GEN" "$T/alone.safetensors" --prompt-ids "$PROMPT"
expect_rc 2 "a Llama without config.json, widths of no named size"
expect_in "$err" "give --config CONFIG.json" "no config: what to give"
[ "$(wc -l <<<"$err")" -le 4 ] && pass || fail "no config: more than one screen: $err"
run "$GEN" "$T/alone.safetensors" --config "$T/mha/config.json" --prompt-ids "$PROMPT"
expect_rc 2 "a config.json of another model"
expect_in "$err" "k_proj has 16 rows, which are not 4 key/value heads of 12" "another config: the difference named"

# ---- a tiny Llama the task trained: checkpoint-N in one command ---------------------------------
corpus
llama_job job.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = LlamaDecoderLayer" \
    "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
size = tiny
max_length = 32
data = $T/corpus.txt
per_device_train_batch_size = 2
learning_rate = 3e-3
EOF2
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.max_steps=2 --set task.output_dir="$T/train"
expect_rc 0 "the llama task trains tiny for 2 steps"
run "$GEN" "$T/train/checkpoint-2" --prompt "the model" --temperature 0 --max-new-tokens 16 --ignore-eos \
    --logits "$T/ck.st"
expect_rc 0 "shardrun_generate checkpoint-2"
expect_in "$err" "model.safetensors (global_step 2): 4 layers, 4 heads on 2 key/value heads (the tiny size's, as its widths)" \
    "checkpoint-2: the size from the widths"
case $out in "the model"?*) pass ;; *) fail "no continuation of the prompt: $out" ;; esac
cat >"$T/tiny.json" <<EOF2
{"model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
 "hidden_size": 128, "intermediate_size": 352, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
 "tie_word_embeddings": false, "max_position_embeddings": 2048}
EOF2
r=$($CHECK greedy "$T/ck.st" "$T/train/checkpoint-2/model.safetensors" --family llama --config "$T/tiny.json" 2>&1) &&
    pass || fail "checkpoint-2 greedy vs torch: $r"
echo "checkpoint-2: $r"
done_checks
