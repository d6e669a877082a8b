# The BLOOM task as users start it: the shipped job file trains on 2 ranks (FULL_SHARD per
# BloomBlock, evaluation after the epoch, a FULL checkpoint holding HF BLOOM names); a tokenizer.json
# in BLOOM's layout (trained here by tests/bloom/tokenizer_reference.py) becomes the model's
# vocabulary; and bad [task] input fails before the first step naming the key.
. "$(dirname "$0")/lib.sh"
corpus
REF="torch_py $SRC/tests/bloom/tokenizer_reference.py"

# the shipped demo job, shortened
run "$SHARDRUN" "$SRC/examples/bloom/fsdp_cpu.ini" --set "task.output_dir=$T/demo" --set task.max_steps=6 \
    --set task.logging_steps=3 --set task.eval_strategy=steps --set task.eval_steps=6 --results "$T/demo.json"
expect_rc 0 "examples/bloom/fsdp_cpu.ini trains on 2 ranks"
expect_in "$out" "bloom: 4 layers, 4 heads, n_embd 128, vocab 257" "the tiny size, byte-level vocabulary"
expect_in "$out" "FSDP FULL_SHARD on 2 ranks (shard group 2, replicas 1): 5 units (4 wrapped + root)" "one unit per BloomBlock"
expect_in "$out" "'eval_loss':" "it evaluates"
ck="$T/demo/checkpoint-6/model.safetensors"
names=$($READ_ST "$ck" 2>&1 | awk '{print $1}' | sort | tr '\n' ' ')
expect_in "$names" "transformer.h.3.self_attention.query_key_value.weight" "the checkpoint holds HF's names"
expect_in "$names" "transformer.word_embeddings_layernorm.bias" "and the embedding LayerNorm"
expect_not_in "$names" "lm_head.weight" "lm_head is tied, not stored"

# tokenizer.json, BLOOM's layout
$REF train --bloom "$T/v.json" "$T/m.txt" 200 "$T/corpus.txt" 2>"$T/train.err" &&
    $REF make-json bloom "$T/v.json" "$T/m.txt" "$T/tokenizer.json" 2>>"$T/train.err" && pass ||
    fail "writing a BLOOM tokenizer.json: $(cat "$T/train.err")"
vocab=$($REF info "$T/tokenizer.json" | head -1 | awk '{print $2}')
bloom_job b.ini <<EOF2
data = $T/corpus.txt
max_length = 32
max_steps = 3
per_device_train_batch_size = 2
logging_steps = 1
tokenizer_json = $T/tokenizer.json
output_dir = $T/tj
EOF2
run "$SHARDRUN" "$T/b.ini" --nproc-per-node 2
expect_rc 0 "training with tokenizer_json"
expect_in "$out" "tokenizer.json BPE tokenizer, $vocab tokens" "the task reports the tokenizer.json vocabulary ($vocab)"
expect_in "$out" "vocab $vocab," "which becomes the model's"
expect_in "$out" "step 3/3" "3 steps"

# fails WHAT EXPECTED-IN-STDERR [shardrun args...]
fails() {
    local what=$1 msg=$2
    shift 2
    run "$SHARDRUN" "$T/b.ini" --nproc-per-node 2 "$@"
    [ "$rc" -ne 0 ] && pass || fail "$what: exit code 0"
    expect_not_in "$out" "step 1/" "$what: fails before the first step"
    expect_in "$err" "$msg" "$what: the message"
}
fails "unknown size" "[task] size = bloom-176b is not a BLOOM size; use tiny, bloom-560m, bloom-1b1, bloom-3b or bloom-7b1" \
    --set task.size=bloom-176b
fails "a GPT-2 key" "[task] n_embd is a GPT-2 key; BLOOM's width is hidden_size" --set task.n_embd=64
fails "heads do not divide hidden_size" "[task] hidden_size = 128 is not a multiple of n_head = 3" --set task.n_head=3
fails "two tokenizers" "[task] tokenizer_json and vocab_json + merges_txt each name a tokenizer; keep one" \
    --set task.vocab_json=$T/v.json --set task.merges_txt=$T/m.txt
fails "a missing tokenizer.json" "$T/none.json" --set task.tokenizer_json=$T/none.json
done_checks
