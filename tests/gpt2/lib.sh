# Shared by the GPT-2 task's tests (and, through tests/bloom/lib.sh and tests/llama/lib.sh, the other
# decoder families' and LoRA's): the integration-test helpers plus a job-file writer, torch_py (the
# test's Python commands in one Python process), the texts they train on and the one-step runs they
# compare with PyTorch.
# Environment, besides SRC/BUILD/SHARDRUN (tests/cli/lib.sh): GPT2_TOKENIZE, the tokenizer's test
# executable (default: $BUILD/gpt2_tokenize, where the build puts it); SANITIZED, 1 for the
# sanitizer build (default: read from the build's cache), which shortens the demo.
. "$(dirname "$0")/../cli/lib.sh"
GPT2_TOKENIZE=${GPT2_TOKENIZE:-$BUILD/gpt2_tokenize}
if [ ! -f "$BUILD/examples/gpt2.so" ]; then
    echo "FAIL: no GPT-2 task at $BUILD/examples/gpt2.so; build the whole tree (cmake --build $BUILD)" >&2
    exit 1
fi
# torch_py: the test's Python commands in one Python process, torch imported once
# (tests/transformer/torch_server.sh); the Python tools the decoder tests run through it:
. "$SRC/tests/transformer/torch_server.sh"
TORCH_GPT2="torch_py $SRC/tests/gpt2/gpt2_torch.py"
CMP="torch_py $SRC/tests/fsdp/compare_logs.py"
PCMP="torch_py $SRC/tests/fsdp/compare_params.py"
READ_ST="torch_py $SRC/tests/interop/read_safetensors.py"

# $T/mixed.txt: 16 paragraphs, the short ones padded and the long ones truncated at max_length 100
mixed_text() {
    local i s
    for i in {0..15}; do
        if ((i % 2)); then
            printf 'Paragraph %d says something short.\n\n' "$i"
        else
            s="A much longer paragraph $i "
            printf '%s\n\n' "$s$s$s$s$s$s"
        fi
    done >"$T/mixed.txt"
}
# The one-step runs checked against a PyTorch reference (tests/transformer/vs_torch.sh, the LoRA
# tests), as [task] lines: the first micro-batch dumped, one AdamW step with beta1 = 0 (exp_avg is then
# the gradient), nothing clipped or decayed, on $T/mixed.txt (mixed_text).
REF_STEP="max_length = 100
min_chars = 10
data = $T/mixed.txt
max_steps = 1
per_device_train_batch_size = 6
adam_beta1 = 0
max_grad_norm = 0
weight_decay = 0
dump = $T/dump.safetensors
output_dir = $T/out"

# $T/corpus.txt: 200 paragraphs of 20-40 words drawn from a fixed list (seeded).  With min_chars =
# 100 every paragraph kept has at least 100 byte tokens, so max_length <= 96 pads nothing
# (tests/transformer/parity.sh).
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

# gpt2_job FILE [accelerate key lines...] < [task] lines: a job training models/gpt2 with the
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
