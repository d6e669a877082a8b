# shardrun_generate (tools/generate) on Llama-family checkpoints (models/llama/llama_infer.c).
#  - greedy decoding picks, at every step, the argmax of tests/llama/llama_torch.py's Llama (float64,
#    HF's formulas, one forward over the whole sequence), from a 7-token prompt over 24 new tokens, at
#    4 heads on 4 key/value heads, 6 on 2 with Llama 3's rope_scaling, 4 on 1 as Qwen2 (q/k/v biases,
#    tied lm_head) and 8 on 2 with attention_bias and mlp_bias; and the check fails for a model read
#    with other heads;
#  - the key/value cache gives the logits of a full recomputation (the task's training forward,
#    --no-kv-cache) within 1e-4 of the largest, the same tokens;
#  - gpt2_generate, the command's first name, is the same program;
#  - the family and its figures come from the config.json next to the model, --config, or the job
#    file's [task] config (a path relative to the job file) or size (--job); a tiny Llama the llama
#    task trained (FULL_STATE_DICT) generates from its checkpoint-N folder in one command, its size
#    found from its widths (or its job), greedy as the reference;
#  - a Llama without a config.json whose widths are no named size's, and a --config that is not the
#    file's model, exit 2 with one message naming what to give.
# One Python process for every PyTorch call (torch_py, tests/transformer/torch_server.sh).
# Environment: GENERATE (default $BUILD/shardrun_generate).
. "$(dirname "$0")/lib.sh"
GEN=${GENERATE:-$BUILD/shardrun_generate}
CHECK="torch_py $SRC/tests/gpt2/generate_check.py"
[ -x "$GEN" ] || { echo "FAIL: no shardrun_generate at $GEN (build the tree, or set GENERATE)"; exit 1; }
export OMP_NUM_THREADS=2
PROMPT="5 17 200 3 99 42 7"
R3='"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 16}'
FAMILIES="mha gqa qwen2 biases"

# ---- random weights for each configuration ---------------------------------------------------------
# config NAME HEADS KV_HEADS [config members...]: $T/NAME/config.json and the reference's weights
config() {
    local name=$1 heads=$2 kv=$3 r
    shift 3
    mkdir -p "$T/$name"
    llama_config "$name/config.json" "$heads" "$kv" "$@"
    r=$($TORCH_LLAMA init "$T/$name/model.safetensors" --config "$T/$name/config.json" --vocab_size 257 --seed 5 2>&1) &&
        pass || fail "llama_torch.py init, $name: $r"
}
config mha 4 4
config gqa 6 2 "$R3"
config qwen2 4 1 '"model_type": "qwen2"' '"tie_word_embeddings": true'
config biases 8 2 '"attention_bias": true' '"mlp_bias": true'

# ---- generation: the cache and recomputation, each configuration --------------------------------
declare -A want
for name in $FAMILIES; do
    run "$GEN" "$T/$name" --prompt-ids "$PROMPT" --temperature 0 --max-new-tokens 24 --ignore-eos --output ids \
        --logits "$T/$name.kv.st"
    expect_rc 0 "$name: greedy with the key/value cache"
    heads=$(grep -o '"num_attention_heads": [0-9]*' "$T/$name/config.json" | grep -o '[0-9]*$')
    kv=$(grep -o '"num_key_value_heads": [0-9]*' "$T/$name/config.json" | grep -o '[0-9]*$')
    expect_in "$err" "2 layers, $heads heads on $kv key/value heads ($T/$name/config.json)" "$name: the banner"
    expect_in "$err" "the llama family" "$name: the family"
    expect_in "$err" "24 new tokens" "$name: 24 tokens"
    case $name in
    gqa) expect_in "$err" "(llama3 scaling)" "gqa: rope_scaling read" ;;
    qwen2) expect_in "$err" "tied lm_head, q/k/v biases" "qwen2: biases and the tied head" ;;
    biases) expect_in "$err" "q/k/v biases, o_proj bias, MLP biases" "biases: every bias" ;;
    esac
    want[$name]=$out
    run "$GEN" "$T/$name" --prompt-ids "$PROMPT" --temperature 0 --max-new-tokens 24 --ignore-eos --output ids \
        --no-kv-cache --logits "$T/$name.full.st"
    expect_rc 0 "$name: greedy recomputing the prefix every token"
    expect_eq "$out" "${want[$name]}" "$name: the same tokens without the cache"
    r=$($CHECK greedy "$T/$name.kv.st" "$T/$name/model.safetensors" --family llama --config "$T/$name/config.json" 2>&1) &&
        pass || fail "$name: the C logits torch's: $r"
    expect_in "$r" "greedy: 24 tokens after a 7-token prompt, 24 equal to torch's argmax, 0 ties, 0 different" \
        "$name: every token torch's argmax, no tie needed"
    echo "$name: $r"
    r=$($CHECK same "$T/$name.kv.st" "$T/$name.full.st" --tol 1e-4 2>&1) && pass ||
        fail "$name: the cache's logits those of recomputation: $r"
done
# the check can fail: mha's tokens against the model read with 2 heads instead of 4
llama_config wrong.json 2 2
run $CHECK greedy "$T/mha.kv.st" "$T/mha/model.safetensors" --family llama --config "$T/wrong.json"
expect_rc 1 "the greedy check fails for a model read with other heads"

# gpt2_generate is the same program
run "$BUILD/gpt2_generate" "$T/gqa" --prompt-ids "$PROMPT" --temperature 0 --max-new-tokens 24 --ignore-eos --output ids
expect_rc 0 "gpt2_generate on a Llama"
expect_eq "$out" "${want[gqa]}" "gpt2_generate: the same tokens"
# --config names the config.json when the file stands alone; sampling works as for GPT-2
cp "$T/gqa/model.safetensors" "$T/alone.safetensors"
run "$GEN" "$T/alone.safetensors" --config "$T/gqa/config.json" --prompt-ids "$PROMPT" --temperature 0 \
    --max-new-tokens 24 --ignore-eos --output ids
expect_rc 0 "--config"
expect_eq "$out" "${want[gqa]}" "--config: the same tokens"
run "$GEN" "$T/alone.safetensors" --config "$T/gqa/config.json" --prompt-ids "$PROMPT" --seed 3 --top-k 0 \
    --max-new-tokens 24 --ignore-eos --output ids
expect_rc 0 "sampling"
[ "$out" != "${want[gqa]}" ] && pass || fail "sampling gave the greedy tokens"

# --job: the job's [task] config, relative to the job file's folder
mkdir -p "$T/cfgjob"
printf '[shardrun]\ntask = llama\n\n[task]\nconfig = ../gqa/config.json\n' >"$T/cfgjob/job.ini"
run "$GEN" "$T/alone.safetensors" --job "$T/cfgjob/job.ini" --prompt-ids "$PROMPT" --temperature 0 \
    --max-new-tokens 24 --ignore-eos --output ids
expect_rc 0 "--job with [task] config"
expect_in "$err" "6 heads on 2 key/value heads ($T/cfgjob/../gqa/config.json)" "--job: the job's config.json"
expect_eq "$out" "${want[gqa]}" "--job: the same tokens"
# --set: the training command's overrides of its job, a relative path from the current folder
printf '[shardrun]\ntask = llama\n\n[task]\nconfig = nowhere/config.json\n' >"$T/cfgjob/set.ini"
run bash -c 'cd "$1" && shift && exec "$@"' _ "$T" "$GEN" "$T/alone.safetensors" --job "$T/cfgjob/set.ini" \
    --set task.config=gqa/config.json --prompt-ids "$PROMPT" --temperature 0 --max-new-tokens 24 --ignore-eos --output ids
expect_rc 0 "--job with --set task.config"
expect_in "$err" "6 heads on 2 key/value heads (gqa/config.json)" "--set: the override's config.json, from the current folder"
expect_eq "$out" "${want[gqa]}" "--set: the same tokens"
run "$GEN" "$T/alone.safetensors" --job "$T/cfgjob/set.ini" --set task.config
expect_rc 2 "--set without a value"
expect_in "$err" "--set task.config: expected SECTION.KEY=VALUE" "--set without a value: the form named"
run "$GEN" "$T/alone.safetensors" --set task.size=tiny
expect_rc 2 "--set without --job"
expect_in "$err" "give --job too" "--set without --job: what to give"

# ---- bad input: one message, exit 2 -------------------------------------------------------------
printf '[task]\nnum_attention_heads = six\n' >"$T/badjob.ini"
run "$GEN" "$T/alone.safetensors" --job "$T/badjob.ini"
expect_rc 2 "a job file with a bad head count"
expect_in "$err" "--job $T/badjob.ini: [task] num_attention_heads = six: expected a positive whole number" \
    "a bad job: the key named"
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
expect_in "$err" "model.safetensors (global_step 2): 4 layers, 4 heads on 2 key/value heads ($T/train/checkpoint-2/config.json)" \
    "checkpoint-2: the figures of its config.json"
case $out in "the model"?*) pass ;; *) fail "no continuation of the prompt: $out" ;; esac
ck_text=$out
run "$GEN" "$T/train/checkpoint-2" --job "$T/job.ini" --prompt "the model" --temperature 0 --max-new-tokens 16 \
    --ignore-eos
expect_rc 0 "checkpoint-2 with its job file"
expect_in "$err" "4 layers, 4 heads on 2 key/value heads ($T/train/checkpoint-2/config.json)" "--job: the checkpoint's config.json"
expect_eq "$out" "$ck_text" "--job: the same text"
cat >"$T/tiny.json" <<EOF2
{"model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
 "hidden_size": 128, "intermediate_size": 352, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
 "tie_word_embeddings": false, "max_position_embeddings": 2048}
EOF2
r=$($CHECK greedy "$T/ck.st" "$T/train/checkpoint-2/model.safetensors" --family llama --config "$T/tiny.json" 2>&1) &&
    pass || fail "checkpoint-2: the C logits torch's: $r"
expect_in "$r" "greedy: 16 tokens after a 9-token prompt, 16 equal to torch's argmax" "checkpoint-2 vs torch"
echo "checkpoint-2: $r"
done_checks
