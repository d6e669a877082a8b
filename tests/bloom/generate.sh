# shardrun_generate (tools/generate) on BLOOM checkpoints (models/bloom/bloom_infer.c).
#  - greedy decoding picks, at every step, the argmax of tests/bloom/bloom_torch.py's BLOOM (float64,
#    HF's formulas, one forward over the whole sequence), from a 7-token prompt over 24 new tokens, at
#    4 heads (ALiBi's slopes of a power of two) and 6 (the extra slopes between them), with HF's names
#    and the Hub's (no "transformer." prefix); the check fails for a model read with other heads;
#  - the key/value cache (ALiBi as one more key column) gives the logits of a full recomputation
#    (the task's training forward, --no-kv-cache) within 1e-4 of the largest, the same tokens;
#  - a tokenizer.json next to the model (or --tokenizer) tokenizes the prompt: its ids are
#    tests/bloom/tokenizer_reference.py's;
#  - the heads come from --n-head or the file's metadata; a BLOOM the bloom task trained
#    (FULL_STATE_DICT) generates from its checkpoint-N folder, its heads BLOOM's for its width.
# One Python process for every PyTorch call (torch_py, tests/transformer/torch_server.sh).
# Environment: GENERATE (default $BUILD/shardrun_generate).
. "$(dirname "$0")/lib.sh"
GEN=${GENERATE:-$BUILD/shardrun_generate}
CHECK="torch_py $SRC/tests/gpt2/generate_check.py"
[ -x "$GEN" ] || { echo "FAIL: no shardrun_generate at $GEN (build the tree, or set GENERATE)"; exit 1; }
export OMP_NUM_THREADS=2
PROMPT="5 17 200 3 99 42 7"

# ---- a BLOOM-layout tokenizer.json (tests/bloom/tokenizer.sh's reference) --------------------------
corpus
REF="torch_py $SRC/tests/bloom/tokenizer_reference.py"
mkdir -p "$T/tok"
$REF train --bloom "$T/bv.json" "$T/bm.txt" 200 "$T/corpus.txt" >/dev/null &&
    $REF make-json bloom "$T/bv.json" "$T/bm.txt" "$T/tok/tokenizer.json" >/dev/null || fail "writing a tokenizer.json"
nv=$($REF info "$T/tok/tokenizer.json" | head -1 | awk '{print $2}')

# ---- random weights --------------------------------------------------------------------------------
for h in 4 6; do
    prefix=()
    [ $h = 6 ] && prefix=(--no-prefix)
    r=$($TORCH_BLOOM init "$T/h$h.init.safetensors" --n_layer 2 --n_head $h --hidden_size 48 --vocab_size 257 --seed 5 \
        "${prefix[@]}" 2>&1) && pass || fail "bloom_torch.py init, $h heads: $r"
done
r=$($TORCH_BLOOM init "$T/tok/model.safetensors" --n_layer 2 --n_head 4 --hidden_size 48 --vocab_size "$nv" --seed 6 2>&1) &&
    pass || fail "bloom_torch.py init, the tokenizer's vocabulary: $r"
# the attention's and the MLP's output projections 4 times larger: with its tied head and normalised
# embeddings a tiny random BLOOM repeats the last token whatever its attention computes, which would
# leave ALiBi and the cache untested
torch_py - "$T" "$SRC/tests/gpt2" <<'PY' || fail "scaling the weights"
import sys
sys.path.insert(0, sys.argv[2])
from gpt2_torch import read_safetensors, write_safetensors
for h in (4, 6):
    t, meta = read_safetensors(f"{sys.argv[1]}/h{h}.init.safetensors", with_metadata=True)
    write_safetensors(f"{sys.argv[1]}/h{h}.safetensors",
                      {k: v * 4 if k.endswith(("dense.weight", "dense_4h_to_h.weight")) else v for k, v in t.items()},
                      meta)
PY

# ---- generation: the cache and recomputation --------------------------------------------------------
declare -A want
for h in 4 6; do
    name=h$h
    run "$GEN" "$T/$name.safetensors" --n-head $h --prompt-ids "$PROMPT" --temperature 0 --max-new-tokens 24 \
        --ignore-eos --output ids --logits "$T/$name.kv.st"
    expect_rc 0 "$name: greedy with the key/value cache"
    expect_in "$err" "2 layers, $h heads (--n-head), hidden_size 48, ALiBi, vocab 257; the bloom family" \
        "$name: the banner"
    want[$name]=$out
    run "$GEN" "$T/$name.safetensors" --n-head $h --prompt-ids "$PROMPT" --temperature 0 --max-new-tokens 24 \
        --ignore-eos --output ids --no-kv-cache --logits "$T/$name.full.st"
    expect_rc 0 "$name: greedy recomputing the prefix every token"
    expect_eq "$out" "${want[$name]}" "$name: the same tokens without the cache"
    r=$($CHECK greedy "$T/$name.kv.st" "$T/$name.safetensors" --family bloom --n_head $h 2>&1) && pass ||
        fail "$name: the C logits torch's: $r"
    expect_in "$r" "greedy: 24 tokens after a 7-token prompt, 24 equal to torch's argmax, 0 ties, 0 different" \
        "$name: every token torch's argmax, no tie needed"
    echo "$name: $r"
    r=$($CHECK same "$T/$name.kv.st" "$T/$name.full.st" --tol 1e-4 2>&1) && pass ||
        fail "$name: the cache's logits those of recomputation: $r"
done
# the check can fail: h4's tokens against the model read with 2 heads
run $CHECK greedy "$T/h4.kv.st" "$T/h4.safetensors" --family bloom --n_head 2
expect_rc 1 "the greedy check fails for a model read with other heads"
# the heads from the file's metadata (bloom_torch.py writes n_head), as without --n-head
run "$GEN" "$T/h6.safetensors" --prompt-ids "$PROMPT" --temperature 0 --max-new-tokens 24 --ignore-eos --output ids
expect_rc 0 "the heads from the metadata"
expect_in "$err" "6 heads (the file's n_head metadata)" "the metadata's heads"
expect_eq "$out" "${want[h6]}" "the metadata's heads: the same tokens"

# ---- the tokenizer.json next to the model, or --tokenizer ---------------------------------------
text="the optimizer updates only local shards"
printf '%s' "$text" >"$T/prompt.txt"
want_ids=$($REF encode "$T/tok/tokenizer.json" "$T/prompt.txt" | tr '\n' ' ')
run "$GEN" "$T/tok" --prompt "$text" --temperature 0 --max-new-tokens 8 --ignore-eos --output ids
expect_rc 0 "a tokenizer.json next to the model"
expect_in "$err" "tokens from $T/tok/tokenizer.json" "the folder's tokenizer.json is used"
case "$out " in "$want_ids"*) pass ;; *) fail "the prompt's ids: [$out], expected to start with [$want_ids]" ;; esac
tok_ids=$out
run "$GEN" "$T/tok/model.safetensors" --tokenizer "$T/tok/tokenizer.json" --prompt "$text" --temperature 0 \
    --max-new-tokens 8 --ignore-eos --output ids
expect_rc 0 "--tokenizer"
expect_eq "$out" "$tok_ids" "--tokenizer: the same ids"
run "$GEN" "$T/tok" --prompt "$text" --max-new-tokens 8 --seed 1
expect_rc 0 "text out"
case $out in "$text"*) pass ;; *) fail "the text does not start with the prompt: $out" ;; esac

# ---- a tiny BLOOM the task trained: checkpoint-N in one command ---------------------------------
bloom_job job.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = BloomBlock" \
    "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
size = tiny
max_length = 32
data = $T/corpus.txt
per_device_train_batch_size = 2
learning_rate = 3e-3
EOF2
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.max_steps=2 --set task.output_dir="$T/train"
expect_rc 0 "the bloom task trains tiny for 2 steps"
run "$GEN" "$T/train/checkpoint-2" --prompt "the model" --temperature 0 --max-new-tokens 16 --ignore-eos \
    --logits "$T/ck.st"
expect_rc 0 "shardrun_generate checkpoint-2"
expect_in "$err" "(global_step 2): 4 layers, 4 heads (config.json), hidden_size 128" "checkpoint-2: the heads of its config.json"
r=$($CHECK greedy "$T/ck.st" "$T/train/checkpoint-2/model.safetensors" --family bloom --n_head 4 2>&1) && pass ||
    fail "checkpoint-2: the C logits torch's: $r"
expect_in "$r" "greedy: 16 tokens after a 9-token prompt, 16 equal to torch's argmax" "checkpoint-2 vs torch"
echo "checkpoint-2: $r"
done_checks
