#!/bin/bash
# A tokenizer.json whose Split pattern backtracks without end ((a+)+$, variant.py backtrack, on 100
# 'a's that do not end the text) runs past PCRE2's match limit: gpt2_tokenize, prepare and training
# each say so, naming the tokenizer.json, where the pattern is written in it, the pattern and the
# limit, and exit 2 (the tokenizer file is at fault), not "out of memory"; prepare leaves no shard
# and training runs no step.  The same file on text the pattern matches at once is fine.
# generate, on a model trained one step with that file, refuses such a prompt the same way.
# Environment: GPT2_TOKENIZE, SHARDRUN_PREPARE, GENERATE (default: in $BUILD), PYTHON (default
# /usr/bin/python3).
. "$(dirname "$0")/../gpt2/lib.sh"
HERE=$SRC/tests/tokenizer_json
PREP=${SHARDRUN_PREPARE:-$BUILD/shardrun_prepare}
GEN=${GENERATE:-$BUILD/shardrun_generate}
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PREP" ] || { echo "FAIL: no shardrun_prepare at $PREP (set SHARDRUN_PREPARE)"; exit 1; }
[ -x "$GEN" ] || { echo "FAIL: no shardrun_generate at $GEN (set GENERATE)"; exit 1; }
command -v xz >/dev/null || { echo "FAIL: xz is needed (apt-get install xz-utils)"; exit 1; }
xz -dc "$HERE/qwen3-tokenizer.json.xz" >"$T/qwen3.json" &&
    "$PY" "$HERE/variant.py" backtrack "$T/qwen3.json" "$T/tokenizer.json" || { echo "FAIL: variant.py backtrack"; exit 1; }
rm "$T/qwen3.json"
a100=$(printf 'a%.0s' {1..100})
printf '%s\n' "$a100" >"$T/fine.txt"    # the pattern matches the whole run at once ($ before the last newline)
printf '%s!\n' "$a100" >"$T/stuck.txt" # no match from any start: every split of the run is tried
# (the piece: "a...a!\n", 102 bytes; training trims the text's last newline)
msg="$T/tokenizer.json:1: pre_tokenizer.pretokenizers[0].pattern.Regex \"(a+)+\$\": PCRE2 stopped matching this pattern on a piece of"
limit="(\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\"): PCRE2's match limit ("
todo="backtracking steps, libpcre2's default) ran out. The pattern backtracks without end on such text (nested quantifiers like (a+)+ do): rewrite it in the tokenizer.json (e.g. (a+)+\$ as a+\$)"

run "$GPT2_TOKENIZE" --tokenizer-json "$T/tokenizer.json" "$T/fine.txt"
expect_rc 0 "the pattern on text it matches at once"
run "$GPT2_TOKENIZE" --tokenizer-json "$T/tokenizer.json" "$T/stuck.txt"
expect_rc 2 "gpt2_tokenize: a pattern past the match limit"
expect_in "$err" "$T/stuck.txt: $msg 102 bytes $limit" "gpt2_tokenize: the text, the file, where the pattern is, the limit"
expect_in "$err" "$todo" "gpt2_tokenize: what to do"
expect_not_in "$err" "out of memory" "gpt2_tokenize: not reported as memory"

run "$PREP" -o "$T/s" --tokenizer-json "$T/tokenizer.json" --progress none "$T/fine.txt" "$T/stuck.txt"
expect_rc 2 "prepare: a pattern past the match limit"
expect_in "$err" "shardrun_prepare: error: $T/stuck.txt: $msg 102 bytes $limit" "prepare: the input, the file, the pattern, the limit"
expect_in "$err" "$todo" "prepare: what to do"
expect_not_in "$err" "out of memory" "prepare: not reported as memory"
expect_eq "$(ls -A "$T" | grep -c 's_')" 0 "prepare: no shard (nor a temporary) left"

gpt2_job job.ini <<EOF2
size = tiny
n_layer = 1
n_embd = 16
n_head = 2
max_length = 16
max_steps = 1
min_chars = 0
data = $T/fine.txt $T/stuck.txt
tokenizer_json = $T/tokenizer.json
output_dir = $T/out
EOF2
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1
expect_rc 2 "training: a pattern past the match limit"
expect_in "$err" "gpt2: error: $T/stuck.txt: $msg 101 bytes $limit" "training: the data file, the tokenizer file, the pattern, the limit"
expect_in "$err" "$todo" "training: what to do"
expect_not_in "$err" "out of memory" "training: not reported as memory"
expect_not_in "$out" "step 1/" "training: no step ran"

run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.data="$T/fine.txt"
expect_rc 0 "training on text the pattern matches at once"
run "$GEN" "$T/out/checkpoint-1" --n-head 2 --tokenizer "$T/tokenizer.json" --prompt "$(cat "$T/stuck.txt")" \
    --max-new-tokens 2
expect_rc 2 "generate: a prompt past the match limit"
expect_in "$err" "shardrun_generate: error: tokenizing the prompt: $msg 101 bytes $limit" "generate: the pattern, the limit"
expect_in "$err" "$todo" "generate: what to do"
done_checks
