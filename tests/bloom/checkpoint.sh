# The FULL_STATE_DICT checkpoint of a BLOOM run is a BloomForCausalLM model.safetensors: HF's names
# and layouts (nn.Linear weights [out, in], query_key_value [3C, C] laid out per head, no
# lm_head.weight: it is tied to word_embeddings), F32.  The run starts from the PyTorch BLOOM's
# random weights (attention scores of order 1, so a q/k/v layout slip on saving would show).  It loads back into the task (init_weights)
# and into the PyTorch BLOOM with the same outputs (logits within 1e-4) -- also on 2 ranks with
# cpu_ram_efficient_loading, where only rank 0 reads it -- and loads the same when saved without the
# "transformer." prefix, as the Hub's bloom files are.
. "$(dirname "$0")/lib.sh"
corpus
$TORCH_BLOOM init "$T/w.safetensors" --n_layer 2 --n_head 6 --hidden_size 48 --vocab_size 257 --seed 11 \
    >/dev/null && pass || fail "bloom_torch.py init"
bloom_job b.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = BloomBlock" \
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
run "$SHARDRUN" "$T/b.ini" --nproc-per-node 2 --set task.max_steps=6 --set task.output_dir="$T/train" \
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
gen() { # NAME WEIGHTS: one step at learning rate 0 from WEIGHTS, dumping the first micro-batch
    rm -f "$T/$1.safetensors"
    run "$SHARDRUN" "$T/b.ini" --nproc-per-node 1 --set task.max_steps=1 --set task.init_weights="$2" \
        --set task.dump="$T/$1.safetensors" --set task.learning_rate=0
    expect_rc 0 "the task loads $2"
}
gen dump "$ck"
r=$($TORCH_BLOOM check "$T/dump.safetensors" "$ck" --n_head 6 --tol 1e-4 2>&1) && pass || fail "task vs torch from the checkpoint: $r"
echo "checkpoint -> task and torch: $(tail -1 <<<"$r")"
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
# 2 ranks with cpu_ram_efficient_loading: only rank 0 reads the file (all its tensor bytes), and
# rank 0's first micro-batch, computed from the broadcast weights, agrees with torch
full=$(/usr/bin/python3 - "$ck" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    h = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
h.pop("__metadata__", None)
print(sum(v["data_offsets"][1] - v["data_offsets"][0] for v in h.values()))
PY
)
rm -f "$T/dump2.safetensors"
run "$SHARDRUN" "$T/b.ini" --nproc-per-node 2 --set task.max_steps=1 --set task.init_weights="$ck" \
    --set task.dump="$T/dump2.safetensors" --set task.learning_rate=0 \
    --set accelerate.fsdp.sync_module_states=true --set accelerate.fsdp.cpu_ram_efficient_loading=true
expect_rc 0 "2 ranks load the checkpoint with cpu_ram_efficient_loading"
reads=$(grep -o '"init_weights_bytes_read": [0-9]*' <<<"$out" | sed 's/.*: //' | tr '\n' ' ')
expect_eq "$reads" "$full 0 " "only rank 0 reads the weights (bytes read per rank: $reads)"
r=$($TORCH_BLOOM check "$T/dump2.safetensors" "$ck" --n_head 6 --tol 1e-4 2>&1) && pass || fail "2-rank load vs torch: $r"

# the Hub's layout: no "transformer." prefix
/usr/bin/python3 - "$ck" "$T/hubw.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n]); h.pop("__metadata__", None)
h = {k.split(".", 1)[1] if k.startswith("transformer.") else k: v for k, v in h.items()}
hdr = json.dumps(h).encode(); hdr += b" " * (-len(hdr) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(hdr)) + hdr + raw[8 + n:])
PY
gen hub "$T/hubw.safetensors"
expect_in "$err" "found without their first name component" "the prefix-less names are reported"
cmp -s "$T/dump.safetensors" "$T/hub.safetensors" && pass || fail "the prefix-less checkpoint gives other logits"
done_checks
