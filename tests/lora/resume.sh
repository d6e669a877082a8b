# Resuming a LoRA fine-tune: GPT-2 tiny with adapters (r 4) on 2 ranks under FULL_SHARD, 8 steps
# saving at 4, against the same run resumed from its checkpoint-4, with FULL_STATE_DICT and with
# SHARDED_STATE_DICT checkpoints: steps 5-8 log byte-identical lines and end on the same parameters.
# FULL checkpoints hold the frozen base too (no optimizer state for it): the resumed run continues on
# the checkpoint's base, also when init_weights names another one (a note says it is not read).
# SHARDED checkpoints hold the adapters only, the base coming from init_weights again
# (tests/lora/sharded_base.sh: the files, another base refused, another world size).
. "$(dirname "$0")/lib.sh"
corpus
lora_base "$T/base.safetensors"
gpt2_job job.ini <<EOF2
$LORA_GPT2_TASK
max_steps = 8
save_steps = 4
per_device_train_batch_size = 4
learning_rate = 1e-2
logging_steps = 1
lora_r = 4
lora_target_modules = c_attn,c_fc
EOF2
for sd in FULL_STATE_DICT SHARDED_STATE_DICT; do
    run "$SHARDRUN" "$T/job.ini" --nproc-per-node 2 --set accelerate.fsdp.state_dict_type=$sd --set task.output_dir="$T/u-$sd"
    expect_rc 0 "$sd: uninterrupted"
    u_sum=$(result param_sum)
    [ $sd = FULL_STATE_DICT ] && full_sum=$u_sum
    run "$SHARDRUN" "$T/job.ini" --nproc-per-node 2 --set accelerate.fsdp.state_dict_type=$sd --set task.output_dir="$T/r-$sd" \
        --set task.resume_from_checkpoint="$T/u-$sd/checkpoint-4"
    expect_rc 0 "$sd: resumed"
    expect_in "$out" "resumed from $T/u-$sd/checkpoint-4 at step 4" "$sd: resumed at step 4"
    expect_eq "$(result param_sum)" "$u_sum" "$sd: the resumed run ends on the same parameters (param_sum)"
    a=$(grep -E '"step": [5-8],' "$T/r-$sd/train_log.jsonl" | sed 's/"[a-z_]*time[a-z_]*": [0-9.e+-]*//g; s/"tokens_per_s[a-z_]*": [0-9.e+-]*//g')
    b=$(grep -E '"step": [5-8],' "$T/u-$sd/train_log.jsonl" | sed 's/"[a-z_]*time[a-z_]*": [0-9.e+-]*//g; s/"tokens_per_s[a-z_]*": [0-9.e+-]*//g')
    [ -n "$a" ] && [ "$a" == "$b" ] && pass || fail "$sd: steps 5-8 differ: $(diff <(echo "$a") <(echo "$b") | head -4)"
done
$TORCH_GPT2 init "$T/other.safetensors" --n_layer 2 --n_head 4 --n_embd 64 --n_positions 96 --vocab_size 300 --seed 4 >/dev/null
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 2 --set accelerate.fsdp.state_dict_type=FULL_STATE_DICT \
    --set task.output_dir="$T/o" --set task.init_weights="$T/other.safetensors" \
    --set task.resume_from_checkpoint="$T/u-FULL_STATE_DICT/checkpoint-4"
expect_rc 0 "resumed with init_weights naming another base"
expect_in "$out" "init_weights is not read: the checkpoint holds the parameters" "the other base is not read"
expect_eq "$(result param_sum)" "$full_sum" "it continues on the checkpoint's base"
# FULL: the optimizer state is the adapters' alone
n=$(torch_py -c "
import sys; sys.path.insert(0, '$SRC/tests/gpt2')
import gpt2_torch as g
o = g.read_safetensors('$T/u-FULL_STATE_DICT/checkpoint-4/optimizer.safetensors')
print(sorted({k.rsplit('.', 1)[0].split('.lora_')[0] != k.rsplit('.', 1)[0] for k in o}))" 2>&1)
expect_eq "$n" "[True]" "FULL optimizer.safetensors holds the adapters' moments only"
done_checks
