# The load-back checks of a decoder task's FULL checkpoint (tests/gpt2/checkpoint.sh,
# tests/bloom/checkpoint.sh), sourced after the family's lib.sh.  `load_back CK "REF" HEADS`, with
# the job $T/job.ini and REF the family's PyTorch reference (e.g. "$TORCH_GPT2"): CK loads into the
# task (init_weights) and into the reference with the same outputs (logits within 1e-4; the task's
# first micro-batch is left in $T/dump.safetensors); on 2 ranks with cpu_ram_efficient_loading only
# rank 0 reads it; and it loads the same when saved without the "transformer." prefix, as the Hub's
# files are.

gen() { # NAME WEIGHTS: one step at learning rate 0 from WEIGHTS, dumping the first micro-batch
    rm -f "$T/$1.safetensors"
    run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.max_steps=1 --set task.init_weights="$2" \
        --set task.dump="$T/$1.safetensors" --set task.learning_rate=0
    expect_rc 0 "the task loads $2"
}

load_back() { # CK REF HEADS
    local ck=$1 ref=$2 heads=$3 r full reads
    gen dump "$ck"
    r=$($ref check "$T/dump.safetensors" "$ck" --n_head "$heads" --tol 1e-4 2>&1) && pass ||
        fail "task vs torch from the checkpoint: $r"
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
    run "$SHARDRUN" "$T/job.ini" --nproc-per-node 2 --set task.max_steps=1 --set task.init_weights="$ck" \
        --set task.dump="$T/dump2.safetensors" --set task.learning_rate=0 \
        --set accelerate.fsdp.sync_module_states=true --set accelerate.fsdp.cpu_ram_efficient_loading=true
    expect_rc 0 "2 ranks load the checkpoint with cpu_ram_efficient_loading"
    reads=$(grep -o '"init_weights_bytes_read": [0-9]*' <<<"$out" | sed 's/.*: //' | tr '\n' ' ')
    expect_eq "$reads" "$full 0 " "only rank 0 reads the weights (bytes read per rank: $reads)"
    r=$($ref check "$T/dump2.safetensors" "$ck" --n_head "$heads" --tol 1e-4 2>&1) && pass ||
        fail "2-rank load vs torch: $r"

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
}
