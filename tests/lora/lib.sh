# Shared by the LoRA tests: the BLOOM and GPT-2 test helpers (tests/bloom/lib.sh sources
# tests/gpt2/lib.sh: gpt2_job, bloom_job, corpus, result, the integration-test helpers), the LoRA
# reference (tests/lora/lora_torch.py) and a small mixed-length text.
. "$(dirname "$0")/../bloom/lib.sh"
LORA_TORCH="/usr/bin/python3 $SRC/tests/lora/lora_torch.py"
PCMP="/usr/bin/python3 $SRC/tests/fsdp/compare_params.py"
# $T/mixed.txt: 16 paragraphs, short ones padded and long ones truncated at max_length 100
mixed_text() {
    /usr/bin/python3 - "$T/mixed.txt" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(16):
        f.write(("Paragraph %d says something short." % i) if i % 2 else ("A much longer paragraph %d " % i) * 6)
        f.write("\n\n")
PY
}
# the tiny GPT-2 of these tests as [task] lines: 2 blocks, 4 heads, 64 channels, vocabulary 300
GPT2_TINY="size = tiny
n_layer = 2
n_embd = 64
n_head = 4
n_positions = 128
vocab_size = 300"
BLOOM_TINY="size = tiny
n_layer = 2
hidden_size = 48
n_head = 4
vocab_size = 300"
# The GPT-2 LoRA jobs' model and data: lora_base FILE [SEED] writes tiny GPT-2 weights (2 blocks, 4
# heads, 64 channels, 96 positions, vocabulary 300; seed 3 unless given); LORA_GPT2_TASK is that
# model as [task] lines, from $T/base.safetensors on $T/corpus.txt (corpus), texts of 100 characters
# or more in 96 tokens.
lora_base() {
    $TORCH_GPT2 init "$1" --n_layer 2 --n_head 4 --n_embd 64 --n_positions 96 --vocab_size 300 --seed "${2:-3}" \
        >/dev/null && pass || fail "gpt2_torch.py init $1"
}
LORA_GPT2_TASK="size = tiny
n_layer = 2
n_embd = 64
n_head = 4
n_positions = 96
vocab_size = 300
max_length = 96
min_chars = 100
data = $T/corpus.txt
init_weights = $T/base.safetensors"
