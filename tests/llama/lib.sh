# Shared by the Llama task's tests: GPT-2's test helpers (tests/gpt2/lib.sh: the integration-test
# helpers, corpus, result) plus a job-file writer for models/llama, HF config.json writers and the
# PyTorch reference.
. "$(dirname "$0")/../gpt2/lib.sh"
if [ ! -f "$BUILD/examples/llama.so" ]; then
    echo "FAIL: no Llama task at $BUILD/examples/llama.so; build the whole tree (cmake --build $BUILD)" >&2
    exit 1
fi
TORCH_LLAMA="torch_py $SRC/tests/llama/llama_torch.py"

# llama_job FILE [accelerate key lines...] < [task] lines: a job training models/llama with the
# torch and accelerate plugins, by default FULL_SHARD with one unit per LlamaDecoderLayer
llama_job() {
    local f=$1
    shift
    [ $# -gt 0 ] || set -- "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = LlamaDecoderLayer"
    {
        printf '[shardrun]\ntask = %s\nplugins = torch,accelerate\n\n[accelerate]\n' "$BUILD/examples/llama.so"
        printf '%s\n' "$@"
        printf '\n[task]\n'
        cat
    } >"$T/$f"
}

# llama_config FILE HEADS KV_HEADS [extra JSON members...]: a small HF config.json (2 layers,
# hidden 48 unless an extra member says otherwise, intermediate 72, untied head, the test
# tokenizer's 257 tokens: a missing vocab_size would be LlamaConfig's 32000)
llama_config() {
    local f=$1 heads=$2 kv=$3
    shift 3
    local extra=""
    for m in "$@"; do extra="$extra, $m"; done
    cat >"$T/$f" <<EOF2
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 2,
 "num_attention_heads": $heads, "num_key_value_heads": $kv, "hidden_size": 48, "intermediate_size": 72,
 "hidden_act": "silu", "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "tie_word_embeddings": false,
 "attention_bias": false, "mlp_bias": false, "max_position_embeddings": 2048, "vocab_size": 257,
 "torch_dtype": "float32"$extra}
EOF2
    # later members win in both readers (Python's json and the task's), so extra ones override
}
