# Llama in C against Llama in PyTorch (tests/llama/llama_torch.py, HF's LlamaForCausalLM math and
# names), from the same random weights exchanged through safetensors, both configured by the same HF
# config.json (`[task] config`): the first micro-batch's logits and loss (the task's `dump`) and every
# parameter's gradient (one AdamW step with beta1 = 0 leaves exp_avg = the gradient in the FULL
# checkpoint's optimizer.safetensors) agree within 1e-4 of each tensor's largest value.
# Head counts: 4 query heads on 4, 2 and 1 key/value heads (MHA, GQA, MQA), 6 on 3 with Llama 3's
# rope_scaling (llama3) and a tied head, 6 on 2 as a Qwen2 config (q/k/v biases) and 4 on 2 with
# attention_bias and mlp_bias (every bias).  The batch mixes padded and truncated samples, and its
# 100 positions span two of the attention's 64-query blocks; 4/2 and 6/3 also run on 2 ranks
# (FULL_SHARD per LlamaDecoderLayer; logits and loss of rank 0's micro-batch).
. "$(dirname "$0")/lib.sh"
/usr/bin/python3 - "$T/mixed.txt" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(16):  # short ones are padded, long ones truncated at max_length 100
        f.write(("Paragraph %d says something short." % i) if i % 2 else ("A much longer paragraph %d " % i) * 6)
        f.write("\n\n")
PY
R3='"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64}'
cases=(
    "mha 4 4 1"
    "gqa 4 2 1,2"
    "mqa 4 1 1"
    "llama3 6 3 1,2|$R3|\"tie_word_embeddings\": true|\"rope_theta\": 500000.0"
    "qwen2 6 2 1|\"model_type\": \"qwen2\"|\"rms_norm_eps\": 1e-06|\"sliding_window\": 4096|\"use_sliding_window\": false"
    "biases 4 2 1|\"attention_bias\": true|\"mlp_bias\": true"
)
for c in "${cases[@]}"; do
    IFS='|' read -r head rest <<<"$c"
    read -r name heads kv ranks <<<"$head"
    extras=()
    IFS='|' read -r -a extras <<<"$rest"
    llama_config "$name.json" "$heads" "$kv" "${extras[@]}"
    w="$T/w-$name.safetensors"
    $TORCH_LLAMA init "$w" --config "$T/$name.json" --vocab_size 300 --seed "$heads$kv" >/dev/null && pass ||
        fail "llama_torch.py init ($name)"
    llama_job "$name.ini" "fsdp.sharding_strategy = NO_SHARD" "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
config = $T/$name.json
vocab_size = 300
max_length = 100
min_chars = 10
data = $T/mixed.txt
init_weights = $w
max_steps = 1
per_device_train_batch_size = 6
adam_beta1 = 0
max_grad_norm = 0
weight_decay = 0
dump = $T/dump.safetensors
output_dir = $T/out
EOF2
    for n in ${ranks//,/ }; do
        rm -rf "$T/out" "$T/dump.safetensors"
        extra=()
        [ "$n" -eq 2 ] && extra=(--set accelerate.fsdp.sharding_strategy=FULL_SHARD --set accelerate.fsdp.auto_wrap_policy=TRANSFORMER_BASED_WRAP --set accelerate.fsdp.transformer_layer_cls_to_wrap=LlamaDecoderLayer)
        run "$SHARDRUN" "$T/$name.ini" --nproc-per-node "$n" "${extra[@]}"
        expect_rc 0 "$name ($heads heads, $kv kv heads): one step on $n rank(s)"
        [ -f "$T/dump.safetensors" ] && pass || fail "$name, $n rank(s): the task wrote its dump"
        grads=()
        [ "$n" -eq 1 ] && grads=(--grads "$T/out/checkpoint-1/optimizer.safetensors")
        r=$($TORCH_LLAMA check "$T/dump.safetensors" "$w" --config "$T/$name.json" "${grads[@]}" --tol 1e-4 2>&1) && pass ||
            fail "C vs torch, $name on $n rank(s): $r"
        echo "$name ($heads heads, $kv kv heads), $n rank(s): $(tail -1 <<<"$r")"
        [ "$n" -eq 1 ] && grep -E "^(logits|loss|model.embed_tokens.weight.grad|lm_head.weight.grad|model.layers.0.self_attn.(q|k)_proj.(weight|bias).grad) " <<<"$r"
    done
done
done_checks
