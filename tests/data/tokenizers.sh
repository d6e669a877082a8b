# A shard set is one tokenizer's tokens: shardrun_prepare records the tokenizer in each shard's
# header (words 3..23, which llm.c's reader ignores: llmc_shards.py reads them back); a prefix
# prepared again with another tokenizer is refused, naming the shards there, and left as it was; a
# re-run with the same tokenizer that writes fewer shards removes the ones left over; training on a
# set that mixes tokenizers or token widths is refused naming two files; a job naming another
# tokenizer than the shards' is refused; a job naming none is told which tokenizer wrote them.
. "$(dirname "$0")/../gpt2/lib.sh"
export OMP_NUM_THREADS=1
PREP=${SHARDRUN_PREPARE:-$BUILD/shardrun_prepare}
REF=$SRC/tests/data/llmc_shards.py
[ -x "$PREP" ] || { echo "FAIL: no $PREP; build first"; exit 1; }
L=/usr/share/common-licenses
/usr/bin/python3 "$SRC/tests/gpt2/bpe_reference.py" train "$T/vocab.json" "$T/merges.txt" 270 "$L/BSD" >/dev/null ||
    { echo "FAIL: training a vocabulary"; exit 1; }
mkdir "$T/p" "$T/q"
# words 3..23 of a shard's header: "tag version name"
record() {
    /usr/bin/python3 -c "import struct,sys; h = open(sys.argv[1],'rb').read(96); w = struct.unpack('<24i', h)
print(hex(w[3]), w[4], h[32:96].rstrip(b'\0').decode())" "$1"
}

# ---- prepare records the tokenizer; llm.c's reader still reads the shards ----
run "$PREP" -o "$T/p/c" --val-tokens 0 --shard-tokens 600 --progress none "$L/BSD"
expect_rc 0 "byte-level prepare"
expect_eq "$(record "$T/p/c_train_000000.bin")" "0x4b545253 1 byte-level" "the header records the byte-level tokenizer"
expect_eq "$(/usr/bin/python3 "$REF" read "$T/p/c_train_000000.bin" | wc -l)" 600 "llm.c's reader reads the shard"
names=$(cd "$T/p" && ls)
stamps=$(stat -c '%n %i %Y' "$T/p"/*)

# ---- the same prefix with another tokenizer: refused before any work, nothing changed ----
BPE=(--vocab "$T/vocab.json" --merges "$T/merges.txt")
run "$PREP" "${BPE[@]}" -o "$T/p/c" --val-tokens 0 --shard-tokens 600 --progress none "$L/BSD"
expect_rc 2 "prepare into a prefix holding another tokenizer's shards"
expect_in "$err" "c_train_000000.bin" "the message names the shards there"
expect_in "$err" "tokenizer byte-level" "the message names their tokenizer"
expect_in "$err" "remove them (rm $T/p/c_train_*.bin" "the message says what to do"
expect_eq "$(stat -c '%n %i %Y' "$T/p"/*)" "$stamps" "the prefix is left as it was"
# a prefix holding shards that record no tokenizer (llm.c's writer): refused too
seq 0 99 | /usr/bin/python3 "$REF" write "$T/q/l_train_000000.bin" gpt-2
run "$PREP" -o "$T/q/l" --val-tokens 0 --progress none "$L/BSD"
expect_rc 2 "prepare into a prefix holding llm.c's shards"
expect_in "$err" "no tokenizer record" "the message says they record none"

# ---- a re-run with the same tokenizer that writes fewer shards: the others are removed ----
run "$PREP" -o "$T/p/c" --val-tokens 100 --shard-tokens 100000 --progress none "$L/BSD"
expect_rc 0 "re-run with fewer shards"
expect_eq "$(cd "$T/p" && ls | tr '\n' ' ')" "c_train_000001.bin c_val_000000.bin " "exactly the new set is left"
expect_in "$out" "removed" "the output says shards were removed"

# ---- training: a set mixing tokenizers, or widths, is refused naming two files ----
run "$PREP" "${BPE[@]}" -o "$T/p/bpe" --val-tokens 0 --shard-tokens 300 --progress none "$L/BSD"
expect_rc 0 "BPE prepare"
expect_in "$(record "$T/p/bpe_train_000000.bin")" "vocab.json+merges.txt" "the header names the BPE files"
gpt2_job job.ini <<EOF2
size = tiny
n_layer = 1
n_embd = 16
n_head = 2
max_length = 16
max_steps = 1
per_device_train_batch_size = 2
output_dir = $T/out
overwrite_output_dir = true
EOF2
bad() { # WHAT MESSAGE [--set ...]: exit 2 before step 0
    local what=$1 msg=$2
    shift 2
    run "$SHARDRUN" "$T/job.ini" "$@"
    expect_rc 2 "$what"
    expect_in "$err" "$msg" "$what: the message"
    expect_not_in "$out" "step 1/" "$what: no step ran"
}
bad "a set of two tokenizers' shards" "the shards mix tokenizers" --set task.data="$T/p/*_train_*.bin" --set task.vocab_size=640
expect_in "$err" "bpe_train_000000.bin" "both files named"
expect_in "$err" "c_train_000001.bin" "both files named"
seq 0 99 | /usr/bin/python3 "$REF" write "$T/q/w_train_000000.bin" llama-3
bad "a set of uint16 and uint32 shards" "holds uint32 tokens" --set task.data="$T/p/c_train_*.bin $T/q/w_train_*.bin" \
    --set task.vocab_size=640
bad "eval shards of another tokenizer" "data and eval_data were written by different tokenizers" \
    --set task.data="$T/p/bpe_train_*.bin" --set task.eval_data="$T/p/c_val_*.bin" --set task.vocab_size=640

# ---- the job's tokenizer must be the shards' ----
bad "BPE job on byte-level shards" "were written by tokenizer byte-level" --set task.data="$T/p/c_train_*.bin" \
    --set task.vocab_json="$T/vocab.json" --set task.merges_txt="$T/merges.txt"
run "$SHARDRUN" "$T/job.ini" --set task.data="$T/p/bpe_train_*.bin" --set task.vocab_json="$T/vocab.json" \
    --set task.merges_txt="$T/merges.txt"
expect_rc 0 "BPE job on its own shards"
# a job naming no tokenizer trains, and is told which tokenizer wrote the shards
run "$SHARDRUN" "$T/job.ini" --set task.data="$T/p/bpe_train_*.bin" --set task.vocab_size=640
expect_rc 0 "no tokenizer named"
expect_in "$out" "token shards of tokenizer $(basename "$T")/vocab.json+merges.txt" "the data line names the shards' tokenizer"
done_checks
