# Bad [task] input to the GPT-2 task fails before the first step with a message that names the key
# (or file) and says what is expected (a NaN in init_weights: exit 2, naming the tensor and element); and the GPT-2 BPE path works end to end (a vocab.json +
# merges.txt trained by tests/gpt2/bpe_reference.py: the task reports the BPE tokenizer, its
# vocabulary becomes the model's, and 3 steps train).
. "$(dirname "$0")/lib.sh"
corpus
gpt2_job g.ini <<EOF2
size = tiny
n_layer = 1
n_embd = 32
n_head = 2
max_length = 32
data = $T/corpus.txt
max_steps = 3
per_device_train_batch_size = 2
logging_steps = 1
EOF2
# fails WHAT EXPECTED-IN-STDERR [shardrun args...]
fails() {
    local what=$1 msg=$2
    shift 2
    run "$SHARDRUN" "$T/g.ini" --nproc-per-node 2 "$@"
    [ "$rc" -ne 0 ] && pass || fail "$what: exit code 0"
    expect_not_in "$out" "step 1/" "$what: fails before the first step"
    expect_in "$err" "$msg" "$what: the message"
}
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 2
expect_rc 0 "the base job trains"
fails "unknown size" "[task] size = gpt3 is not a GPT-2 size; use tiny, gpt2, gpt2-medium, gpt2-large or gpt2-xl" \
    --set task.size=gpt3
fails "heads do not divide n_embd" "[task] n_embd = 32 is not a multiple of n_head = 3" --set task.n_head=3
fails "max_length beyond the positions" "[task] max_length = 300 is out of range [2, 256]" --set task.max_length=300
fails "no data" "[task] data is missing: name the training text files" --set task.data=
fails "a pattern matching nothing" "$T/nothing*" --set "task.data=$T/nothing*"
fails "vocab_json alone" "[task] vocab_json and merges_txt go together" --set task.vocab_json=/nonexistent.json
fails "bf16 on the CPU" "the cpu kernels compute in fp32 only, but mixed_precision asks for bf16" \
    --set accelerate.mixed_precision=bf16
fails "a misspelt key" "[task] max_lenght is read by neither; check its spelling" --set task.max_lenght=16
fails "vocab_size below the tokenizer's" "[task] vocab_size = 100 is smaller than the tokenizer's 257 tokens" \
    --set task.vocab_size=100
fails "a missing vocab.json" "/nonexistent.json" --set task.vocab_json=/nonexistent.json --set task.merges_txt=/nonexistent.txt

# A NaN in init_weights where no batch reaches (position row 100; max_length is 32) would be
# trained around and saved in every checkpoint: refused before step 1 (exit 2), naming the tensor
# and the element
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 2 --set task.max_steps=1 --set task.output_dir="$T/ck" \
    --set accelerate.fsdp.state_dict_type=FULL_STATE_DICT
expect_rc 0 "a FULL checkpoint to start from"
/usr/bin/python3 - "$T/ck/checkpoint-1/model.safetensors" "$T/nan.safetensors" <<'PYEOF' && pass || fail "planting a NaN"
import json, struct, sys
import numpy as np
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", b[:8])[0]
t = json.loads(b[8:8 + n])["transformer.wpe.weight"]
assert t["dtype"] == "F32" and t["shape"][1] == 32, t
at = 8 + n + t["data_offsets"][0] + 4 * (100 * 32 + 7)
b[at:at + 4] = np.float32(np.nan).tobytes()
open(sys.argv[2], "wb").write(b)
PYEOF
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 2 --set task.init_weights="$T/nan.safetensors" --set task.output_dir="$T/nan-out"
expect_rc 2 "a NaN in init_weights is bad input"
expect_in "$err" 'init_weights: '"$T"'/nan.safetensors: tensor "transformer.wpe.weight" [256, 32] holds NaN at [100, 7] (element 3207)' \
    "a NaN in init_weights: the tensor and the element are named"
expect_not_in "$out" "step 1/" "a NaN in init_weights: no step"
[ ! -e "$T/nan-out/checkpoint-1" ] && pass || fail "a NaN in init_weights: no checkpoint"

# one rank gets the threads it is given
run env OMP_NUM_THREADS=2 "$SHARDRUN" "$T/g.ini" --nproc-per-node 1
expect_in "$out" '"cpu_threads": 2' "OMP_NUM_THREADS=2 with one rank: 2 threads"

# GPT-2 BPE: a 300-merge vocabulary learnt from the corpus
/usr/bin/python3 "$SRC/tests/gpt2/bpe_reference.py" train "$T/vocab.json" "$T/merges.txt" 300 "$T/corpus.txt" >/dev/null &&
    pass || fail "training a test vocabulary"
nv=$(/usr/bin/python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$T/vocab.json")
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 2 --set task.vocab_json="$T/vocab.json" --set task.merges_txt="$T/merges.txt"
expect_rc 0 "training with the BPE tokenizer"
expect_in "$out" "GPT-2 BPE tokenizer, $nv tokens" "the task reports the BPE tokenizer and its size"
expect_in "$out" "vocab $nv," "the vocabulary is the tokenizer's"
expect_in "$out" "[rank0]: step 3/3" "3 steps train"
echo "BPE: $nv tokens; $(grep -o 'gpt2: data: .*' <<<"$out" | head -1)"
done_checks
