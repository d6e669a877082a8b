# A LoRA run's start from init_weights.  Base weights hold no adapters: that every lora_A / lora_B
# starts from PEFT's initialisation is the normal start, and it prints no warning.  A file that holds
# some adapters but not all (a LoRA checkpoint's model.safetensors, now with another target) still
# names the ones it lacks.  Tiny GPT-2, 1 rank, 1 step each.
. "$(dirname "$0")/lib.sh"
corpus
gpt2_job g.ini "fsdp.sharding_strategy = NO_SHARD" "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
$GPT2_TINY
max_length = 64
data = $T/corpus.txt
max_steps = 1
EOF2
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set task.output_dir="$T/base"
expect_rc 0 "the base: a run without LoRA"
base=$T/base/checkpoint-1/model.safetensors
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set task.init_weights="$base" --set task.lora_r=4 \
    --set task.output_dir="$T/lora"
expect_rc 0 "LoRA from the base"
expect_in "$out" "initial weights from $base" "LoRA from the base: the weights were read"
expect_not_in "$out$err" "lacks" "LoRA from the base: no warning about the adapters the base has none of"
expect_not_in "$out$err" "warning" "LoRA from the base: no warning at all"
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set task.init_weights="$T/lora/checkpoint-1/model.safetensors" \
    --set task.lora_r=4 --set task.lora_target_modules=c_attn,c_fc --set task.output_dir="$T/more"
expect_rc 0 "LoRA on c_attn and c_fc from a checkpoint with adapters on c_attn"
expect_in "$err$out" "lacks transformer.h.0.mlp.c_fc.lora_A.weight" \
    "a file with some adapters: the missing ones are named"
done_checks
