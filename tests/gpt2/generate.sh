# gpt2_generate (tools/generate, models/gpt2/gpt2_infer.c) on GPT-2: text from a checkpoint.
#  - greedy decoding picks, at every step, the argmax of the training forward's logits on the same
#    prefix (tests/gpt2/gpt2_torch.py's GPT-2 in float64, one forward over the whole sequence), and
#    the check fails for a model read with the wrong head count;
#  - decoding with the key/value cache gives the logits of a full recomputation (the task's own
#    training forward, --no-kv-cache) within 1e-4 of the largest, over 40 tokens;
#  - top-k 1 sampling is greedy; a seed gives the same text twice, another seed another text;
#  - the Hub's layout (no "transformer." prefix, F16, attn.bias buffers) reads too;
#  - a tiny model trained a few steps by a demo-like job generates from its checkpoint-N folder in
#    one command (and agrees with torch there too);
#  - with GPT-2 BPE files next to the model, they are used and the text printed is GPT-2's decoding
#    of the ids, byte for byte;
#  - bad input exits 2 with a short message before any work: a missing file, a --size that is not
#    the file's, a SHARDED checkpoint (and the conversion the message suggests works), a DCP folder,
#    a damaged checkpoint, a tensor GPT-2 lacks or of the wrong shape, a tokenizer larger than the
#    model, a prompt longer than the context, an unknown head count, a bad flag;
#  - --logits is checked before the model is read: never the model itself (the file unchanged), a
#    folder that exists, a FIFO written in place;
#  - sampling: a temperature too small to compute (1e-39) is refused naming the range, the smallest
#    taken (1e-30) samples the greedy tokens; --top-p's two errors say the same range; NaN weights
#    stop with an error naming the step (exit 1), not random tokens.
# Environment: GPT2_GENERATE (default $BUILD/gpt2_generate).
. "$(dirname "$0")/lib.sh"
GEN=${GPT2_GENERATE:-$BUILD/gpt2_generate}
CHECK="torch_py $SRC/tests/gpt2/generate_check.py"
[ -x "$GEN" ] || { echo "FAIL: no gpt2_generate at $GEN (build the tree, or set GPT2_GENERATE)"; exit 1; }
export OMP_NUM_THREADS=2

# short_error WHAT NEEDLE: exit code 2, the needle in stderr, nothing on stdout, one screen
short_error() {
    expect_rc 2 "$1"
    expect_in "$err" "$2" "$1: the message"
    expect_eq "$out" "" "$1: nothing on stdout"
    [ "$(wc -l <<<"$err")" -le 6 ] && [ "${#err}" -le 1600 ] && pass || fail "$1: the message is not one screen: $err"
}

# ---- random weights: greedy vs torch, KV cache vs recomputation, sampling --------------------------
$CHECK init "$T/w.safetensors" --n_layer 3 --n_head 4 --n_embd 64 --n_positions 96 --vocab_size 257 --seed 3 \
    --std 0.1 >/dev/null || fail "writing random weights"
prompt="the model shards"
run "$GEN" "$T/w.safetensors" --prompt "$prompt" --temperature 0 --max-new-tokens 40 --ignore-eos --logits "$T/kv.st"
expect_rc 0 "greedy with the KV cache"
expect_in "$err" "3 layers, 4 heads (the file's n_head metadata), n_embd 64, context 96, vocab 257" "the banner"
expect_in "$err" "40 new tokens" "40 tokens generated"
greedy_text=$out
case $out in "$prompt"*) pass ;; *) fail "the output does not start with the prompt: $out" ;; esac
r=$($CHECK greedy "$T/kv.st" "$T/w.safetensors" --n_head 4 2>&1) && pass || fail "greedy vs torch's argmax: $r"
echo "$r"
expect_in "$r" "40 equal to torch's argmax, 0 ties" "no tie needed"
# the check can fail: the same tokens against the model read with 2 heads
r=$($CHECK greedy "$T/kv.st" "$T/w.safetensors" --n_head 2 2>&1) && fail "the greedy check passes a wrong model: $r" || pass

run "$GEN" "$T/w.safetensors" --prompt "$prompt" --temperature 0 --max-new-tokens 40 --ignore-eos --no-kv-cache \
    --logits "$T/full.st"
expect_rc 0 "greedy, recomputing the prefix every token"
expect_eq "$out" "$greedy_text" "the same text without the cache"
r=$($CHECK same "$T/kv.st" "$T/full.st" --tol 1e-4 2>&1) && pass || fail "KV cache vs full recomputation: $r"
echo "$r"
# ... and that check can fail: another prompt's run
run "$GEN" "$T/w.safetensors" --prompt "the model shards!" --temperature 0 --max-new-tokens 40 --ignore-eos \
    --logits "$T/other.st"
r=$($CHECK same "$T/kv.st" "$T/other.st" 2>&1) && fail "the same-logits check passes another run: $r" || pass

run "$GEN" "$T/w.safetensors" --prompt "$prompt" --temperature 0.7 --top-k 1 --max-new-tokens 40 --ignore-eos
expect_rc 0 "top-k 1"
expect_eq "$out" "$greedy_text" "top-k 1 is greedy"
sample() { # SEED [flags]: sets $out
    local seed=$1
    shift
    run "$GEN" "$T/w.safetensors" --prompt "$prompt" --temperature 1 --top-k 0 --seed "$seed" --max-new-tokens 40 \
        --ignore-eos --output ids "$@"
    expect_rc 0 "sampling with seed $seed $*"
}
sample 1
s1=$out
sample 1
expect_eq "$out" "$s1" "seed 1 twice: the same tokens"
sample 2
[ "$out" != "$s1" ] && pass || fail "seeds 1 and 2 give the same tokens: $out"
run "$GEN" "$T/w.safetensors" --prompt "$prompt" --temperature 0 --max-new-tokens 40 --ignore-eos --output ids
[ "$s1" != "$out" ] && pass || fail "sampling gave the greedy tokens"
sample 1 --top-p 0.5
p1=$out
sample 1 --top-p 0.5
expect_eq "$out" "$p1" "top-p 0.5, seed 1 twice: the same tokens"
[ "$p1" != "$s1" ] && pass || fail "top-p 0.5 changed nothing"

# the Hub's layout: no prefix, F16, attn.bias buffers, no n_head (4 is given)
$CHECK init "$T/hub.safetensors" --n_layer 3 --n_head 4 --n_embd 64 --n_positions 96 --vocab_size 257 --seed 3 \
    --std 0.1 --hub >/dev/null || fail "writing Hub-style weights"
run "$GEN" "$T/hub.safetensors" --prompt "$prompt" --temperature 0 --max-new-tokens 20 --ignore-eos --n-head 4 \
    --logits "$T/hub.st"
expect_rc 0 "the Hub's layout"
r=$($CHECK greedy "$T/hub.st" "$T/hub.safetensors" --n_head 4 2>&1) && pass || fail "Hub layout vs torch: $r"
run "$GEN" "$T/hub.safetensors" --prompt "$prompt"
short_error "n_embd 64 and no n_head anywhere" "give --n-head N"

# ---- GPT-2 BPE: vocab.json and merges.txt next to the model are used; ids -> bytes as GPT-2 decodes ---
corpus
torch_py "$SRC/tests/gpt2/bpe_reference.py" train "$T/vocab.json" "$T/merges.txt" 300 "$T/corpus.txt" \
    >/dev/null || fail "training a test vocabulary"
nv=$(torch_py -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$T/vocab.json")
mkdir -p "$T/bpe"
$CHECK init "$T/bpe/model.safetensors" --n_layer 2 --n_head 4 --n_embd 64 --n_positions 96 --vocab_size "$nv" \
    --seed 4 --std 0.1 >/dev/null || fail "writing BPE-sized weights"
cp "$T/vocab.json" "$T/merges.txt" "$T/bpe/"
bpe_prompt="the optimizer updates only local shards"
run "$GEN" "$T/bpe" --prompt "$bpe_prompt" --temperature 0 --max-new-tokens 30 --ignore-eos --output ids
expect_rc 0 "BPE, ids"
expect_in "$err" "GPT-2 BPE tokens from $T/bpe/vocab.json and $T/bpe/merges.txt" "the folder's BPE files are used"
bpe_ids=$out
printf '%s' "$bpe_prompt" >"$T/bpe_prompt.txt"
want=$(torch_py "$SRC/tests/gpt2/bpe_reference.py" encode "$T/vocab.json" "$T/merges.txt" "$T/bpe_prompt.txt" | tr '\n' ' ')
case "$bpe_ids " in "$want"*) pass ;; *) fail "the prompt's BPE ids: [$bpe_ids], expected to start with [$want]" ;; esac
"$GEN" "$T/bpe" --prompt "$bpe_prompt" --temperature 0 --max-new-tokens 30 --ignore-eos >"$T/bpe_text.out" 2>/dev/null
"$GEN" "$T/bpe" --prompt-ids "$bpe_ids" --max-new-tokens 0 >"$T/bpe_ids.out" 2>/dev/null
r=$(torch_py - "$T/vocab.json" "$T/bpe_text.out" "$T/bpe_ids.out" "$bpe_ids" "$SRC/tests/gpt2" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[5])
from bpe_reference import bytes_to_unicode
u2b = {u: b for b, u in bytes_to_unicode().items()}
vocab = {i: s for s, i in json.load(open(sys.argv[1])).items()}
want = b"".join(bytes(u2b[c] for c in vocab[int(i)]) for i in sys.argv[4].split()) + b"\n"
got, back = open(sys.argv[2], "rb").read(), open(sys.argv[3], "rb").read()
high = sum(1 for i in sys.argv[4].split() if any(u2b[c] >= 128 for c in vocab[int(i)]))
print(f"{len(want)} bytes, {high} tokens with bytes >= 0x80;",
      "text OK" if got == want else f"text differs: {got!r} vs {want!r}",
      "ids OK" if back == want else f"--prompt-ids text differs: {back!r} vs {want!r}")
PY
)
expect_in "$r" "text OK ids OK" "gpt2_generate's text is GPT-2's decoding of its ids"
echo "BPE: $r"
run "$GEN" "$T/w.safetensors" --vocab "$T/vocab.json" --merges "$T/merges.txt" --prompt x
short_error "a tokenizer larger than the model" "has $nv tokens but $T/w.safetensors has embeddings for 257"

# ---- a tiny model trained by a demo-like job: generation from checkpoint-N in one command ---------
gpt2_job g.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = GPT2Block" \
    "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
size = tiny
max_length = 64
data = $T/corpus.txt
per_device_train_batch_size = 4
learning_rate = 3e-3
EOF2
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 2 --set task.max_steps=4 --set task.output_dir="$T/train"
expect_rc 0 "the demo-like job trains 4 steps"
run "$GEN" "$T/train/checkpoint-4" --prompt "the model" --max-new-tokens 30
expect_rc 0 "gpt2_generate checkpoint-4"
expect_in "$err" "model.safetensors (global_step 4): 4 layers, 4 heads (config.json), n_embd 128" "the checkpoint's banner: heads from its config.json"
expect_in "$err" "byte-level tokens (as the checkpoint records)" "byte-level tokens, as trained and recorded"
case $out in "the model"?*) pass ;; *) fail "no continuation of the prompt: $out" ;; esac
echo "checkpoint-4 says: $out"
run "$GEN" "$T/train/checkpoint-4" --prompt "the model" --temperature 0 --max-new-tokens 30 --ignore-eos \
    --logits "$T/ck.st"
r=$($CHECK greedy "$T/ck.st" "$T/train/checkpoint-4/model.safetensors" --n_head 4 2>&1) && pass ||
    fail "checkpoint greedy vs torch: $r"
echo "checkpoint-4, $r"

# ---- bad input --------------------------------------------------------------------------------------
run "$GEN" "$T/nowhere/checkpoint-9" --prompt x
short_error "a missing folder" "$T/nowhere/checkpoint-9: No such file or directory"
run "$GEN" "$T/train/checkpoint-4" --size gpt2 --prompt x
short_error "--size gpt2 on a tiny model" "is not a gpt2 model: n_layer 12 in --size, 4 in the file; n_embd 768 in --size, 128 in the file; n_positions (context) 1024 in --size, 256 in the file; vocab_size 50257 in --size, 257 in the file"
run "$GEN" "$T/train/checkpoint-4" --size tiny --prompt x --max-new-tokens 2
expect_rc 0 "--size tiny on the tiny model"
long=$(head -c 300 /dev/zero | tr '\0' a)
run "$GEN" "$T/train/checkpoint-4" --prompt "$long"
short_error "a prompt longer than the context" "the prompt is 300 tokens but the model's context (n_positions"
# a tensor GPT-2 lacks, and one of the wrong shape
torch_py - "$T/w.safetensors" "$T/extra.safetensors" "$T/shape.safetensors" "$SRC/tests/gpt2" <<'PY'
import sys
import numpy as np
sys.path.insert(0, sys.argv[4])
from gpt2_torch import read_safetensors, write_safetensors
t = read_safetensors(sys.argv[1])
write_safetensors(sys.argv[2], dict(t, **{"transformer.h.1.attn.rotary.weight": np.zeros(4, np.float32)}))
t["transformer.h.2.attn.c_attn.weight"] = t["transformer.h.2.attn.c_attn.weight"][:, :128]
write_safetensors(sys.argv[3], t, {"n_head": "4"})
PY
run "$GEN" "$T/extra.safetensors" --n-head 4 --prompt x
short_error "a tensor GPT-2 does not have" "has a tensor GPT-2 does not: transformer.h.1.attn.rotary.weight"
run "$GEN" "$T/shape.safetensors" --prompt x
short_error "a tensor of the wrong shape" "tensor transformer.h.2.attn.c_attn.weight has shape [64, 128]; a GPT-2 with n_embd 64"
run "$GEN" "$T/w.safetensors" --temperature -1
short_error "a negative temperature" "--temperature -1: expected 0 (greedy) or a number from 1e-30 to 1e6"
run "$GEN" "$T/w.safetensors" --top-k
short_error "a flag without its value" "--top-k needs a value"
# a damaged checkpoint: one byte of its last tensor changed
cp -r "$T/train/checkpoint-4" "$T/damaged"
size=$(stat -c %s "$T/damaged/model.safetensors")
printf '\x7f' | dd of="$T/damaged/model.safetensors" bs=1 seek=$((size - 3)) conv=notrunc status=none
run "$GEN" "$T/damaged" --prompt x
short_error "a damaged checkpoint" "does not match its hash"
# SHARDED: refused with the way out, which works
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 2 --set task.max_steps=2 --set task.output_dir="$T/sharded" \
    --set accelerate.fsdp.state_dict_type=SHARDED_STATE_DICT
expect_rc 0 "a SHARDED run"
run "$GEN" "$T/sharded/checkpoint-2" --prompt x
short_error "a SHARDED checkpoint folder" "is a SHARDED_STATE_DICT checkpoint (shard-00000-of-00002.safetensors"
expect_in "$err" "fsdp.state_dict_type = FULL_STATE_DICT" "the SHARDED message says what to save instead"
run "$GEN" "$T/sharded/checkpoint-2/shard-00001-of-00002.safetensors" --prompt x
short_error "a SHARDED checkpoint's file" "is one rank's file of a SHARDED_STATE_DICT checkpoint"
mkdir -p "$T/dcp" && touch "$T/dcp/.metadata" "$T/dcp/__0_0.distcp"
run "$GEN" "$T/dcp" --prompt x
short_error "a PyTorch DCP folder" "is a PyTorch distributed (DCP) checkpoint (__0_0.distcp)"
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 2 --set task.output_dir="$T/sharded" \
    --set task.resume_from_checkpoint="$T/sharded/checkpoint-2" \
    --set accelerate.fsdp.state_dict_type=FULL_STATE_DICT --set task.max_steps=3
expect_rc 0 "the suggested conversion: resume with FULL_STATE_DICT for one more step"
run "$GEN" "$T/sharded/checkpoint-3" --prompt "the model" --max-new-tokens 5
expect_rc 0 "the converted checkpoint generates"

# ---- --logits: checked before the model is read; never one of its inputs -----------------------------
# (on copies of checkpoint-4: where this failed, the model was lost)
for c in 1 2; do cp -r "$T/train/checkpoint-4" "$T/copy$c"; done
run "$GEN" "$T/copy1" --prompt x --max-new-tokens 2 --logits "$T/copy1/model.safetensors"
short_error "--logits CKPT/model.safetensors" "is a file this command reads: writing it would replace it"
expect_same_file "$T/copy1/model.safetensors" "$T/train/checkpoint-4/model.safetensors" \
    "--logits CKPT/model.safetensors: the model"
run "$GEN" "$T/copy2/model.safetensors" --prompt x --max-new-tokens 2 --logits "$T/train/../copy2/model.safetensors"
short_error "--logits the model by another path" "a file this command reads"
expect_same_file "$T/copy2/model.safetensors" "$T/train/checkpoint-4/model.safetensors" \
    "--logits the model by another path: the model"
run "$GEN" "$T/train/checkpoint-4" --prompt x --max-new-tokens 2 --logits /missing/dir/f
short_error "--logits in a missing folder" "--logits: /missing/dir/f: the folder /missing/dir does not exist"
run "$GEN" "$T/train/checkpoint-4" --prompt x --max-new-tokens 2 --logits ""
short_error "--logits ''" "--logits: an empty file name"
mkfifo "$T/logits.fifo"
timeout 60 cat "$T/logits.fifo" >"$T/from_fifo.st" &
reader=$!
run timeout 60 "$GEN" "$T/train/checkpoint-4" --prompt "the model" --temperature 0 --max-new-tokens 30 --ignore-eos \
    --logits "$T/logits.fifo"
[ "$rc" -eq 0 ] || : >"$T/logits.fifo" # (the reader is not left waiting)
wait $reader
expect_rc 0 "--logits a FIFO"
[ -p "$T/logits.fifo" ] && pass || fail "--logits a FIFO: it is no longer a FIFO"
r=$($CHECK same "$T/from_fifo.st" "$T/ck.st" 2>&1) && pass || fail "--logits a FIFO: the reader got the logits: $r"

# ---- sampling: temperatures that work, non-finite logits --------------------------------------------
run "$GEN" "$T/train/checkpoint-4" --temperature 1e-39 --max-new-tokens 5
short_error "--temperature 1e-39 (overflows logit / T in float)" \
    "--temperature 1e-39: expected 0 (greedy) or a number from 1e-30 to 1e6"
# the smallest temperature taken samples stably: the greedy tokens
run "$GEN" "$T/train/checkpoint-4" --prompt "the model" --temperature 1e-30 --max-new-tokens 20 --ignore-eos --output ids
expect_rc 0 "--temperature 1e-30"
tiny_ids=$out
run "$GEN" "$T/train/checkpoint-4" --prompt "the model" --temperature 0 --max-new-tokens 20 --ignore-eos --output ids
expect_eq "$tiny_ids" "$out" "--temperature 1e-30 picks the greedy tokens"
run "$GEN" "$T/w.safetensors" --top-p 0
short_error "--top-p 0" "--top-p 0: expected a number in (0, 1]"
run "$GEN" "$T/w.safetensors" --top-p 2
short_error "--top-p 2" "--top-p 2: expected a number in (0, 1]"
# a model whose weights are NaN (a run trained with lr 1e30): an error naming the step, no tokens
mkdir "$T/nan"
$CHECK init "$T/nan/model.safetensors" --n_layer 1 --n_head 2 --n_embd 32 --n_positions 32 --vocab_size 257 --seed 3 \
    --std nan >/dev/null || fail "writing NaN weights"
for t in 0 1; do
    run "$GEN" "$T/nan" --temperature $t --max-new-tokens 5 --output ids
    expect_rc 1 "NaN weights, temperature $t"
    expect_in "$err" "gpt2_generate: error: step 0 (position 1): the logit of token 0 is nan" \
        "NaN weights, temperature $t: the step named"
    expect_eq "$out" "256" "NaN weights, temperature $t: no token printed (only the prompt's <|endoftext|>)"
done
done_checks
