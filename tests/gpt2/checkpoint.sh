# The FULL_STATE_DICT checkpoint of a GPT-2 run is a GPT-2 model.safetensors: HF's names and
# layouts (Conv1D weights [in, out], no lm_head.weight: it is tied to wte), F32.  It loads back
# into the task (init_weights) and into the PyTorch GPT-2 with the same outputs (logits within
# 1e-4) -- also on 2 ranks with cpu_ram_efficient_loading, where only rank 0 reads it -- and loads
# the same when saved without the "transformer." prefix, as the Hub's gpt2 is.
. "$(dirname "$0")/lib.sh"
corpus
gpt2_job g.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = GPT2Block" \
    "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
size = tiny
n_layer = 2
n_embd = 64
n_head = 4
max_length = 32
data = $T/corpus.txt
per_device_train_batch_size = 4
learning_rate = 3e-3
EOF2
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 2 --set task.max_steps=6 --set task.output_dir="$T/train"
expect_rc 0 "2 ranks train 6 steps"
ck="$T/train/checkpoint-6/model.safetensors"
names=$(/usr/bin/python3 $SRC/tests/interop/read_safetensors.py "$ck" | awk '{print $1, $2, $3}')
expect_eq "$(wc -l <<<"$names")" 28 "tensors in model.safetensors (2 + 2 x 12 + 2)"
expect_in "$names" "transformer.wte.weight F32 257,64" "wte [V, C]"
expect_in "$names" "transformer.wpe.weight F32 256,64" "wpe [P, C]"
expect_in "$names" "transformer.h.1.attn.c_attn.weight F32 64,192" "c_attn is a Conv1D [C, 3C]"
expect_in "$names" "transformer.h.0.mlp.c_proj.weight F32 256,64" "mlp.c_proj is a Conv1D [4C, C]"
expect_in "$names" "transformer.ln_f.bias F32 64" "ln_f"
expect_not_in "$names" "lm_head" "lm_head.weight is tied, not saved"

# load it into the task and into torch: same logits
gen() { # NAME WEIGHTS: one step at learning rate 0 from WEIGHTS, dumping the first micro-batch
    rm -f "$T/$1.safetensors"
    run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set task.max_steps=1 --set task.init_weights="$2" \
        --set task.dump="$T/$1.safetensors" --set task.learning_rate=0
    expect_rc 0 "the task loads $2"
}
gen dump "$ck"
r=$($TORCH_GPT2 check "$T/dump.safetensors" "$ck" --n_head 4 --tol 1e-4 2>&1) && pass || fail "task vs torch from the checkpoint: $r"
echo "checkpoint -> task and torch: $(tail -1 <<<"$r")"
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
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 2 --set task.max_steps=1 --set task.init_weights="$ck" \
    --set task.dump="$T/dump2.safetensors" --set task.learning_rate=0 \
    --set accelerate.fsdp.sync_module_states=true --set accelerate.fsdp.cpu_ram_efficient_loading=true
expect_rc 0 "2 ranks load the checkpoint with cpu_ram_efficient_loading"
reads=$(grep -o '"init_weights_bytes_read": [0-9]*' <<<"$out" | sed 's/.*: //' | tr '\n' ' ')
expect_eq "$reads" "$full 0 " "only rank 0 reads the weights (bytes read per rank: $reads)"
r=$($TORCH_GPT2 check "$T/dump2.safetensors" "$ck" --n_head 4 --tol 1e-4 2>&1) && pass || fail "2-rank load vs torch: $r"

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
