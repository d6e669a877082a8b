# Checkpoints: 10 steps + save + resume + 10 steps == 20 uninterrupted steps, bit for bit (fp32,
# FULL and SHARDED); a SHARDED checkpoint saved at world size 4 resumes at 2; the FULL checkpoint
# is a safetensors file an independent reader (numpy) parses, with the model's names, shapes and
# values; a run killed in the middle of a save leaves the previous checkpoint loadable.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
CMP="$PY $SRC/tests/fsdp/compare_logs.py"
READ="$PY $SRC/tests/interop/read_safetensors.py"
toy_job toy.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = MLPBlock,MixerBlock" \
    "fsdp.backward_prefetch = BACKWARD_PRE" <<EOF
samples = 240
max_steps = 20
learning_rate = 1e-2
warmup_steps = 3
weight_decay = 0.1
logging_steps = 1
save_steps = 10
EOF
train() { # NAME NPROC BATCH [args...]
    local name=$1 n=$2 bs=$3
    shift 3
    run "$SHARDRUN" "$T/toy.ini" --nproc-per-node "$n" --set task.per_device_train_batch_size="$bs" \
        --set task.output_dir="$T/$name" "$@"
    expect_rc 0 "$name"
}
# same_tensors A B: two safetensors files hold the same tensors and metadata, byte for byte, but for
# the checkpoint_id (random per save) and the index_hash that covers it
same_tensors() {
    $PY - "$1" "$2" <<'PYEOF'
import json, struct, sys
def norm(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    m = h.get("__metadata__", {})
    assert len(m.pop("checkpoint_id", "")) == 32, p
    m.pop("index_hash")
    return h, b[8 + n:]
sys.exit(0 if norm(sys.argv[1]) == norm(sys.argv[2]) else 1)
PYEOF
}
# steps_equal GOT BASE FIRST WHAT: the last log lines of GOT (a resumed run appends to the log)
# from step FIRST on are byte-identical to BASE's
steps_equal() {
    local a b n
    b=$(awk -v f="$3" -F'[:,]' '$2 >= f' "$2")
    n=$(wc -l <<<"$b")
    a=$(tail -n "$n" "$1")
    [ -n "$a" ] && [ "$a" == "$b" ] && pass || fail "$4: logs differ from step $3: $(diff <(echo "$a") <(echo "$b") | head -6)"
}

# 1. FULL_STATE_DICT, world size 2: uninterrupted (saving at 10 and 20) vs resumed from its step 10
train full-u 2 6 --set accelerate.fsdp.state_dict_type=FULL_STATE_DICT
u_sum=$(result param_sum)
for f in model.safetensors optimizer.safetensors trainer_state.json; do
    [ -f "$T/full-u/checkpoint-10/$f" ] && pass || fail "FULL checkpoint-10 has $f"
done
[ -z "$(ls "$T/full-u" | grep tmp)" ] && pass || fail "no temporary folder is left behind: $(ls "$T/full-u")"
train full-r 2 6 --set accelerate.fsdp.state_dict_type=FULL_STATE_DICT --set task.resume_from_checkpoint="$T/full-u/checkpoint-10"
expect_in "$out" "resumed from $T/full-u/checkpoint-10 at step 10" "FULL: resumed at step 10"
expect_not_in "$out" "step 10/20" "FULL: the resumed run starts at step 11"
steps_equal "$T/full-r/train_log.jsonl" "$T/full-u/train_log.jsonl" 11 "FULL resume: steps 11-20 bit for bit"
expect_eq "$(result param_sum)" "$u_sum" "FULL resume: final parameters' sum bit for bit"
same_tensors "$T/full-r/checkpoint-20/model.safetensors" "$T/full-u/checkpoint-20/model.safetensors" && pass ||
    fail "FULL resume: the final model.safetensors is byte-identical to the uninterrupted run's (but its checkpoint_id)"
same_tensors "$T/full-r/checkpoint-20/optimizer.safetensors" "$T/full-u/checkpoint-20/optimizer.safetensors" && pass ||
    fail "FULL resume: the final optimizer state is byte-identical (but its checkpoint_id)"

# the offload staging path (shards in host memory, forced on a CPU) saves the same bytes
SHARDRUN_DEBUG_OFFLOAD_STAGING=1 train full-off 2 6 --set accelerate.fsdp.state_dict_type=FULL_STATE_DICT \
    --set accelerate.fsdp.offload_params=true --set task.resume_from_checkpoint="$T/full-u/checkpoint-10"
expect_in "$out" "shards offloaded to host memory" "offload: the staging path ran"
same_tensors "$T/full-off/checkpoint-20/model.safetensors" "$T/full-u/checkpoint-20/model.safetensors" && pass ||
    fail "offload: resumed and trained through the staging path, the final model.safetensors is byte-identical"

# 2. the FULL checkpoint, read by an independent reader: names, shapes, values
listing=$($READ "$T/full-u/checkpoint-20/model.safetensors")
expect_eq "$(awk '{print $1, $2, $3}' <<<"$listing" | grep -E '^(embed|head|norm_f|blocks\.0\.)' | tr '\n' ';')" \
    "blocks.0.fc1.bias F32 64;blocks.0.fc1.weight F32 64,16;blocks.0.fc2.bias F32 16;blocks.0.fc2.weight F32 16,64;blocks.0.ln.bias F32 16;blocks.0.ln.weight F32 16;embed.pos F32 8,16;embed.weight F32 32,16;head.bias F32 32;norm_f.bias F32 16;norm_f.weight F32 16;" \
    "FULL: original names and shapes; the tied head.weight is saved once, as embed.weight"
expect_eq "$(wc -l <<<"$listing")" 38 "FULL: 38 tensors (6 blocks + embed, norm_f, head)"
total=$(awk '{s += $4} END {printf "%.9g", s}' <<<"$listing")
$PY -c "import sys; a,b=map(float,sys.argv[1:]); sys.exit(0 if abs(a-b) <= 1e-5*abs(b) else 1)" "$total" "$u_sum" && pass ||
    fail "FULL: the values the reader sums ($total) are the trained parameters (param_sum $u_sum)"
# the same training at world size 4 and 1 saves the same values (within fp32 reduction-order noise)
train full-ws4 4 3 --set accelerate.fsdp.state_dict_type=FULL_STATE_DICT --set task.save_steps=0
train full-ws1 1 12 --set accelerate.fsdp.state_dict_type=FULL_STATE_DICT --set task.save_steps=0
$PY - "$T/full-ws4/checkpoint-20/model.safetensors" "$T/full-ws1/checkpoint-20/model.safetensors" <<'PYEOF' && pass || fail "FULL checkpoints at world size 4 and 1 hold the same parameters"
import json, struct, sys
import numpy as np
def load(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    h.pop("__metadata__", None)
    return {k: np.frombuffer(b[8 + n + v["data_offsets"][0]: 8 + n + v["data_offsets"][1]], "<f4").reshape(v["shape"]) for k, v in h.items()}
a, b = load(sys.argv[1]), load(sys.argv[2])
assert a.keys() == b.keys(), (a.keys() ^ b.keys())
bad = [k for k in a if not np.allclose(a[k], b[k], rtol=1e-4, atol=1e-6)]
print("tensors compared:", len(a), "mismatched:", bad[:5])
sys.exit(1 if bad else 0)
PYEOF

# 3. SHARDED_STATE_DICT: bit for bit at the same world size; saved at 4, resumed at 2
train sh4-u 4 3 --set accelerate.fsdp.state_dict_type=SHARDED_STATE_DICT
ls "$T/sh4-u/checkpoint-10" | grep -q "shard-00003-of-00004.safetensors" && pass || fail "SHARDED: one file per rank: $(ls "$T/sh4-u/checkpoint-10")"
$READ "$T/sh4-u/checkpoint-10/shard-00001-of-00004.safetensors" >/dev/null && pass || fail "SHARDED: shard files are valid safetensors"
train sh4-r4 4 3 --set accelerate.fsdp.state_dict_type=SHARDED_STATE_DICT --set task.resume_from_checkpoint="$T/sh4-u/checkpoint-10"
steps_equal "$T/sh4-r4/train_log.jsonl" "$T/sh4-u/train_log.jsonl" 11 "SHARDED resume at world size 4: steps 11-20 bit for bit"
train sh4-r2 2 6 --set accelerate.fsdp.state_dict_type=SHARDED_STATE_DICT --set task.resume_from_checkpoint="$T/sh4-u/checkpoint-10"
expect_in "$out" "resumed from $T/sh4-u/checkpoint-10 at step 10" "SHARDED saved at 4 ranks resumes at 2"
r=$($CMP "$T/sh4-r2/train_log.jsonl" <(grep -E '"step": (1[1-9]|20),' "$T/sh4-u/train_log.jsonl") 1e-5) && pass ||
    fail "SHARDED 4 -> 2: steps 11-20 match the uninterrupted run: $r"
echo "  SHARDED saved at world size 4, resumed at 2: $r"
# a SHARDED checkpoint missing one rank's file is refused, naming the file (no crash)
cp -r "$T/sh4-u/checkpoint-10" "$T/sh4-missing"
rm "$T/sh4-missing/shard-00001-of-00004.safetensors"
run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.per_device_train_batch_size=6 --set task.save_steps=0 \
    --set task.save_final=false --set task.resume_from_checkpoint="$T/sh4-missing"
expect_eq "$rc" 1 "a SHARDED checkpoint lacking a shard: the run fails (exit 1, not a signal)"
expect_in "$err" "$T/sh4-missing/shard-00001-of-00004.safetensors" "the missing shard file is named"
expect_not_in "$err" "signal" "no rank crashed"
# and a FULL checkpoint resumes at another world size too
train full-r4 4 3 --set accelerate.fsdp.state_dict_type=FULL_STATE_DICT --set task.resume_from_checkpoint="$T/full-u/checkpoint-10"
r=$($CMP "$T/full-r4/train_log.jsonl" <(grep -E '"step": (1[1-9]|20),' "$T/full-u/train_log.jsonl") 1e-5) && pass ||
    fail "FULL 2 -> 4: steps 11-20 match: $r"

# 4. killed while saving: the save of checkpoint-10 is slowed down and the run killed (SIGKILL to
#    shardrun; its workers die with it) while checkpoint-10.tmp is being written
export SHARDRUN_DEBUG_SAVE_DELAY_MS=400
"$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.per_device_train_batch_size=6 --set task.save_steps=5 \
    --set task.max_steps=10 --set task.output_dir="$T/kill" >"$T/kill.out" 2>&1 &
pid=$!
for _ in $(seq 300); do [ -d "$T/kill/checkpoint-10.tmp" ] && break; sleep 0.05; done
sleep 0.3
{ kill -KILL $pid && wait $pid; } 2>/dev/null
unset SHARDRUN_DEBUG_SAVE_DELAY_MS
sleep 0.5
[ -d "$T/kill/checkpoint-10.tmp" ] && [ ! -d "$T/kill/checkpoint-10" ] && pass ||
    fail "the run was killed in the middle of saving checkpoint-10: $(ls "$T/kill")"
pgrep -f "$T/kill" >/dev/null && fail "workers outlived the killed shardrun" || pass
train kill 2 6 --set task.resume_from_checkpoint=true --set task.save_steps=5 --set task.max_steps=10
expect_in "$out" "resumed from $T/kill/checkpoint-5 at step 5" "after the kill, the latest complete checkpoint (5) loads"
train nokill 2 6 --set task.save_steps=0 --set task.max_steps=10 --set task.save_final=false
steps_equal "$T/kill/train_log.jsonl" "$T/nokill/train_log.jsonl" 6 "resumed after the kill: steps 6-10 bit for bit"
expect_eq "$(grep -o '"step": [0-9]*' "$T/kill/train_log.jsonl" | tr -dc '0-9\n' | tr '\n' ' ')" "1 2 3 4 5 6 7 8 9 10 " \
    "the resumed run's log drops what the killed run logged after checkpoint-5"
[ -d "$T/kill/checkpoint-10" ] && [ ! -d "$T/kill/checkpoint-10.tmp" ] && pass ||
    fail "the resumed run replaced the half-written checkpoint-10: $(ls "$T/kill")"

# a rank killed in the middle of training ends the run: the agent names it and stops the others
"$SHARDRUN" "$T/toy.ini" --nproc-per-node 3 --set task.per_device_train_batch_size=4 --set task.max_steps=1000000 \
    --set task.save_steps=0 --set task.save_final=false >"$T/crash.out" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "step " "$T/crash.out" 2>/dev/null && break; sleep 0.05; done
victim=$(pgrep -P $pid | tail -n 1)
start=$(date +%s%N)
kill -KILL "$victim"
wait $pid
rc=$?
took=$((($(date +%s%N) - start) / 1000000))
expect_eq "$rc" 1 "a rank killed during training: shardrun exits 1"
expect_in "$(cat "$T/crash.out")" "was killed by signal SIGKILL (9)" "the killed rank is named"
[ "$took" -lt 5000 ] && pass || fail "the run ended ${took} ms after the kill (limit 5 s)"
[ -z "$(pgrep -P $pid)" ] && pass || fail "no worker outlives the run"

# 5. a damaged checkpoint is refused with a message naming the file
train dmg-src 2 6 --set task.save_steps=0 --set task.max_steps=2
truncate -s 100 "$T/dmg-src/checkpoint-2/model.safetensors"
run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.per_device_train_batch_size=6 --set task.save_steps=0 \
    --set task.resume_from_checkpoint="$T/dmg-src/checkpoint-2"
[ "$rc" -ne 0 ] && pass || fail "a truncated checkpoint is refused"
expect_in "$err" "$T/dmg-src/checkpoint-2/model.safetensors" "the message names the damaged file"

done_checks
