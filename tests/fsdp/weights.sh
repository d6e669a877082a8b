# Starting from a weights file (init_weights): the parameters of a FULL checkpoint load back
# exactly at any world size; with cpu_ram_efficient_loading only rank 0 reads the file (the others
# read 0 bytes), without it every rank reads only its shard's part; bf16 files are converted;
# missing and unknown tensors are reported; a shape mismatch, a missing file and a NaN or infinite
# value stop the run before the first step with exit code 2 (bad input).
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
toy_job toy.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = MLPBlock,MixerBlock" \
    "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF
samples = 240
max_steps = 6
per_device_train_batch_size = 4
learning_rate = 1e-2
logging_steps = 1
EOF
ranks_field() { grep -o "\"$1\": [^,}]*" <<<"$out" | sed 's/.*: //' | tr '\n' ' '; }
close() { $PY -c "import sys; a,b,r=map(float,sys.argv[1:]); sys.exit(0 if abs(a-b) <= r*abs(b) else 1)" "$@"; }

# the source: 6 trained steps, saved FULL
run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$T/src"
expect_rc 0 "source run"
W=$T/src/checkpoint-6/model.safetensors
src_sum=$(result param_sum) src_sq=$(result param_sumsq)
P=$(result model_params)
full_bytes=$((4 * P))

# learning rate 0: the parameters after one step are the loaded ones
load() { # NPROC RAM_EFFICIENT FILE [args...]
    local n=$1 eff=$2 f=$3
    shift 3
    run "$SHARDRUN" "$T/toy.ini" --nproc-per-node "$n" --set task.init_weights="$f" --set task.learning_rate=0 \
        --set task.max_steps=1 --set accelerate.fsdp.cpu_ram_efficient_loading="$eff" "$@"
}
load 2 true "$W"
expect_rc 0 "load at 2 ranks, cpu_ram_efficient_loading"
expect_in "$out" "initial weights from $W" "the log names the weights file"
expect_eq "$(result param_sum) $(result param_sumsq)" "$src_sum $src_sq" "2 ranks: the loaded parameters are the saved ones, bit for bit"
expect_eq "$(ranks_field init_weights_bytes_read)" "$full_bytes 0 " "cpu_ram_efficient_loading: rank 0 read all $full_bytes bytes, rank 1 none"

load 4 true "$W"
expect_eq "$(ranks_field init_weights_bytes_read)" "$full_bytes 0 0 0 " "4 ranks, cpu_ram_efficient_loading: only rank 0 reads"
close "$(result param_sumsq)" "$src_sq" 1e-6 && pass || fail "4 ranks (efficient): parameters match ($(result param_sumsq) vs $src_sq)"

load 4 false "$W" --set accelerate.fsdp.sync_module_states=false
expect_rc 0 "load at 4 ranks, every rank reading"
read_bytes=$(ranks_field init_weights_bytes_read)
total=0 zero=0
for b in $read_bytes; do total=$((total + b)); [ "$b" -eq 0 ] && zero=$((zero + 1)); done
expect_eq "$total/$zero" "$full_bytes/0" "without cpu_ram_efficient_loading each rank reads its shard's part (bytes: $read_bytes)"
close "$(result param_sumsq)" "$src_sq" 1e-6 && pass || fail "4 ranks (every rank reading): parameters match"

load 1 true "$W"
expect_eq "$(ranks_field init_weights_bytes_read)" "$full_bytes " "1 rank reads the whole file"
close "$(result param_sumsq)" "$src_sq" 1e-6 && pass || fail "1 rank: parameters match"

# derived files, written by an independent writer (numpy): bf16; one block missing + an extra
# tensor; a tensor with the wrong shape
$PY - "$W" "$T" <<'PYEOF'
import json, struct, sys
import numpy as np
src, out = sys.argv[1], sys.argv[2]
b = open(src, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
hdr = json.loads(b[8:8 + n]); hdr.pop("__metadata__", None)
t = {k: np.frombuffer(b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], "<f4").reshape(v["shape"]) for k, v in hdr.items()}
def write(path, tensors):
    h, blobs, off = {}, [], 0
    for k, (dtype, arr) in tensors.items():
        raw = arr.tobytes()
        h[k] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw); off += len(raw)
    j = json.dumps(h).encode(); j += b" " * (-len(j) % 8)
    open(path, "wb").write(struct.pack("<Q", len(j)) + j + b"".join(blobs))
bf16 = lambda a: ((a.view("<u4").astype(np.uint64) + 0x7fff + ((a.view("<u4") >> 16) & 1)) >> 16).astype("<u2")
write(out + "/bf16.safetensors", {k: ("BF16", bf16(v)) for k, v in t.items()})
write(out + "/partial.safetensors", dict({k: ("F32", v) for k, v in t.items() if not k.startswith("blocks.5.")},
                                          **{"extra.weight": ("F32", np.zeros(3, "<f4"))}))
write(out + "/wrong.safetensors", dict({k: ("F32", v) for k, v in t.items()}, **{"embed.pos": ("F32", np.zeros((4, 16), "<f4"))}))
# one NaN in a position row (row 5 of 8), one -inf in the last block's fc2 weight (in bf16 too)
nan = {k: v.copy() for k, v in t.items()}
nan["embed.pos"][5, 3] = np.nan
write(out + "/nan.safetensors", {k: ("F32", v) for k, v in nan.items()})
inf = {k: v.copy() for k, v in t.items()}
last = sorted(k for k in t if k.endswith(".weight") and t[k].ndim == 2 and k.startswith("blocks."))[-1]
inf[last][1, 2] = -np.inf
write(out + "/inf.safetensors", {k: ("BF16", bf16(v)) for k, v in inf.items()})
open(out + "/inf_name", "w").write("%s %s" % (last, list(t[last].shape)))
PYEOF

load 2 true "$T/bf16.safetensors"
expect_rc 0 "a bf16 weights file loads"
close "$(result param_sumsq)" "$src_sq" 1e-2 && pass || fail "bf16 file: parameters within bf16 rounding ($(result param_sumsq) vs $src_sq)"
expect_eq "$(ranks_field init_weights_bytes_read)" "$((2 * P)) 0 " "bf16 file: 2 bytes per parameter read"

load 2 true "$T/partial.safetensors"
expect_rc 0 "a file lacking a block still loads"
expect_in "$err" "partial.safetensors lacks blocks.5.ln.weight, blocks.5.ln.bias," "missing tensors are listed"
expect_in "$err" "start from the task's initialisers" "missing tensors: what happens to them"
expect_in "$err" "has tensors the model does not use: extra.weight" "unknown tensors are listed"

load 2 true "$T/wrong.safetensors"
expect_rc 2 "a shape mismatch is refused as bad input"
expect_in "$err" 'tensor "embed.pos" is F32 [4, 16], but the model'"'"'s parameter is [8, 16] (floating point); the file belongs to another model or size' \
    "the shape mismatch names the tensor and both shapes"
expect_not_in "$out" "step 1/" "a shape mismatch stops the run before the first step"
load 2 false "$T/none.safetensors" --set accelerate.fsdp.sync_module_states=false
expect_rc 2 "a missing weights file is refused as bad input"
expect_in "$err" "init_weights: $T/none.safetensors" "a missing weights file: the message names it"

# a NaN or an infinity anywhere in the file is refused before step 1 (exit 2), naming the tensor and
# the element, whichever rank read it: rank 0 alone (cpu_ram_efficient_loading), or each rank its
# shard (the NaN is in one rank's part only); a value no batch reaches would otherwise be trained
# around and saved in every checkpoint
for eff in true false; do
    load 2 "$eff" "$T/nan.safetensors" --set accelerate.fsdp.sync_module_states="$eff"
    expect_rc 2 "a NaN in the file (cpu_ram_efficient_loading $eff)"
    expect_in "$err" "init_weights: $T/nan.safetensors: tensor \"embed.pos\" [8, 16] holds NaN at [5, 3] (element 83)" \
        "a NaN (cpu_ram_efficient_loading $eff): the tensor and the element are named"
    expect_not_in "$out" "step 1/" "a NaN (cpu_ram_efficient_loading $eff): no step"
    expect_not_in "$err" "learning_rate" "a NaN (cpu_ram_efficient_loading $eff): nothing about the learning rate"
done
read -r inf_name inf_shape <<<"$(cat "$T/inf_name")"
load 4 false "$T/inf.safetensors" --set accelerate.fsdp.sync_module_states=false
expect_rc 2 "an infinity in a bf16 file, 4 ranks each reading its shard"
expect_in "$err" "tensor \"$inf_name\"" "an infinity: the tensor is named"
expect_in "$err" "holds -inf at [1, 2]" "an infinity: the value and the element are named"
expect_eq "$(grep -c '^\[rank.*holds -inf' <<<"$err")" 1 "an infinity: one message (rank 0's), whichever rank read it"

done_checks
