# The llama task's sizes: the named ones have their models' real dimensions (the parameter count
# the task logs equals the one computed from HF's config.json figures, with one layer and a
# 300-token vocabulary so each runs one step in seconds); `config = config.json` reads an HF config
# (Llama, Qwen2, Mistral without a sliding window), the fields it lacks taking HF's config class
# defaults (LlamaConfig, Qwen2Config, MistralConfig), and refuses, before any step and with exit
# code 2, a field it does not implement or a number that is not finite, naming the file and the field.
. "$(dirname "$0")/lib.sh"
corpus
llama_job job.ini <<EOF2
data = $T/corpus.txt
max_length = 16
min_chars = 100
max_samples = 8
per_device_train_batch_size = 2
max_steps = 1
save_final = false
eval_strategy = no
validation_split_percentage = 0
output_dir = $T/out
EOF2
# NAME L HEADS KV C F TIE: the size's figures from its config.json on the Hub
while read -r size heads kv C F tie line; do
    run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.size="$size" --set task.num_hidden_layers=1 \
        --set task.vocab_size=300
    expect_rc 0 "$size (1 layer) trains a step"
    expect_in "$out" "llama: $size: $heads heads on $kv key/value heads, intermediate_size $F, $line" "$size's figures"
    hd=$((C / heads))
    params=$(torch_py -c "
C, KV, F, V, tie = $C, $kv * $hd, $F, 300, $tie
bias = 'q/k/v biases' in '''$line'''
n = V * C + (2 * C + 2 * C * C + 2 * C * KV + 3 * C * F + (C + 2 * KV if bias else 0)) + C + (0 if tie else V * C)
print('%.2fM parameters' % (n / 1e6))")
    expect_in "$out" "llama: 1 layers, $heads heads, n_embd $C, vocab 300, positions" "$size: heads and width"
    expect_in "$out" "$params" "$size: the parameter count of HF's figures ($params)"
done <<'EOF2'
smollm2-135m 9 3 576 1536 1 rope_theta 100000, rms_norm_eps 1e-05, tied lm_head
smollm2-360m 15 5 960 2560 1 rope_theta 100000, rms_norm_eps 1e-05, tied lm_head
qwen2.5-0.5b 14 2 896 4864 1 rope_theta 1e+06, rms_norm_eps 1e-06, tied lm_head, q/k/v biases
llama-3.2-1b 32 8 2048 8192 1 rope_theta 500000 (llama3 scaling), rms_norm_eps 1e-05, tied lm_head
tiny 4 2 128 352 0 rope_theta 10000, rms_norm_eps 1e-05, untied lm_head
EOF2

# HF's own config.json files, field for field as the Hub has them (SmolLM2-135M's, Llama-3.2-1B's),
# give the named sizes' figures
cat >"$T/smollm2.json" <<'EOF2'
{"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 0,
 "eos_token_id": 0, "hidden_act": "silu", "hidden_size": 576, "initializer_range": 0.041666666666666664,
 "intermediate_size": 1536, "is_llama_config": true, "max_position_embeddings": 8192, "mlp_bias": false,
 "model_type": "llama", "num_attention_heads": 9, "num_hidden_layers": 30, "num_key_value_heads": 3,
 "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_interleaved": false, "rope_scaling": null, "rope_theta": 100000,
 "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers.js_config": {"kv_cache_dtype": {"q4f16": "float16",
 "fp16": "float16"}}, "transformers_version": "4.42.3", "use_cache": true, "vocab_size": 49152}
EOF2
cat >"$T/llama32.json" <<'EOF2'
{"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 128000,
 "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
 "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
 "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "pretraining_tp": 1,
 "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
 "original_max_position_embeddings": 8192, "rope_type": "llama3"}, "rope_theta": 500000.0,
 "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.45.0.dev0", "use_cache": true,
 "vocab_size": 128256}
EOF2
for f in smollm2 llama32; do
    run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.config="$T/$f.json" --set task.num_hidden_layers=1 \
        --set task.vocab_size=300
    expect_rc 0 "$f.json (1 layer) trains a step"
done
expect_in "$out" "llama: $T/llama32.json: 32 heads on 8 key/value heads, intermediate_size 8192, rope_theta 500000 (llama3 scaling)" \
    "Llama-3.2-1B's config.json"

# A Mistral config without a sliding window trains; the figures come from the file
llama_config m.json 4 1 '"model_type": "mistral"' '"sliding_window": null' '"architectures": ["MistralForCausalLM"]'
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.config="$T/m.json"
expect_rc 0 "a Mistral config.json without sliding window"
expect_in "$out" "llama: $T/m.json: 4 heads on 1 key/value heads, intermediate_size 72, rope_theta 10000, rms_norm_eps 1e-05, untied lm_head" "the config.json's figures"

# A field the file lacks takes the default of HF's config class for its model_type, never a size's
# figures: LlamaConfig's num_key_value_heads is num_attention_heads (4 heads here, not the tiny
# size's 2), and the log names what was taken
llama_config nokv.json 4 4
sed -i 's/"num_key_value_heads": 4, //' "$T/nokv.json"
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.config="$T/nokv.json"
expect_rc 0 "a config.json without num_key_value_heads trains"
expect_in "$out" "llama: $T/nokv.json: 4 heads on 4 key/value heads" "without num_key_value_heads: as many as the heads"
expect_in "$out" "llama: $T/nokv.json lacks fields, which take HF's LlamaConfig's defaults: num_key_value_heads 4, initializer_range 0.02" \
    "the fields taken from LlamaConfig are named"
# every other figure, for each class: the log names them; one step trains with the widths and depth
# overridden by [task] keys (a 4096-wide model of 32 layers would take minutes)
defaults() { # WHAT JSON [--set ...] -- EXPECTED-LINES...
    local what=$1 args=()
    printf '%s\n' "$2" >"$T/d.json"
    shift 2
    while [ "$1" != -- ]; do args+=("$1"); shift; done
    shift
    run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.config="$T/d.json" --set task.num_hidden_layers=1 \
        --set task.hidden_size=64 --set task.intermediate_size=64 "${args[@]}"
    expect_rc 0 "$what: one step trains"
    for l in "$@"; do expect_in "$out" "$l" "$what"; done
}
defaults "LlamaConfig's defaults" '{"model_type": "llama"}' -- \
    "llama: $T/d.json lacks fields, which take HF's LlamaConfig's defaults: num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 32, hidden_size 4096, intermediate_size 11008, vocab_size 32000, max_position_embeddings 2048, rope_theta 10000, rms_norm_eps 1e-06, initializer_range 0.02, tie_word_embeddings false" \
    "llama: $T/d.json: 32 heads on 32 key/value heads, intermediate_size 64, rope_theta 10000, rms_norm_eps 1e-06, untied lm_head" \
    "llama: 1 layers, 32 heads, n_embd 64, vocab 32000, positions 2048:"
defaults "Qwen2Config's defaults" '{"model_type": "qwen2"}' --set task.vocab_size=300 -- \
    "HF's Qwen2Config's defaults: num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 32, hidden_size 4096, intermediate_size 22016, vocab_size 151936, max_position_embeddings 32768, rope_theta 10000, rms_norm_eps 1e-06, initializer_range 0.02, tie_word_embeddings false" \
    "llama: $T/d.json: 32 heads on 32 key/value heads, intermediate_size 64, rope_theta 10000, rms_norm_eps 1e-06, untied lm_head, q/k/v biases" \
    "positions 32768:"
defaults "MistralConfig's defaults" '{"model_type": "mistral", "sliding_window": null}' --set task.vocab_size=300 -- \
    "HF's MistralConfig's defaults: num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 8, hidden_size 4096, intermediate_size 14336, vocab_size 32000, max_position_embeddings 131072, rope_theta 10000, rms_norm_eps 1e-06, initializer_range 0.02, tie_word_embeddings false" \
    "llama: $T/d.json: 32 heads on 8 key/value heads, intermediate_size 64"
# Qwen2Config's num_key_value_heads is 32 when missing (null: as many as the heads), as HF has it
llama_config q.json 4 4 '"model_type": "qwen2"'
sed -i 's/"num_key_value_heads": 4, //' "$T/q.json"
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.config="$T/q.json"
expect_rc 2 "Qwen2 without num_key_value_heads: 32 of them, which 4 heads cannot share"
expect_in "$err" "num_attention_heads = 4 is not a multiple of num_key_value_heads = 32 ($T/q.json; it lacks fields, which take HF's Qwen2Config's defaults: num_key_value_heads 32" \
    "Qwen2 without num_key_value_heads: the message names the default"
llama_config q.json 4 null '"model_type": "qwen2"'
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.config="$T/q.json"
expect_rc 0 "Qwen2 with num_key_value_heads null trains"
expect_in "$out" "llama: $T/q.json: 4 heads on 4 key/value heads" "num_key_value_heads null: as many as the heads"

# refused: exit code 2 before the first step, the message names the file and the field
refused() { # WHAT MESSAGE MEMBERS...
    local what=$1 msg=$2
    shift 2
    llama_config bad.json 4 2 "$@"
    run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.config="$T/bad.json"
    expect_rc 2 "$what"
    expect_not_in "$out" "step 1/" "$what: fails before the first step"
    expect_in "$err" "llama: error: $T/bad.json: field \"$msg" "$what: the message"
}
refused "an unknown field" 'num_experts": not implemented by the llama task' '"num_experts": 8'
refused "a rope_scaling type" 'rope_scaling.rope_type": "yarn" is not implemented' \
    '"rope_scaling": {"rope_type": "yarn", "factor": 4.0}'
refused "Mistral's sliding window" 'sliding_window": sliding-window attention is not implemented' \
    '"model_type": "mistral"' '"sliding_window": 4096'
refused "Qwen2's sliding window turned on" 'sliding_window": sliding-window attention is not implemented' \
    '"model_type": "qwen2"' '"sliding_window": 4096' '"use_sliding_window": true'
refused "another activation" 'hidden_act": "gelu" is not implemented' '"hidden_act": "gelu"'
refused "another model type" 'model_type": "gemma" is not implemented' '"model_type": "gemma"'
refused "a head_dim of its own" 'head_dim": only hidden_size / num_attention_heads' '"head_dim": 16'
refused "dropout" 'attention_dropout": dropout is not implemented' '"attention_dropout": 0.1'
refused "interleaved RoPE" 'rope_interleaved": interleaved rotary pairs' '"rope_interleaved": true'
refused "a string for a count" 'num_hidden_layers": expected a number' '"num_hidden_layers": "2"'
refused "Mistral without sliding_window" 'sliding_window": missing, and MistralConfig'"'"'s default is 4096' \
    '"model_type": "mistral"'
# numbers no double holds, and initial weights no model starts from: refused before any weight is drawn
refused "initializer_range = 1e400" 'initializer_range": is beyond the range of a double' '"initializer_range": 1e400'
refused "initializer_range = 2" 'initializer_range": the standard deviation of the initial weights must be in [0, 1]' \
    '"initializer_range": 2'
refused "initializer_range = -1e400" 'initializer_range": is beyond the range of a double' '"initializer_range": -1e400'
refused "rope_theta = 1e999" 'rope_theta": is beyond the range of a double' '"rope_theta": 1e999'
llama_config bad.json 6 4
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.config="$T/bad.json"
expect_rc 2 "kv heads that do not divide the heads"
expect_in "$err" "num_attention_heads = 6 is not a multiple of num_key_value_heads = 4 ($T/bad.json)" "the GQA message"
printf '{"model_type": "llama",' >"$T/bad.json"
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.config="$T/bad.json"
expect_rc 2 "malformed JSON"
expect_in "$err" "$T/bad.json: not valid JSON" "malformed JSON: the message"
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.size=llama-70b
expect_rc 2 "an unknown size"
expect_in "$err" "[task] size = llama-70b is not a llama size; use tiny, smollm2-135m, smollm2-360m, qwen2.5-0.5b or llama-3.2-1b" "the sizes"
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.n_head=4
expect_rc 2 "a GPT-2 key"
expect_in "$err" "[task] n_head is a GPT-2 key" "the GPT-2 key's message"
done_checks
