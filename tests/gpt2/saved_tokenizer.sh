# The tokenizer travels with the model: a FULL_STATE_DICT checkpoint holds the files of the tokenizer
# that trained it (vocab.json + merges.txt, or tokenizer.json: byte for byte), HF's
# tokenizer_config.json and a config.json (model_type, architectures, sizes, vocab_size, the end of
# text as bos/eos_token_id, shardrun_tokenizer), each listed with its hash in model.safetensors.
#  - GPT-2 with vocab.json + merges.txt (2 ranks) and the Llama task with a tokenizer.json: the files
#    are the sources' bytes, config.json's fields are the model's;
#  - shardrun_generate CKPT without --job uses the saved tokenizer: the same text as with --job;
#  - a byte-level run says so (shardrun_tokenizer "byte-level", no tokenizer files), and generation
#    then refuses a tokenizer named on the command line; a checkpoint that records nothing (an
#    earlier shardrun's) is refused rather than read with byte-level tokens;
#  - a fine-tune from the checkpoint (init_weights) takes its tokenizer when the job names none, and
#    refuses a job naming another one (exit 2), as generation does (--vocab/--merges, --job);
#  - a damaged tokenizer or config.json in a checkpoint is caught by generation (exit 2) and by a
#    resume (exit 1), naming the file.
. "$(dirname "$0")/lib.sh"
GEN=${GENERATE:-$BUILD/shardrun_generate}
[ -x "$GEN" ] || { echo "FAIL: no shardrun_generate at $GEN (build the tree, or set GENERATE)"; exit 1; }
export OMP_NUM_THREADS=1
corpus
PY=/usr/bin/python3
$PY "$SRC/tests/gpt2/bpe_reference.py" train "$T/vocab.json" "$T/merges.txt" 300 "$T/corpus.txt" >/dev/null ||
    { echo "FAIL: training a test vocabulary"; exit 1; }
$PY "$SRC/tests/gpt2/bpe_reference.py" train "$T/v2.json" "$T/m2.txt" 40 /usr/share/common-licenses/GPL-3 >/dev/null ||
    { echo "FAIL: training a second test vocabulary"; exit 1; }

# json_eq FILE EXPR WANT: the Python expression over the file's JSON object `c`
json_eq() {
    local got
    got=$($PY -c "import json,sys; c = json.load(open(sys.argv[1])); print(repr(($2)))" "$1" 2>&1)
    expect_eq "$got" "$3" "$(basename "$1"): $2"
}

# ---- GPT-2, vocab.json + merges.txt ------------------------------------------------------------------
gpt2_job g.ini "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF
size = tiny
max_length = 64
data = $T/corpus.txt
vocab_json = $T/vocab.json
merges_txt = $T/merges.txt
per_device_train_batch_size = 4
learning_rate = 3e-3
max_steps = 2
output_dir = $T/g
EOF
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 2
expect_rc 0 "GPT-2 with vocab.json and merges.txt trains 2 steps"
ck=$T/g/checkpoint-2
expect_same_file "$T/vocab.json" "$ck/vocab.json" "the checkpoint's vocab.json"
expect_same_file "$T/merges.txt" "$ck/merges.txt" "the checkpoint's merges.txt"
nv=$($PY -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$T/vocab.json")
eos=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['<|endoftext|>'])" "$T/vocab.json")
json_eq "$ck/config.json" "c['model_type'], c['architectures'], c['n_layer'], c['n_head'], c['n_embd'], c['n_positions']" \
    "('gpt2', ['GPT2LMHeadModel'], 4, 4, 128, 256)"
json_eq "$ck/config.json" "c['vocab_size'], c['bos_token_id'], c['eos_token_id'], c['shardrun_tokenizer']" \
    "($nv, $eos, $eos, 'vocab.json merges.txt')"
json_eq "$ck/tokenizer_config.json" "c['tokenizer_class'], c['eos_token']" "('GPT2Tokenizer', '<|endoftext|>')"
[ -f "$T/g/checkpoint-1/vocab.json" ] && fail "a checkpoint-1 exists: save_steps is off" || pass

run "$GEN" "$ck" --prompt "the model" --temperature 0 --max-new-tokens 12 --ignore-eos
expect_rc 0 "generation from the checkpoint alone"
expect_in "$err" "GPT-2 BPE tokens from $ck/vocab.json and $ck/merges.txt" "the checkpoint's tokenizer"
alone=$out
run "$GEN" "$ck" --job "$T/g.ini" --prompt "the model" --temperature 0 --max-new-tokens 12 --ignore-eos
expect_rc 0 "generation with --job"
expect_eq "$out" "$alone" "the same text without --job as with it"
run "$GEN" "$ck" --vocab "$T/v2.json" --merges "$T/m2.txt" --prompt x
expect_rc 2 "generation with another tokenizer"
expect_in "$err" "but $ck was trained with vocab.json $ck/vocab.json" "another tokenizer: named"

# a fine-tune from the checkpoint: its tokenizer when the job names none, another refused
sed -e '/^vocab_json/d' -e '/^merges_txt/d' -e "s#^output_dir = .*#output_dir = $T/ft#" "$T/g.ini" >"$T/ft.ini"
echo "init_weights = $ck/model.safetensors" >>"$T/ft.ini"
run "$SHARDRUN" "$T/ft.ini"
expect_rc 0 "a fine-tune from init_weights, no tokenizer keys"
expect_in "$out" "tokenizer: vocab.json $ck/vocab.json and merges.txt $ck/merges.txt, which init_weights was trained with" \
    "the fine-tune says whose tokenizer"
expect_same_file "$T/vocab.json" "$T/ft/checkpoint-2/vocab.json" "the fine-tune's checkpoint holds it too"
printf 'vocab_json = %s\nmerges_txt = %s\n' "$T/v2.json" "$T/m2.txt" >>"$T/ft.ini"
run "$SHARDRUN" "$T/ft.ini" --set task.output_dir="$T/ft2"
expect_rc 2 "a fine-tune naming another tokenizer"
expect_in "$err" "is not the one init_weights = $ck/model.safetensors was trained with" "another tokenizer: init_weights named"
[ -d "$T/ft2/checkpoint-2" ] && fail "the refused fine-tune saved a checkpoint" || pass

# ---- damage: generation and resume catch it -----------------------------------------------------------
cp -r "$ck" "$T/dmg"
printf '\n' >>"$T/dmg/merges.txt"
run "$GEN" "$T/dmg" --prompt x
expect_rc 2 "generation from a checkpoint with a damaged merges.txt"
expect_in "$err" "$T/dmg/merges.txt was changed or damaged after the checkpoint was written" "damaged merges.txt named"
mkdir -p "$T/r" && cp -r "$ck" "$T/r/checkpoint-2"
sed -i 's/"n_head": 4/"n_head":  4/' "$T/r/checkpoint-2/config.json"
run "$SHARDRUN" "$T/g.ini" --set task.output_dir="$T/r" --set task.resume_from_checkpoint="$T/r/checkpoint-2" \
    --set task.max_steps=3
expect_rc 1 "a resume from a checkpoint with a changed config.json"
expect_in "$err" "$T/r/checkpoint-2/config.json was changed or damaged after the checkpoint was written" \
    "changed config.json named"
[ -d "$T/r/checkpoint-3" ] && fail "the refused resume saved checkpoint-3" || pass

# ---- byte-level: recorded, no guessing -------------------------------------------------------------------
sed -e '/^vocab_json/d' -e '/^merges_txt/d' -e "s#^output_dir = .*#output_dir = $T/b#" "$T/g.ini" >"$T/b.ini"
run "$SHARDRUN" "$T/b.ini"
expect_rc 0 "a byte-level run"
json_eq "$T/b/checkpoint-2/config.json" "c['shardrun_tokenizer'], c['vocab_size'], c['eos_token_id']" \
    "('byte-level', 257, 256)"
ls "$T/b/checkpoint-2" | grep -qE 'vocab|merges|tokenizer' && fail "tokenizer files in a byte-level checkpoint" || pass
run "$GEN" "$T/b/checkpoint-2" --prompt "the" --max-new-tokens 3
expect_rc 0 "generation from the byte-level checkpoint"
expect_in "$err" "byte-level tokens (as the checkpoint records)" "byte-level, as recorded"
run "$GEN" "$T/b/checkpoint-2" --vocab "$T/vocab.json" --merges "$T/merges.txt" --prompt x
expect_rc 2 "a tokenizer named for a byte-level checkpoint"
expect_in "$err" "was trained with byte-level tokens" "byte-level: another tokenizer refused"
run "$GEN" "$ck" --job "$T/b.ini" --prompt x
expect_rc 2 "a byte-level job for a BPE checkpoint"
expect_in "$err" "$T/b.ini names byte-level tokens, but $ck was trained with" "--job's byte-level refused"
# a checkpoint of an earlier shardrun: no config.json, no tokenizer files, no "file:" entries
mkdir -p "$T/old"
$PY - "$T/b/checkpoint-2/model.safetensors" "$T/old/model.safetensors" <<'PY' || fail "writing an old-style checkpoint"
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
h["__metadata__"] = {k: v for k, v in h["__metadata__"].items() if not k.startswith("file:")}
t = json.dumps(h).encode()
open(sys.argv[2], "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:])
PY
run "$GEN" "$T/old" --prompt x
expect_rc 2 "a checkpoint that records no tokenizer"
expect_in "$err" "$T/old does not record which tokenizer trained it" "no record: refused"
run "$GEN" "$T/old" --job "$T/b.ini" --prompt x --max-new-tokens 2
expect_rc 0 "... read with the job that trained it"

# ---- the Llama task with a tokenizer.json ------------------------------------------------------------
$PY "$SRC/tests/bloom/tokenizer_reference.py" make-json gpt2 "$T/vocab.json" "$T/merges.txt" "$T/tok.json" >/dev/null ||
    fail "writing a tokenizer.json"
{
    printf '[shardrun]\ntask = %s\nplugins = torch,accelerate\n\n[accelerate]\n' "$BUILD/examples/llama.so"
    printf 'fsdp.state_dict_type = FULL_STATE_DICT\n\n[task]\n'
    printf 'size = tiny\nmax_length = 32\ndata = %s\ntokenizer_json = %s\n' "$T/corpus.txt" "$T/tok.json"
    printf 'per_device_train_batch_size = 2\nmax_steps = 1\noutput_dir = %s\n' "$T/l"
} >"$T/l.ini"
run "$SHARDRUN" "$T/l.ini"
expect_rc 0 "the llama task with a tokenizer.json trains a step"
lk=$T/l/checkpoint-1
expect_same_file "$T/tok.json" "$lk/tokenizer.json" "the checkpoint's tokenizer.json"
json_eq "$lk/config.json" "c['model_type'], c['architectures'], c['vocab_size'] >= $nv, c['eos_token_id'], c['shardrun_tokenizer']" \
    "('llama', ['LlamaForCausalLM'], True, $eos, 'tokenizer.json')"
json_eq "$lk/tokenizer_config.json" "c['tokenizer_class'], c['eos_token']" "('PreTrainedTokenizerFast', '<|endoftext|>')"
run "$GEN" "$lk" --prompt "the model" --temperature 0 --max-new-tokens 8 --ignore-eos
expect_rc 0 "llama: generation from the checkpoint alone"
expect_in "$err" "tokens from $lk/tokenizer.json" "llama: the checkpoint's tokenizer.json"
alone=$out
run "$GEN" "$lk" --job "$T/l.ini" --prompt "the model" --temperature 0 --max-new-tokens 8 --ignore-eos
expect_rc 0 "llama: generation with --job"
expect_eq "$out" "$alone" "llama: the same text without --job as with it"
done_checks
