#!/bin/bash
# shardrun's tokenizer against HF's tokenizers library on real tokenizer.json files: the ids
# gpt2_tokenize gives the multilingual corpus (corpus/*.txt: apt's messages in 13 languages, debconf
# templates, licences, and a text of emoji, numbers, whitespace runs, contractions, NFC cases and
# special tokens written inside it) must equal, one for one, the ids HF's library gave
# (expected/*.ids.xz, written by expected_ids.sh with the npm package tokenizers), for
#   qwen3     Qwen3's tokenizer.json (qwen3-tokenizer.json.xz; NFC, Qwen's Split pattern, special tokens)
#   llama3    Llama 3's pattern and ignore_merges on it (variant.py llama3)
#   sequence  GPT-2's ByteLevel pattern after a Split that removes "\r\n" (variant.py sequence)
#   smollm    SmolLM2's pre-tokenizer on it: Digits, then ByteLevel's pattern (variant.py smollm)
# Needs no network; xz and /usr/bin/python3 (for variant.py).
# Environment: GPT2_TOKENIZE (default $BUILD/gpt2_tokenize), PYTHON (default /usr/bin/python3).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOK=${GPT2_TOKENIZE:-${BUILD:-build}/gpt2_tokenize}
PY=${PYTHON:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
[ -x "$TOK" ] || { echo "FAIL: no gpt2_tokenize executable at $TOK (set GPT2_TOKENIZE)"; exit 1; }
command -v xz >/dev/null || { echo "FAIL: xz is needed (apt-get install xz-utils)"; exit 1; }
xz -dc "$HERE/qwen3-tokenizer.json.xz" >"$T/qwen3.json" || { echo "FAIL: cannot decompress qwen3-tokenizer.json.xz"; exit 1; }
for v in llama3 sequence smollm; do
    "$PY" "$HERE/variant.py" $v "$T/qwen3.json" "$T/$v.json" || { echo "FAIL: variant.py $v"; exit 1; }
done
corpus=("$HERE"/corpus/*.txt)
failed=0
for v in qwen3 llama3 sequence smollm; do
    xz -dc "$HERE/expected/$v.ids.xz" >"$T/$v.want"
    if ! "$TOK" --tokenizer-json "$T/$v.json" "${corpus[@]}" >"$T/$v.got" 2>"$T/$v.err"; then
        failed=$((failed + 1))
        echo "FAIL: $v: gpt2_tokenize failed: $(cat "$T/$v.err")"
        continue
    fi
    if cmp -s "$T/$v.want" "$T/$v.got"; then
        printf '  %-9s %6d ids of %d texts, all equal to HF tokenizers'"'"' ids\n' "$v" "$(wc -l <"$T/$v.want")" ${#corpus[@]}
        continue
    fi
    failed=$((failed + 1))
    line=$(cmp "$T/$v.want" "$T/$v.got" 2>&1 | sed -n 's/.* line \([0-9]*\).*/\1/p')
    # which text: ours, text by text, until the running count of ids passes the line
    at=0 where=?
    for f in "${corpus[@]}"; do
        n=$("$TOK" --tokenizer-json "$T/$v.json" "$f" | wc -l)
        if [ -n "$line" ] && [ $((at + n)) -ge "$line" ]; then where="$(basename "$f"), its token $((line - at))"; break; fi
        at=$((at + n))
    done
    echo "FAIL: $v: $(wc -l <"$T/$v.got") ids, HF's library gave $(wc -l <"$T/$v.want"); first difference at id ${line:-?} ($where):"
    diff <(sed -n "$((${line:-1} > 3 ? ${line:-1} - 3 : 1)),$((${line:-1} + 3))p" "$T/$v.want") \
        <(sed -n "$((${line:-1} > 3 ? ${line:-1} - 3 : 1)),$((${line:-1} + 3))p" "$T/$v.got") | sed 's/^/      /'
done
echo "4 tokenizers checked against HF's ids: $failed failed"
[ "$failed" -eq 0 ]
