#!/bin/bash
# A model's other tokenizer files given for its tokenizer.json ([task] tokenizer_json,
# gpt2_tokenize --tokenizer-json): HF's tokenizer_config.json (settings only) and GPT-2's vocab.json
# (ids only) are named for what they are, with the file to give instead, before any step (exit 2);
# a JSON file that is neither is still refused by its first unknown member.
. "$(dirname "$0")/../gpt2/lib.sh"
mkdir -p "$T/model"
# as transformers writes them (GPT-2's, shortened)
cat >"$T/model/tokenizer_config.json" <<'X'
{
  "add_bos_token": false,
  "add_prefix_space": false,
  "added_tokens_decoder": {
    "50256": {"content": "<|endoftext|>", "lstrip": false, "normalized": true, "rstrip": false, "single_word": false, "special": true}
  },
  "bos_token": "<|endoftext|>",
  "clean_up_tokenization_spaces": false,
  "eos_token": "<|endoftext|>",
  "errors": "replace",
  "model_max_length": 1024,
  "pad_token": null,
  "tokenizer_class": "GPT2Tokenizer",
  "unk_token": "<|endoftext|>"
}
X
printf '{"!": 0, "\\"": 1, "#": 2, "\\u0120the": 3, "<|endoftext|>": 4}\n' >"$T/model/vocab.json"
printf '{"foo": 1, "bar": "x"}\n' >"$T/model/other.json"
printf 'the model shards every block.\n\n' >"$T/corpus.txt"
gpt2_job g.ini <<EOF2
size = tiny
n_layer = 1
n_embd = 32
n_head = 2
max_length = 32
data = $T/corpus.txt
max_steps = 1
per_device_train_batch_size = 2
EOF2
CONFIG="$T/model/tokenizer_config.json is a tokenizer_config.json (the tokenizer's settings, without its vocabulary): give the tokenizer.json beside it"
VOCAB="$T/model/vocab.json is a vocab.json (token ids only, without the merges): give the model's tokenizer.json, or this file with the merges.txt beside it (vocab_json and merges_txt)"
for f in tokenizer_config.json:"$CONFIG" vocab.json:"$VOCAB" other.json:'other.json:1: the file has a member "foo": not supported yet'; do
    name=${f%%:*} msg=${f#*:}
    run "$SHARDRUN" "$T/g.ini" --set task.tokenizer_json="$T/model/$name"
    expect_rc 2 "[task] tokenizer_json = $name"
    expect_in "$err" "$msg" "[task] tokenizer_json = $name: named"
    expect_not_in "$out" "step 1/" "[task] tokenizer_json = $name: no step"
    run "$GPT2_TOKENIZE" --tokenizer-json "$T/model/$name" --eos
    [ "$rc" -ne 0 ] && pass || fail "gpt2_tokenize --tokenizer-json $name: exit code 0"
    expect_in "$err" "$msg" "gpt2_tokenize --tokenizer-json $name: named"
done
done_checks
