#!/bin/bash
# The end-of-text token of a real tokenizer.json comes from its special tokens, never from an
# ordinary vocabulary entry: Qwen3's file (qwen3-tokenizer.json.xz) has the ordinary "</s>" (id
# 128247) and the special "<|endoftext|>" (151643), and prepare writes 151643 before each document.
# A config.json beside the tokenizer.json names it with eos_token_id (a special token; an ordinary
# entry is refused, exit 2).  Llama 3's layout (variant.py llama3-eos: a special <|end_of_text|>
# next to the ordinary "</s>") gives <|end_of_text|>.  A file without a special end-of-text token is
# refused by gpt2_tokenize, prepare (exit 2) and training (exit 2, before step 0).
# Environment: GPT2_TOKENIZE, SHARDRUN_PREPARE (default: in $BUILD), PYTHON (default /usr/bin/python3).
. "$(dirname "$0")/../gpt2/lib.sh"
HERE=$SRC/tests/tokenizer_json
PREP=${SHARDRUN_PREPARE:-$BUILD/shardrun_prepare}
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PREP" ] || { echo "FAIL: no shardrun_prepare at $PREP (set SHARDRUN_PREPARE)"; exit 1; }
command -v xz >/dev/null || { echo "FAIL: xz is needed (apt-get install xz-utils)"; exit 1; }
mkdir -p "$T/qwen" "$T/llama" "$T/none"
xz -dc "$HERE/qwen3-tokenizer.json.xz" >"$T/qwen/tokenizer.json" || { echo "FAIL: cannot decompress the Qwen3 file"; exit 1; }
"$PY" "$HERE/variant.py" llama3-eos "$T/qwen/tokenizer.json" "$T/llama/tokenizer.json" &&
    "$PY" "$HERE/variant.py" no-eos "$T/qwen/tokenizer.json" "$T/none/tokenizer.json" ||
    { echo "FAIL: variant.py"; exit 1; }

# eos DIR: "eos E: where it came from" of DIR/tokenizer.json in $out
eos() { run "$GPT2_TOKENIZE" --tokenizer-json "$T/$1/tokenizer.json" --eos; }
eos qwen
expect_eq "$out" "eos 151643: \"<|endoftext|>\", a special token of the tokenizer.json" \
    "Qwen3: eos is the special <|endoftext|>, not the ordinary </s> (128247)"
eos llama
expect_eq "$out" "eos 151643: \"<|end_of_text|>\", a special token of the tokenizer.json" \
    "Llama 3's layout: eos is the special <|end_of_text|>, not the ordinary </s>"

# prepare writes the special token before each document (the shards: 1024-byte header, uint32 ids)
printf 'First document.\n' >"$T/d1.txt"
printf 'Second document.\n' >"$T/d2.txt"
run "$PREP" -o "$T/q" --tokenizer-json "$T/qwen/tokenizer.json" --val-tokens 0 --progress none "$T/d1.txt" "$T/d2.txt"
expect_rc 0 "prepare with Qwen3's tokenizer.json"
expect_in "$out" "end of text (before each document): id 151643, \"<|endoftext|>\"" "prepare says which end of text"
ids=$(od -An -v -tu4 -j1024 "$T/q_train_000000.bin" | tr -s ' \n' ' ')
want=" 151643 $("$GPT2_TOKENIZE" --tokenizer-json "$T/qwen/tokenizer.json" "$T/d1.txt" | tr '\n' ' ')151643 $("$GPT2_TOKENIZE" --tokenizer-json "$T/qwen/tokenizer.json" "$T/d2.txt" | tr '\n' ' ')"
expect_eq "$ids" "$want" "the shard: 151643, the first document, 151643, the second"

# config.json beside it: eos_token_id, an id or a list (its first); null leaves the file's own
config() { printf '{"architectures": ["Qwen3ForCausalLM"],\n "bos_token_id": 151643,\n "eos_token_id": %s,\n "vocab_size": 151936}\n' "$1" >"$T/qwen/config.json"; }
config 151645
eos qwen
expect_eq "$out" "eos 151645: \"<|im_end|>\", eos_token_id of the config.json beside the tokenizer.json" \
    "config.json's eos_token_id 151645 (<|im_end|>, Qwen3's instruct models')"
config "[151645, 151643]"
eos qwen
expect_in "$out" "eos 151645: \"<|im_end|>\"" "config.json's eos_token_id list: its first"
config null
eos qwen
expect_in "$out" "eos 151643: \"<|endoftext|>\", a special token" "config.json's eos_token_id null: the file's own"
config 128247
eos qwen
expect_rc 1 "config.json's eos_token_id naming the ordinary </s>: gpt2_tokenize refuses the tokenizer"
expect_in "$err" "$T/qwen/config.json:3: eos_token_id 128247 is, in $T/qwen/tokenizer.json, an ordinary entry of model.vocab, not a special token" \
    "the message names config.json, its line and the tokenizer.json"
expect_in "$err" "the file's special end-of-text tokens: \"<|endoftext|>\" (id 151643)" "and says which it has"
run "$PREP" -o "$T/c" --tokenizer-json "$T/qwen/tokenizer.json" --progress none "$T/d1.txt"
expect_rc 2 "prepare with config.json's eos_token_id an ordinary entry"
expect_in "$err" "eos_token_id 128247 is" "prepare: the message"
expect_eq "$(ls "$T" | grep -c '^c_')" 0 "prepare: no shard written"
printf '{"eos_token_id": 151645,\n' >"$T/qwen/config.json"
eos qwen
expect_rc 1 "a config.json that is not JSON is refused, not passed over"
expect_in "$err" "$T/qwen/config.json:2: expected" "the message names config.json and its line"
rm "$T/qwen/config.json"

# no special end-of-text token at all: refused, naming the look-alikes passed over and what to do
eos none
expect_rc 1 "no special end-of-text token: gpt2_tokenize refuses the tokenizer"
msg="$T/none/tokenizer.json: no special end-of-text token: none of \"</s>\", \"<|endoftext|>\", \"<|end_of_text|>\" is in added_tokens with \"special\": true (\"</s>\" (128247) is an ordinary model.vocab entry; \"<|endoftext|>\" (151643) is an added token without \"special\": true)"
expect_in "$err" "$msg" "the message names the file and the look-alikes"
expect_in "$err" "Mark the model's end-of-text token special in added_tokens, or give its id as eos_token_id in a config.json beside the tokenizer.json" "and what to do"
run "$PREP" -o "$T/n" --tokenizer-json "$T/none/tokenizer.json" --progress none "$T/d1.txt"
expect_rc 2 "prepare without a special end-of-text token"
expect_in "$err" "$msg" "prepare: the message"
gpt2_job job.ini <<EOF2
size = tiny
n_layer = 1
n_embd = 16
n_head = 2
max_length = 16
max_steps = 1
min_chars = 0
data = $T/d1.txt
tokenizer_json = $T/none/tokenizer.json
output_dir = $T/out
EOF2
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1
expect_rc 2 "training without a special end-of-text token"
expect_in "$err" "$msg" "training: the message"
expect_not_in "$out" "step 1/" "training: no step ran"
done_checks
