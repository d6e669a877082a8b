# The FULL_STATE_DICT checkpoint of a BLOOM run is a BloomForCausalLM model.safetensors: HF's names
# and layouts (nn.Linear weights [out, in], query_key_value [3C, C] laid out per head, no
# lm_head.weight: it is tied to word_embeddings), F32.  The run starts from the PyTorch BLOOM's
# random weights (attention scores of order 1, so a q/k/v layout slip on saving would show).  It loads back into the task (init_weights)
# and into the PyTorch BLOOM with the same outputs (logits within 1e-4) -- also on 2 ranks with
# cpu_ram_efficient_loading, where only rank 0 reads it -- and loads the same when saved without the
# "transformer." prefix, as the Hub's bloom files are.
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/transformer/checkpoint_lib.sh"
corpus
$TORCH_BLOOM init "$T/w.safetensors" --n_layer 2 --n_head 6 --hidden_size 48 --vocab_size 257 --seed 11 \
    >/dev/null && pass || fail "bloom_torch.py init"
bloom_job job.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = BloomBlock" \
    "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
size = tiny
n_layer = 2
hidden_size = 48
n_head = 6
max_length = 32
data = $T/corpus.txt
per_device_train_batch_size = 4
learning_rate = 3e-3
EOF2
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 2 --set task.max_steps=6 --set task.output_dir="$T/train" \
    --set task.init_weights="$T/w.safetensors"
expect_rc 0 "2 ranks train 6 steps from the PyTorch BLOOM's weights"
ck="$T/train/checkpoint-6/model.safetensors"
names=$(/usr/bin/python3 $SRC/tests/interop/read_safetensors.py "$ck" | awk '{print $1, $2, $3}')
expect_eq "$(wc -l <<<"$names")" 29 "tensors in model.safetensors (3 + 2 x 12 + 2)"
expect_in "$names" "transformer.word_embeddings.weight F32 257,48" "word_embeddings [V, C] (the byte tokenizer's 257)"
expect_in "$names" "transformer.word_embeddings_layernorm.weight F32 48" "word_embeddings_layernorm"
expect_in "$names" "transformer.h.1.self_attention.query_key_value.weight F32 144,48" "query_key_value [3C, C]"
expect_in "$names" "transformer.h.1.self_attention.query_key_value.bias F32 144" "query_key_value bias [3C]"
expect_in "$names" "transformer.h.0.mlp.dense_h_to_4h.weight F32 192,48" "dense_h_to_4h [4C, C]"
expect_in "$names" "transformer.h.0.mlp.dense_4h_to_h.weight F32 48,192" "dense_4h_to_h [C, 4C]"
expect_in "$names" "transformer.h.0.post_attention_layernorm.bias F32 48" "post_attention_layernorm"
expect_in "$names" "transformer.ln_f.bias F32 48" "ln_f"
expect_not_in "$names" "lm_head" "lm_head.weight is tied, not saved"

# load it into the task and into torch: same logits
load_back "$ck" "$TORCH_BLOOM" 6
# torch's own float32 logits from the checkpoint (bloom_torch.py logits) against the task's
$TORCH_BLOOM logits "$ck" --n_head 6 --ids "$T/dump.safetensors" --out "$T/tl.safetensors" >/dev/null && pass ||
    fail "bloom_torch.py logits from the checkpoint"
d=$(PYTHONPATH="$SRC/tests/gpt2" /usr/bin/python3 - "$T/dump.safetensors" "$T/tl.safetensors" <<'PY'
import sys, numpy as np, gpt2_torch as g
c, t = g.read_safetensors(sys.argv[1])["logits"], g.read_safetensors(sys.argv[2])["logits"]
r = float(np.abs(c - t).max() / np.abs(t).max())
print(f"{r:.3e}", "OK" if r <= 1e-4 else "FAIL")
PY
)
expect_eq "${d#* }" OK "torch float32 logits from the checkpoint vs the task's (relative difference ${d% *})"
done_checks
