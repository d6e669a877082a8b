# LoRA dropout ([task] lora_dropout: PEFT's nn.Dropout on the adapters' input, in training only),
# its masks drawn from a counter hash of (seed, step, sample, position, block, linear, feature)
# (models/transformer/lora.h, "Dropout"):
#  - against PyTorch: GPT-2 (adapters on all four linear layers, Conv1D weights) and BLOOM (all four,
#    nn.Linear) with lora_dropout = 0.1 on 1 rank: the first micro-batch's logits and loss and every
#    adapter's gradient agree within 1e-4 with tests/lora/lora_torch.py, which draws the same masks
#    from lora.h's definition; for GPT-2 the same check without the reference's dropout fails (the
#    masks show);
#  - parity: 12 steps of GPT-2 with lora_dropout = 0.1 on 1 rank, on 1 rank in two micro-batches
#    (gradient accumulation), on 2 ranks under FULL_SHARD, with activation checkpointing (the
#    recompute draws the masks again) and on 4 ranks: the same per-step loss and grad norm (rtol
#    1e-5) and the same final parameters; resumed from step 6, steps 7-12 are the uninterrupted run's;
#  - evaluation runs without dropout: with adapters that are not zero, eval_on_start's eval_loss is
#    the same bits with lora_dropout = 0.05 as with 0, while the first training loss differs;
#  - adapter_config.json holds lora_dropout 0.05 as given (PEFT's LoraConfig value).
. "$(dirname "$0")/lib.sh"
CHK="torch_py $SRC/tests/fsdp/check_records.py"
mixed_text

# the reference's hash is splitmix64's: m(0) is its first output from state 0
r=$(cd "$SRC/tests/lora" &&
    torch_py -c "import numpy as np, lora_torch as L; print(hex(int(L.mix64(np.array([0], L.U64))[0])))" 2>&1)
expect_eq "$r" 0xe220a8397b1dcdaf "lora_torch.py's m(0)"

# ---- against the PyTorch reference, 1 rank ----
vs_torch() { # FAMILY JOB WEIGHTS [without: also check that the reference without dropout disagrees]
    local fam=$1 job=$2 w=$3 r
    rm -rf "$T/out" "$T/dump.safetensors"
    run "$SHARDRUN" "$T/$job" --nproc-per-node 1
    expect_rc 0 "$fam: one step with lora_dropout = 0.1"
    expect_in "$out" "dropout 0.1 in training" "$fam: the start-up line says the adapters' input drops"
    r=$($LORA_TORCH check "$T/dump.safetensors" "$w" --family "$fam" --n_head 4 --alpha 6 --dropout 0.1 \
        --grads "$T/out/checkpoint-1/optimizer.safetensors" --frozen 2>&1) && pass || fail "$fam: C vs torch: $r"
    echo "$fam, dropout 0.1: $(tail -1 <<<"$r")"
    [ "${4:-}" = without ] || return 0
    r=$($LORA_TORCH check "$T/dump.safetensors" "$w" --family "$fam" --n_head 4 --alpha 6 \
        --grads "$T/out/checkpoint-1/optimizer.safetensors" 2>&1)
    grep -q "FAILED" <<<"$r" && pass || fail "$fam: the reference without dropout should not agree: $r"
}
lora_ref_gpt2 "lora_dropout = 0.1"
vs_torch gpt2 g.ini "$T/g.safetensors" without
lora_ref_bloom_base
lora_ref_bloom query_key_value,dense,dense_h_to_4h,dense_4h_to_h "lora_dropout = 0.1"
vs_torch bloom b.ini "$T/b.safetensors"

# ---- evaluation without dropout; PEFT's adapter_config.json ----
evaluate() { # NAME DROPOUT
    run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set task.lora_dropout="$2" --set task.output_dir="$T/$1" \
        --set task.validation_split_percentage=25 --set task.eval_strategy=steps --set task.eval_on_start=true \
        --set task.logging_steps=1 --set task.per_device_train_batch_size=4
    expect_rc 0 "$1: a step between two evaluations"
}
evaluate e0 0
evaluate e05 0.05
e0=$($CHK evals "$T/e0" | head -1) e05=$($CHK evals "$T/e05" | head -1)
expect_eq "$e05" "$e0" "eval_on_start's eval_loss (step, loss, epoch) with lora_dropout 0.05 and without"
first_loss() { grep -o '"loss": [^,}]*' "$T/$1/train_log.jsonl" | head -1; }
l0=$(first_loss e0) l05=$(first_loss e05)
[ -n "$l0" ] && [ "$l0" != "$l05" ] && pass || fail "the first training loss should differ with dropout: [$l0], [$l05]"
echo "eval at step 0: $e05 (dropout 0.05) and $e0 (none); first training loss: $l05 vs $l0"
r=$($LORA_TORCH adapter "$T/e05/checkpoint-1" --family gpt2 --n_layer 2 --r 4 --alpha 6 --targets c_attn,c_proj,c_fc \
    --dropout 0.05 2>&1) && pass || fail "adapter files with lora_dropout 0.05: $r"
grep -q '"lora_dropout": 0.05,' "$T/e05/checkpoint-1/adapter_config.json" && pass ||
    fail "adapter_config.json: $(grep lora_dropout "$T/e05/checkpoint-1/adapter_config.json")"

# ---- parity over world sizes and micro-batches ----
corpus
lora_base "$T/base.safetensors"
gpt2_job p.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = GPT2Block" \
    "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
$LORA_GPT2_TASK
max_steps = 12
learning_rate = 1e-2
warmup_steps = 2
weight_decay = 0.1
max_grad_norm = 0.5
logging_steps = 1
lora_r = 4
lora_alpha = 16
lora_dropout = 0.1
lora_target_modules = c_attn, c_proj, c_fc
EOF2
train() { # NAME NPROC MICRO_BATCHES [shardrun args...]
    local name=$1 n=$2 acc=$3
    shift 3
    run "$SHARDRUN" "$T/p.ini" --nproc-per-node "$n" --set task.per_device_train_batch_size=$((8 / n / acc)) \
        --set task.gradient_accumulation_steps="$acc" --set task.output_dir="$T/$name" "$@"
    expect_rc 0 "$name trains"
}
train base 1 1 --set accelerate.fsdp.sharding_strategy=NO_SHARD --set task.save_steps=6
base_sum=$(result param_sum)
# resumed at step 6: the masks of steps 7-12 are the uninterrupted run's (the step is in their key)
train resumed 1 1 --set accelerate.fsdp.sharding_strategy=NO_SHARD --set task.resume_from_checkpoint="$T/base/checkpoint-6"
expect_in "$out" "resumed from $T/base/checkpoint-6 at step 6" "resumed at step 6"
expect_eq "$(result param_sum)" "$base_sum" "the resumed run ends on the uninterrupted run's parameters (param_sum)"
steps() { grep -E '"step": ([7-9]|1[0-2]),' "$T/$1/train_log.jsonl" | sed -E 's/"[a-z_]*(time|tokens_per_s)[a-z_]*": [0-9.e+-]*//g'; }
a=$(steps resumed) b=$(steps base)
[ -n "$a" ] && [ "$a" == "$b" ] && pass || fail "resumed: steps 7-12 differ: $(diff <(echo "$a") <(echo "$b") | head -4)"
for v in "accum2:1:2:NO_SHARD" "ws2-fs:2:1:FULL_SHARD" \
    "ws2-ckpt:2:1:FULL_SHARD:--set accelerate.fsdp.activation_checkpointing=true" "ws4-fs:4:1:FULL_SHARD"; do
    IFS=: read -r name n acc strategy extra <<<"$v"
    # shellcheck disable=SC2086
    train "$name" "$n" "$acc" --set accelerate.fsdp.sharding_strategy="$strategy" $extra
    r=$($CMP "$T/$name/train_log.jsonl" "$T/base/train_log.jsonl" 1e-5) && pass || fail "$name vs 1 rank: $r"
    p=$($PCMP 1e-5 1e-6 "$T/base/checkpoint-12/model.safetensors" "$T/$name/checkpoint-12/model.safetensors") && pass ||
        fail "$name: final parameters differ from 1 rank's: $p"
    printf '  %-9s %s; %s\n' "$name" "$(head -1 <<<"$r")" "$(tail -1 <<<"$p")"
done
done_checks
