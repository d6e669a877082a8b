# Shared by the LoRA tests: the BLOOM and GPT-2 test helpers (tests/bloom/lib.sh sources
# tests/gpt2/lib.sh: gpt2_job, bloom_job, corpus, mixed_text, result, torch_py, $PCMP, the
# integration-test helpers) and the LoRA reference (tests/lora/lora_torch.py).
. "$(dirname "$0")/../bloom/lib.sh"
LORA_TORCH="torch_py $SRC/tests/lora/lora_torch.py"
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
# The one-step runs checked against the reference (vs_torch.sh, dropout.sh), as [task] lines:
# tests/gpt2/lib.sh's REF_STEP (the first micro-batch dumped, one AdamW step with beta1 = 0: exp_avg
# is then the gradient; on $T/mixed.txt, mixed_text) with r 4 and alpha 6.
LORA_REF_STEP="$REF_STEP
lora_r = 4
lora_alpha = 6"
# lora_ref_gpt2 [LINES]: the reference's tiny GPT-2 ($T/gbase.safetensors) with adapters on c_attn,
# c_proj and c_fc whose lora_B is not zero ($T/g.safetensors), and $T/g.ini training them one step
# (LORA_REF_STEP and LINES) on 1 rank with the FULL state dict.
lora_ref_gpt2() {
    $TORCH_GPT2 init "$T/gbase.safetensors" --n_layer 2 --n_head 4 --n_embd 64 --n_positions 128 --vocab_size 300 \
        --seed 3 >/dev/null && pass || fail "gpt2_torch.py init"
    $LORA_TORCH init "$T/g.safetensors" --family gpt2 --base "$T/gbase.safetensors" --r 4 \
        --targets c_attn,c_proj,c_fc --seed 5 >/dev/null && pass || fail "lora_torch.py init (gpt2)"
    gpt2_job g.ini "fsdp.sharding_strategy = NO_SHARD" "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
$GPT2_TINY
$LORA_REF_STEP
${1:-}
init_weights = $T/g.safetensors
lora_target_modules = c_attn,c_proj,c_fc
EOF2
}
# lora_ref_bloom_base: the reference's tiny BLOOM ($T/bbase.safetensors); lora_ref_bloom TARGETS
# [LINES]: adapters on TARGETS over it ($T/b.safetensors) and $T/b.ini, as lora_ref_gpt2.
lora_ref_bloom_base() {
    $TORCH_BLOOM init "$T/bbase.safetensors" --n_layer 2 --n_head 4 --hidden_size 48 --vocab_size 300 --seed 4 \
        >/dev/null && pass || fail "bloom_torch.py init"
}
lora_ref_bloom() {
    $LORA_TORCH init "$T/b.safetensors" --family bloom --base "$T/bbase.safetensors" --r 4 --targets "$1" --seed 6 \
        >/dev/null && pass || fail "lora_torch.py init (bloom, $1)"
    bloom_job b.ini "fsdp.sharding_strategy = NO_SHARD" "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
$BLOOM_TINY
$LORA_REF_STEP
${2:-}
init_weights = $T/b.safetensors
lora_target_modules = $1
EOF2
}
