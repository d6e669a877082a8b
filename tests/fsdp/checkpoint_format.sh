# Checkpoint format versions (docs/checkpoint-format.md, "Versions"): real version-2 checkpoints of a
# small toy model (tests/fsdp/format2/: SHARDED and FULL, written by the shardrun before format 3,
# whose own hash this one no longer has; format2/README.md says how) are refused before the first
# step, exit 1, no signal, with a message that says format 2 and what to do; its advice works (the
# FULL one's model.safetensors starts a new run as init_weights); a checkpoint this shardrun writes
# says shardrun_checkpoint = 3 in every file and resumes.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
toy_job toy.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = MLPBlock" <<EOF
vocab = 8
dim = 4
seq = 4
blocks = 2
samples = 24
max_steps = 4
per_device_train_batch_size = 6
EOF
V2=$SRC/tests/fsdp/format2
for kind in sharded full; do
    cp -r "$V2/$kind" "$T/v2-$kind"
    run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$T/out-$kind" \
        --set task.resume_from_checkpoint="$T/v2-$kind"
    expect_eq "$rc" 1 "$kind, format 2: refused (exit 1)"
    echo "  $kind: $(grep -m1 'error: resume_from_checkpoint' <<<"$err" | sed 's/.*error: //')"
    expect_in "$err" "is checkpoint format 2 (\"shardrun_checkpoint\": \"2\")" "$kind, format 2: the message names the version"
    expect_in "$err" "this shardrun reads format 3 (XXH3 hashes) only" "$kind, format 2: and the one this shardrun reads"
    expect_in "$err" "resume it with the shardrun that wrote it" "$kind, format 2: how to continue that run"
    expect_in "$err" "init_weights = <a FULL_STATE_DICT checkpoint>/model.safetensors" "$kind, format 2: how to keep its weights"
    expect_not_in "$out" "step 3/" "$kind, format 2: no step was trained"
    expect_not_in "$err" "signal" "$kind, format 2: no rank crashed"
done

# gpt2_generate (built with models/gpt2) checks a checkpoint's hashes too: it refuses format 2 first
if [ -x "$BUILD/gpt2_generate" ]; then
    run "$BUILD/gpt2_generate" "$T/v2-full/model.safetensors" --prompt x
    expect_eq "$rc" 2 "gpt2_generate, format 2: refused"
    expect_in "$err" "is shardrun checkpoint format 2; this generator checks format 3 only" "gpt2_generate, format 2: says which"
fi

# the advice: a format-2 model.safetensors starts a new run
run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$T/out-init" \
    --set task.init_weights="$T/v2-full/model.safetensors"
expect_rc 0 "a format-2 model.safetensors as init_weights"

# this shardrun's own checkpoints: format 3 in every file, and they resume
for sd in SHARDED FULL; do
    run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$T/v3-$sd" --set task.max_steps=2 \
        --set accelerate.fsdp.state_dict_type=${sd}_STATE_DICT
    expect_rc 0 "$sd: training 2 steps"
    versions=$($PY - "$T/v3-$sd/checkpoint-2" <<'PYEOF'
import glob, json, struct, sys
for p in sorted(glob.glob(sys.argv[1] + "/*.safetensors")):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    print(p.rsplit("/", 1)[1], json.loads(b[8:8 + n])["__metadata__"].get("shardrun_checkpoint"))
PYEOF
)
    expect_eq "$(awk '$2 == "3"' <<<"$versions" | wc -l)" 2 "$sd: both files say shardrun_checkpoint 3 ($versions)"
    run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$T/v3r-$sd" \
        --set task.resume_from_checkpoint="$T/v3-$sd/checkpoint-2" --set accelerate.fsdp.state_dict_type=${sd}_STATE_DICT
    expect_rc 0 "$sd: a format-3 checkpoint resumes"
    expect_in "$out" "resumed from $T/v3-$sd/checkpoint-2 at step 2" "$sd: resumed at step 2"
done

done_checks
