# shardrun_generate (examples/generate) on BLOOM checkpoints (examples/bloom/bloom_infer.c).
#  - greedy decoding picks, at every step, the argmax of tests/bloom/bloom_torch.py's BLOOM (float64,
#    HF's formulas, one forward over the whole sequence), from a 7-token prompt over 24 new tokens, at
#    4 heads (ALiBi's slopes of a power of two) and 6 (the extra slopes between them), with HF's names
#    and the Hub's (no "transformer." prefix); the check fails for a model read with other heads;
#  - the key/value cache (ALiBi as one more key column) gives the logits of a full recomputation
#    (the task's training forward, --no-kv-cache) within 1e-4 of the largest, the same tokens;
#  - a BLOOM the bloom task trained (FULL_STATE_DICT) generates from its checkpoint-N folder, its
#    heads BLOOM's for its width.
# Environment: SHARDRUN_GENERATE (default $BUILD/shardrun_generate).
. "$(dirname "$0")/lib.sh"
GEN=${SHARDRUN_GENERATE:-$BUILD/shardrun_generate}
CHECK="/usr/bin/python3 $SRC/tests/gpt2/generate_check.py"
[ -x "$GEN" ] || { echo "FAIL: no shardrun_generate at $GEN (build the tree, or set SHARDRUN_GENERATE)"; exit 1; }
export OMP_NUM_THREADS=2
PROMPT="5 17 200 3 99 42 7"

# family NAME HEADS [init flags...]: random weights, greedy vs torch, the cache vs recomputation.
# bloom_torch.py's weights, with the attention's and the MLP's output projections 4 times larger: with
# its tied head and normalised embeddings a tiny random BLOOM repeats the last token whatever its
# attention computes, which would leave ALiBi and the cache untested.
family() {
    local name=$1 heads=$2
    shift 2
    /usr/bin/python3 "$SRC/tests/bloom/bloom_torch.py" init "$T/$name.init.safetensors" --n_layer 2 --n_head "$heads" \
        --hidden_size 48 --vocab_size 257 --seed 5 "$@" >/dev/null || fail "$name: bloom_torch.py init"
    /usr/bin/python3 - "$T/$name.init.safetensors" "$T/$name.safetensors" "$SRC/tests/gpt2" <<'PY' || fail "$name: scaling"
import sys
sys.path.insert(0, sys.argv[3])
from gpt2_torch import read_safetensors, write_safetensors
t, meta = read_safetensors(sys.argv[1], with_metadata=True)
write_safetensors(sys.argv[2], {k: v * 4 if k.endswith(("dense.weight", "dense_4h_to_h.weight")) else v
                                for k, v in t.items()}, meta)
PY
    run "$GEN" "$T/$name.safetensors" --n-head "$heads" --prompt-ids "$PROMPT" --temperature 0 --max-new-tokens 24 \
        --ignore-eos --output ids --logits "$T/$name.kv.st"
    expect_rc 0 "$name: greedy with the key/value cache"
    expect_in "$err" "2 layers, $heads heads (--n-head), hidden_size 48, ALiBi, vocab 257; the bloom family" \
        "$name: the banner"
    kv_ids=$out
    r=$($CHECK greedy "$T/$name.kv.st" "$T/$name.safetensors" --family bloom --n_head "$heads" 2>&1) &&
        pass || fail "$name: greedy vs torch's argmax: $r"
    echo "$name: $r"
    expect_in "$r" "24 equal to torch's argmax, 0 ties" "$name: every token torch's, no tie needed"
    run "$GEN" "$T/$name.safetensors" --n-head "$heads" --prompt-ids "$PROMPT" --temperature 0 --max-new-tokens 24 \
        --ignore-eos --output ids --no-kv-cache --logits "$T/$name.full.st"
    expect_rc 0 "$name: greedy recomputing the prefix every token"
    expect_eq "$out" "$kv_ids" "$name: the same tokens without the cache"
    r=$($CHECK same "$T/$name.kv.st" "$T/$name.full.st" --tol 1e-4 2>&1) && pass || fail "$name: cache vs recomputation: $r"
    echo "$name: $r"
}
family h4 4
family h6 6 --no-prefix
# the check can fail: h4's tokens against the model read with 2 heads
r=$($CHECK greedy "$T/h4.kv.st" "$T/h4.safetensors" --family bloom --n_head 2 2>&1) &&
    fail "the greedy check passes a model read with 2 heads: $r" || pass
# the heads from the file's metadata (bloom_torch.py writes n_head), as without --n-head
run "$GEN" "$T/h6.safetensors" --prompt-ids "$PROMPT" --temperature 0 --max-new-tokens 24 --ignore-eos --output ids
expect_rc 0 "the heads from the metadata"
expect_in "$err" "6 heads (the file's n_head metadata)" "the metadata's heads"
expect_eq "$out" "$kv_ids" "the metadata's heads: the same tokens"

# ---- a tiny BLOOM the task trained: checkpoint-N in one command ---------------------------------
corpus
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
expect_in "$err" "(global_step 2): 4 layers, 4 heads (BLOOM's for hidden_size 128" "checkpoint-2: BLOOM's heads"
r=$($CHECK greedy "$T/ck.st" "$T/train/checkpoint-2/model.safetensors" --family bloom --n_head 4 2>&1) &&
    pass || fail "checkpoint-2 greedy vs torch: $r"
echo "checkpoint-2: $r"
done_checks
