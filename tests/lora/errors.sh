# The LoRA keys refuse what they cannot do, before any work (exit 2, naming the key): a target name
# that matches no linear layer (nor a block's full path: transformer.h.2 of 2 blocks), lora_dropout
# outside [0, 1) (1, -0.1) or not a number, a negative rank, lora_alpha <= 0, and lora_* keys with
# lora_r = 0.  A path suffix targets one projection (attn.c_proj), one block's (h.1.mlp.c_fc).
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
bad "unknown target" "lora_target_modules: 'q_proj' names no linear layer; a block's are attn.c_attn" --set task.lora_r=4 --set task.lora_target_modules=q_proj
bad "dropout 1" "lora_dropout = 1 is out of range [0, 1)" --set task.lora_r=4 --set task.lora_dropout=1
bad "dropout -0.1" "lora_dropout = -0.1 is out of range [0, 1)" --set task.lora_r=4 --set task.lora_dropout=-0.1
bad "dropout nan" "lora_dropout" --set task.lora_r=4 --set task.lora_dropout=nan
bad "dropout not a number" "lora_dropout" --set task.lora_r=4 --set task.lora_dropout=half
bad "a block that is not there" "'transformer.h.2.attn.c_attn' names no linear layer" --set task.lora_r=4 \
    --set task.lora_target_modules=transformer.h.2.attn.c_attn
bad "negative rank" "lora_r = -1 is out of range" --set task.lora_r=-1
bad "alpha 0" "lora_alpha = 0 must be a positive number" --set task.lora_r=4 --set task.lora_alpha=0
bad "lora keys without lora_r" "lora_alpha is set but lora_r is 0" --set task.lora_alpha=16
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set task.lora_r=2 --set task.lora_target_modules=attn.c_proj
expect_rc 0 "a path suffix (attn.c_proj) targets one projection only"
expect_in "$out" "on attn.c_proj: 512 trainable parameters" "attn.c_proj alone: r (C + C) per block, 2 blocks"
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set task.lora_r=2 --set task.lora_target_modules=h.1.mlp.c_fc \
    --set task.output_dir="$T/one"
expect_rc 0 "a full path's last parts (h.1.mlp.c_fc) target one block's layer, as PEFT matches module names"
expect_in "$out" "on h.1.mlp.c_fc: 640 trainable parameters" "h.1.mlp.c_fc alone: r (C + 4C) in block 1 only"
done_checks
