# Shared by the GPT-2 task's tests: the integration-test helpers plus a job-file writer.
# Environment, besides SRC/BUILD/SHARDRUN (tests/cli/lib.sh): GPT2_TOKENIZE, the tokenizer's test
# executable (default: $BUILD/gpt2_tokenize, where the build puts it); SANITIZED, 1 for the
# sanitizer build (default: read from the build's cache), which shortens the demo.
. "$(dirname "$0")/../cli/lib.sh"
GPT2_TOKENIZE=${GPT2_TOKENIZE:-$BUILD/gpt2_tokenize}
if [ ! -f "$BUILD/examples/gpt2.so" ]; then
    echo "FAIL: no GPT-2 task at $BUILD/examples/gpt2.so; build the whole tree (cmake --build $BUILD)" >&2
    exit 1
fi
TORCH_GPT2="/usr/bin/python3 $SRC/tests/gpt2/gpt2_torch.py"

# $T/corpus.txt: 200 paragraphs of 20-40 words drawn from a fixed list (seeded).  With min_chars =
# 100 every paragraph kept has at least 100 byte tokens, so max_length <= 96 pads nothing
# (tests/gpt2/parity.sh).
corpus() {
    /usr/bin/python3 - "$T/corpus.txt" <<'PY'
import random, sys
random.seed(7)
words = "the model shards every block and gathers its parameters before the forward pass while the optimizer updates only local shards".split()
with open(sys.argv[1], "w") as f:
    for p in range(200):
        f.write(" ".join(random.choice(words) for _ in range(random.randint(20, 40))) + ".\n\n")
PY
}

# gpt2_job FILE [accelerate key lines...] < [task] lines: a job training examples/gpt2 with the
# torch and accelerate plugins, by default FULL_SHARD with one unit per GPT2Block
gpt2_job() {
    local f=$1
    shift
    [ $# -gt 0 ] || set -- "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = GPT2Block"
    {
        printf '[shardrun]\ntask = %s\nplugins = torch,accelerate\n\n[accelerate]\n' "$BUILD/examples/gpt2.so"
        printf '%s\n' "$@"
        printf '\n[task]\n'
        cat
    } >"$T/$f"
}
# result NAME: the first rank's reported value of NAME in $out
result() { grep -o "\"$1\": [^,}]*" <<<"$out" | head -1 | sed 's/.*: //'; }
