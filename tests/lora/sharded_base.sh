# SHARDED_STATE_DICT checkpoints of a LoRA fine-tune hold the adapters (values and AdamW moments) and
# frozen_digest, a digest of the frozen base, not the base itself (docs/checkpoint-format.md):
#  - GPT-2 tiny with adapters (r 4) from init_weights on 2 ranks, 8 steps saving at 4: no shard file
#    holds a frozen unit's tensor, the files together are a fraction of the base's size, and every
#    shard file and trainer_state.json carry the same frozen_digest, the one docs/checkpoint-format.md
#    defines (computed here from the base file);
#  - resumed from checkpoint-4 on the same base, steps 5-8 log byte-identical lines and end on the
#    uninterrupted run's parameters;
#  - resumed on another base (another init_weights file; or, with the base from the seed, another
#    seed) it is refused before any step, exit 2, naming the folder, both digests and what to do;
#  - the 2-rank checkpoint resumed on 1 rank with NO_WRAP finds the same digest (it depends on no
#    world size or wrap policy) and trains on.
. "$(dirname "$0")/lib.sh"
corpus
lora_base "$T/base.safetensors"
lora_base "$T/other.safetensors" 4
gpt2_job job.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = GPT2Block" \
    "fsdp.state_dict_type = SHARDED_STATE_DICT" <<EOF2
$LORA_GPT2_TASK
max_steps = 8
save_steps = 4
per_device_train_batch_size = 4
learning_rate = 1e-2
logging_steps = 1
lora_r = 4
lora_target_modules = c_attn,c_fc
EOF2
steps() { grep -E '"step": [5-8],' "$1" | sed 's/"[a-z_]*time[a-z_]*": [0-9.e+-]*//g; s/"tokens_per_s[a-z_]*": [0-9.e+-]*//g'; }

echo "== the checkpoint: adapters and a digest of the base"
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 2 --set task.output_dir="$T/u"
expect_rc 0 "uninterrupted"
u_sum=$(result param_sum)
C="$T/u/checkpoint-4"
# every tensor of the shard files: uU.param with its moments (a trainable unit), nothing else; the
# index still names every parameter; the files' sizes against the base's; frozen_digest everywhere
r=$(torch_py - "$C" "$T/base.safetensors" <<'PY' 2>&1
import glob, json, os, struct, sys
ckpt, base = sys.argv[1], sys.argv[2]
def header(path):
    raw = open(path, "rb").read(8)
    n = struct.unpack("<Q", raw)[0]
    with open(path, "rb") as f:
        f.seek(8)
        return json.loads(f.read(n))
files = sorted(glob.glob(ckpt + "/shard-*.safetensors"))
bad, digests = [], set()
if len(files) != 2: bad.append(f"{len(files)} shard files")
for path in files:
    h = header(path)
    meta = h.pop("__metadata__")
    digests.add(meta.get("frozen_digest"))
    units = {k.split(".")[0] for k in h}
    for u in units:
        if sorted(k for k in h if k.split(".")[0] == u) != [u + ".exp_avg", u + ".exp_avg_sq", u + ".param"]:
            bad.append(f"{os.path.basename(path)}: unit {u} has {sorted(k for k in h if k.startswith(u + '.'))}")
    held = {int(u[1:]) for u in units}
    for k, v in meta.items():
        if not k.startswith("param:"): continue
        unit = int(v.split()[0])
        if ".lora_" in k and unit not in held: bad.append(f"adapter {k} is not saved")
        if ".lora_" not in k and unit in held: bad.append(f"frozen {k} is saved (unit {unit})")
state = json.load(open(ckpt + "/trainer_state.json"))["stateful_callbacks"]["shardrun"]
digests.add(state.get("frozen_digest"))
if len(digests) != 1 or None in digests: bad.append(f"frozen_digest differs or is missing: {digests}")
size, bsize = sum(os.path.getsize(f) for f in files), os.path.getsize(base)
if not size * 4 < bsize: bad.append(f"the shard files hold {size} bytes, the base {bsize}")
print("; ".join(bad) if bad else "ok " + digests.pop())
PY
)
D=${r#ok }
[ "${r%% *}" = ok ] && pass || fail "the SHARDED checkpoint: $r"
# frozen_digest as docs/checkpoint-format.md defines it, from the base file alone (every tensor of it
# is frozen; Debian's libxxhash, which the build links, for XXH3-64)
d=$(torch_py - "$T/base.safetensors" <<'PY' 2>&1
import ctypes, json, struct, sys
import numpy as np
xxh = ctypes.CDLL("libxxhash.so.0")
xxh.XXH3_64bits.restype, xxh.XXH3_64bits.argtypes = ctypes.c_uint64, [ctypes.c_char_p, ctypes.c_size_t]
def mix(x):
    x = x ^ (x >> np.uint64(30)); x = x * np.uint64(0xbf58476d1ce4e5b9)
    x = x ^ (x >> np.uint64(27)); x = x * np.uint64(0x94d049bb133111eb)
    return x ^ (x >> np.uint64(31))
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
header.pop("__metadata__", None)
total = 0
for name, t in header.items():
    assert t["dtype"] == "F32", name
    a, b = t["data_offsets"]
    bits = np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<u4").astype(np.uint64)
    h = np.uint64(xxh.XXH3_64bits(name.encode(), len(name.encode())))
    total = (total + int(mix(mix(h + np.arange(len(bits), dtype=np.uint64)) ^ bits).sum(dtype=np.uint64))) % 2**64
print("%016x" % total)
PY
)
expect_eq "$d" "$D" "frozen_digest is the documented digest of the base file"

echo "== resumed on the same base"
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 2 --set task.output_dir="$T/r" --set task.resume_from_checkpoint="$C"
expect_rc 0 "resumed"
expect_in "$out" "resumed from $C at step 4" "resumed at step 4"
expect_in "$out" "the frozen base ($T/base.safetensors) is the checkpoint's: frozen_digest $D" "the digests agree"
expect_eq "$(result param_sum)" "$u_sum" "the resumed run ends on the same parameters (param_sum)"
a=$(steps "$T/r/train_log.jsonl")
b=$(steps "$T/u/train_log.jsonl")
[ -n "$a" ] && [ "$a" == "$b" ] && pass || fail "steps 5-8 differ: $(diff <(echo "$a") <(echo "$b") | head -4)"

echo "== resumed on another base: refused"
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 2 --set task.output_dir="$T/o" --set task.resume_from_checkpoint="$C" \
    --set task.init_weights="$T/other.safetensors"
expect_rc 2 "another init_weights"
expect_in "$err" "resume_from_checkpoint: $C was saved without its frozen base" "the folder is named"
expect_in "$err" "frozen_digest $D, the digest of the frozen base they were trained on" "the checkpoint's digest"
expect_in "$err" "from init_weights = $T/other.safetensors" "where this run's base came from"
expect_in "$err" "the same init_weights file and model settings as that run" "what to do"
expect_not_in "$out" "step 5/" "nothing was trained"

echo "== resumed on another world size and wrap policy"
sed -e 's/^fsdp.auto_wrap_policy = .*/fsdp.auto_wrap_policy = NO_WRAP/' -e '/transformer_layer_cls_to_wrap/d' \
    "$T/job.ini" >"$T/nowrap.ini"
run "$SHARDRUN" "$T/nowrap.ini" --nproc-per-node 1 --set task.output_dir="$T/w1" --set task.resume_from_checkpoint="$C"
expect_rc 0 "2-rank checkpoint resumed on 1 rank, NO_WRAP"
expect_in "$out" "the frozen base ($T/base.safetensors) is the checkpoint's: frozen_digest $D" "the same digest on 1 rank"
grep -q '"step": 8,' "$T/w1/train_log.jsonl" 2>/dev/null && pass || fail "the 1-rank run did not reach step 8"

echo "== the base from the seed"
sed '/^init_weights/d' "$T/job.ini" >"$T/seed.ini"
run "$SHARDRUN" "$T/seed.ini" --nproc-per-node 2 --set task.output_dir="$T/s" \
    --set task.max_steps=2 --set task.save_steps=2
expect_rc 0 "a LoRA run on a base from the seed"
run "$SHARDRUN" "$T/seed.ini" --nproc-per-node 2 --set task.output_dir="$T/s" \
    --set task.max_steps=3 --set task.save_steps=2 --set task.seed=5 --set task.resume_from_checkpoint=true
expect_rc 2 "resumed with another seed"
expect_in "$err" "from the task's initialisers with seed 5 (no init_weights)" "the seed is named"
expect_in "$err" "its seed (42)" "the checkpoint's seed is named"
run "$SHARDRUN" "$T/seed.ini" --nproc-per-node 2 --set task.output_dir="$T/s" \
    --set task.max_steps=3 --set task.save_steps=2 --set task.resume_from_checkpoint=true
expect_rc 0 "resumed with the same seed"
expect_in "$out" "the frozen base (the task's initialisers) is the checkpoint's" "the digests agree"
done_checks
