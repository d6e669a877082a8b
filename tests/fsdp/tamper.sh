# Checkpoints prove what they are: real checkpoints of the toy model, damaged on purpose, are
# refused before the first step (exit 1, no signal) with a message naming the file and what
# differs -- SHARDED: shard files swapped, shard 0 copied over shard 1, shard 1 of step 8 in
# checkpoint-4, a shard of another run, a flipped byte in a weight, bytes appended, a changed
# index, trainer_state.json of another step, a checkpoint of an older shardrun; FULL: a flipped
# byte and appended bytes in model.safetensors, optimizer.safetensors of another checkpoint; an
# 8-block checkpoint resumed into a 6-block or a 10-block model (exit 2: the job names another
# model).  An untouched copy resumes.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
toy_job toy.ini <<EOF
samples = 240
max_steps = 8
learning_rate = 1e-2
logging_steps = 1
save_steps = 4
per_device_train_batch_size = 6
EOF
train() { # NAME [args...]: 2 ranks into $T/NAME, must succeed
    local name=$1
    shift
    run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$T/$name" "$@"
    expect_rc 0 "training $name"
}
SH=--set=accelerate.fsdp.state_dict_type=SHARDED_STATE_DICT
FULL=--set=accelerate.fsdp.state_dict_type=FULL_STATE_DICT
train sh "$SH"                             # checkpoint-4 and checkpoint-8
train sh-other "$SH" --set task.seed=7     # another run, same configuration
train full "$FULL"
train full-other "$FULL" --set task.seed=7
train sh8 "$SH" --set task.blocks=8 --set task.max_steps=4
train full8 "$FULL" --set task.blocks=8 --set task.max_steps=4
S0=shard-00000-of-00002.safetensors
S1=shard-00001-of-00002.safetensors

# case NAME SOURCE_CHECKPOINT: a copy at $T/NAME to damage
case_dir() { rm -rf "$T/$1" && cp -r "$2" "$T/$1"; }
# refused NAME WHAT NEEDLE... [-- run args]: resuming $T/NAME fails before its first step, and stderr
# holds every NEEDLE
refused() {
    local name=$1 what=$2 args=()
    shift 2
    local needles=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do needles+=("$1"); shift; done
    [ $# -gt 0 ] && shift && args=("$@")
    run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$T/out-$name" \
        --set task.resume_from_checkpoint="$T/$name" "${args[@]}"
    local want=${REFUSED_RC:-1} # 1: a damaged or foreign file; 2: the job's error (another model)
    expect_eq "$rc" "$want" "$what: refused (exit $want)"
    echo "  $what: $(grep -m1 'error: resume_from_checkpoint' <<<"$err" | sed 's/.*error: //')"
    for n in "${needles[@]}"; do expect_in "$err" "$n" "$what: the message says \"$n\""; done
    expect_not_in "$out" "step 5/" "$what: no step was trained"
    expect_not_in "$err" "signal" "$what: no rank crashed"
    [ "$(grep -c 'resume_from_checkpoint' <<<"$err")" -ge 1 ] && pass || fail "$what: one message"
}
# flip FILE: one bit of the 100th byte of the first tensor's data
flip() {
    $PY - "$1" <<'PYEOF'
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
n = struct.unpack("<Q", b[:8])[0]
b[8 + n + 100] ^= 0x10
open(p, "wb").write(b)
PYEOF
}

# the untouched copy resumes (bit for bit: tests/fsdp/checkpoint.sh)
case_dir ok "$T/sh/checkpoint-4"
run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$T/out-ok" --set task.resume_from_checkpoint="$T/ok"
expect_rc 0 "an untouched SHARDED checkpoint resumes"
expect_in "$out" "resumed from $T/ok at step 4" "untouched: resumed at step 4"

# SHARDED
case_dir swap "$T/sh/checkpoint-4"
mv "$T/swap/$S0" "$T/swap/x" && mv "$T/swap/$S1" "$T/swap/$S0" && mv "$T/swap/x" "$T/swap/$S1"
refused swap "two shard files swapped" "$T/swap/$S0 holds shard_rank 1, not 0" "$T/swap/$S1 holds shard_rank 0, not 1"

case_dir dup "$T/sh/checkpoint-4"
cp "$T/dup/$S0" "$T/dup/$S1"
refused dup "shard 0 copied over shard 1" "$T/dup/$S1 holds shard_rank 0, not 1"

case_dir mix "$T/sh/checkpoint-4"
cp "$T/sh/checkpoint-8/$S1" "$T/mix/$S1"
refused mix "shard 1 of step 8 in checkpoint-4" "$T/mix/$S1 belongs to another checkpoint: it holds global_step 8" \
    "trainer_state.json (and the other files) holds global_step 4"

case_dir other "$T/sh/checkpoint-4"
cp "$T/sh-other/checkpoint-4/$S1" "$T/other/$S1"
id_other=$(grep -o '"checkpoint_id": "[0-9a-f]*"' "$T/sh-other/checkpoint-4/trainer_state.json" | cut -d'"' -f4)
refused other "a shard of another run" "$T/other/$S1 belongs to another checkpoint: it holds global_step 4 of checkpoint_id $id_other"

case_dir other0 "$T/sh/checkpoint-4"
cp "$T/sh-other/checkpoint-4/$S0" "$T/other0/$S0"
refused other0 "shard 0 of another run" "$T/other0/$S0 belongs to another checkpoint"

case_dir flip "$T/sh/checkpoint-4"
flip "$T/flip/$S0"
refused flip "a flipped byte in a shard's weight" "$T/flip/$S0: the data of tensor \"u0.param\" does not match its hash"

case_dir app "$T/sh/checkpoint-4"
printf 'extra' >>"$T/app/$S1"
refused app "bytes appended to a shard" "$T/app/$S1: 5 bytes follow the last tensor's data"

case_dir index "$T/sh/checkpoint-4"
$PY - "$T/index/$S0" <<'PYEOF'
import json, struct, sys
p = sys.argv[1]
b = open(p, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
m = h["__metadata__"]
k = next(k for k in m if k.startswith("param:") and m[k].split()[1] != "0")
f = m[k].split(" ")
f[1] = str(int(f[1]) - 1)  # the parameter one element earlier in its unit
m[k] = " ".join(f)
s = json.dumps(h, separators=(",", ":")).encode()
s += b" " * (-len(s) % 8)
open(p, "wb").write(struct.pack("<Q", len(s)) + s + b[8 + n:])
PYEOF
refused index "a changed parameter index in a shard's metadata" "$T/index/$S0: its metadata does not match its index_hash"

case_dir state "$T/sh/checkpoint-4"
cp "$T/sh/checkpoint-8/trainer_state.json" "$T/state/trainer_state.json"
refused state "trainer_state.json of another step" \
    "$T/state/trainer_state.json belongs to another checkpoint: it says global_step 8"

case_dir old "$T/sh/checkpoint-4"
sed -i 's/"checkpoint_id": "[0-9a-f]*", //' "$T/old/trainer_state.json"
refused old "a checkpoint without integrity metadata" "written by an older shardrun without integrity metadata"

# FULL
case_dir fflip "$T/full/checkpoint-4"
flip "$T/fflip/model.safetensors"
refused fflip "a flipped byte in model.safetensors" "$T/fflip/model.safetensors: the data of tensor" "does not match its hash"

case_dir fapp "$T/full/checkpoint-4"
printf 'abc' >>"$T/fapp/model.safetensors"
refused fapp "bytes appended to model.safetensors" "$T/fapp/model.safetensors: 3 bytes follow the last tensor's data"

case_dir fopt "$T/full/checkpoint-4"
cp "$T/full/checkpoint-8/optimizer.safetensors" "$T/fopt/optimizer.safetensors"
refused fopt "optimizer.safetensors of another checkpoint" \
    "$T/fopt/optimizer.safetensors belongs to another checkpoint: it holds global_step 8"

case_dir fopt2 "$T/full/checkpoint-4"
cp "$T/full-other/checkpoint-4/optimizer.safetensors" "$T/fopt2/optimizer.safetensors"
refused fopt2 "optimizer.safetensors of another run" "$T/fopt2/optimizer.safetensors belongs to another checkpoint"

case_dir fswap "$T/full/checkpoint-4"
cp "$T/fswap/optimizer.safetensors" "$T/fswap/model.safetensors"
refused fswap "optimizer.safetensors copied over model.safetensors" \
    "$T/fswap/model.safetensors holds a checkpoint's optimizer file, not its model file"

# another model: 8 blocks resumed into 6 (unused tensors) and into 10 (missing ones): exit 2, the
# job's configuration names another model than the checkpoint's.  The resume's
# settings check refuses a changed [task] blocks by itself (tests/restarts/identity.sh); allowing the
# change reaches the engine's own check of the model against the checkpoint, which these cases test.
case_dir m-sh8 "$T/sh8/checkpoint-4"
REFUSED_RC=2 refused m-sh8 "SHARDED 8 blocks into 6" "$T/m-sh8 holds another model than the one being resumed" \
    "only in the checkpoint (unused): blocks.6." -- --set task.blocks=6 --set task.resume_allow_changes=blocks
REFUSED_RC=2 refused m-sh8 "SHARDED 8 blocks into 10" "$T/m-sh8 holds another model" "missing from the checkpoint: blocks.8." \
    -- --set task.blocks=10 --set task.resume_allow_changes=blocks
case_dir m-full8 "$T/full8/checkpoint-4"
REFUSED_RC=2 refused m-full8 "FULL 8 blocks into 6" "$T/m-full8 holds another model" "only in the checkpoint (unused): blocks.6." \
    -- --set task.blocks=6 --set task.resume_allow_changes=blocks
REFUSED_RC=2 refused m-full8 "FULL 8 blocks into 10" "$T/m-full8 holds another model" "missing from the checkpoint: blocks.8." \
    -- --set task.blocks=10 --set task.resume_allow_changes=blocks
# and the same 8 blocks resume
run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$T/out-8" --set task.blocks=8 \
    --set task.resume_from_checkpoint="$T/m-full8"
expect_rc 0 "the 8-block checkpoint resumes into the 8-block model"

done_checks
