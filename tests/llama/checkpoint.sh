# An HF-layout Llama checkpoint round trip.  Random weights with HF's names and shapes, written by the
# PyTorch reference (llama_torch.py init: 6 heads on 2 key/value heads, untied lm_head, Llama 3's
# rope_scaling), load as init_weights; 2 ranks under FULL_SHARD train 6 steps with the losses and
# gradient norms (within 1e-5) and the final parameters (within 1e-4) of 1 rank without sharding (the
# same global batch); the FULL checkpoint is a
# LlamaForCausalLM model.safetensors (HF's names and shapes, F32), which loads back into the task and
# into the PyTorch reference with the same logits (the reference's float64 and float32 logits within
# 1e-4).  The same with tie_word_embeddings: lm_head.weight is neither declared nor saved.
. "$(dirname "$0")/lib.sh"
corpus
PCMP="/usr/bin/python3 $SRC/tests/fsdp/compare_params.py"
R3='"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 16}'
for tie in false true; do
    llama_config c.json 6 2 "$R3" "\"tie_word_embeddings\": $tie"
    rm -rf "$T/fs2" "$T/ns1" "$T/back"
    $TORCH_LLAMA init "$T/w.safetensors" --config "$T/c.json" --vocab_size 257 --seed 11 >/dev/null && pass ||
        fail "llama_torch.py init (tie $tie)"
    llama_job job.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = LlamaDecoderLayer" \
        "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
config = $T/c.json
max_length = 32
data = $T/corpus.txt
learning_rate = 3e-3
logging_steps = 1
EOF2
    run "$SHARDRUN" "$T/job.ini" --nproc-per-node 2 --set task.max_steps=6 --set task.output_dir="$T/fs2" \
        --set task.per_device_train_batch_size=2 --set task.init_weights="$T/w.safetensors"
    expect_rc 0 "tie $tie: 2 ranks (FULL_SHARD) train 6 steps from the PyTorch Llama's weights"
    expect_in "$out" "$T/c.json: 6 heads on 2 key/value heads" "tie $tie: the config.json's heads"
    run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.max_steps=6 --set task.output_dir="$T/ns1" \
        --set task.per_device_train_batch_size=4 --set task.init_weights="$T/w.safetensors" \
        --set accelerate.fsdp.sharding_strategy=NO_SHARD
    expect_rc 0 "tie $tie: 1 rank trains the same 6 steps"
    ck="$T/fs2/checkpoint-6/model.safetensors"
    r=$(/usr/bin/python3 $SRC/tests/fsdp/compare_logs.py "$T/fs2/train_log.jsonl" "$T/ns1/train_log.jsonl" 1e-5) &&
        pass || fail "tie $tie: 2 ranks FULL_SHARD log other losses or gradient norms than 1 rank: $r"
    # the parameters within 1e-4: the two runs' GEMMs have other shapes (2 and 4 samples), and AdamW
    # turns those rounding differences in the gradients of rarely seen embedding rows into ~1e-5
    p=$($PCMP 1e-4 1e-4 "$T/ns1/checkpoint-6/model.safetensors" "$ck") && pass ||
        fail "tie $tie: 2 ranks FULL_SHARD end with other parameters than 1 rank: $p"
    echo "tie $tie: 2 ranks FULL_SHARD vs 1 rank over 6 steps: $r; $(tail -1 <<<"$p")"

    names=$(/usr/bin/python3 $SRC/tests/interop/read_safetensors.py "$ck" | awk '{print $1, $2, $3}')
    want=$((1 + 2 * 9 + 1))
    [ $tie = false ] && want=$((want + 1))
    expect_eq "$(wc -l <<<"$names")" "$want" "tie $tie: tensors in model.safetensors"
    expect_in "$names" "model.embed_tokens.weight F32 257,48" "embed_tokens [V, C]"
    expect_in "$names" "model.layers.1.self_attn.q_proj.weight F32 48,48" "q_proj [C, C]"
    expect_in "$names" "model.layers.1.self_attn.k_proj.weight F32 16,48" "k_proj [KV * hd, C]"
    expect_in "$names" "model.layers.0.self_attn.v_proj.weight F32 16,48" "v_proj [KV * hd, C]"
    expect_in "$names" "model.layers.0.self_attn.o_proj.weight F32 48,48" "o_proj [C, C]"
    expect_in "$names" "model.layers.0.mlp.gate_proj.weight F32 72,48" "gate_proj [F, C]"
    expect_in "$names" "model.layers.0.mlp.up_proj.weight F32 72,48" "up_proj [F, C]"
    expect_in "$names" "model.layers.0.mlp.down_proj.weight F32 48,72" "down_proj [C, F]"
    expect_in "$names" "model.layers.1.input_layernorm.weight F32 48" "input_layernorm"
    expect_in "$names" "model.layers.1.post_attention_layernorm.weight F32 48" "post_attention_layernorm"
    expect_in "$names" "model.norm.weight F32 48" "model.norm"
    expect_not_in "$names" "bias" "no biases"
    if [ $tie = false ]; then
        expect_in "$names" "lm_head.weight F32 257,48" "an untied lm_head is saved"
    else
        expect_not_in "$names" "lm_head" "a tied lm_head is not saved"
    fi

    # the checkpoint loads back into the task (one step at learning rate 0, dumping the first
    # micro-batch) and into the reference: the same logits
    rm -f "$T/dump.safetensors"
    run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.max_steps=1 --set task.init_weights="$ck" \
        --set task.dump="$T/dump.safetensors" --set task.learning_rate=0 --set task.output_dir="$T/back"
    expect_rc 0 "tie $tie: the task loads its checkpoint"
    r=$($TORCH_LLAMA check "$T/dump.safetensors" "$ck" --config "$T/c.json" --tol 1e-4 2>&1) && pass ||
        fail "tie $tie: task vs torch from the checkpoint: $r"
    echo "tie $tie: checkpoint -> task and torch: $(tail -1 <<<"$r")"
    $TORCH_LLAMA logits "$ck" --config "$T/c.json" --ids "$T/dump.safetensors" --out "$T/tl.safetensors" >/dev/null &&
        pass || fail "llama_torch.py logits from the checkpoint"
    d=$(PYTHONPATH="$SRC/tests/gpt2" /usr/bin/python3 - "$T/dump.safetensors" "$T/tl.safetensors" <<'PY'
import sys, numpy as np, gpt2_torch as g
c, t = g.read_safetensors(sys.argv[1])["logits"], g.read_safetensors(sys.argv[2])["logits"]
r = float(np.abs(c - t).max() / np.abs(t).max())
print(f"{r:.3e}", "OK" if r <= 1e-4 else "FAIL")
PY
)
    expect_eq "${d#* }" OK "tie $tie: torch float32 logits from the checkpoint vs the task's (relative difference ${d% *})"
done
done_checks
