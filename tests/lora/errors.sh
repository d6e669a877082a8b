# The LoRA keys refuse what they cannot do, before any work (exit 2, naming the key): a target name
# that matches no linear layer, lora_dropout outside [0, 1) (1, -0.1) or not a number, a negative
# rank, lora_alpha <= 0, and lora_* keys with lora_r = 0.
. "$(dirname "$0")/lib.sh"
corpus
gpt2_job g.ini <<EOF2
$GPT2_TINY
max_length = 64
data = $T/corpus.txt
max_steps = 1
output_dir = $T/out
EOF2
bad() { # WHAT NEEDLE --set ...
    local what=$1 needle=$2
    shift 2
    run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 "$@"
    expect_rc 2 "$what"
    expect_in "$err$out" "$needle" "$what: the message"
}
bad "unknown target" "lora_target_modules: 'q_proj' names no linear layer of a block" --set task.lora_r=4 --set task.lora_target_modules=q_proj
bad "dropout 1" "lora_dropout = 1 is out of range [0, 1)" --set task.lora_r=4 --set task.lora_dropout=1
bad "dropout -0.1" "lora_dropout = -0.1 is out of range [0, 1)" --set task.lora_r=4 --set task.lora_dropout=-0.1
bad "dropout nan" "lora_dropout" --set task.lora_r=4 --set task.lora_dropout=nan
bad "dropout not a number" "lora_dropout" --set task.lora_r=4 --set task.lora_dropout=half
bad "negative rank" "lora_r = -1 is out of range" --set task.lora_r=-1
bad "alpha 0" "lora_alpha = 0 must be a positive number" --set task.lora_r=4 --set task.lora_alpha=0
bad "lora keys without lora_r" "lora_alpha is set but lora_r is 0" --set task.lora_alpha=16
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set task.lora_r=2 --set task.lora_target_modules=attn.c_proj
expect_rc 0 "a path suffix (attn.c_proj) targets one projection only"
expect_in "$out" "on attn.c_proj: 512 trainable parameters" "attn.c_proj alone: r (C + C) per block, 2 blocks"
done_checks
